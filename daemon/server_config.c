/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/server_config.c - the configuration's effects on a running
 * server: the state machine's settings (one mapping, at start and at a
 * reload), the settings the loops read without the lock, this node's own
 * Stats figures, and SIGHUP's reload with what it may and may not change.
 * It calls nothing of server.c: server.c takes the lock around
 * server_config_apply_locked().
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "daemon/feed.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/server-int.h"
#include "security/acl.h"

/*
 * This node's own figures for Stats (any thread, under the state lock):
 * TLS handshakes by kind, and the node's view of its log.
 */
static void server_counters(void *arg, struct sm_local_counters *out)
{
	struct server *srv = arg;
	uint64_t full = 0, resumed = 0;
	unsigned int i;

	if (srv->tls != NULL && out->n + 2 <= SM_STATS_LOCAL_MAX) {
		for (i = 0; i < srv->nworkers; i++) {
			full += atomic_load_explicit(&srv->workers[i].tls_full,
			    memory_order_relaxed);
			resumed += atomic_load_explicit(&srv->workers[i].tls_resumed,
			    memory_order_relaxed);
		}
		out->name[out->n] = "tls_handshakes_full";
		out->value[out->n++] = full;
		out->name[out->n] = "tls_handshakes_resumed";
		out->value[out->n++] = resumed;
	}
	srv->feed->counters(srv, out);
}

/*
 * The state machine's settings: the configuration's, and this node's (at
 * start, and after a reload: sm_reconfigure() keeps what may not change).
 */
struct sm_config server_sm_config_of(const struct server *srv)
{
	const struct semd_config *cfg = &srv->cfg;
	struct sm_config sc;

	sm_config_defaults(&sc);
	sc.alloc_count = alloc_count_get();
	sc.stats_local = true;
	sc.default_limit = cfg->default_limit;
	sc.max_semaphores = cfg->max_semaphores;
	sc.max_sessions = cfg->max_sessions;
	sc.max_waiters_per_session = cfg->max_waiters_per_session;
	sc.max_holds_per_session = cfg->max_holds_per_session;
	sc.max_lease_ms = cfg->max_lease_ms;
	sc.watch_history = cfg->watch_history;
	/* An Info page fits well inside what a client may have queued. */
	if (cfg->max_output / 2 < sc.max_reply)
		sc.max_reply = cfg->max_output / 2;
	sc.wall_ms = 0;		/* the feed's clock says (server_new) */
	sc.durable = srv->feed->durable;
	sc.local_counters = server_counters;
	sc.local_arg = (void *)srv;
	sc.server = "semd " PACKAGE_VERSION;
	memcpy(sc.hash_key, srv->hash_key, sizeof sc.hash_key);
	sc.instance = srv->instance;
	return sc;
}

/* The state machine's effects: replies and closes on connections. */
struct sm_out server_sm_out(const struct server *srv)
{
	return srv->ops->out;
}

/* Copy the settings the loops read without the lock (struct server_live). */
void server_set_live(struct server *srv)
{
	struct server_live *l = &srv->live;
	const struct semd_config *c = &srv->cfg;

	atomic_store_explicit(&l->idle_timeout_ms, c->idle_timeout_ms, memory_order_relaxed);
	atomic_store_explicit(&l->handshake_timeout_ms, c->handshake_timeout_ms,
	    memory_order_relaxed);
	atomic_store_explicit(&l->frame_timeout_ms, c->frame_timeout_ms, memory_order_relaxed);
	atomic_store_explicit(&l->max_output, c->max_output, memory_order_relaxed);
	atomic_store_explicit(&l->max_frame, c->max_frame, memory_order_relaxed);
	atomic_store_explicit(&l->acl_names, acl_needs_names(c->acl),
	    memory_order_relaxed);
}

/* Log what a reload changes (numbers only). */
static void server_log_change(const char *key, uint32_t old, uint32_t new)
{
	if (old != new)
		log_notice("reload: %s %u -> %u", key, old, new);
}

/* Swap *a and *b if the strings differ; false if they did. */
static bool keep_str(char **next, char **cur)
{
	char *t;

	if ((*next == NULL) == (*cur == NULL) &&
	    (*next == NULL || strcmp(*next, *cur) == 0))
		return true;
	t = *next;
	*next = *cur;
	*cur = t;	/* the new one goes with the old settings */
	return false;
}

/*
 * A node's place in a cluster is fixed while it runs: the running values
 * stay in next. False if a reload asked for another.
 */
static bool server_keep_cluster(struct semd_config *next, struct semd_config *cur)
{
	char **nexts[] = { &next->peer_listen, &next->peer_bind,
	    &next->bootstrap, &next->advertise, &next->peer_tls_cert,
	    &next->peer_tls_key, &next->peer_tls_ca, &next->peer_key };
	char **curs[] = { &cur->peer_listen, &cur->peer_bind, &cur->bootstrap,
	    &cur->advertise, &cur->peer_tls_cert, &cur->peer_tls_key,
	    &cur->peer_tls_ca, &cur->peer_key };
	bool same = next->node_id == cur->node_id &&
	    next->allow_insecure_peers == cur->allow_insecure_peers &&
	    next->election_timeout_ms == cur->election_timeout_ms;
	size_t i;

	for (i = 0; i < sizeof nexts / sizeof nexts[0]; i++)
		if (!keep_str(nexts[i], curs[i]))
			same = false;
	next->node_id = cur->node_id;
	next->allow_insecure_peers = cur->allow_insecure_peers;
	next->election_timeout_ms = cur->election_timeout_ms;
	return same;
}

/*
 * SIGHUP: read the configuration again into nc, keeping (and logging) what
 * changes only at a restart. 0, or -1 to keep the running one (logged).
 */
int server_config_reread(struct server *srv, struct semd_config *next)
{
	struct semd_config nc;
	char err[512];
	size_t i;
	bool same;

	if (srv->reload == NULL) {
		log_notice("SIGHUP: nothing to reload");
		return -1;
	}
	if (srv->reload(srv->reload_arg, &nc, err, sizeof err) != 0) {
		log_err("reload failed, keeping the running configuration: %s", err);
		return -1;
	}
	if (nc.log_level != srv->cfg.log_level) {
		log_notice("reload: log-level %s -> %s",
		    log_level_name(srv->cfg.log_level), log_level_name(nc.log_level));
		log_set_level(nc.log_level);
	}
	if (nc.log_format != srv->cfg.log_format) {
		log_notice("reload: log-format %s -> %s",
		    log_format_name(srv->cfg.log_format),
		    log_format_name(nc.log_format));
		log_set_format(nc.log_format);
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
	server_log_change("frame-timeout (ms)", srv->cfg.frame_timeout_ms, nc.frame_timeout_ms);
	server_log_change("max-output", srv->cfg.max_output, nc.max_output);
	server_log_change("watch-history", srv->cfg.watch_history, nc.watch_history);
	server_log_change("keepalive (s)", srv->cfg.keepalive_s, nc.keepalive_s);
	if (nc.threads != srv->cfg.threads)
		log_warn("reload: threads changes only at a restart");
	nc.threads = srv->cfg.threads;
	if ((nc.data_dir == NULL) != (srv->cfg.data_dir == NULL) ||
	    (nc.data_dir != NULL && strcmp(nc.data_dir, srv->cfg.data_dir) != 0) ||
	    nc.restart_grace_ms != srv->cfg.restart_grace_ms ||
	    nc.snapshot_every != srv->cfg.snapshot_every) {
		char *dir = nc.data_dir;

		log_warn("reload: data-dir, restart-grace and snapshot-every "
		    "change only at a restart");
		nc.data_dir = srv->cfg.data_dir;	/* the old goes with cfg */
		srv->cfg.data_dir = dir;
		nc.restart_grace_ms = srv->cfg.restart_grace_ms;
		nc.snapshot_every = srv->cfg.snapshot_every;
	}
	if (!server_keep_cluster(&nc, &srv->cfg))
		log_warn("reload: node-id, peer-listen, peer-bind, bootstrap, advertise, "
		    "allow-insecure-peers, election-timeout, peer-key and peer-tls-* "
		    "change only at a restart");
	same = nc.nlisten == srv->cfg.nlisten && nc.unix_mode == srv->cfg.unix_mode;
	for (i = 0; same && i < nc.nlisten; i++)
		same = strcmp(nc.listen[i], srv->cfg.listen[i]) == 0;
	if (!same)
		log_warn("reload: listen addresses and unix-mode change only at a restart");
	*next = nc;
	return 0;
}

/* Under the lock: next (taken over) becomes the running configuration. */
void server_config_apply_locked(struct server *srv, struct semd_config *next)
{
	struct sm_config sc;

	config_free(&srv->cfg);
	srv->cfg = *next;
	server_set_live(srv);
	sc = server_sm_config_of(srv);
	srv->feed->reconfigure_locked(srv, &sc);
}
