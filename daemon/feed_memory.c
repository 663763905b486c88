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

/* A deadline came: the state's time moves on to now, what is due fires. */
static void memory_tick_locked(struct server *srv)
{
	sm_tick(srv->sm, server_now());
}

/* Open c's client in the state (c->feed_ctx), by a client id of this process. */
static int memory_open_locked(struct conn *c, const char *principal,
    const uint8_t secret[SM_SECRET_LEN])
{
	struct server *srv = c->srv;

	c->cid = ++srv->next_client;
	c->feed_ctx = sm_client_open(srv->sm, c->cid, c, principal, secret,
	    c->local ? SM_CLIENT_LOCAL : 0, server_now());
	return c->feed_ctx != NULL ? 0 : -ENOMEM;
}

/* The client goes with its connection (or its session lingers). */
static void memory_close_locked(struct conn *c)
{
	sm_client_close(c->srv->sm, c->feed_ctx, server_now());
	c->feed_ctx = NULL;
}

/* Every frame runs when it is read: none is held. */
static bool memory_admit_locked(struct conn *c, const Semd__Request *req)
{
	(void)c;
	(void)req;
	return true;
}

/*
 * Run the request at the time its read came (one clock read per read);
 * the replies are staged before this returns. Its Hello is taken once the
 * client has a session.
 */
static bool memory_request_locked(struct conn *c, const Semd__Request *req,
    const struct sm_caller *who, const uint8_t *data, size_t len)
{
	struct sm_client *cl = c->feed_ctx;
	int r;

	(void)data;
	(void)len;
	r = sm_request(c->srv->sm, cl, req, who, c->last_input_ms);
	if (!c->hello && sm_client_session(cl) != 0)
		conn_hello_locked(c);
	if (r == SM_CLOSE) {
		log_info("%s: protocol error, closing", c->peer);
		conn_close_later(c);
		return false;
	}
	return !c->closing && !c->dead;
}

/*
 * No cluster (and no protocol error, even before Hello, as a node answers
 * a cluster request without a session).
 */
static void memory_cluster_locked(struct conn *c, const Semd__Request *req)
{
	conn_reply_code_locked(c, req->id, SEMD__CODE__INVALID_ARGUMENT,
	    "this semd is not a cluster: it keeps its state in memory "
	    "(a cluster's nodes run with --data-dir)");
}

/* Through the state machine, which counts it. */
static void memory_protocol_error_locked(struct conn *c, const char *why)
{
	sm_protocol_error(c->srv->sm, c->feed_ctx, why);
}

/* Every command ran when it came: nothing is ever gathered. */
static void memory_submit(struct worker *w)
{
	(void)w;
}

/* The state goes with the process: waiters hear UNAVAILABLE, holders too. */
static void memory_stopping_locked(struct server *srv)
{
	sm_shutdown(srv->sm, server_now());
}

/* New settings take effect at once. */
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

/* No log: no disk work. */
static bool memory_io_stats(struct server *srv, struct semlog_io_stats *out)
{
	(void)srv;
	(void)out;
	return false;
}

const struct feed feed_memory = FEED_OF("memory", false, memory);
