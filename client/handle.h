/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/handle.h - the libsemclient handle, struct semc: one connection
 * to a daemon (or to a cluster's leader) and its session, shared by the
 * program's threads.
 *
 * The library is four floors, each calling only the floors below it
 * (tests/callgraph.py checks it, and that no circle of calls joins any two
 * of its files):
 *   base/     addresses, errors, clocks, the results made from replies,
 *             and the transports (UNIX, TCP, TLS) of a connection
 *   session/  the session's bookkeeping under the lock, without I/O:
 *             requests, holds, watches, events, the lease and its duties
 *   engine/   the I/O: writing requests, the reader role, connecting, and
 *             the one duty loop that makes a lost connection again
 *   api/      semclient.h: the handle (api/handle.c), the generic call and
 *             the operations
 * Each floor has a header (base/base.h, session/session.h,
 * engine/engine.h, api/api.h) that includes the one below. The handle's
 * fields are grouped below by the floor that owns them.
 *
 * Threading (see semclient(3)): one mutex `lock` guards the state below;
 * `wlock` serialises whole frames onto the socket. Lock order: wlock
 * before lock; nobody holding `lock` takes `wlock`. A thread waiting for a
 * reply becomes "the reader" when nobody else is reading: it polls the
 * socket, decodes frames and hands replies to their requests (waking
 * waiters through `cond`); when its own reply arrives it gives the role up
 * and another waiter takes it (leader and followers). semc_process() takes
 * the same role without blocking, for event loops. Callbacks and events
 * are gathered in a struct semc_deliver while the lock is held and run
 * after the role and the lock are released.
 *
 * Sessions with a lease also have a keepalive thread (engine/loop.c),
 * unless the program turned it off: its turns of the duty loop take the
 * reader role when nobody else has it, send a Ping every third of the
 * lease, run the client-side lease clock and reconnect, so holds are kept,
 * and their loss reported, while the program's threads do something else.
 * Without it, the same turns run in semc_process() and in threads blocked
 * in a call.
 *
 * The client-side lease clock (Chubby's rule): `lease_base` is the moment
 * the latest answered request was sent; the daemon counted the lease from a
 * frame it received no earlier. The client gives the session up at
 * lease_base + lease * (1 - D) - M (semc_lease_end_locked()), before the
 * daemon can hand the session's permits to anyone else.
 *
 * A session without a lease in a cluster keeps the same clock with the
 * cluster's guard (HelloReply.guard_ms, its election timeout) for a lease,
 * while it owns permits or waits for a grant (session/trust.c): a take-over
 * ends such a session, and no other leader can take over sooner than the
 * guard after a majority of the voters heard from the leader that answered
 * - which they did after the request was sent, when the answer came from an
 * entry or a read barrier (only those move lease_base then). A grant that
 * arrives later than that is void (the session may be ended and its permit
 * granted again), and so are holds not confirmed by an answer (a Ping
 * every third of the guard) in time: a paused or cut-off leader keeps its
 * connections open.
 */
#ifndef SEMC_HANDLE_H
#define SEMC_HANDLE_H

#include "client/base/base.h"

struct semc_req;
struct semc_hold;
struct semc_evq;
struct semc_watcher;

struct semc {
	pthread_mutex_t lock;
	pthread_mutex_t wlock;
	pthread_cond_t cond;
	pid_t pid;		/* the process that made the handle */
	unsigned fork_gen;	/* its fork generation (semc_forked()) */

	/* The program's settings (api/handle.c). */
	char *client_name;
	/* The session this program runs under (semc_set_parent, else
	 * $SEMD_SESSION): given in the Hello of a new session. */
	uint64_t parent_session, parent_link;
	_Atomic uint32_t lease_ms;
	_Atomic int timeout_ms;
	bool reconnect;
	bool ka_want;		/* a keepalive thread for sessions with a lease */
	bool detach;		/* semc_detach(): sent again on every resume */
	semc_event_fn ev_fn;
	void *ev_arg;

	/* base: the daemons and how to reach them (addr.c, tls.c, tlssess.c). */
	struct semc_addr addr;		/* the one in use (connecting: lock) */
	bool addr_set;
	/* The daemons of a cluster (-s a,b,c), tried in turn; addr is one. */
	struct semc_addr addrs[SEMC_MAX_ADDRS];
	unsigned naddrs;
	unsigned cur;			/* addrs[cur] is addr */
	char *tls_ca, *tls_cert, *tls_key;
	SSL_CTX *ssl_ctx;
	pthread_mutex_t tls_lock;	/* guards tls_sess */
	struct semc_tls_sess tls_sess[SEMC_MAX_ADDRS];
	unsigned char tls_id[32];	/* hash of the CA file's name and our certificate */
	char *tls_dir;			/* $SEMD_TLS_SESSION_DIR, when usable */

	/* session: the requests, holds and watches (session/). */
	uint64_t next_id;
	struct semc_req *pending;
	struct semc_hold *holds;
	struct semc_watcher *watchers;	/* a watch's id and callback */
	uint64_t lost_ids[64];	/* recently lost permits, a ring */
	unsigned lost_next;
	/* Events wait here, in the order of the changes they report, and are
	 * delivered by one thread at a time (ev_runner), in that order. */
	struct semc_evq *evq, **evq_tail;
	bool ev_running;
	pthread_t ev_runner;
	/* The session, as the last Hello's reply said. */
	uint64_t session;
	uint64_t link;		/* HelloReply.link: a child's parent_link */
	uint8_t secret[256];
	size_t secret_len;
	uint32_t granted_lease;
	uint32_t max_lease;	/* HelloReply.max_lease_ms (0: unknown) */
	uint32_t guard_ms;	/* HelloReply.guard_ms: a cluster's (0: none) */
	char *principal;
	char *server;
	bool resumed;
	bool server_durable;	/* HelloReply.durable: its state outlives a restart */
	/* Its lease and keepalives (session/session.c). */
	int64_t lease_base;	/* monotonic ms: when the latest answered request was sent */
	int64_t ka_sent;	/* when the latest keepalive ping was queued */
	bool ka_out;		/* a keepalive ping is in flight */
	bool untrusted;		/* a grant came too late: the session is given up */

	/* engine: the connection, the reader, the writer, reconnecting. */
	struct semc_conn *conn;	/* NULL while disconnected */
	uint64_t gen;		/* of the latest connection */
	bool ever_connected;
	bool reading;		/* a thread has the reader role */
	bool connecting;	/* a thread is connecting */
	bool closing;		/* semc_shutdown() or semc_free() */
	bool flush_wanted;	/* requests queued by a thread that did not wait for wlock */
	unsigned round_fails;	/* failed attempts since a success */
	int64_t next_retry;	/* no attempt before (back-off) */
	int backoff;
	uint8_t *rbuf;		/* the reader's: partial frames */
	size_t rlen, rcap;
	uint64_t rbuf_gen;
	bool ka_running;	/* the keepalive thread was started (semc_free joins it) */
	pthread_t ka_thread;
	int ka_wake[2];		/* a pipe that wakes the thread's poll */
};

#endif
