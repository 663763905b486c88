/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/client-int.h - libsemclient internals shared by its files.
 *
 * Threading (see semclient(3)): one mutex `lock` guards the state below;
 * `wlock` serialises whole frames onto the socket. A thread waiting for a
 * reply becomes "the reader" when nobody else is reading: it polls the
 * socket, decodes frames and hands replies to their requests (waking
 * waiters through `cond`); when its own reply arrives it gives the role up
 * and another waiter takes it (leader and followers). semc_process() takes
 * the same role without blocking, for event loops. Callbacks run after the
 * role and the lock are released.
 *
 * Sessions with a lease also have a keepalive thread (keepalive.c), unless
 * the program turned it off: it takes the reader role when nobody else
 * has it, sends a Ping every third of the lease, runs the client-side
 * lease clock and reconnects, so holds are kept, and their loss reported,
 * while the program's threads do something else. Without it, the same
 * duties run in semc_process() and in threads blocked in a call.
 *
 * The client-side lease clock (Chubby's rule): `lease_base` is the moment
 * the latest answered request was sent; the daemon counted the lease from a
 * frame it received no earlier. The client gives the session up at
 * lease_base + lease * (1 - D) - M (semc_lease_end_locked()), before the
 * daemon can hand the session's permits to anyone else.
 *
 * A session without a lease in a cluster keeps the same clock with the
 * cluster's guard (HelloReply.guard_ms, its election timeout) for a lease,
 * while it owns permits or waits for a grant: a take-over ends such a
 * session, and no other leader can take over sooner than the guard after a
 * majority of the voters heard from the leader that answered - which they
 * did after the request was sent, when the answer came from an entry or a
 * read barrier (only those move lease_base then). A grant that arrives
 * later than that is void (the session may be ended and its permit granted
 * again), and so are holds not confirmed by an answer (a Ping every third
 * of the guard) in time: a paused or cut-off leader keeps its connections
 * open.
 *
 * A struct semc_conn is one socket: reference-counted so a reader or a
 * writer that still uses a broken connection never sees its fd closed and
 * reused under it.
 */
#ifndef SEMC_CLIENT_INT_H
#define SEMC_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <openssl/ssl.h>

#include "client/semclient.h"
#include "proto/semd.pb-c.h"

enum semc_addr_kind { SEMC_ADDR_UNIX = 1, SEMC_ADDR_TCP, SEMC_ADDR_TLS };
#define SEMC_MAX_ADDRS	9	/* daemons in an address list */

struct semc;
struct semc_conn;

/*
 * A transport (HAProxy's xprt_ops): how a connection to one kind of address
 * is opened, read, written and closed (xprt.c: UNIX, TCP; tls.c: TLS). The
 * rest of the library reaches the socket only through these, so a new
 * transport is one of them and a prefix in semc_addr_parse().
 */
struct semc_xprt {
	const char *name;	/* the address prefix: "unix", "tcp", "tls" */
	/* Prepare the handle before the first connection (NULL: nothing). */
	int (*setup)(struct semc *c);
	/* Connect k->fd to c->addr and finish any handshake before deadline;
	 * 0, or semc_fail()'s error. */
	int (*open)(struct semc *c, struct semc_conn *k, int64_t deadline);
	/* Read what is there without blocking: n, 0 at EOF, -1 with errno. */
	ssize_t (*read)(struct semc_conn *k, void *buf, size_t len);
	/* Write without blocking: n, or -1 with errno (EAGAIN: poll for *want). */
	ssize_t (*write)(struct semc_conn *k, const void *buf, size_t len, int *want);
	/* Whether bytes already taken off the socket wait inside (NULL: never). */
	bool (*buffered)(struct semc_conn *k);
	/* Free what open() made besides the fd (NULL: nothing). */
	void (*close)(struct semc_conn *k);
};

extern const struct semc_xprt semc_xprt_unix, semc_xprt_tcp, semc_xprt_tls;

struct semc_addr {
	enum semc_addr_kind kind;
	const struct semc_xprt *xprt;
	char path[108];		/* UNIX */
	char host[256];		/* TCP/TLS, without brackets */
	unsigned port;
	char canon[400];
};

struct semc_conn {
	const struct semc_xprt *xprt;
	int fd;
	SSL *ssl;		/* TLS */
	struct semc *owner;	/* TLS: whose session cache a ticket goes to */
	char tls_addr[400];	/* ... under this address (canon) */
	pthread_mutex_t iolock;	/* SSL objects are not thread-safe */
	int refs;
	uint64_t gen;
};

struct semc_req {
	struct semc_req *next;
	uint64_t id;
	int op;			/* Semd__Request__OpCase */
	uint8_t *frame;		/* encoded, kept to resend after a resume */
	size_t frame_len;
	uint64_t sent_gen;	/* connection it was last written to (0: none) */
	int64_t sent_at;	/* monotonic ms, just before that write */
	char *name;		/* down/up: for hold bookkeeping */
	uint32_t n;
	uint32_t lease_ms;
	uint64_t permit_id;
	bool done;
	bool internal;		/* library's own (cancel, give-back): no waiter */
	bool async;		/* completed through deliver_run(), fn may be NULL */
	bool resent;		/* written again after a resume */
	bool keepalive;		/* the library's keepalive ping */
	bool not_run;		/* refused unrun by a node that does not lead */
	int error;		/* client-side failure when reply is NULL */
	Semd__Reply *reply;
	semc_done_fn fn;
	void *arg;
};

struct semc_hold {
	struct semc_hold *next;
	char *name;
	uint64_t permit_id;
	uint64_t token;
	uint32_t n;
};

/* Callbacks and events gathered under the lock, delivered after it. */
struct semc_evq {
	struct semc_evq *next;
	struct semc_event ev;
	char *name;
	char *message;
	struct semc_watch_event *watch;	/* a watch's event: owned (watch.c) */
};

struct semc_deliver {
	struct semc_req *done;		/* completed async requests, in the order */
	struct semc_req **done_tail;	/* they completed: their callbacks run so */
	bool events;			/* events were queued on the handle */
};

/* A TLS session kept for resumption (tlssess.c), per server address. */
struct semc_tls_sess {
	char addr[400];
	SSL_SESSION *sess;
};

/* The client-side lease: D, the clock-rate drift bound (parts per million
 * of the lease), and M, the margin: max(SEMC_LEASE_MARGIN_MIN, lease / 20). */
#define SEMC_LEASE_DRIFT_PPM	10000
#define SEMC_LEASE_MARGIN_MIN	50

struct semc {
	pthread_mutex_t lock;
	pthread_mutex_t wlock;
	pthread_cond_t cond;
	pid_t pid;		/* the process that made the handle */
	unsigned fork_gen;	/* its fork generation (semc_forked()) */

	struct semc_addr addr;		/* the one in use (connecting: lock) */
	bool addr_set;
	/* The daemons of a cluster (-s a,b,c), tried in turn; addr is one. */
	struct semc_addr addrs[SEMC_MAX_ADDRS];
	unsigned naddrs;
	unsigned cur;			/* addrs[cur] is addr */
	unsigned round_fails;		/* failed attempts since a success */
	char *client_name;
	/* The session this program runs under (semc_set_parent, else
	 * $SEMD_SESSION): given in the Hello of a new session. */
	uint64_t parent_session, parent_link;
	_Atomic uint32_t lease_ms;
	_Atomic int timeout_ms;
	bool reconnect;
	char *tls_ca, *tls_cert, *tls_key;
	SSL_CTX *ssl_ctx;
	pthread_mutex_t tls_lock;	/* guards tls_sess */
	struct semc_tls_sess tls_sess[SEMC_MAX_ADDRS];
	unsigned char tls_id[32];	/* hash of the CA file's name and our certificate */
	char *tls_dir;			/* $SEMD_TLS_SESSION_DIR, when usable */
	semc_event_fn ev_fn;
	void *ev_arg;
	/* Events wait here, in the order of the changes they report, and are
	 * delivered by one thread at a time (ev_runner), in that order. */
	struct semc_evq *evq, **evq_tail;
	bool ev_running;
	pthread_t ev_runner;

	bool ka_want;		/* a keepalive thread for sessions with a lease */
	bool ka_running;	/* started (joined by semc_free) */
	pthread_t ka_thread;
	int ka_wake[2];		/* a pipe that wakes the thread's poll */
	bool detach;		/* semc_detach(): sent again on every resume */

	struct semc_conn *conn;	/* NULL while disconnected */
	uint64_t gen;
	bool ever_connected;
	bool reading;
	bool connecting;
	bool closing;
	uint64_t next_id;
	struct semc_req *pending;
	struct semc_hold *holds;
	struct semc_watcher *watchers;	/* watch.c: a watch's id and callback */
	uint64_t lost_ids[64];	/* recently lost permits, a ring */
	unsigned lost_next;

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
	int64_t lease_base;	/* monotonic ms: when the latest answered request was sent */
	int64_t ka_sent;	/* when the latest keepalive ping was queued */
	bool ka_out;		/* a keepalive ping is in flight */
	bool flush_wanted;	/* requests queued by a thread that did not wait for wlock */
	int64_t next_retry;
	int backoff;

	uint8_t *rbuf;		/* the reader's: partial frames */
	size_t rlen, rcap;
	uint64_t rbuf_gen;
};

/* util.c */
unsigned semc_fork_gen(void);
bool semc_forked(const struct semc *c);
int64_t semc_now_ms(void);
int64_t semc_wall_ms(void);
int semc_addr_parse(const char *s, struct semc_addr *a);
int semc_code_error(int code);
int semc_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void semc_clear_message(void);

/* conn.c */
void semc_addr_use_locked(struct semc *c, unsigned i);
void semc_addr_redirect_locked(struct semc *c, const Semd__Redirect *rd);
int semc_str_set(char **dst, const char *s);
void semc_detach_mark(struct semc *c);

/* session.c */
void semc_deliver_init(struct semc_deliver *d);
void semc_event_queue_locked(struct semc *c, struct semc_deliver *d, struct semc_evq *e);
void semc_event_push_locked(struct semc *c, struct semc_deliver *d, enum semc_event_type type,
			    int error, const char *message, const struct semc_hold *h);
void semc_evq_free(struct semc_evq *e);
void semc_deliver_run(struct semc *c, struct semc_deliver *d);
struct semc_req *semc_req_new(struct semc *c, Semd__Request *rq);
void semc_req_free(struct semc_req *r);
struct semc_req *semc_internal_push_locked(struct semc *c, Semd__Request *rq);
void semc_pending_unlink_locked(struct semc *c, struct semc_req *r);
void semc_req_complete_locked(struct semc *c, struct semc_req *r, Semd__Reply *rp, int err,
			      struct semc_deliver *d);
void semc_session_lost_locked(struct semc *c, int err, const char *why,
			      struct semc_deliver *d);
bool semc_permit_lost(struct semc *c, uint64_t permit_id);
void semc_conn_broken_locked(struct semc *c, struct semc_conn *k, const char *why,
			     struct semc_deliver *d);
int64_t semc_lease_end_locked(const struct semc *c);
void semc_lease_check_locked(struct semc *c, int64_t now, struct semc_deliver *d);
bool semc_reconnect_due_locked(const struct semc *c, int64_t now);
bool semc_duties_locked(struct semc *c, int64_t now, struct semc_deliver *d);
int semc_timeout_locked(struct semc *c, int64_t now);

/* connect.c */
int semc_cluster_status_raw(struct semc *c, Semd__Reply **out, int timeout_ms);
int semc_conn_try(struct semc *c, int64_t deadline);

/* reader.c */
void semc_flush(struct semc *c);
void semc_flush_try(struct semc *c);
int semc_reader_turn_locked(struct semc *c, int timeout_ms, int wake_fd);
int semc_submit(struct semc *c, struct semc_req *r);
void semc_cond_wait_ms_locked(struct semc *c, int ms);
int semc_wait(struct semc *c, struct semc_req *r, int64_t deadline, bool *ghost);
int semc_call(struct semc *c, Semd__Request *rq, int64_t extra_ms, Semd__Reply **out);
int64_t semc_call_async(struct semc *c, Semd__Request *rq, semc_done_fn fn, void *arg);

/* keepalive.c */
int semc_keepalive_start_locked(struct semc *c);
void semc_keepalive_stop(struct semc *c);

/* ops.c */
int semc_reply_error(const Semd__Reply *rp);

/* result.c */
/* How a result is made from a reply's body (a table: see result.c). */
struct semc_conv;
extern const struct semc_conv semc_info_conv, semc_list_conv, semc_stats_conv,
	semc_multi_conv, semc_holds_conv, semc_where_conv, semc_cluster_conv;
void semc_grant_copy(struct semc_grant *g, const Semd__Grant *pg);
void *semc_convert(const struct semc_conv *cv, const Semd__Reply *rp);
void semc_result_deliver(struct semc *c, struct semc_req *r);

/* watch.c */
struct semc_watcher;
void semc_watch_push_locked(struct semc *c, Semd__Reply *rp, struct semc_deliver *d);
void semc_watch_deliver(struct semc *c, struct semc_watch_event *ev);
void semc_watch_event_free(struct semc_watch_event *ev);
void semc_watchers_free(struct semc *c);

/* tlssess.c */
void semc_tls_sess_setup(struct semc *c, SSL_CTX *ctx, const char *ca);
SSL_SESSION *semc_tls_sess_get(struct semc *c, const char *addr);
void semc_tls_sess_put(struct semc *c, const char *addr, SSL_SESSION *sess);
void semc_tls_sess_free(struct semc *c);

/* tls.c */
int semc_tls_setup(struct semc *c);
void semc_tls_free(struct semc *c);

/* xprt.c */
int semc_fd_wait(int fd, short events, int64_t deadline);
int semc_tcp_open(struct semc *c, struct semc_conn *k, int64_t deadline);
int semc_xprt_setup(struct semc *c);
int semc_conn_open(struct semc *c, int64_t deadline, struct semc_conn **out);
void semc_conn_put_locked(struct semc_conn *k);
int semc_conn_write_all(struct semc_conn *k, const uint8_t *buf, size_t len, int64_t deadline);
int semc_frame_exchange(struct semc *c, struct semc_conn *k, int64_t deadline,
			Semd__Request *rq, Semd__Reply **out, int64_t *sent_at, const char *what);

#endif
