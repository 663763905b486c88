/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/engine/engine.h - libsemclient's third floor: the I/O engine.
 * Requests are written (write.c) and replies read (read.c) on the one
 * connection, which connect.c makes (the handshake, a resume, failing over
 * to another daemon of a cluster); the duty loop (loop.c) is the one place
 * that makes a lost connection again and runs the session's duties, in
 * turns taken by a waiting call (call.c), an event loop's semc_process()
 * and the keepalive thread. It calls the session floor and the base.
 */
#ifndef SEMC_ENGINE_H
#define SEMC_ENGINE_H

#include "client/session/session.h"

/* engine/write.c */
void semc_flush(struct semc *c);
void semc_flush_try(struct semc *c);

/* engine/read.c */
int semc_reader_turn_locked(struct semc *c, int timeout_ms, int wake_fd, bool background);

/* engine/connect.c */
int semc_cluster_status_raw(struct semc *c, Semd__Reply **out, int timeout_ms);
int semc_conn_try(struct semc *c, int64_t deadline);
int semc_connect_first(struct semc *c, int64_t deadline);

/* engine/loop.c */
/* What a turn of the duty loop is for, and whose it is. */
struct semc_turn {
	int wait_ms;		/* how long to read or wait at most (0: not at all) */
	int64_t deadline;	/* when a reconnection gives up (-1: the handle's timeout) */
	int wake_fd;		/* a descriptor that ends the wait early (-1: none) */
	bool background;	/* the keepalive thread's: it never waits to write
				 * (it must end the lease on time), reads only for a
				 * session with a lease, and reconnects only for a
				 * session to resume or a request to send */
	bool eager;		/* an event loop's (semc_process()): it reconnects with
				 * nothing to resume or send (it needs a socket) */
	struct semc_req *req;	/* a call's request: failed when it cannot be answered */
};
int semc_turn_locked(struct semc *c, const struct semc_turn *t, int64_t now);
int semc_timeout_locked(struct semc *c, int64_t now);
int semc_engine_connect(struct semc *c, int64_t deadline);
void semc_keepalive_stop(struct semc *c);

/* engine/call.c */
int semc_submit(struct semc *c, struct semc_req *r);
int semc_wait(struct semc *c, struct semc_req *r, int64_t deadline, bool *ghost);
int semc_call(struct semc *c, Semd__Request *rq, int64_t extra_ms, Semd__Reply **out);
int64_t semc_call_async(struct semc *c, Semd__Request *rq, semc_done_fn fn, void *arg);

#endif
