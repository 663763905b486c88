/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/feed_memory.c - the state machine fed straight (see feed.h): no
 * --data-dir. A request runs in it when it is read, under the state lock;
 * its clock is this process' monotonic clock, its deadlines fire through
 * the loops' timers (server.c), and a stop answers every waiter (the state
 * goes with the process).
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <errno.h>
#include <time.h>

#include "daemon/backup.h"
#include "daemon/conn-int.h"
#include "daemon/feed.h"
#include "daemon/logging.h"
#include "daemon/server.h"

/* The state starts at this process' clocks. */
static void memory_clock(uint64_t *now_ms, uint64_t *wall_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	*now_ms = server_now();
	*wall_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Nothing to take up: the state was made empty with the server. */
static int memory_start(struct server *srv)
{
	(void)srv;
	return 0;
}

/* Nothing to stop: the state is freed with the server. */
static void memory_stop(struct server *srv)
{
	(void)srv;
}

/* The loops' timers fire the state's deadlines. */
static uint64_t memory_deadline_locked(const struct server *srv)
{
	return sm_next_deadline(srv->sm);
}

/* Open c's client in the state, by a client id of this process. */
static int memory_open_locked(struct conn *c, const char *principal,
    const uint8_t secret[SM_SECRET_LEN])
{
	struct server *srv = c->srv;

	c->cid = ++srv->next_client;
	c->client = sm_client_open(srv->sm, c->cid, c, principal, secret,
	    c->local ? SM_CLIENT_LOCAL : 0, server_now());
	return c->client != NULL ? 0 : -ENOMEM;
}

/* The client goes with its connection (or its session lingers). */
static void memory_close_locked(struct conn *c, struct sm_batch *b)
{
	(void)b;
	sm_client_close(c->srv->sm, c->client, server_now());
}

/* Run the request; the replies are staged before this returns. */
static bool memory_request_locked(struct conn *c, const Semd__Request *req,
    const struct sm_caller *who, const uint8_t *data, size_t len)
{
	int r = SM_OK;

	(void)data;
	(void)len;
	/*
	 * The time the batch was read: one clock read per batch. A cluster
	 * request is answered here: no cluster (and no protocol error, even
	 * before Hello, as a node answers it without a session).
	 */
	if (who != NULL && backup_chunk_locked(c, req)) {
		/* a later chunk of a backup: from the connection's copy */
	} else if (who != NULL && req->op_case == SEMD__REQUEST__OP_CLUSTER)
		conn_reply_code_locked(c, req->id, SEMD__CODE__INVALID_ARGUMENT,
		    "this semd is not a cluster: it keeps its state in memory "
		    "(a cluster's nodes run with --data-dir)");
	else if (who != NULL)
		r = sm_request(c->srv->sm, c->client, req, who, c->last_input_ms);
	if (!c->hello && sm_client_session(c->client) != 0) {
		c->hello = true;
		conn_arm_timer(c);
	}
	if (r == SM_CLOSE) {
		log_info("%s: protocol error, closing", c->peer);
		conn_close_later(c);
		return false;
	}
	return !c->closing && !c->dead;
}

/* Through the state machine, which counts it. */
static void memory_protocol_error_locked(struct conn *c, const char *why)
{
	sm_protocol_error(c->srv->sm, c->client, why);
}

/* Every command ran when it came: nothing is ever gathered. */
static void memory_submit(struct server *srv, struct sm_batch *b)
{
	(void)srv;
	sm_batch_reset(b);
}

/* The state goes with the process: waiters hear UNAVAILABLE, holders too. */
static void memory_stopping_locked(struct server *srv)
{
	sm_shutdown(srv->sm, server_now());
}

static void memory_reconfigure_locked(struct server *srv,
    const struct sm_config *sc)
{
	sm_reconfigure(srv->sm, sc);
}

/* No figures of a log. */
static void memory_counters(struct server *srv, struct sm_local_counters *out)
{
	(void)srv;
	(void)out;
}

/* No other node: none leads but this one. */
static uint64_t memory_leader(struct server *srv, char *addr, size_t len)
{
	(void)srv;
	if (len > 0)
		addr[0] = '\0';
	return 0;
}

/* No log: nothing to tell. */
static bool memory_health(struct server *srv, struct semlog_health *out)
{
	(void)srv;
	(void)out;
	return false;
}

static bool memory_io_stats(struct server *srv, struct semlog_io_stats *out)
{
	(void)srv;
	(void)out;
	return false;
}

const struct feed feed_memory = FEED_OF("memory", false, memory);
