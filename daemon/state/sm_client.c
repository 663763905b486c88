/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_client.c - the state machine's life and its clients: made
 * and freed, connections opened, bound and closed (a close is a call into
 * the state, settled like a request), the node's hooks and settings.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

/* Default configuration. */
void sm_config_defaults(struct sm_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->default_limit = 1;
	cfg->max_semaphores = 1000000;
	cfg->max_sessions = 100000;
	cfg->max_waiters_per_session = 1024;
	cfg->max_holds_per_session = 4096;
	cfg->max_lease_ms = 24u * 3600u * 1000u;
	cfg->max_reply = 1u << 20;
	cfg->watch_history = SM_WATCH_HISTORY;
	cfg->server = "semd";
}

/* Make a state machine. */
struct sm *sm_new(const struct sm_config *cfg, const struct sm_out *out,
    uint64_t now_ms)
{
	struct sm *sm = calloc(1, sizeof *sm);

	if (sm == NULL)
		return NULL;
	sm->cfg = *cfg;
	if (out != NULL)
		sm->out = *out;
	sm->start_ms = now_ms;
	sm->token_base = cfg->wall_ms * 1000;
	sm->wall_off = (int64_t)(cfg->wall_ms - now_ms);
	INIT_LIST_HEAD(&sm->clients);
	INIT_LIST_HEAD(&sm->detached);
	INIT_LIST_HEAD(&sm->offers);
	INIT_LIST_HEAD(&sm->watches);
	evring_resize(&sm->evring, cfg->watch_history);
	INIT_LIST_HEAD(&sm->rate_touched);
	ordidx_init(&sm->byname, offsetof(struct sm_sem, name));
	if (hmap_init(&sm->names, 64) != 0 || hmap_init(&sm->sessions, 64) != 0 ||
	    hmap_init(&sm->permits, 64) != 0 || hmap_init(&sm->tokens, 64) != 0 ||
	    hmap_init(&sm->requests, 64) != 0 || hmap_init(&sm->principals, 64) != 0 ||
	    hmap_init(&sm->clients_by_id, 64) != 0 || hmap_init(&sm->idems, 64) != 0)
		goto fail;
	sm->instance = cfg->instance;
	return sm;
fail:
	sm_free(sm);
	return NULL;
}

/* Free everything, answering nobody. */
void sm_free(struct sm *sm)
{
	struct sm_client *c;
	struct hmap_iter it;
	struct hnode *n;
	struct sm_sem *sem;
	struct sm_session *s;

	if (sm == NULL)
		return;
	sm->out.reply = NULL;
	sm->shutting_down = true;
	sm->freeing = true;
	if (sm->idems.tab[0] != NULL)
		idem_free_all(sm);
	while (!list_empty(&sm->clients)) {
		c = list_first_entry(&sm->clients, struct sm_client, entry);
		sm_client_close(sm, c, sm->start_ms);
	}
	if (sm->sessions.tab[0] != NULL) {
		hmap_iter_init(&it, &sm->sessions);
		while ((n = hmap_iter_next(&it)) != NULL) {
			s = container_of(n, struct sm_session, node);
			session_free(sm, s);
		}
	}
	while (!list_empty(&sm->detached))
		hold_release(sm, list_first_entry(&sm->detached, struct sm_hold,
		    owner_entry), false, NULL);
	/* All at once rather than one name at a time in sem_free(). */
	ordidx_destroy(&sm->byname);
	if (sm->names.tab[0] != NULL) {
		hmap_iter_init(&it, &sm->names);
		while ((n = hmap_iter_next(&it)) != NULL) {
			sem = container_of(n, struct sm_sem, node);
			sem_free(sm, sem);
		}
	}
	hmap_destroy(&sm->names);
	hmap_destroy(&sm->sessions);
	hmap_destroy(&sm->permits);
	hmap_destroy(&sm->tokens);
	hmap_destroy(&sm->requests);
	hmap_destroy(&sm->idems);
	hmap_destroy(&sm->principals);
	hmap_destroy(&sm->clients_by_id);
	sm_cache_drain(&sm->hold_cache);
	sm_cache_drain(&sm->wait_cache);
	sm_cache_drain(&sm->hists_cache);
	for (size_t k = 0; k < SM_SEM_CLASSES; k++)
		sm_cache_drain(&sm->sem_cache[k]);
	free(sm->heap);
	free(sm->dl_queue);
	free(sm->dl_check);
	evring_free(&sm->evring);
	free(sm);
}

/* Send r to every bound client; a node's own word, nothing in the state changes. */
void sm_tell_all(struct sm *sm, const Semd__Reply *r)
{
	struct list_head *pos;
	struct sm_client *c;

	list_for_each(pos, &sm->clients) {
		c = list_entry(pos, struct sm_client, entry);
		if (c->conn != NULL && sm->out.reply != NULL)
			sm->out.reply(sm->out.ctx, c->conn, r);
	}
}

/* The last leader the log named, and where clients reach it. */
uint64_t sm_leader(const struct sm *sm, char *addr, size_t len)
{
	if (len > 0)
		snprintf(addr, len, "%s", sm->leader_addr);
	return sm->leader_id;
}

/* The history the state's revisions count (0: none yet). */
uint64_t sm_instance(const struct sm *sm)
{
	return sm->instance;
}

/* The state's clock: the time of the last call. */
uint64_t sm_now(const struct sm *sm)
{
	return sm->now;
}

/* The node's hooks of from, for to (a restored state replacing from). */
void sm_take_hooks(struct sm *to, const struct sm *from)
{
	to->visible = from->visible;
	to->visible_arg = from->visible_arg;
}

/* Install the List visibility hook (NULL: every name is shown). */
void sm_set_visible(struct sm *sm, sm_visible_fn fn, void *arg)
{
	sm->visible = fn;
	sm->visible_arg = arg;
}

/* Apply new limits; existing objects over a lowered limit stay. */
void sm_reconfigure(struct sm *sm, const struct sm_config *cfg)
{
	uint8_t key[16];
	uint64_t wall = sm->cfg.wall_ms;
	const char *server = sm->cfg.server;
	uint64_t (*alloc_count)(void) = sm->cfg.alloc_count;

	memcpy(key, sm->cfg.hash_key, sizeof key);
	if (cfg->watch_history != sm->evring.size)
		evring_resize(&sm->evring, cfg->watch_history);	/* the kept go */
	sm->cfg = *cfg;
	memcpy(sm->cfg.hash_key, key, sizeof key);	/* tables depend on it */
	sm->cfg.wall_ms = wall;
	sm->cfg.server = server;
	sm->cfg.alloc_count = alloc_count;
}

/* The client with this id, or NULL. */
struct sm_client *sm_client_find(const struct sm *sm, uint64_t id)
{
	return ID_LOOKUP(&sm->clients_by_id, id_hash(sm, id, 2),
	    struct sm_client, node, id, id);
}

/* A new connection. */
struct sm_client *sm_client_open(struct sm *sm, uint64_t id, void *conn,
    const char *principal, const uint8_t secret[SM_SECRET_LEN],
    unsigned int flags, uint64_t now_ms)
{
	struct sm_client *c;

	if (id == 0 || sm_client_find(sm, id) != NULL)
		return NULL;
	if ((c = sm_alloc(sm, sizeof *c)) == NULL)
		return NULL;
	c->id = id;
	c->pr = principal_get(sm, principal);
	if (c->pr == NULL) {
		sm_dealloc(sm, c, sizeof *c);
		return NULL;
	}
	c->conn = conn;
	INIT_LIST_HEAD(&c->watches);
	c->local = (flags & SM_CLIENT_LOCAL) != 0;
	memcpy(c->secret, secret, SM_SECRET_LEN);
	list_add_tail(&c->entry, &sm->clients);
	hmap_insert(&sm->clients_by_id, &c->node, id_hash(sm, id, 2));
	sm->ctr.clients++;
	return c;
}

/* Bind a client to this node's connection (NULL: unbind). */
void sm_client_bind(struct sm_client *c, void *conn)
{
	c->conn = conn;
}

/* A client's id. */
uint64_t sm_client_id(const struct sm_client *c)
{
	return c->id;
}

/* State time as wall time from now on: wall_ms is the wall clock at sm->now. */
void sm_set_wall(struct sm *sm, uint64_t wall_ms)
{
	sm->wall_off = (int64_t)(wall_ms - sm->now);
}

/* The connection is gone. */
void sm_client_close(struct sm *sm, struct sm_client *c, uint64_t now_ms)
{
	if (c == NULL)
		return;
	sm->now = now_ms;
	sm->cur_op = 0;
	c->conn = NULL;
	watch_client_gone(sm, c);
	if (c->session != NULL)
		session_detach(sm, c->session, c->local && !c->detach, now_ms);
	c->session = NULL;
	list_del_init(&c->entry);
	hmap_remove(&sm->clients_by_id, &c->node);
	principal_put(sm, c->pr);
	sm_dealloc(sm, c, sizeof *c);
	sm->ctr.clients--;
	sm_settle(sm);
}

/* Session id of a client. */
uint64_t sm_client_session(const struct sm_client *c)
{
	return c->session ? c->session->id : 0;
}

/* Undecodable input from a client. */
void sm_protocol_error(struct sm *sm, struct sm_client *c, const char *why)
{
	sm->cur_op = 0;
	reply_err(sm, c, 0, SEMD__CODE__PROTOCOL_ERROR, "%s", why);
}
