/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/server.c - the event loops (workers) and the state lock, the
 * state machine's deadline timers, signals, stop, systemd readiness and
 * watchdog. What it asks of the connections goes through srv->ops
 * (conn.c's conn_loop_ops); the configuration's effects are in
 * server_config.c.
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "daemon/feed.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/server-int.h"

#define STOP_GRACE_S 5

/* Monotonic milliseconds: the state machine's clock. */
uint64_t server_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Tell systemd something (no-op without it). */
static void server_notify(struct server *srv, const char *msg)
{
#ifdef HAVE_SYSTEMD
	if (srv->systemd)
		sd_notify(0, msg);
#endif
}

_Thread_local struct worker *worker_self;

/* Workers to wake once this thread drops the lock (bit = worker index). */
static _Thread_local uint64_t server_wake_mask;

/* This thread holds the lock (the lock is not recursive). */
_Thread_local bool server_locked;

/* Take the state lock; frames other workers left for us go out first. */
void server_lock(struct worker *w)
{
	spin_lock(&w->srv->lock);
	server_locked = true;
	if (w->mlen > 0)
		w->srv->ops->deliver_locked(w);
}

/* Take the state lock from a thread that runs no event loop (the log's). */
void server_lock_any(struct server *srv)
{
	spin_lock(&srv->lock);
	server_locked = true;
}

/* Drop it, waking the workers written to. */
void server_unlock_any(struct server *srv)
{
	uint64_t mask = server_wake_mask;
	unsigned int i;

	server_wake_mask = 0;
	server_locked = false;
	spin_unlock(&srv->lock);
	for (i = 0; mask != 0; i++, mask >>= 1)
		if (mask & 1)
			server_wake(&srv->workers[i]);
}

/*
 * Keep a timer armed for the earliest deadline in the state. Every worker
 * has its own timer and arms it only from its own thread; srv->armed_min is
 * the earliest one armed (armed_by's). A worker that moves the earliest
 * deadline before armed_min arms its own timer; the owner of armed_min
 * follows the earliest deadline wherever it moves. A timer left armed for
 * a deadline that went away fires once and finds nothing due.
 */
static void server_arm_locked(struct worker *w)
{
	struct server *srv = w->srv;
	uint64_t next, now, delta;
	struct timeval tv;

	next = srv->feed->deadline_locked(srv);
	if (next >= srv->armed_min && srv->armed_by != w)
		return;
	srv->armed_min = next;
	srv->armed_by = next == UINT64_MAX ? NULL : w;
	if (next == w->deadline_at)
		return;
	w->deadline_at = next;
	if (next == UINT64_MAX) {
		evtimer_del(w->deadline);
		return;
	}
	now = server_now();
	delta = next > now ? next - now : 0;
	tv.tv_sec = (time_t)(delta / 1000);
	tv.tv_usec = (suseconds_t)(delta % 1000) * 1000;
	evtimer_add(w->deadline, &tv);
}

/* Arm the deadline timer, drop the lock, wake the workers we wrote to. */
void server_unlock(struct worker *w)
{
	uint64_t mask;
	unsigned int i;

	server_arm_locked(w);
	mask = server_wake_mask;
	server_wake_mask = 0;
	server_locked = false;
	spin_unlock(&w->srv->lock);
	for (i = 0; mask != 0; i++, mask >>= 1)
		if (mask & 1)
			server_wake(&w->srv->workers[i]);
}

/* Wake w at the next server_unlock() of this thread. */
void server_wake_later(struct worker *w)
{
	if (w != worker_self)
		server_wake_mask |= UINT64_C(1) << w->idx;
}

/* Wake w's loop through its eventfd. */
void server_wake(struct worker *w)
{
	uint64_t one = 1;
	ssize_t n;

	do
		n = write(w->wakefd, &one, sizeof one);
	while (n < 0 && errno == EINTR);
	/* EAGAIN: the counter is full, so a wake-up is pending anyway. */
}

/* Clients connected to every worker. */
size_t server_nconns(struct server *srv)
{
	size_t n;

	server_lock(worker_self);
	n = srv->nconns;
	server_unlock(worker_self);
	return n;
}

/* Clients cut off by every worker. */
uint64_t server_dropped(struct server *srv)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < srv->nworkers; i++)
		n += atomic_load_explicit(&srv->workers[i].dropped,
		    memory_order_relaxed);
	return n;
}

/* The state's earliest deadline came (this worker's timer): the feed ticks it. */
static void server_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct server *srv = w->srv;

	server_lock(w);
	w->deadline_at = UINT64_MAX;
	if (srv->armed_by == w) {
		srv->armed_by = NULL;
		srv->armed_min = UINT64_MAX;
	}
	srv->feed->tick_locked(srv);
	server_unlock(w);
}

/* Replies staged outside a read callback (timers, closes, stop). */
static void server_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	w->srv->ops->flush(w);
}

/* Close every client of w; its loop ends when the last one is gone. */
static void worker_stop(struct worker *w)
{
	struct timeval tv = { STOP_GRACE_S, 0 };
	size_t n;

	w->srv->ops->close_all(w);
	server_lock(w);
	n = w->nconns;
	server_unlock(w);
	if (n == 0)
		event_base_loopexit(w->base, NULL);
	else
		evtimer_add(w->stop_timer, &tv);
}

/* The eventfd: frames in the mailbox, clients to serve, or a stop. */
static void worker_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct list_head q;
	struct conn_pending *p;
	uint64_t v;
	bool stop, drop;

	if (read(fd, &v, sizeof v) < 0 && errno != EAGAIN)
		log_debug("eventfd: %s", strerror(errno));
	INIT_LIST_HEAD(&q);
	server_lock(w);
	drop = w->drop_all;
	w->drop_all = false;
	while (!list_empty(&w->acceptq)) {
		p = list_first_entry(&w->acceptq, struct conn_pending, entry);
		list_del_init(&p->entry);
		list_add_tail(&p->entry, &q);
		if (w->stop && !p->tls)
			w->srv->nconns--;	/* counted by conn_accept() */
	}
	stop = w->stop;
	server_unlock(w);
	w->srv->ops->flush(w);
	while (!list_empty(&q)) {
		p = list_first_entry(&q, struct conn_pending, entry);
		list_del_init(&p->entry);
		w->srv->ops->start(w, p, stop);
	}
	if (drop && !stop)
		w->srv->ops->drop_all(w);
	if (stop && !event_base_got_exit(w->base))
		worker_stop(w);
}

/*
 * This node stopped leading: every loop tells its clients and closes them,
 * so they go and find the leader (any thread).
 */
void server_drop_clients(struct server *srv)
{
	unsigned int i;

	server_lock_any(srv);
	for (i = 0; i < srv->nworkers; i++) {
		srv->workers[i].drop_all = true;
		server_wake_later(&srv->workers[i]);
	}
	server_unlock_any(srv);
}

/* The grace time of a stop ran out. */
static void server_stop_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	log_warn("%zu client(s) still connected after %d s, exiting anyway",
	    w->nconns, STOP_GRACE_S);
	event_base_loopexit(w->base, NULL);
}

/* Make worker i: its event base and events. */
static int worker_init(struct server *srv, unsigned int i)
{
	struct worker *w = &srv->workers[i];

	w->srv = srv;
	w->idx = i;
	w->wakefd = -1;
	w->deadline_at = UINT64_MAX;
	INIT_LIST_HEAD(&w->conns);
	INIT_LIST_HEAD(&w->flushq);
	INIT_LIST_HEAD(&w->noticeq);
	INIT_LIST_HEAD(&w->acceptq);
	w->base = event_base_new();
	if (w->base == NULL) {
		log_err("cannot create a libevent base");
		return -1;
	}
	/* The mailbox always keeps room for one drop record (conn.c). */
	w->mcap = 4096;
	w->mbox = malloc(w->mcap);
	if (w->mbox == NULL)
		return -1;
	w->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->wakefd < 0) {
		log_err_errno(errno, "eventfd");
		return -1;
	}
	w->flush_ev = event_new(w->base, -1, 0, server_flush_cb, w);
	w->deadline = evtimer_new(w->base, server_deadline_cb, w);
	w->stop_timer = evtimer_new(w->base, server_stop_timer_cb, w);
	w->wake_ev = event_new(w->base, w->wakefd, EV_READ | EV_PERSIST,
	    worker_wake_cb, w);
	if (w->flush_ev == NULL || w->deadline == NULL ||
	    w->stop_timer == NULL || w->wake_ev == NULL ||
	    event_add(w->wake_ev, NULL) != 0) {
		log_err("out of memory making an event loop");
		return -1;
	}
	return 0;
}

/* Free worker w's loop (its thread has ended; its clients are gone). */
static void worker_free(struct worker *w)
{
	struct event *evs[] = { w->tls_sweep, w->flush_ev, w->notice_ev,
	    w->trim_ev, w->deadline, w->stop_timer, w->beat, w->wake_ev };
	struct list_head *pos, *tmp;
	struct conn_pending *p;
	size_t i;

	if (w->srv == NULL)
		return;
	list_for_each_safe(pos, tmp, &w->acceptq) {
		p = list_entry(pos, struct conn_pending, entry);
		close(p->fd);
		free(p);
	}
	INIT_LIST_HEAD(&w->acceptq);
	for (i = 0; i < sizeof evs / sizeof evs[0]; i++)
		if (evs[i] != NULL)
			event_free(evs[i]);
	if (w->wakefd >= 0)
		close(w->wakefd);
	free(w->mbox);
	if (w->base)
		event_base_free(w->base);
}

/* A worker thread: run its loop until it is told to stop. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;

	worker_self = w;
	if (event_base_dispatch(w->base) < 0)
		log_err("event loop %u failed", w->idx);
	return NULL;
}

#ifdef HAVE_SYSTEMD
/* A worker's heartbeat for the watchdog: its loop still runs. */
static void worker_beat_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	atomic_store_explicit(&w->beat_ms, server_now(), memory_order_relaxed);
}

/*
 * Keep systemd's watchdog fed while every event loop runs: a loop that
 * has not beaten for a whole watchdog period (stuck, or spinning on the
 * state lock) withholds the ping, and systemd restarts the service.
 */
static void server_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	uint64_t now = server_now(), beat;
	unsigned int i;

	for (i = 1; i < srv->nworkers; i++) {
		beat = atomic_load_explicit(&srv->workers[i].beat_ms,
		    memory_order_relaxed);
		if (now > beat && now - beat > srv->watchdog_ms) {
			log_err("event loop %u has not run for %" PRIu64
			    " ms: no watchdog ping", i, now - beat);
			return;
		}
	}
	server_notify(srv, "WATCHDOG=1");
}
#endif

/*
 * Graceful stop: no new clients, waiters hear UNAVAILABLE, every connection
 * closes once its replies are written.
 */
void server_stop(struct server *srv, const char *why)
{
	struct worker *w0 = &srv->workers[0];
	unsigned int i;

	if (srv->stopping)
		return;
	log_notice("%s: stopping (%zu clients)", why, server_nconns(srv));
	server_notify(srv, "STOPPING=1\nSTATUS=stopping");
	if (srv->unlisten != NULL)
		srv->unlisten(srv);
	server_lock(w0);
	srv->stopping = true;
	/* In memory the state goes with the process; a log keeps it. */
	srv->feed->stopping_locked(srv);
	for (i = 1; i < srv->nworkers; i++) {
		srv->workers[i].stop = true;
		server_wake_later(&srv->workers[i]);
	}
	server_unlock(w0);
	srv->ops->flush(w0);
	worker_stop(w0);
}

/* SIGHUP: read the configuration again and apply what can change live. */
static void server_reload(struct server *srv)
{
	struct semd_config nc;

	if (server_config_reread(srv, &nc) != 0)
		return;
	/* Keep the running listeners and ready file. */
	server_lock(&srv->workers[0]);
	server_config_apply_locked(srv, &nc);
	server_unlock(&srv->workers[0]);
	log_notice("configuration reloaded");
}

/* SIGTERM, SIGINT, SIGHUP. */
static void server_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;

	switch (sig) {
	case SIGHUP:
		server_reload(srv);
		break;
	case SIGTERM:
		server_stop(srv, "SIGTERM");
		break;
	case SIGINT:
		server_stop(srv, "SIGINT");
		break;
	}
}

/* libevent's own messages go to our log. */
static void server_event_log_cb(int severity, const char *msg)
{
	switch (severity) {
	case EVENT_LOG_DEBUG:
		log_debug("libevent: %s", msg);
		break;
	case EVENT_LOG_MSG:
		log_info("libevent: %s", msg);
		break;
	case EVENT_LOG_WARN:
		log_warn("libevent: %s", msg);
		break;
	default:
		log_err("libevent: %s", msg);
		break;
	}
}

/* Make the server: event base, state, timers, signals. */
struct server *server_new(const struct semd_config *cfg,
    const struct server_ops *ops, server_reload_fn fn, void *arg,
    int *exit_code)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct sm_config sc;
	struct server *srv;
	uint64_t now;
	size_t i;

	*exit_code = EX_OSERR;
	event_set_log_callback(server_event_log_cb);
	srv = calloc(1, sizeof *srv);
	if (srv == NULL)
		return NULL;
	INIT_LIST_HEAD(&srv->listeners);
	INIT_LIST_HEAD(&srv->hs_list);
	spin_lock_init(&srv->lock);
	pthread_mutex_init(&srv->hs_lock, NULL);
	srv->cfg = *cfg;
	srv->ops = ops;
	/* The one choice of the mode: the rest asks srv->feed. */
	srv->feed = cfg->data_dir != NULL ? &feed_log : &feed_memory;
	server_set_live(srv);
	srv->reload = fn;
	srv->reload_arg = arg;
	srv->armed_min = UINT64_MAX;
	srv->systemd = getenv("NOTIFY_SOCKET") != NULL;
	signal(SIGPIPE, SIG_IGN);
	srv->nworkers = cfg->threads > 0 ? cfg->threads : 1;
	srv->workers = calloc(srv->nworkers, sizeof *srv->workers);
	if (srv->workers == NULL)
		goto fail;
	for (i = 0; i < srv->nworkers; i++)
		if (worker_init(srv, (unsigned int)i) != 0)
			goto fail;
	srv->base = srv->workers[0].base;
	worker_self = &srv->workers[0];
	log_notice("semd %s starting: libevent %s, backend %s, %u thread(s)",
	    PACKAGE_VERSION, event_get_version(),
	    event_base_get_method(srv->base), srv->nworkers);
	if (getrandom(srv->hash_key, sizeof srv->hash_key, 0) !=
	    (ssize_t)sizeof srv->hash_key) {
		log_err_errno(errno, "getrandom");
		goto fail;
	}
	sc = server_sm_config_of(srv);
	/*
	 * In memory the state's time is this process' monotonic clock; with a
	 * log it is the log's (the first entry starts it).
	 */
	srv->feed->clock(&now, &sc.wall_ms);
	srv->sm = sm_new(&sc, &ops->out, now);
	if (srv->sm == NULL)
		goto fail;
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		srv->sigs[i] = evsignal_new(srv->base, sigs[i], server_signal_cb, srv);
		if (srv->sigs[i] == NULL || evsignal_add(srv->sigs[i], NULL) != 0)
			goto fail;
	}
	return srv;
fail:
	/* The caller still owns cfg: do not free its strings here. */
	memset(&srv->cfg, 0, sizeof srv->cfg);
	server_free(srv);
	return NULL;
}

/* Free everything (the worker threads have ended). */
void server_free(struct server *srv)
{
	size_t i;

	if (srv == NULL)
		return;
	if (srv->ops != NULL)
		srv->ops->free_all(srv);
	if (srv->unlisten != NULL)
		srv->unlisten(srv);
	for (i = 0; i < sizeof srv->sigs / sizeof srv->sigs[0]; i++)
		if (srv->sigs[i] != NULL)
			event_free(srv->sigs[i]);
	if (srv->watchdog)
		event_free(srv->watchdog);
	srv->feed->stop(srv);
	sm_free(srv->sm);
	for (i = 0; srv->workers != NULL && i < srv->nworkers; i++)
		worker_free(&srv->workers[i]);
	pthread_mutex_destroy(&srv->hs_lock);
	free(srv->workers);
	worker_self = NULL;
	config_free(&srv->cfg);
	free(srv);
}

/* Start the threads of workers 1..N-1, signals blocked in them. */
static int server_start_workers(struct server *srv)
{
	sigset_t all, old;
	char name[16];
	unsigned int i;
	int r = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 1; i < srv->nworkers && r == 0; i++) {
		r = pthread_create(&srv->workers[i].thread, NULL, worker_main,
		    &srv->workers[i]);
		if (r != 0) {
			log_err_errno(-r, "cannot start thread %u", i);
			break;
		}
		srv->workers[i].running = true;
		snprintf(name, sizeof name, "semd/%u", i);
		pthread_setname_np(srv->workers[i].thread, name);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* Tell every worker thread to stop and wait for it. */
static void server_join_workers(struct server *srv)
{
	struct worker *w0 = &srv->workers[0];
	unsigned int i;

	server_lock(w0);
	srv->stopping = true;
	for (i = 1; i < srv->nworkers; i++) {
		srv->workers[i].stop = true;
		server_wake_later(&srv->workers[i]);
	}
	server_unlock(w0);
	for (i = 1; i < srv->nworkers; i++) {
		if (srv->workers[i].running)
			pthread_join(srv->workers[i].thread, NULL);
		srv->workers[i].running = false;
	}
}

/* Take the state up: with a log, open it and replay it. */
int server_start(struct server *srv)
{
	return srv->feed->start(srv);
}

/* Announce readiness, run the loop, return the exit code. */
int server_run(struct server *srv, const char *status)
{
	uint64_t usec = 0;
	struct timeval tv;
	struct worker *w;
	unsigned int i;
	int r;

	server_notify(srv, status);
#ifdef HAVE_SYSTEMD
	if (srv->systemd && sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		srv->watchdog_ms = usec / 1000;
		srv->watchdog = event_new(srv->base, -1, EV_PERSIST,
		    server_watchdog_cb, srv);
		tv.tv_sec = (time_t)(usec / 2 / 1000000);
		tv.tv_usec = (suseconds_t)(usec / 2 % 1000000);
		if (srv->watchdog != NULL)
			event_add(srv->watchdog, &tv);
		/* The other loops beat four times a period. */
		tv.tv_sec = (time_t)(usec / 4 / 1000000);
		tv.tv_usec = (suseconds_t)(usec / 4 % 1000000);
		for (i = 1; i < srv->nworkers; i++) {
			w = &srv->workers[i];
			atomic_store_explicit(&w->beat_ms, server_now(),
			    memory_order_relaxed);
			w->beat = event_new(w->base, -1, EV_PERSIST,
			    worker_beat_cb, w);
			if (w->beat != NULL)
				event_add(w->beat, &tv);
		}
		log_info("watchdog: pinging every %" PRIu64 " ms", usec / 2000);
	}
#else
	(void)usec;
	(void)tv;
	(void)w;
	(void)i;
#endif
	if (server_start_workers(srv) != 0)
		return EX_OSERR;
	log_notice("ready");
	r = event_base_dispatch(srv->base);
	if (r < 0)
		log_err("event loop failed");
	server_join_workers(srv);
	if (r < 0)
		return EX_SOFTWARE;
	log_notice("stopped");
	return 0;
}
