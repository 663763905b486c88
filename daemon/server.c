/*
 * daemon/server.c - event base, state machine, deadline timer, signals,
 * systemd readiness and watchdog.
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sysexits.h>
#include <time.h>

#include <event2/event.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "daemon/log.h"
#include "daemon/server.h"
#include "proto/frame.h"

#define STOP_GRACE_S 5

/* Monotonic milliseconds: the state machine's clock. */
uint64_t server_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Unix time in milliseconds. */
static uint64_t server_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
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

/* The state machine's earliest deadline came. */
static void server_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	srv->deadline_at = UINT64_MAX;
	sm_tick(srv->sm, server_now());
	server_arm(srv);
}

/* Arm the one timer for the earliest deadline in the state. */
void server_arm(struct server *srv)
{
	uint64_t next = sm_next_deadline(srv->sm), now, delta;
	struct timeval tv;

	if (next == srv->deadline_at)
		return;
	srv->deadline_at = next;
	if (next == UINT64_MAX) {
		evtimer_del(srv->deadline);
		return;
	}
	now = server_now();
	delta = next > now ? next - now : 0;
	tv.tv_sec = (time_t)(delta / 1000);
	tv.tv_usec = (suseconds_t)(delta % 1000) * 1000;
	evtimer_add(srv->deadline, &tv);
}

/* Replies staged outside a read callback (timers, closes, stop). */
static void server_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	conn_flush_all(arg);
}

/* Resume accepting after an EMFILE pause. */
static void server_accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	if (!srv->stopping)
		listeners_resume(srv);
}

#ifdef HAVE_SYSTEMD
/* Keep systemd's watchdog fed. */
static void server_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	server_notify(arg, "WATCHDOG=1");
}
#endif

/* The grace time of a stop ran out. */
static void server_stop_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	log_warn("%zu client(s) still connected after %d s, exiting anyway",
	    srv->nconns, STOP_GRACE_S);
	event_base_loopexit(srv->base, NULL);
}

/*
 * Graceful stop: no new clients, waiters hear UNAVAILABLE, every connection
 * closes once its replies are written.
 */
void server_stop(struct server *srv, const char *why)
{
	struct timeval tv = { STOP_GRACE_S, 0 };
	struct list_head *pos, *tmp;

	if (srv->stopping)
		return;
	srv->stopping = true;
	log_notice("%s: stopping (%zu clients)", why, srv->nconns);
	server_notify(srv, "STOPPING=1\nSTATUS=stopping");
	while (!list_empty(&srv->listeners))
		listener_free(list_first_entry(&srv->listeners, struct listener,
		    entry));
	sm_shutdown(srv->sm, server_now());
	list_for_each_safe(pos, tmp, &srv->conns)
		conn_close_later(list_entry(pos, struct conn, entry));
	if (srv->nconns == 0)
		event_base_loopexit(srv->base, NULL);
	else
		evtimer_add(srv->stop_timer, &tv);
}

/* Log what a reload changes (numbers only). */
static void server_log_change(const char *key, uint32_t old, uint32_t new)
{
	if (old != new)
		log_notice("reload: %s %u -> %u", key, old, new);
}

/* SIGHUP: read the configuration again and apply what can change live. */
static void server_reload(struct server *srv)
{
	struct semd_config nc;
	struct sm_config sc;
	struct list_head *pos;
	char err[512];
	size_t i;
	bool same;

	if (srv->reload == NULL) {
		log_notice("SIGHUP: nothing to reload");
		return;
	}
	if (srv->reload(srv->reload_arg, &nc, err, sizeof err) != 0) {
		log_err("reload failed, keeping the running configuration: %s", err);
		return;
	}
	if (nc.log_level != srv->cfg.log_level) {
		log_notice("reload: log-level %s -> %s",
		    log_level_name(srv->cfg.log_level), log_level_name(nc.log_level));
		log_set_level(nc.log_level);
	}
	server_log_change("default-limit", srv->cfg.default_limit, nc.default_limit);
	server_log_change("max-frame", srv->cfg.max_frame, nc.max_frame);
	server_log_change("max-connections", srv->cfg.max_connections, nc.max_connections);
	server_log_change("max-semaphores", srv->cfg.max_semaphores, nc.max_semaphores);
	server_log_change("max-sessions", srv->cfg.max_sessions, nc.max_sessions);
	server_log_change("max-waiters-per-session", srv->cfg.max_waiters_per_session,
	    nc.max_waiters_per_session);
	server_log_change("max-holds-per-session", srv->cfg.max_holds_per_session,
	    nc.max_holds_per_session);
	server_log_change("max-lease (ms)", srv->cfg.max_lease_ms, nc.max_lease_ms);
	server_log_change("handshake-timeout (ms)", srv->cfg.handshake_timeout_ms,
	    nc.handshake_timeout_ms);
	server_log_change("idle-timeout (ms)", srv->cfg.idle_timeout_ms, nc.idle_timeout_ms);
	server_log_change("max-output", srv->cfg.max_output, nc.max_output);
	server_log_change("keepalive (s)", srv->cfg.keepalive_s, nc.keepalive_s);
	same = nc.nlisten == srv->cfg.nlisten && nc.unix_mode == srv->cfg.unix_mode;
	for (i = 0; same && i < nc.nlisten; i++)
		same = strcmp(nc.listen[i], srv->cfg.listen[i]) == 0;
	if (!same)
		log_warn("reload: listen addresses and unix-mode change only at a restart");
	/* Keep the running listeners and ready file. */
	config_free(&srv->cfg);
	srv->cfg = nc;
	/* Connections buffer up to one whole frame: follow max-frame. */
	list_for_each(pos, &srv->conns)
		bufferevent_setwatermark(list_entry(pos, struct conn, entry)->bev,
		    EV_READ, 0, nc.max_frame + FRAME_HDR + 4096);
	sm_config_defaults(&sc);
	sc.alloc_count = alloc_count_get();
	sc.default_limit = nc.default_limit;
	sc.max_semaphores = nc.max_semaphores;
	sc.max_sessions = nc.max_sessions;
	sc.max_waiters_per_session = nc.max_waiters_per_session;
	sc.max_holds_per_session = nc.max_holds_per_session;
	sc.max_lease_ms = nc.max_lease_ms;
	sm_reconfigure(srv->sm, &sc);
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
struct server *server_new(const struct semd_config *cfg, server_reload_fn fn,
    void *arg, int *exit_code)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct sm_config sc;
	struct sm_out out = { conn_reply, NULL };
	struct server *srv;
	size_t i;

	*exit_code = EX_OSERR;
	event_set_log_callback(server_event_log_cb);
	srv = calloc(1, sizeof *srv);
	if (srv == NULL)
		return NULL;
	INIT_LIST_HEAD(&srv->listeners);
	INIT_LIST_HEAD(&srv->conns);
	INIT_LIST_HEAD(&srv->flushq);
	srv->cfg = *cfg;
	srv->reload = fn;
	srv->reload_arg = arg;
	srv->deadline_at = UINT64_MAX;
	srv->systemd = getenv("NOTIFY_SOCKET") != NULL;
	signal(SIGPIPE, SIG_IGN);
	srv->base = event_base_new();
	if (srv->base == NULL) {
		log_err("cannot create the libevent base");
		goto fail;
	}
	log_notice("semd %s starting: libevent %s, backend %s", PACKAGE_VERSION,
	    event_get_version(), event_base_get_method(srv->base));
	sm_config_defaults(&sc);
	sc.default_limit = cfg->default_limit;
	sc.max_semaphores = cfg->max_semaphores;
	sc.max_sessions = cfg->max_sessions;
	sc.max_waiters_per_session = cfg->max_waiters_per_session;
	sc.max_holds_per_session = cfg->max_holds_per_session;
	sc.max_lease_ms = cfg->max_lease_ms;
	sc.wall_ms = server_wall();
	sc.server = "semd " PACKAGE_VERSION;
	sc.alloc_count = alloc_count_get();
	if (getrandom(sc.hash_key, sizeof sc.hash_key, 0) != (ssize_t)sizeof sc.hash_key) {
		log_err_errno(errno, "getrandom");
		goto fail;
	}
	srv->sm = sm_new(&sc, &out, server_now());
	srv->deadline = evtimer_new(srv->base, server_deadline_cb, srv);
	srv->accept_resume = evtimer_new(srv->base, server_accept_resume_cb, srv);
	srv->stop_timer = evtimer_new(srv->base, server_stop_timer_cb, srv);
	srv->flush_ev = event_new(srv->base, -1, 0, server_flush_cb, srv);
	if (srv->sm == NULL || srv->deadline == NULL ||
	    srv->accept_resume == NULL || srv->stop_timer == NULL ||
	    srv->flush_ev == NULL)
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

/* Free everything. */
void server_free(struct server *srv)
{
	size_t i;

	if (srv == NULL)
		return;
	while (!list_empty(&srv->conns))
		conn_free(list_first_entry(&srv->conns, struct conn, entry));
	while (!list_empty(&srv->listeners))
		listener_free(list_first_entry(&srv->listeners, struct listener,
		    entry));
	for (i = 0; i < sizeof srv->sigs / sizeof srv->sigs[0]; i++)
		if (srv->sigs[i] != NULL)
			event_free(srv->sigs[i]);
	if (srv->deadline)
		event_free(srv->deadline);
	if (srv->accept_resume)
		event_free(srv->accept_resume);
	if (srv->stop_timer)
		event_free(srv->stop_timer);
	if (srv->watchdog)
		event_free(srv->watchdog);
	if (srv->flush_ev)
		event_free(srv->flush_ev);
	sm_free(srv->sm);
	if (srv->base)
		event_base_free(srv->base);
	config_free(&srv->cfg);
	free(srv);
}

/* Sockets from systemd, or the configured ones, or the defaults. */
int server_listen(struct server *srv)
{
	int n = 0, i, r;

#ifdef HAVE_SYSTEMD
	n = sd_listen_fds(1);
	if (n < 0) {
		log_err_errno(n, "sd_listen_fds");
		return EX_OSERR;
	}
	for (i = 0; i < n; i++) {
		if (listener_adopt(srv, SD_LISTEN_FDS_START + i) != 0)
			return EX_OSERR;
	}
	if (n > 0 && srv->cfg.nlisten > 0)
		log_notice("socket activation: %d socket(s) from systemd; listen settings not used",
		    n);
#endif
	if (n == 0 && srv->cfg.nlisten == 0) {
		if ((r = listener_open(srv, SEMD_DEFAULT_UNIX)) != 0 ||
		    (r = listener_open(srv, SEMD_DEFAULT_TCP)) != 0)
			return r == -EACCES || r == -ENOENT ? EX_CANTCREAT : EX_OSERR;
	}
	for (i = 0; n == 0 && i < (int)srv->cfg.nlisten; i++) {
		if ((r = listener_open(srv, srv->cfg.listen[i])) != 0)
			return r == -EACCES || r == -ENOENT ? EX_CANTCREAT : EX_OSERR;
	}
	return 0;
}

/* Announce readiness, run the loop, return the exit code. */
int server_run(struct server *srv)
{
	char status[512];
	struct list_head *pos;
	size_t off = 0;
	uint64_t usec = 0;
	struct timeval tv;
	int r;

	if (srv->cfg.ready_file != NULL &&
	    (r = listeners_write_ready(srv, srv->cfg.ready_file)) != 0) {
		log_err_errno(r, "cannot write the ready file %s", srv->cfg.ready_file);
		return EX_CANTCREAT;
	}
	off = (size_t)snprintf(status, sizeof status, "READY=1\nSTATUS=listening on");
	list_for_each(pos, &srv->listeners) {
		if (off < sizeof status)
			off += (size_t)snprintf(status + off, sizeof status - off,
			    " %s", list_entry(pos, struct listener, entry)->addr);
	}
	server_notify(srv, status);
#ifdef HAVE_SYSTEMD
	if (srv->systemd && sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		srv->watchdog = event_new(srv->base, -1, EV_PERSIST,
		    server_watchdog_cb, srv);
		tv.tv_sec = (time_t)(usec / 2 / 1000000);
		tv.tv_usec = (suseconds_t)(usec / 2 % 1000000);
		if (srv->watchdog != NULL)
			event_add(srv->watchdog, &tv);
		log_info("watchdog: pinging every %" PRIu64 " ms", usec / 2000);
	}
#else
	(void)usec;
	(void)tv;
#endif
	log_notice("ready");
	if (event_base_dispatch(srv->base) < 0) {
		log_err("event loop failed");
		return EX_SOFTWARE;
	}
	log_notice("stopped");
	return 0;
}
