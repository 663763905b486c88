/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/server.h - the event loops around the state machine.
 *
 * server.c owns the event loops (workers), the state (struct sm) and its
 * lock, the deadline timers, signals, stop and systemd notification; the
 * configuration's effects and SIGHUP's reload are server_config.c's. It
 * calls nothing above it: what it needs of the connections is conn.c's
 * struct server_ops, given to server_new(), and of the listeners a hook
 * (srv->unlisten). How requests reach the state is the feed it chose
 * (feed.h: in memory, or through the log). Above it, one way: conn
 * (conn.h), then listen, access and metrics (listen.h, access.h,
 * metrics.h), then main.c, which ties them together. None of them decides
 * anything about semaphores: they decode, call the state machine (state.h),
 * encode.
 */
#ifndef SEMD_SERVER_H
#define SEMD_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "arch/arch.h"
#include "arch/spinlock.h"
#include "core/list.h"
#include "daemon/config.h"
#include "daemon/state/hmap.h"
#include "daemon/state/state.h"

struct conn_pending;
struct conn_policy;
struct feed;
struct feed_state;
struct server_ops;
struct tls_hs;
struct tls_server;

/* Re-read the configuration for SIGHUP; 0 or an error with err filled. */
typedef int (*server_reload_fn)(void *arg, struct semd_config *out,
    char *err, size_t errlen);

/*
 * One event loop and its thread. Worker 0 is the main thread's loop, which
 * also owns the listeners, signals and metrics; with --threads N the
 * clients (plain and TLS, whose handshake runs on the loop that will serve
 * them) are spread over workers 0..N-1. The state machine is
 * shared: every call into it runs under srv->lock (server_lock/unlock). A
 * reply for a client of another worker (a hand-off across threads) is
 * packed into that worker's mailbox under the lock, and the worker is woken
 * through its eventfd; it moves the frames to their connections the next
 * time it takes the lock, so every client sees its replies in the order the
 * state machine made them.
 */
struct worker {
	struct server		*srv;
	unsigned int		idx;
	struct event_base	*base;
	pthread_t		thread;
	bool			running;	/* thread started */
	struct list_head	conns;
	size_t			nconns;
	struct list_head	flushq;		/* conns with staged replies */
	struct event		*flush_ev;	/* flushes flushq later */
	struct list_head	noticeq;	/* conns with notices only */
	struct event		*notice_ev;	/* flushes noticeq (conn_io.c) */
	uint32_t		notice_ms;	/* ... after so long */
	uint32_t		notice_n;	/* written in this round */
	struct event		*trim_ev;	/* malloc_trim() after a flood */
	size_t			trim_freed;	/* bytes freed since the last */
	bool			in_read;	/* a read callback will flush */
	struct event		*deadline;	/* armed for the feed's deadline */
	uint64_t		deadline_at;
	struct event		*stop_timer;	/* hard stop after a grace time */
	int			wakefd;		/* eventfd: mailbox, accepts, stop */
	struct event		*wake_ev;
	/* Under srv->lock: */
	uint8_t			*mbox;		/* { conn *, u32 len, frame }... */
	size_t			mlen;
	size_t			mcap;
	struct list_head	acceptq;	/* struct conn_pending */
	bool			stop;		/* close every client and exit */
	bool			drop_all;	/* close every client (leadership lost) */
	/* Written by this worker only: */
	_Atomic uint64_t	dropped;	/* clients cut off */
	_Atomic uint64_t	beat_ms;	/* last heartbeat (watchdog) */
	struct event		*beat;		/* its timer, with a watchdog */
	_Atomic uint64_t	tls_full;	/* TLS handshakes: full, */
	_Atomic uint64_t	tls_resumed;	/* ... and resumed from a ticket */
	size_t			ntls;		/* TLS clients of this loop */
	struct event		*tls_sweep;	/* gives idle ones' buffers back */
};

/*
 * The settings the event loops read outside the state lock, copied from
 * cfg at start and after a reload (a reload rewrites cfg while they run).
 */
struct server_live {
	_Atomic uint32_t	idle_timeout_ms;
	_Atomic uint32_t	handshake_timeout_ms;
	_Atomic uint32_t	frame_timeout_ms;
	_Atomic uint32_t	max_output;
	_Atomic uint32_t	max_frame;
	_Atomic bool		acl_names;	/* rules name users or groups */
};
#define SRV_LIVE(srv, f) atomic_load_explicit(&(srv)->live.f, memory_order_relaxed)

struct server {
	struct event_base	*base;		/* workers[0].base */
	struct semd_config	cfg;
	struct server_live	live;
	struct sm		*sm;
	struct spinlock		lock;		/* the state machine, mailboxes */
	struct worker		*workers;
	unsigned int		nworkers;
	unsigned int		next_worker;	/* round robin for new clients */
	uint64_t		armed_min;	/* earliest armed deadline timer */
	struct worker		*armed_by;	/* whose timer that is */
	struct list_head	listeners;	/* struct listener (listen.c) */
	char			client_addr[256]; /* the first TCP or TLS one's */
	/* Set by listen.c: close the listeners (a stop, or the end). */
	void			(*unlisten)(struct server *srv);
	size_t			nconns;		/* all workers, under lock */
	uint64_t		next_client;	/* client ids, under lock */
	struct event		*sigs[4];
	struct event		*watchdog;
	uint64_t		watchdog_ms;	/* systemd's watchdog period */
	struct event		*accept_resume;	/* after EMFILE (listen.c) */
	bool			stopping;
	bool			systemd;	/* NOTIFY_SOCKET is set */
	server_reload_fn	reload;
	void			*reload_arg;
	/* How requests reach the state (feed.h), chosen once; its own. */
	const struct feed	*feed;
	struct feed_state	*feed_state;
	const struct server_ops	*ops;		/* conn.c's */
	const struct conn_policy *policy;	/* access.c's (access_init()) */
	uint8_t			hash_key[16];	/* the state's */
	struct tls_server	*tls;		/* the tls: listeners' context */
	/* TLS handshakes under way, on every loop (tls-max-startups): */
	pthread_mutex_t		hs_lock;
	size_t			handshakes;
	struct list_head	hs_list;	/* struct conn_pending */
};

/*
 * A client accepted by worker 0 for another worker, or a TLS client whose
 * handshake has not finished yet: handed from loop to loop (conn_accept.c).
 */
struct conn_pending {
	int			fd;
	bool			is_unix;
	bool			tls;
	int			salen;
	struct sockaddr_storage	ss;
	struct list_head	entry;		/* the worker's acceptq */
	/* TLS: on srv->hs_list (under hs_lock) until the handshake ends. */
	struct list_head	hs_entry;
	struct worker		*w;
	struct tls_hs		*hs;		/* under way on w's loop */
};

/*
 * What the loops call in the layer above them: conn.c's conn_loop_ops,
 * given to server_new() by main.c, so that server.c names nothing of it.
 */
struct conn;

struct server_ops {
	struct sm_out	out;		/* the state machine's effects on clients */
	/* Under the lock: move the frames in w's mailbox to its clients. */
	void		(*deliver_locked)(struct worker *w);
	/* Write every staged reply of w's clients (one write each). */
	void		(*flush)(struct worker *w);
	/* A client for w from its acceptq (p is freed; stop: just closed). */
	void		(*start)(struct worker *w, struct conn_pending *p, bool stop);
	/* This node stopped leading: every client of w is told, then closed. */
	void		(*drop_all)(struct worker *w);
	/* A stop: close every client of w once its replies are written. */
	void		(*close_all)(struct worker *w);
	/* After the loops ended: free every client and TLS handshake. */
	void		(*free_all)(struct server *srv);
};

/* server.c */
uint64_t server_now(void);
struct server *server_new(const struct semd_config *cfg,
    const struct server_ops *ops, server_reload_fn fn, void *arg,
    int *exit_code);
void server_free(struct server *srv);
/* Take the state up (with a log: replay it); 0 or an exit code. */
int server_start(struct server *srv);
/* Announce readiness (status: systemd's), run until stopped; the exit code. */
int server_run(struct server *srv, const char *status);
/* The worker whose loop runs on this thread. */
extern _Thread_local struct worker *worker_self;
/* True while this thread holds the state lock. */
extern _Thread_local bool server_locked;
/* Take the state lock from worker w (and take in w's mailbox). */
void server_lock(struct worker *w);
/* The same from a thread that is no worker (the log's). */
void server_lock_any(struct server *srv);
void server_unlock_any(struct server *srv);
/* The state machine's settings and effects for this server. */
struct sm_config server_sm_config_of(const struct server *srv);
struct sm_out server_sm_out(const struct server *srv);
/* Re-arm the deadline timer, drop the lock, wake the workers written to. */
void server_unlock(struct worker *w);
/* Mark worker w to be woken at the next server_unlock() (under the lock). */
void server_wake_later(struct worker *w);
/* Wake worker w now (any thread, no lock needed). */
void server_wake(struct worker *w);
/* Clients connected, all workers (takes the lock). */
size_t server_nconns(struct server *srv);
/* Clients cut off, all workers. */
uint64_t server_dropped(struct server *srv);
/* Start a graceful stop. */
void server_stop(struct server *srv, const char *why);
/*
 * This node stopped leading: every loop tells its clients where to go and
 * closes them (any thread).
 */
void server_drop_clients(struct server *srv);

/* alloccount.c: the Stats "allocations" counter, NULL when not counted. */
uint64_t (*alloc_count_get(void))(void);

#endif
