/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/server.h - the libevent shell around the state machine.
 *
 * server.c owns the event base, the state (struct sm), the one deadline
 * timer, signals and systemd notification; listen.c the listening sockets;
 * conn.c the client connections (frames in, replies out). None of them
 * decides anything about semaphores: they decode, call the state machine (state.h), encode.
 */
#ifndef SEMD_SERVER_H
#define SEMD_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "arch/arch.h"
#include "arch/spinlock.h"
#include "core/list.h"
#include "daemon/config.h"
#include "daemon/hmap.h"
#include "daemon/state.h"

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
	bool			in_read;	/* a read callback will flush */
	struct event		*deadline;	/* armed for sm_next_deadline() */
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
	/* This loop's commands for the log, sent at the end of a read. */
	struct sm_batch		batch;
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
	struct list_head	listeners;
	size_t			nconns;		/* all workers, under lock */
	uint64_t		next_client;	/* client ids, under lock */
	struct event		*sigs[4];
	struct event		*watchdog;
	uint64_t		watchdog_ms;	/* systemd's watchdog period */
	struct event		*accept_resume;	/* after EMFILE */
	bool			stopping;
	bool			systemd;	/* NOTIFY_SOCKET is set */
	server_reload_fn	reload;
	void			*reload_arg;
	struct metrics		*metrics;	/* metrics.c, or NULL */
	struct durable		*durable;	/* --data-dir, or NULL: in memory */
	struct hmap		conn_ids;	/* with a log: client id -> conn */
	uint8_t			hash_key[16];	/* the state's */
	struct tls_server	*tls;		/* the tls: listeners' context */
	/* TLS handshakes under way, on every loop (tls-max-startups): */
	pthread_mutex_t		hs_lock;
	size_t			handshakes;
	struct list_head	hs_list;	/* struct conn_pending */
};

/*
 * A client accepted by worker 0 for another worker, or a TLS client whose
 * handshake has not finished yet (conn.c).
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

struct listener {
	struct server		*srv;
	struct evconnlistener	*evl;
	char			*addr;		/* the bound address, unix:/tcp: */
	char			*unlink_path;	/* our UNIX socket file */
	bool			is_unix;
	struct list_head	entry;
};

struct conn {
	struct server		*srv;
	struct worker		*w;		/* the loop that serves it */
	struct bufferevent	*bev;		/* plain: writes a backlog; NULL for TLS */
	struct sm_client	*client;
	struct event		*timer;		/* handshake, then idle */
	struct event		*ftimer;	/* a frame to complete: frame-timeout */
	uint64_t		frames;		/* frames read */
	struct event		*kill;		/* deferred close */
	struct event		*rev;		/* direct: our read event */
	struct evbuffer		*in;		/* direct: a partial frame */
	char			peer[80];
	bool			closing;	/* close once output is flushed */
	bool			dead;		/* close now, write nothing more */
	bool			hello;
	bool			direct;		/* plain socket: write(2) it */
	bool			backlog;	/* bev's output may hold bytes */
	int			fd;
	uint64_t		last_input_ms;
	struct list_head	entry;
	uint8_t			*wbuf;		/* replies staged this turn */
	size_t			wlen;
	size_t			wcap;
	struct list_head	flush_entry;	/* w->flushq, when wlen > 0 */
	struct access_id	*id;		/* principal, quota count */
	uint64_t		cid;		/* its client id in the state */
	size_t			proposed;	/* log: request bytes not applied */
	bool			paused;		/* log: not read until they are */
	bool			resuming;	/* log: a resume is in its mailbox */
	struct hnode		cid_node;	/* srv->conn_ids (with a log) */
	bool			open;		/* opened in the state (or queued) */
	bool			logged;		/* log: its OPEN is in the log */
	bool			local;		/* a UNIX peer */
	uint8_t			secret[16];	/* log: for its OPEN */
	/* TLS: we read and write the SSL ourselves (rev, wev). */
	SSL			*ssl;
	struct event		*wev;		/* waiting for the socket to drain */
	uint8_t			*tbuf;		/* replies SSL_write() has not taken */
	size_t			toff;
	size_t			tlen;
	size_t			tcap;
	bool			tls_wwait;	/* wev is armed for tbuf */
	bool			tls_rwant_w;	/* SSL_read() waits for writability */
	bool			tls_wwant_r;	/* SSL_write() waits for input */
	bool			tls_bufs;	/* OpenSSL holds buffers for it */
};

/* server.c */
uint64_t server_now(void);
struct server *server_new(const struct semd_config *cfg, server_reload_fn fn,
    void *arg, int *exit_code);
void server_free(struct server *srv);
/* Open the listeners (socket activation, or cfg.listen, or the defaults). */
int server_listen(struct server *srv);
/* Run until stopped; returns the exit code. */
int server_run(struct server *srv);
/* The worker whose loop runs on this thread. */
extern _Thread_local struct worker *worker_self;
/* True while this thread holds the state lock. */
extern _Thread_local bool server_locked;
/* Take the state lock from worker w (and take in w's mailbox). */
void server_lock(struct worker *w);
/* The same from a thread that is no worker (the log's). */
void server_lock_any(struct server *srv);
void server_unlock_any(struct server *srv);
/* With a log: this node's connection of a client id (under the lock). */
void server_conn_add(struct server *srv, struct conn *c);
void server_conn_remove(struct server *srv, struct conn *c);
void *server_conn_by_id(struct server *srv, uint64_t id);
/* The state machine's settings and effects for this server. */
struct sm_config server_sm_config_of(const struct server *srv);
struct sm_out server_sm_out(void);
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
 * This node stopped leading: every loop tells its clients and closes them,
 * so they go and find the leader (any thread).
 */
void server_drop_clients(struct server *srv);
/* Where clients reach this node (its first TCP or TLS listener), for others. */
void server_client_address(struct server *srv, char *buf, size_t len);

/* listen.c */
int listener_open(struct server *srv, const char *spec);
/* A listening socket (fd, or -errno): for the metrics endpoint too. */
int listener_bind_unix(struct server *srv, const char *path, unsigned int mode);
int listener_bind_tcp(const char *spec);
/* The address a socket is bound to, in the listen syntax (malloc'd). */
char *listener_name(int fd, bool *is_unix);
int listener_adopt(struct server *srv, int fd);
void listener_free(struct listener *l);
void listeners_pause(struct server *srv);
void listeners_resume(struct server *srv);
int listeners_write_ready(struct server *srv, const char *path);

/* alloccount.c: the Stats "allocations" counter, NULL when not counted. */
uint64_t (*alloc_count_get(void))(void);

/* conn.c */
/*
 * A new client from a listener (worker 0): served by the next worker in
 * turn, its TLS handshake (tls) run there too.
 */
void conn_accept(struct server *srv, int fd, struct sockaddr *sa, int salen,
    bool is_unix, bool tls);
void conn_free(struct conn *c);
/* Close after the queued replies are written (or at once if none). */
void conn_close_later(struct conn *c);
/* The sm_out sink: pack a reply into the connection's output. */
void conn_reply(void *ctx, void *conn, const Semd__Reply *r);
/* The sm_out close effect: close once the replies so far are written. */
void conn_close_effect(void *ctx, void *conn);
/* The sm_out note effect: a line in the log. */
void conn_note(void *ctx, void *conn, const char *msg);
/* This node stopped leading: every client of w is told, then closed. */
void conn_drop_all(struct worker *w);
/* With a log, under the lock: len bytes of c's requests were applied. */
void conn_applied_locked(struct conn *c, size_t len);
/* Write every connection's staged replies (one write each). */
void conn_flush_all(struct worker *w);
/* Under the lock: move the frames in w's mailbox to their connections. */
void conn_mbox_deliver(struct worker *w);
/* A client for worker w from its acceptq (p is freed; stop: just closed). */
void conn_start_pending(struct worker *w, struct conn_pending *p, bool stop);
/* After the loops ended: drop the TLS handshakes still under way. */
void conn_handshakes_free(struct server *srv);

#endif
