/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_gate.c - gates: clients inside the daemon through which
 * the HTTP front door makes its requests (doc/http.md, "How it is built").
 *
 * A gate is a connection of the connection layer with no socket
 * (conn_start_inner): its requests go in as whole frames
 * (conn_inner_input), the way a socket's input does - the access check,
 * the feed, in memory or through the log - and its replies come out
 * through the transport below, whose write only copies them here and
 * wakes the gate's delivery (it may be called under the state lock, where
 * nothing else may be done). Each call is answered by its request id;
 * replies with id 0 are notices for the owner.
 *
 * Service gates - the reads and quick writes of a principal and caller -
 * are kept in a cache, least recently used first, and closed when idle.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/access.h"
#include "daemon/conn.h"
#include "daemon/fastpb.h"
#include "daemon/http/http-int.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/xprt.h"
#include "proto/frame.h"

#define GATE_CACHE_MAX	512		/* service gates kept */
#define GATE_IDLE_MS	60000		/* a service gate unused this long goes */
#define GATE_IN_MAX	(64u << 20)	/* replies not yet delivered: a bug */

static void gate_maybe_free(struct gate *g);

/* --- the transport -------------------------------------------------------- */

/* Nothing to set up: there is no socket. */
static void gate_x_start(struct conn *c, uint32_t keepalive_s)
{
	(void)c;
	(void)keepalive_s;
}

/* Nothing is ever read: requests come through conn_inner_input(). */
static size_t gate_x_read(struct conn *c, uint8_t *buf, size_t len,
    enum xprt_more *more)
{
	(void)c;
	(void)buf;
	(void)len;
	*more = XPRT_AGAIN;
	return 0;
}

/*
 * Replies: copied, and the delivery woken (maybe under the state lock:
 * nothing more may happen here).
 */
static ssize_t gate_x_write(struct conn *c, const uint8_t *p, size_t len)
{
	struct gate *g = c->inner;
	size_t n;
	uint8_t *b;

	if (g->ilen + len > GATE_IN_MAX)
		return -1;
	if (g->icap - g->ilen < len) {
		n = g->icap ? g->icap : 4096;
		while (n - g->ilen < len)
			n *= 2;
		if ((b = realloc(g->in, n)) == NULL)
			return -1;
		g->in = b;
		g->icap = n;
	}
	memcpy(g->in + g->ilen, p, len);
	g->ilen += len;
	event_active(g->deliver, EV_TIMEOUT, 0);
	return (ssize_t)len;
}

static bool gate_x_pending(const struct conn *c)
{
	(void)c;
	return false;
}

static void gate_conn_gone(struct gate *g);

/* The connection is freed: the gate hears of it. */
static void gate_x_close(struct conn *c, bool bye)
{
	(void)bye;
	gate_conn_gone(c->inner);
}

/* Its identity was given when it was made. */
static void gate_x_identify(const struct conn *c, const struct sockaddr *sa,
    bool names, struct acl_subject *s, char *peer, size_t peerlen)
{
	(void)c;
	(void)sa;
	(void)names;
	(void)s;
	(void)peer;
	(void)peerlen;
}

static const struct xprt_ops gate_xprt = {
	.start = gate_x_start,
	.read = gate_x_read,
	.write = gate_x_write,
	.pending = gate_x_pending,
	.close = gate_x_close,
	.identify = gate_x_identify,
};

/* --- replies -------------------------------------------------------------- */

/* Take the call of id off the list (NULL: none, or forgotten). */
static struct gate_call *gate_take_call(struct gate *g, uint64_t id)
{
	struct list_head *pos;
	struct gate_call *k;

	list_for_each(pos, &g->calls) {
		k = list_entry(pos, struct gate_call, entry);
		/* The analyzer takes a call freed by an earlier dispatch for
		 * one still listed (each is unlinked before it is freed):
		 * NOLINTNEXTLINE(clang-analyzer-unix.Malloc) */
		if (k->id == id) {
			list_del_init(&k->entry);
			return k;
		}
	}
	return NULL;
}

/* One reply: to its call, or a notice to the owner. */
static void gate_dispatch(struct gate *g, const Semd__Reply *rep)
{
	struct gate_call *k;

	if (rep->code == SEMD__CODE__UNAVAILABLE &&
	    rep->body_case == SEMD__REPLY__BODY_REDIRECT) {
		g->redirected = true;
		g->leader_id = rep->redirect->leader_id;
		snprintf(g->leader, sizeof g->leader, "%s",
		    rep->redirect->leader != NULL ? rep->redirect->leader : "");
	}
	if (rep->id == 0) {
		if (g->notice != NULL && !g->released)
			g->notice(g->owner, rep);
		return;
	}
	if ((k = gate_take_call(g, rep->id)) == NULL)
		return;
	if (k->done != NULL)
		k->done(k->arg, rep);
	free(k);
	/* A service gate out of the cache goes once its calls are in. */
	if (g->kind == GATE_SERVICE && !g->cached && list_empty(&g->calls))
		gate_release(g, false);
}

/* Decode and dispatch every whole frame received. */
static void gate_deliver(struct gate *g)
{
	struct fastpb_reply fr;
	Semd__Reply *rep;
	size_t off = 0, plen = 0;
	char msg[1024];
	int r;

	g->running++;
	while (off < g->ilen) {
		r = frame_peek(g->in + off, g->ilen - off, UINT32_MAX, &plen);
		if (r <= 0)
			break;
		/* the usual replies by hand (fastpb.c), the others by protobuf-c */
		if (fastpb_reply_decode(&fr, g->in + off + FRAME_HDR, plen, msg,
		    sizeof msg)) {
			off += FRAME_HDR + plen;
			gate_dispatch(g, &fr.rep);
			continue;
		}
		rep = semd__reply__unpack(NULL, plen, g->in + off + FRAME_HDR);
		off += FRAME_HDR + plen;
		if (rep == NULL) {
			log_warn("http: an undecodable reply for a gate");
			continue;
		}
		gate_dispatch(g, rep);
		semd__reply__free_unpacked(rep, NULL);
	}
	if (off > 0) {
		memmove(g->in, g->in + off, g->ilen - off);
		g->ilen -= off;
	}
	g->running--;
}

/* The delivery event. */
static void gate_deliver_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gate *g = arg;

	(void)fd;
	(void)what;
	gate_deliver(g);
	gate_maybe_free(g);
}

/* Free g once its owner let go, its connection is gone, nothing runs. */
static void gate_maybe_free(struct gate *g)
{
	if (!g->released || g->c != NULL || g->running > 0)
		return;
	list_del_init(&g->all);
	if (g->deliver != NULL)
		event_free(g->deliver);
	free(g->in);
	free(g->out);
	free(g->key);
	http_prin_put(g->f, g->who);
	free(g);
}

/* Take a service gate out of the cache. */
static void gate_uncache(struct gate *g)
{
	if (!g->cached)
		return;
	g->cached = false;
	hmap_remove(&g->hw->gates, &g->node);
	list_del_init(&g->lru);
	g->hw->ngates--;
}

/*
 * Its connection is freed: what came is delivered, the calls left get no
 * answer (done with NULL), the owner hears it.
 */
static void gate_conn_gone(struct gate *g)
{
	struct list_head *pos, *tmp;
	struct gate_call *k;

	g->running++;
	gate_deliver(g);
	g->c = NULL;
	gate_uncache(g);
	/* Their answers cannot add calls: the gate has no connection now. */
	list_for_each_safe(pos, tmp, &g->calls) {
		k = list_entry(pos, struct gate_call, entry);
		list_del_init(&k->entry);
		if (k->done != NULL)
			k->done(k->arg, NULL);
		free(k);
	}
	if (g->closed != NULL && !g->released)
		g->closed(g->owner);
	g->running--;
	gate_maybe_free(g);
}

/* --- calls ---------------------------------------------------------------- */

/* Stage a request; done(arg, reply) answers it. Its id, 0 if it could not. */
uint64_t gate_call(struct gate *g, Semd__Request *req, gate_done_fn done,
    void *arg)
{
	return gate_call_id(g, req, 0, done, arg);
}

/* The same with the request's id given (0: the next), for a retry. */
uint64_t gate_call_id(struct gate *g, Semd__Request *req, uint64_t id,
    gate_done_fn done, void *arg)
{
	struct gate_call *k = NULL;
	size_t len = 0, n;
	uint8_t *b;
	bool fast;

	if (g->c == NULL || g->closing)
		return 0;
	if (id == 0)
		id = ++g->next_id;
	else if (id > g->next_id)
		g->next_id = id;
	req->id = id;
	/* Down and Up of the usual shape by hand (fastpb.c), the others by protobuf-c */
	fast = g->ocap - g->olen >= FRAME_HDR + FASTPB_REQ_MAX + 13 &&
	    (len = fastpb_request_pack(req, g->out + g->olen + FRAME_HDR,
	    g->ocap - g->olen - FRAME_HDR)) > 0;
	if (!fast)
		len = semd__request__get_packed_size(req);
	if (g->ocap - g->olen < FRAME_HDR + len) {
		n = g->ocap ? g->ocap : 512;
		while (n - g->olen < FRAME_HDR + len)
			n *= 2;
		if ((b = realloc(g->out, n)) == NULL)
			return 0;
		g->out = b;
		g->ocap = n;
	}
	if (done != NULL) {
		if ((k = calloc(1, sizeof *k)) == NULL)
			return 0;
		k->id = req->id;
		k->done = done;
		k->arg = arg;
		list_add_tail(&k->entry, &g->calls);
	}
	frame_put_header(g->out + g->olen, (uint32_t)len);
	if (!fast)
		semd__request__pack(req, g->out + g->olen + FRAME_HDR);
	g->olen += FRAME_HDR + len;
	return req->id;
}

/* Send what is staged: one lock, one batch for the log. */
void gate_push(struct gate *g)
{
	size_t len = g->olen;

	if (len == 0 || g->c == NULL)
		return;
	g->olen = 0;
	g->used_ms = http_now();
	conn_inner_input(g->c, g->out, len);
}

/* Forget the calls of arg: their answers are dropped. */
void gate_forget(struct gate *g, void *arg)
{
	struct list_head *pos;
	struct gate_call *k;

	list_for_each(pos, &g->calls) {
		k = list_entry(pos, struct gate_call, entry);
		if (k->arg == arg)
			k->done = NULL;
	}
}

/* The owner lets go (detach: the session outlives the gate for its lease). */
void gate_release(struct gate *g, bool detach)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Detach d = SEMD__DETACH__INIT;
	struct list_head *pos;

	if (g == NULL || g->released)
		return;
	g->released = true;
	g->notice = NULL;
	g->closed = NULL;
	g->hello_cb = NULL;
	list_for_each(pos, &g->calls)
		list_entry(pos, struct gate_call, entry)->done = NULL;
	gate_uncache(g);
	if (g->c != NULL && !g->closing) {
		if (detach && g->hello) {
			req.op_case = SEMD__REQUEST__OP_DETACH;
			req.detach = &d;
			(void)gate_call(g, &req, NULL, NULL);
		}
		gate_push(g);
		g->closing = true;
		conn_close_later(g->c);
	}
	gate_maybe_free(g);
}

/* HelloReply: the session, its secret, its lease. */
static void gate_hello_done(void *arg, const Semd__Reply *rep)
{
	struct gate *g = arg;
	const Semd__HelloReply *h;

	if (rep != NULL && rep->code == SEMD__CODE__OK &&
	    rep->body_case == SEMD__REPLY__BODY_HELLO) {
		h = rep->hello;
		g->hello = true;
		g->session = h->session;
		g->lease_ms = h->lease_ms;
		if (h->secret.len == sizeof g->secret)
			memcpy(g->secret, h->secret.data, sizeof g->secret);
		/*
		 * No session (a guest: the data directory's disk is full) is
		 * kept for no other request: it goes after its calls, and the
		 * next gate asks for a session again.
		 */
		if (h->session == 0 && g->kind != GATE_NODE)
			gate_uncache(g);
	}
	if (g->hello_cb != NULL && !g->released)
		g->hello_cb(g->hello_arg, rep);
}

/* Why a gate could not be made, as an error of the state's kind. */
static int gate_open_error(int err, char *why, size_t len)
{
	switch (err) {
	case -EDQUOT:
		return SEMD__CODE__RESOURCE_EXHAUSTED;	/* why is filled */
	case -EMFILE:
		snprintf(why, len, "server busy: max-connections reached");
		return SEMD__CODE__RESOURCE_EXHAUSTED;
	case -ESHUTDOWN:
		snprintf(why, len, "semd is stopping");
		return SEMD__CODE__UNAVAILABLE;
	default:
		snprintf(why, len, "out of memory");
		return SEMD__CODE__RESOURCE_EXHAUSTED;
	}
}

/* A new gate, its Hello staged. */
struct gate *gate_open(struct http_front *f, enum gate_kind kind,
    struct hprin *who, const struct gate_ident *id, uint32_t lease_ms,
    uint64_t session, const uint8_t *secret, int *e, char *why, size_t len)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Hello h = SEMD__HELLO__INIT;
	struct acl_subject subj;
	char peer[80];
	struct gate *g;
	int err = -ENOMEM;

	*e = SEMD__CODE__RESOURCE_EXHAUSTED;
	if (f->stopping) {
		*e = SEMD__CODE__UNAVAILABLE;
		snprintf(why, len, "semd is stopping");
		return NULL;
	}
	if ((g = calloc(1, sizeof *g)) == NULL) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	g->f = f;
	g->hw = http_here();
	g->kind = kind;
	g->who = who;
	http_prin_hold(who);
	INIT_LIST_HEAD(&g->calls);
	INIT_LIST_HEAD(&g->lru);
	list_add_tail(&g->all, &g->hw->all_gates);
	acl_subject_init(&subj);
	snprintf(peer, sizeof peer, "http %s %.40s", kind == GATE_SERVICE ?
	    "service" : kind == GATE_WAITER ? "waiter" : kind == GATE_WATCH ?
	    "watch" : kind == GATE_NODE ? "node" : "backup",
	    who->subj.principal);
	if ((g->deliver = event_new(g->hw->base, -1, 0, gate_deliver_cb, g)) == NULL ||
	    access_subject_copy(&subj, &who->subj) != 0 ||
	    (g->c = conn_start_inner(g->hw->w, &gate_xprt, g, &subj, peer, &err, why,
	    len)) == NULL) {
		acl_subject_clear(&subj);
		*e = gate_open_error(err, why, len);
		g->released = true;
		gate_maybe_free(g);
		return NULL;
	}
	if (kind == GATE_NODE)
		return g;	/* the node's own answers: no session */
	h.version = 1;
	h.client_name = (char *)(id != NULL && id->client != NULL ? id->client : "http");
	h.host = (char *)(id != NULL && id->host != NULL ? id->host : "");
	h.pid = id != NULL ? id->pid : 0;
	h.lease_ms = lease_ms;
	if (session != 0) {
		h.resume_session = session;
		h.resume_secret.data = (uint8_t *)secret;
		h.resume_secret.len = sizeof g->secret;
	}
	req.op_case = SEMD__REQUEST__OP_HELLO;
	req.hello = &h;
	if (gate_call(g, &req, gate_hello_done, g) == 0) {
		gate_release(g, false);
		snprintf(why, len, "out of memory");
		return NULL;
	}
	return g;
}

/* The cache key of a service gate: principal, client, host, pid. */
static size_t gate_key(char *buf, size_t len, const struct hprin *who,
    const struct gate_ident *id)
{
	const char *part[3] = { who->subj.principal,
	    id->client != NULL ? id->client : "", id->host != NULL ? id->host : "" };
	size_t i, n, off = 0;

	/* each part and a NUL, then the pid's 4 bytes (made per request: no printf) */
	for (i = 0; i < 3; i++) {
		n = strlen(part[i]);
		if (len - off < n + 1 + sizeof id->pid)
			return 0;
		memcpy(buf + off, part[i], n + 1);
		off += n + 1;
	}
	memcpy(buf + off, &id->pid, sizeof id->pid);
	return off + sizeof id->pid;
}

struct gate_key_ref {
	const char	*p;
	size_t		len;
};

/* Does a cached gate have this key? */
static bool gate_key_eq(const struct hnode *n, const void *key)
{
	const struct gate *g = container_of(n, struct gate, node);
	const struct gate_key_ref *k = key;

	return g->keylen == k->len && memcmp(g->key, k->p, k->len) == 0;
}

/* The service gate of who and id, from the cache or new. */
struct gate *gate_service(struct http_front *f, struct hprin *who,
    const struct gate_ident *id, int *e, char *why, size_t len)
{
	struct hworker *hw = http_here();
	char key[1024];
	struct gate_key_ref k;
	struct hnode *n;
	struct gate *g, *old;
	uint64_t hash;

	k.p = key;
	k.len = gate_key(key, sizeof key, who, id);
	hash = hmap_siphash(f->hash_key, key, k.len);
	if (k.len > 0 && (n = hmap_find(&hw->gates, hash, gate_key_eq, &k)) != NULL) {
		g = container_of(n, struct gate, node);
		if (g->c != NULL && !g->closing && !g->redirected) {
			list_del_init(&g->lru);
			list_add_tail(&g->lru, &hw->gate_lru);
			return g;
		}
		gate_uncache(g);
	}
	g = gate_open(f, GATE_SERVICE, who, id, 0, 0, NULL, e, why, len);
	if (g == NULL || k.len == 0 || (g->key = malloc(k.len)) == NULL)
		return g;	/* not cached: released after its calls */
	memcpy(g->key, key, k.len);
	g->keylen = k.len;
	hmap_insert(&hw->gates, &g->node, hash);
	list_add_tail(&g->lru, &hw->gate_lru);
	g->cached = true;
	hw->ngates++;
	while (hw->ngates > GATE_CACHE_MAX) {
		old = list_first_entry(&hw->gate_lru, struct gate, lru);
		gate_uncache(old);	/* goes once its calls are in */
		if (list_empty(&old->calls))
			gate_release(old, false);
	}
	return g;
}

/*
 * After the loops ended: free the connection of every gate of hw still
 * open (their owners let go first), so that none outlives the front door.
 */
void gate_free_all(struct hworker *hw)
{
	struct list_head *pos, *tmp;
	struct gate *g;

	gate_sweep(hw, true);
	/* Freeing one frees no other. */
	list_for_each_safe(pos, tmp, &hw->all_gates) {
		g = list_entry(pos, struct gate, all);
		g->released = true;
		g->closed = NULL;
		g->notice = NULL;
		g->hello_cb = NULL;
		if (g->c != NULL) {
			g->closing = true;
			conn_free(g->c);	/* gate_conn_gone frees g */
		} else {
			g->running = 0;
			gate_maybe_free(g);
		}
	}
}

/* Close hw's service gates unused for a while (all: every one). */
void gate_sweep(struct hworker *hw, bool all)
{
	uint64_t now = http_now();
	struct list_head *pos, *tmp;
	struct gate *g;

	/* Least used first; releasing one frees no other. */
	list_for_each_safe(pos, tmp, &hw->gate_lru) {
		g = list_entry(pos, struct gate, lru);
		if (!all && (now - g->used_ms < GATE_IDLE_MS ||
		    !list_empty(&g->calls)))
			break;
		gate_release(g, false);
	}
}
