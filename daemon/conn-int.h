/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/conn-int.h - what the files of the connection layer, backup.c
 * and the two feeds (feed_memory.c, feed_log.c) share; nothing else
 * includes it.
 *
 * Calls go one way, from the bottom up: conn_io.c (output, reading
 * switched off and on, the close), conn_reply.c (replies, the mailboxes),
 * backup.c (a Backup's chunks), conn_req.c (a request decoded, checked,
 * handed on), conn_input.c (a read's frames), conn.c (a connection's life
 * and events), conn_accept.c (new clients); the feeds call any of them,
 * and are called only through srv->feed.
 *
 * Threads: a connection belongs to one worker (one event loop and thread)
 * and only that thread touches it. Every call into the state machine runs
 * under the server lock (functions named _locked expect it held); a reply
 * the state machine makes for a client of another worker goes to that
 * worker's mailbox (conn_reply.c), which the owner empties into its
 * connections when it next takes the lock (conn_mbox_deliver_locked).
 */
#ifndef SEMD_CONN_INT_H
#define SEMD_CONN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "daemon/conn.h"

/* conn.c */
/* (Re-)arm the handshake or idle timer. */
void conn_arm_timer(struct conn *c);
/* Under the lock, on c's thread: c's Hello was taken (a feed's word). */
void conn_hello_locked(struct conn *c);
/* Serve a new client of w (counted: already in srv->nconns). */
void conn_start(struct worker *w, int fd, SSL *ssl, struct sockaddr *sa,
    bool is_unix, bool counted);

/* conn_accept.c */
/* A client for w from its acceptq (p is freed; stop: just closed). */
void conn_start_pending(struct worker *w, struct conn_pending *p, bool stop);
/* After the loops ended: free every client of every loop, and handshakes. */
void conn_free_all(struct server *srv);

/* conn_io.c */
/* Arm ev to fire in ms milliseconds. */
void conn_timer_add_ms(struct event *ev, uint64_t ms);
/*
 * Make room for need bytes behind used in *buf (*cap bytes, doubled from
 * first): 0, or -ENOMEM with the buffer as it was.
 */
int conn_buf_reserve(uint8_t **buf, size_t *cap, size_t used, size_t need,
    size_t first);
/* The write event of c's socket (for the backlog). */
void conn_write_cb(evutil_socket_t fd, short what, void *arg);
/* Wake up when the socket drains. */
void conn_want_write(struct conn *c);
/* Write what was kept back; finish a pending close once it is out. */
void conn_drain(struct conn *c);
/* Queue c for the one write at the end of this loop turn. */
void conn_queue_flush(struct conn *c);
/* Queue c, which has notices only, for the notice timer. */
void conn_queue_notice(struct conn *c);
/* Take c off the flush queue (if it is on it). */
void conn_unqueue(struct conn *c);
/* Send c's staged replies now (or keep what the socket cannot take). */
void conn_flush(struct conn *c);
/* Write every connection's staged replies (one write each). */
void conn_flush_all(struct worker *w);
/* Bytes written out of turn, still waiting for the socket to drain. */
size_t conn_backlog_len(const struct conn *c);
/* Count c's backlog (none once gone) in its principal's output. */
void conn_count_backlog(struct conn *c, bool gone);
/* freed bytes of buffers were freed: give the heaps' free pages back soon. */
void conn_trim_later(struct worker *w, size_t freed);
/* Cut a client off: nothing more is written, it is freed soon. */
void conn_drop(struct conn *c);
/* Nothing more is written; freed from the loop (not counted as dropped). */
void conn_kill(struct conn *c);
/*
 * What a connection offers its feed (under the lock, on c's thread): stop
 * reading it; hold its frames from the one being run (they stay in c->in,
 * and it is not read); read it again, the frames it held first. From
 * another thread, conn_resume_later_locked() (conn_reply.c).
 */
void conn_pause_locked(struct conn *c);
void conn_hold_locked(struct conn *c);
void conn_resume_locked(struct conn *c);

/* conn_input.c */
/*
 * Run n bytes of input: the whole frames where they lie, a partial one
 * kept in c->in; the replies written, the feed's batch handed on.
 */
void conn_input(struct conn *c, const uint8_t *buf, size_t n);
/* A frame was not completed within frame-timeout. */
void conn_ftimer_cb(evutil_socket_t fd, short what, void *arg);

/* conn_req.c */
/* Under the lock: decode one frame's payload and run it; false: stop reading. */
bool conn_handle_locked(struct conn *c, const uint8_t *data, size_t plen);
/* Under the lock: PROTOCOL_ERROR (id 0) to what could not be decoded. */
void conn_protocol_error_locked(struct conn *c, const char *why);
/* Under the lock: UNAVAILABLE, and where the leader is (id 0: a notice). */
void conn_redirect_locked(struct conn *c, uint64_t id);

/* conn_reply.c */
/* Under the lock: stage the frames other workers left for w's clients. */
void conn_mbox_deliver_locked(struct worker *w);
/* The sm_out close and note effects (under the lock). */
void conn_close_effect_locked(void *ctx, void *conn);
void conn_note_locked(void *ctx, void *conn, const char *msg);
/* Under the lock: a reply with just a code and a message. */
void conn_reply_code_locked(struct conn *c, uint64_t id, Semd__Code code,
    const char *msg);
/*
 * Under the lock, any thread: have c's own loop resume it (a record in its
 * mailbox, behind the replies there). False: no memory, ask again later.
 */
bool conn_resume_later_locked(struct conn *c);

#endif
