/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_stats.c - Stats replies, the counters, per-name gauges for
 * metrics.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"


/* Most counters a Stats reply carries (the named ones, ops x codes replies, 2 histograms). */
#define SM_STATS_MAX	(40 + SM_STATS_LOCAL_MAX + 2 * SM_NOPS + SM_NOPS * SM_NCODES + \
	2 * (SM_HIST_BUCKETS + 2))

/* Add a histogram's count, sum and non-empty buckets to a Stats reply. */
static void stats_hist(const struct sm_hist *h, const char *what,
    Semd__Counter *cv, Semd__Counter **cp, char names[][40], size_t *n)
{
	size_t i;

	for (i = 0; i < SM_HIST_BUCKETS + 2; i++) {
		if (i < SM_HIST_BUCKETS && h->bucket[i] == 0)
			continue;
		if (i == SM_HIST_BUCKETS)
			snprintf(names[*n], 40, "%s_count", what);
		else if (i == SM_HIST_BUCKETS + 1)
			snprintf(names[*n], 40, "%s_sum_ms", what);
		else if (i == SM_HIST_BUCKETS - 1)
			snprintf(names[*n], 40, "%s_ms_le_inf", what);
		else
			snprintf(names[*n], 40, "%s_ms_le_%llu", what, 1ULL << i);
		semd__counter__init(&cv[*n]);
		cv[*n].name = names[*n];
		cv[*n].value = i == SM_HIST_BUCKETS ? h->count :
		    i == SM_HIST_BUCKETS + 1 ? h->sum_ms : h->bucket[i];
		cp[*n] = &cv[*n];
		(*n)++;
	}
}

/* Stats: the counters, by name. */
void op_stats(struct sm *sm, struct sm_client *c, const Semd__Request *req)
{
	uint64_t id = req->id;
	Semd__StatsReply sr = SEMD__STATS_REPLY__INIT;
	Semd__Counter cv[SM_STATS_MAX], *cp[SM_STATS_MAX];
	char names[SM_STATS_MAX][40];
	const ProtobufCEnumValue *ev;
	struct sm_counters k;
	size_t n = 0, i, j;

	sm_get_counters(sm, &k);
#define COUNTER(nm, v) do {						\
	semd__counter__init(&cv[n]);					\
	cv[n].name = (char *)(nm);					\
	cv[n].value = (v);						\
	cp[n] = &cv[n];							\
	n++;								\
} while (0)
	COUNTER("semaphores", k.semaphores);
	COUNTER("holders", k.holders);
	COUNTER("waiters", k.waiters);
	COUNTER("sessions", k.sessions);
	COUNTER("connections", k.clients);
	COUNTER("grants", k.grants);
	COUNTER("timeouts", k.timeouts);
	COUNTER("cancels", k.cancels);
	COUNTER("cancels_disconnect", k.cancels_disconnect);
	COUNTER("leases_expired", k.leases_expired);
	COUNTER("sessions_expired", k.sessions_expired);
	COUNTER("errors", k.errors);
	COUNTER("multi_grants", k.multi_grants);
	COUNTER("deadlocks", k.deadlocks);
	COUNTER("deadlock_checks", k.deadlock_checks);
	COUNTER("deadlock_steps", k.deadlock_steps);
	COUNTER("deadlock_cut", k.deadlock_cut);
	/* Facts of the node that answers, not of the state: on request. */
	if (sm->cfg.stats_local)
		COUNTER("memory_bytes", k.memory_bytes);
	if (sm->cfg.stats_local)
		COUNTER("watch_notices", k.watch_notices);
	if (sm->cfg.stats_local && sm->cfg.alloc_count != NULL)
		COUNTER("allocations", sm->cfg.alloc_count());
	if (sm->cfg.stats_local && sm->cfg.local_counters != NULL) {
		struct sm_local_counters lc = { 0 };

		sm->cfg.local_counters(sm->cfg.local_arg, &lc);
		for (i = 0; i < lc.n && i < SM_STATS_LOCAL_MAX; i++)
			COUNTER(lc.name[i], lc.value[i]);
	}
	for (i = 0; i < SM_NOPS; i++) {
		if (sm_op((int)i) == NULL || sm_op_is_node((int)i))
			continue;
		snprintf(names[n], sizeof names[n], "ops_%s", sm_op((int)i)->name);
		COUNTER(names[n], k.ops[i]);
	}
	/* The figures of the metrics endpoint: replies by op and code... */
	for (i = 0; i < SM_NOPS; i++) {
		for (j = 0; j < SM_NCODES; j++) {
			ev = protobuf_c_enum_descriptor_get_value(
			    &semd__code__descriptor, (int)j);
			if (k.replies[i][j] == 0 || ev == NULL)
				continue;
			snprintf(names[n], sizeof names[n], "replies_%s_%s",
			    sm_reply_op((int)i, (int)j) != NULL ?
			    sm_reply_op((int)i, (int)j) : "unknown", ev->name);
			COUNTER(names[n], k.replies[i][j]);
		}
	}
	/* ...and the wait and hold histograms (non-empty buckets, in ms). */
	stats_hist(&k.wait, "wait", cv, cp, names, &n);
	stats_hist(&k.hold, "hold", cv, cp, names, &n);
#undef COUNTER
	sr.n_counters = n;
	sr.counters = cp;
	REPLY_BODY(sm, c, id, STATS, stats, &sr);
}


/* Current counters. */
void sm_get_counters(const struct sm *sm, struct sm_counters *out)
{
	*out = sm->ctr;
	out->watch_notices = sm->watch_sent;
	out->memory_bytes = sm->mem + sizeof *sm + sm->heap_cap * sizeof(void *) +
	    hmap_bytes(&sm->names) + hmap_bytes(&sm->sessions) +
	    hmap_bytes(&sm->permits) + hmap_bytes(&sm->tokens) +
	    hmap_bytes(&sm->requests) + ordidx_bytes(&sm->byname);
}

/* Every semaphore's gauges. */
void sm_sem_each_prefix(struct sm *sm, const char *prefix,
    void (*fn)(void *arg, const struct sm_sem_gauges *g), void *arg)
{
	size_t plen = strlen(prefix);
	struct sm_sem_gauges g;
	struct ordidx_iter it;
	struct sm_sem *sem;

	/* The names with a prefix are one run of the ordered index. */
	ordidx_seek(&sm->byname, &it, prefix, true);
	while ((sem = ordidx_next(&it)) != NULL &&
	    strncmp(sem->name, prefix, plen) == 0) {
		g.name = sem->name;
		g.len = sem->len;
		g.limit = sem->limit;
		g.holders = sem->nholders;
		g.waiters = sem->nwaiters;
		g.available = sema_count(&sem->sem);
		fn(arg, &g);
	}
}

/* Call fn for every semaphore, in name order. */
void sm_sem_each(struct sm *sm,
    void (*fn)(void *arg, const struct sm_sem_gauges *g), void *arg)
{
	sm_sem_each_prefix(sm, "", fn, arg);
}

/* --- the snapshot's section (tag 40): histograms ------------------------- */

/* A histogram: count, then (not empty) its sum and its non-empty buckets. */
static void hist_write(struct sm_batch *b, const struct sm_hist *h)
{
	unsigned int i, k = 0;

	bytes_int(b, h->count, 8);
	if (h->count == 0)
		return;
	bytes_int(b, h->sum_ms, 8);
	for (i = 0; i < SM_HIST_BUCKETS; i++)
		k += h->bucket[i] != 0;
	bytes_int(b, k, 1);
	for (i = 0; i < SM_HIST_BUCKETS; i++) {
		if (h->bucket[i] == 0)
			continue;
		bytes_int(b, i, 1);
		bytes_int(b, h->bucket[i], 8);
	}
}

/* Read one back: false when it is none (buckets out of order or range). */
static bool hist_read(struct sm_rbuf *r, struct sm_hist *h)
{
	uint64_t k, i, next = 0;

	memset(h, 0, sizeof *h);
	if ((h->count = rbuf_int(r, 8)) == 0)
		return !r->bad;
	h->sum_ms = rbuf_int(r, 8);
	k = rbuf_int(r, 1);
	while (k-- > 0 && !r->bad) {
		i = rbuf_int(r, 1);
		if (i < next || i >= SM_HIST_BUCKETS)
			return false;	/* in order, each once */
		h->bucket[i] = rbuf_int(r, 8);
		next = i + 1;
	}
	return !r->bad;
}

/*
 * The wait and hold histograms of every name together (Stats), then of
 * each name that has its own (Info), in name order: u32 count, then its
 * u8 length and name, its wait and its hold.
 */
bool hists_snap_write(struct sm_batch *b, const struct sm *sm)
{
	struct ordidx_iter it;
	const struct sm_sem *sem;
	uint32_t n = 0;

	hist_write(b, &sm->ctr.wait);
	hist_write(b, &sm->ctr.hold);
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL)
		n += sem->hists != NULL;
	bytes_int(b, n, 4);
	ordidx_first(&sm->byname, &it);
	while ((sem = ordidx_next(&it)) != NULL) {
		if (sem->hists == NULL)
			continue;
		bytes_int(b, sem->len, 1);
		bytes_put(b, sem->name, sem->len);
		hist_write(b, &sem->hists->wait);
		hist_write(b, &sem->hists->hold);
	}
	return !b->failed;
}

/* Read them back, each name's onto that name (which must be there). */
bool hists_snap_read(struct sm *sm, struct sm_rbuf *r, char *err,
    size_t errlen)
{
	char name[SM_NAME_MAX + 1];
	struct sm_hist wait, hold;
	struct sm_sem *sem;
	uint64_t n, i;
	size_t len;

	if (!hist_read(r, &sm->ctr.wait) || !hist_read(r, &sm->ctr.hold)) {
		snprintf(err, errlen, "histograms: everyone's");
		return false;
	}
	n = rbuf_int(r, 4);
	for (i = 0; i < n && !r->bad; i++) {
		len = rbuf_str(r, 1, name, sizeof name - 1);
		if (r->bad || !hist_read(r, &wait) || !hist_read(r, &hold) ||
		    (sem = sem_find_len(sm, name, len)) == NULL ||
		    sem->hists != NULL) {
			snprintf(err, errlen, "histograms: name %" PRIu64, i);
			return false;
		}
		if (sem_hists(sm, sem) == NULL) {
			snprintf(err, errlen, "histograms: out of memory");
			return false;
		}
		sem->hists->wait = wait;
		sem->hists->hold = hold;
	}
	return !r->bad;
}
