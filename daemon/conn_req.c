/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/conn_req.c - one request of a client: decoded (Down, Up and Ping
 * by hand, the rest by protobuf-c, into a per-thread arena), let through
 * by its feed (which may hold it), asked of the policy (conn_policy), then
 * run the same way in either mode: a Backup's later chunk answered here, a
 * request of the node's (the op table says: Cluster) and any other handed
 * to the feed (feed.h), which runs it in the state machine or gathers it
 * for the log. Everything here runs under the state lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backup.h"
#include "daemon/conn-int.h"
#include "daemon/fastpb.h"
#include "daemon/feed.h"
#include "daemon/logging.h"
#include "daemon/server.h"

/*
 * Requests are unpacked into this arena: a bump allocator reset after each
 * request, so decoding a small request never touches the heap. A request
 * that does not fit (a big Ping payload) spills to malloc for the rest.
 * The state machine copies what it keeps. One arena per thread.
 */
#define ARENA_SIZE	4096

static _Thread_local struct {
	_Alignas(16) uint8_t	buf[ARENA_SIZE];
	size_t			used;
	unsigned int		spilled;	/* heap blocks handed out */
} conn_arena;

/* ProtobufCAllocator.alloc: bump, or malloc when the arena is full. */
static void *conn_arena_alloc(void *data, size_t size)
{
	size_t sz = (size + 15) & ~(size_t)15;
	void *p;

	(void)data;
	if (sz >= size && ARENA_SIZE - conn_arena.used >= sz) {
		p = conn_arena.buf + conn_arena.used;
		conn_arena.used += sz;
		return p;
	}
	p = malloc(size);
	if (p != NULL)
		conn_arena.spilled++;
	return p;
}

/* ProtobufCAllocator.free: only spilled blocks go back to the heap. */
static void conn_arena_free(void *data, void *p)
{
	uint8_t *b = p;

	(void)data;
	if (b >= conn_arena.buf && b < conn_arena.buf + ARENA_SIZE)
		return;
	free(p);
}

static ProtobufCAllocator conn_allocator = {
	.alloc = conn_arena_alloc,
	.free = conn_arena_free,
	.allocator_data = NULL,
};

/* Let go of an unpacked request (NULL: a fast one) and reset the arena. */
static void conn_arena_reset(Semd__Request *req)
{
	if (req != NULL && conn_arena.spilled > 0)
		semd__request__free_unpacked(req, &conn_allocator);
	conn_arena.used = 0;
	conn_arena.spilled = 0;
}

/*
 * On a node that does not lead: answer UNAVAILABLE, with the leader when
 * it is known (a Redirect), for request id (0: a notice).
 */
void conn_redirect_locked(struct conn *c, uint64_t id)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__Redirect rd = SEMD__REDIRECT__INIT;
	char addr[256], msg[320];

	rd.leader_id = c->srv->feed->leader(c->srv, addr, sizeof addr);
	rd.leader = addr;
	if (addr[0] != '\0')
		snprintf(msg, sizeof msg, "not the leader: node %llu at %s is",
		    (unsigned long long)rd.leader_id, addr);
	else
		snprintf(msg, sizeof msg, "not the leader, and no leader known yet");
	r.id = id;
	r.code = SEMD__CODE__UNAVAILABLE;
	r.message = msg;
	r.body_case = SEMD__REPLY__BODY_REDIRECT;
	r.redirect = &rd;
	conn_reply_locked(NULL, c, &r);
}

/* PROTOCOL_ERROR (id 0) to what could not be decoded: the feed's way. */
void conn_protocol_error_locked(struct conn *c, const char *why)
{
	c->srv->feed->protocol_error_locked(c, why);
}

/* Ask the policy; a refusal is answered here. True: go on. */
static bool conn_allowed_locked(struct conn *c, const Semd__Request *req,
    struct sm_caller *who)
{
	char msg[ACL_PRINCIPAL_MAX + SM_NAME_MAX + 64];
	int code;

	code = c->srv->policy->check_locked(c, req, who, msg, sizeof msg);
	if (code == 0)
		return true;
	conn_reply_code_locked(c, req->id, (Semd__Code)code, msg);
	return false;
}

/*
 * Run one decoded request: the policy asked (a refusal is answered), a
 * later chunk of a Backup answered from c's copy, a request of the node's
 * (the op table: Cluster) handed to the feed's node, any other to the
 * feed for the state. False: stop reading.
 */
static bool conn_run_locked(struct conn *c, const Semd__Request *req,
    const uint8_t *data, size_t plen)
{
	const struct feed *feed = c->srv->feed;
	struct sm_caller who;

	if (!conn_allowed_locked(c, req, &who) || backup_chunk_locked(c, req)) {
		/* refused and answered; or a chunk answered from c's copy */
	} else if (sm_op_is_node(req->op_case)) {
		feed->cluster_locked(c, req);
	} else {
		return feed->request_locked(c, req, &who, data, plen);
	}
	return !c->closing && !c->dead;
}

/* Decode one frame's payload and run it. Returns false to stop reading. */
bool conn_handle_locked(struct conn *c, const uint8_t *data, size_t plen)
{
	struct fastpb_req f;
	Semd__Request *req;
	bool fast, go;

	/* Down, Up and Ping by hand (strings into the arena), or protobuf-c. */
	fast = fastpb_request(&f, data, plen, (char *)conn_arena.buf, ARENA_SIZE);
	req = fast ? &f.req : semd__request__unpack(&conn_allocator, plen, data);
	if (req == NULL) {
		conn_arena_reset(NULL);
		log_notice("%s: undecodable request of %zu bytes, closing",
		    c->peer, plen);
		conn_protocol_error_locked(c, "undecodable request (not a semd.Request)");
		conn_close_later(c);
		return false;
	}
	/* Its feed may hold it (behind reads off the log: feed_log.c). */
	if (!c->srv->feed->admit_locked(c, req)) {
		conn_arena_reset(fast ? NULL : req);
		return false;
	}
	c->frames++;
	/* A string with a NUL byte would reach the state cut short. */
	if (!fast && !fastpb_strings_clean(&semd__request__descriptor, data, plen)) {
		conn_reply_code_locked(c, req->id, SEMD__CODE__INVALID_ARGUMENT,
		    "a string field holds a NUL byte");
		go = !c->closing && !c->dead;
	} else {
		go = conn_run_locked(c, req, data, plen);
	}
	conn_arena_reset(fast ? NULL : req);
	return go;
}
