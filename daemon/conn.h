/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/conn.h - client connections: frames in, replies out.
 *
 * conn.c owns a connection's life (start, its events and timers, close),
 * conn_accept.c hands new clients to their loop (and runs TLS handshakes
 * there), conn_input.c runs the frames a read brought, conn_req.c decodes
 * and runs one request, conn_reply.c packs replies (and the mailboxes
 * between loops), conn_io.c writes them out (and switches reading off and
 * on for the feed). The bytes go through the connection's transport
 * (xprt.h: UNIX, TCP, TLS). What a client may do is asked of the policy
 * (struct conn_policy, access.c's), which decides and never replies. How
 * its requests reach the state is its feed's (feed.h), which keeps what it
 * needs of the connection in c->feed_ctx.
 */
#ifndef SEMD_CONN_H
#define SEMD_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "core/list.h"
#include "daemon/server.h"
#include "daemon/state/state.h"
#include "proto/semd.pb-c.h"
#include "security/acl.h"

struct xprt_ops;
struct access_id;
struct conn_backup;

struct conn {
	struct server		*srv;
	struct worker		*w;		/* the loop that serves it */
	const struct xprt_ops	*xprt;		/* its transport */
	struct event		*timer;		/* handshake, then idle */
	struct event		*ftimer;	/* a frame to complete: frame-timeout */
	bool			ftimer_on;	/* ftimer is armed */
	uint64_t		frames;		/* frames read */
	struct event		*kill;		/* deferred close */
	struct event		*rev;		/* readable */
	struct event		*wev;		/* writable, for the backlog */
	struct evbuffer		*in;		/* a partial frame */
	char			peer[80];
	bool			closing;	/* close once output is flushed */
	bool			dead;		/* close now, write nothing more */
	bool			hello;
	int			fd;
	uint64_t		last_input_ms;
	struct list_head	entry;
	uint8_t			*wbuf;		/* replies staged this turn */
	size_t			wlen;
	size_t			wcap;
	struct list_head	flush_entry;	/* w->flushq, when wlen > 0 */
	bool			noticed;	/* ... or w->noticeq: notices only */
	struct access_id	*id;		/* principal, quota count */
	uint64_t		cid;		/* its client id in the state */
	void			*feed_ctx;	/* the feed's own (feed.h) */
	/* Its reading, as the feed switches it (conn_io.c): */
	bool			paused;		/* not read until resumed */
	bool			held;		/* a frame waits in c->in */
	bool			rerun;		/* run c->in at the next read */
	bool			open;		/* opened in the state (or queued) */
	bool			local;		/* a UNIX peer */
	struct conn_backup	*backup;	/* a Backup being read (backup.c) */
	void			*inner;		/* a client inside the daemon: its owner's */
	/* Replies the transport has not taken yet (the socket was full). */
	uint8_t			*tbuf;
	size_t			toff;
	size_t			tlen;
	size_t			tcap;
	size_t			tcounted;	/* of it, in its principal's output */
	bool			wwait;		/* wev is armed for tbuf */
	bool			rwant_w;	/* a read waits for writability */
	bool			wwant_r;	/* a write waits for input */
	/* TLS: */
	SSL			*ssl;
	bool			tls_bufs;	/* OpenSSL holds buffers for it */
};

/*
 * The access policy a connection asks (access.c's access_policy, set in
 * srv->policy by access_init()). It decides; conn.c answers the client.
 */
struct conn_policy {
	/*
	 * Under the lock: count a new client, whose identity *who was worked
	 * out before the lock (it is taken over; pending: only uid:N, the
	 * names not looked up), against its connection quota. 0 with *out
	 * set; -EDQUOT with why filled; -ENOMEM.
	 */
	int (*open_locked)(struct server *srv, struct acl_subject *who,
	    bool pending, struct access_id **out, char *why, size_t len);
	/* Under the lock: the connection is gone; NULL is a no-op. */
	void (*close_locked)(struct access_id *id);
	/* The principal text ("uid:1000", "cn:web1", "anonymous"). */
	const char *(*principal)(const struct access_id *id);
	/*
	 * Off the lock, before a read's requests are checked: what is slow
	 * (the names of a peer that the rules came to want, through c's
	 * transport) is done here.
	 */
	void (*prepare)(struct conn *c);
	/*
	 * Under the lock: may this request go to the state machine? 0 with
	 * *who filled (privileges, per-principal caps), or the Code of the
	 * refusal with msg filled (and logged).
	 */
	int (*check_locked)(const struct conn *c, const Semd__Request *req,
	    struct sm_caller *who, char *msg, size_t len);
	/*
	 * Any thread, with the lock or not: the replies a connection's socket
	 * has not taken (its backlog) grew or shrank by delta bytes.
	 */
	void (*output)(struct access_id *id, int64_t delta);
	/*
	 * Under the lock: are the backlogs of id's principal over its output
	 * quota? Its connections that do not read are then cut off.
	 */
	bool (*output_over_locked)(const struct access_id *id);
};

/* What server.c's loops call here (given to server_new() by main.c). */
extern const struct server_ops conn_loop_ops;

/*
 * A new client from a listener (worker 0): served by the next worker in
 * turn, its TLS handshake (tls) run there too.
 */
void conn_accept(struct server *srv, int fd, struct sockaddr *sa, int salen,
    bool is_unix, bool tls);
void conn_free(struct conn *c);
/*
 * A client inside the daemon (the HTTP front door's, daemon/http/): no
 * socket; its transport xprt is handed the frames of its replies (write)
 * and told of its end (close). Counted and opened in the state like a
 * socket's client, as who (taken over: its names looked up already), local
 * (its close is its session's death unless it sent Detach). inner is the
 * owner's. NULL when refused, with *err (-EDQUOT: the principal's
 * connection quota, why filled; -EMFILE, -ESHUTDOWN, -ENOMEM).
 */
struct conn *conn_start_inner(struct worker *w, const struct xprt_ops *xprt,
    void *inner, struct acl_subject *who, const char *peer, int *err,
    char *why, size_t len);
/*
 * Requests of an inner client, n bytes of whole frames: run as a socket's
 * input is (one lock, one write of the replies, one batch for the log).
 */
void conn_inner_input(struct conn *c, const uint8_t *buf, size_t n);
/* Close after the queued replies are written (or at once if none). */
void conn_close_later(struct conn *c);
/* The sm_out sink, under the lock: pack a reply into c's output. */
void conn_reply_locked(void *ctx, void *conn, const Semd__Reply *r);
/* The sm_out notice sink, under the lock: a watch event packed once. */
void conn_notice_locked(void *ctx, void *conn, uint64_t watch,
    const uint8_t *ev, size_t len);
/*
 * Tell a client we will not serve why, in one frame written without
 * waiting (a full socket buffer just loses it).
 */
void conn_tell_fd(int fd, Semd__Code code, const char *why);

#endif
