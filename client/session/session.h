/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/session/session.h - libsemclient's second floor: the session's
 * bookkeeping, under the handle's lock and without I/O. The requests (each
 * encoded once, queued in order, completed by its reply), the holds kept,
 * the watches' callbacks, the events and callbacks gathered under the lock
 * and delivered after it (struct semc_deliver), the replies taken in
 * (dispatch.c), and the session itself: its client-side lease, keepalive
 * duties, a broken connection, its loss. It calls only the base.
 */
#ifndef SEMC_SESSION_H
#define SEMC_SESSION_H

#include "client/handle.h"

/* A request of the handle, from its encoding to its completion. */
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
	bool async;		/* completed through semc_deliver_run(), fn may be NULL */
	bool resent;		/* written again after a resume */
	bool keepalive;		/* the library's keepalive ping */
	bool not_run;		/* refused unrun by a node that does not lead */
	int error;		/* client-side failure when reply is NULL */
	Semd__Reply *reply;
	semc_done_fn fn;
	void *arg;
};

/* A session-bound hold: a permit the session keeps. */
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
	struct semc_watch_event *watch;	/* a watch's event: owned (watchers.c) */
};

/* What a call gathered under the lock, to deliver after it. */
struct semc_deliver {
	struct semc_req *done;		/* completed async requests, in the order */
	struct semc_req **done_tail;	/* they completed: their callbacks run so */
	bool events;			/* events were queued on the handle */
};

/* The client-side lease: D, the clock-rate drift bound (parts per million
 * of the lease), and M, the margin: max(SEMC_LEASE_MARGIN_MIN, lease / 20). */
#define SEMC_LEASE_DRIFT_PPM	10000
#define SEMC_LEASE_MARGIN_MIN	50

/* session/holds.c */
void semc_hold_free(struct semc_hold *h);
void semc_hold_add_locked(struct semc *c, const char *name, const Semd__Grant *g);
void semc_hold_drop_locked(struct semc *c, const char *name, uint64_t permit_id, uint32_t n);
struct semc_hold *semc_hold_take_locked(struct semc *c, uint64_t permit_id);
struct semc_hold *semc_holds_take_all_locked(struct semc *c);
bool semc_permit_lost(struct semc *c, uint64_t permit_id);

/* session/requests.c */
void semc_req_free(struct semc_req *r);
struct semc_req *semc_req_new(struct semc *c, Semd__Request *rq);
void semc_req_queue_locked(struct semc *c, struct semc_req *r);
struct semc_req *semc_internal_push_locked(struct semc *c, Semd__Request *rq);
void semc_pending_unlink_locked(struct semc *c, struct semc_req *r);
void semc_req_complete_locked(struct semc *c, struct semc_req *r, Semd__Reply *rp, int err,
			      struct semc_deliver *d);
bool semc_req_abandon_locked(struct semc *c, struct semc_req *r);

/* session/watchers.c */
struct semc_watcher;
int semc_watcher_add_locked(struct semc *c, uint64_t id, semc_watch_fn fn, void *arg);
void semc_watcher_drop_locked(struct semc *c, uint64_t id);
void semc_watcher_start_locked(struct semc *c, uint64_t id, uint64_t start);
uint64_t semc_watcher_next_rev_locked(struct semc *c, uint64_t id);
void semc_watchers_free(struct semc *c);
void semc_watch_deliver(struct semc *c, struct semc_watch_event *ev);
struct semc_watch_event *semc_watch_event_new(const Semd__WatchEvent *w);
void semc_watch_event_free(struct semc_watch_event *ev);

/* session/events.c */
void semc_deliver_init(struct semc_deliver *d);
void semc_event_queue_locked(struct semc *c, struct semc_deliver *d, struct semc_evq *e);
void semc_event_push_locked(struct semc *c, struct semc_deliver *d, enum semc_event_type type,
			    int error, const char *message, const struct semc_hold *h);
void semc_event_watch_locked(struct semc *c, struct semc_deliver *d,
			     struct semc_watch_event *ev);
void semc_evq_free(struct semc_evq *e);
void semc_deliver_run(struct semc *c, struct semc_deliver *d);

/* session/dispatch.c */
void semc_dispatch_locked(struct semc *c, Semd__Reply *rp, struct semc_deliver *d);

/* session/trust.c */
int64_t semc_lease_end_locked(const struct semc *c);
int64_t semc_trust_end_locked(const struct semc *c);
bool semc_guard_holds_locked(const struct semc *c);
bool semc_grant_void_locked(const struct semc *c, const struct semc_req *r,
			    const Semd__Reply *rp, int64_t now);

/* session/session.c */
void semc_session_lost_locked(struct semc *c, int err, const char *why,
			      struct semc_deliver *d);
void semc_conn_broken_locked(struct semc *c, struct semc_conn *k, const char *why,
			     struct semc_deliver *d);
void semc_lease_check_locked(struct semc *c, int64_t now, struct semc_deliver *d);
bool semc_duties_locked(struct semc *c, int64_t now, struct semc_deliver *d);
int64_t semc_duty_next_locked(const struct semc *c);

#endif
