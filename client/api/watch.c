/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/watch.c - watches: semc_watch() and semc_watch_from() send a
 * Watch request with the watch's callback registered first (its events go
 * to it: client/session/watchers.c), semc_unwatch() ends one (a Cancel of
 * its id), semc_watch_next_revision() says where a resume starts.
 */
#include <stdlib.h>
#include <string.h>

#include "client/api/api.h"

/* Watch name, or the names with prefix name: the watch's id. */
int64_t semc_watch(struct semc *c, const char *name, bool prefix, semc_watch_fn fn, void *arg)
{
	return semc_watch_from(c, name, prefix, 0, fn, arg);
}

/* The same, replaying the kept events from revision from_revision on. The
 * callback is registered under the request's id before the request goes,
 * so that no event that follows the answer can come before it. */
int64_t semc_watch_from(struct semc *c, const char *name, bool prefix, uint64_t from_revision,
			semc_watch_fn fn, void *arg)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Watch op = SEMD__WATCH__INIT;
	struct semc_req *r;
	uint64_t id, start;
	bool ghost;
	int err;

	semc_clear_message();
	if (name == NULL || fn == NULL)
		return semc_fail(SEMC_E_ARG, "no name to watch, or no callback");
	if (strlen(name) > 255 || (!prefix && *name == '\0'))
		return semc_fail(SEMC_E_INVALID, "a name is 1 to 255 bytes long");
	op.name = (char *)name;
	op.prefix = prefix;
	op.from_revision = from_revision;
	rq.op_case = SEMD__REQUEST__OP_WATCH;
	rq.watch = &op;
	if ((r = semc_req_new(c, &rq)) == NULL)
		return semc_fail(SEMC_E_NOMEM, NULL);
	id = r->id;
	pthread_mutex_lock(&c->lock);
	err = semc_watcher_add_locked(c, id, fn, arg);
	pthread_mutex_unlock(&c->lock);
	if (err != 0) {
		semc_req_free(r);
		return semc_fail(err, NULL);
	}
	if ((err = semc_submit(c, r)) != 0) {
		semc_req_free(r);
	} else {
		err = semc_wait(c, r, semc_now_ms() + atomic_load(&c->timeout_ms), &ghost);
		if (err == 0 && r->reply != NULL)
			err = semc_reply_error(r->reply);
		if (err == 0 && r->reply != NULL) {
			pthread_mutex_lock(&c->lock);
			/*
			 * The OK comes before the replay of from_revision on:
			 * until those events are given, a resume starts at
			 * the first of them; a live watch after the daemon's
			 * last revision.
			 */
			start = from_revision != 0 ? from_revision :
			    r->reply->revision + 1;
			semc_watcher_start_locked(c, id, start);
			pthread_mutex_unlock(&c->lock);
		}
		if (!ghost)
			semc_req_free(r);
	}
	if (err != 0) {
		pthread_mutex_lock(&c->lock);
		semc_watcher_drop_locked(c, id);
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	return (int64_t)id;
}

/* The revision a resume of watch starts at (0: no such watch). */
uint64_t semc_watch_next_revision(struct semc *c, uint64_t watch)
{
	uint64_t rev;

	pthread_mutex_lock(&c->lock);
	rev = semc_watcher_next_rev_locked(c, watch);
	pthread_mutex_unlock(&c->lock);
	return rev;
}

/* End a watch: the daemon stops it, and its callback is forgotten. */
int semc_unwatch(struct semc *c, uint64_t watch)
{
	int r = semc_cancel(c, watch);

	pthread_mutex_lock(&c->lock);
	semc_watcher_drop_locked(c, watch);
	pthread_mutex_unlock(&c->lock);
	return r == SEMC_E_NOT_FOUND ? 0 : r;	/* gone with its connection */
}
