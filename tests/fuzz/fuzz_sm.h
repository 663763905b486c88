/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/fuzz_sm.h - what the log fuzz targets (fuzz_entry: hostile
 * entries for sm_apply; fuzz_snap: hostile snapshots for sm_restore) share:
 * a state machine with replies checked and discarded, entries built from
 * batches, and the checks every state that came out of hostile bytes must
 * pass:
 *  - sm_check holds;
 *  - its snapshot restores (a machine's own snapshot is never refused), the
 *    restored machine passes sm_check and snapshots to the same bytes;
 *  - both, given the same last entries (a restart, then an entry at each
 *    deadline in turn until none is left), stay consistent and snapshot
 *    alike, and then nothing is left held, waiting, in a session or
 *    connected.
 */
#ifndef SEMD_FUZZ_SM_H
#define SEMD_FUZZ_SM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/state.h"
#include "proto/frame.h"
#include "proto/semd.pb-c.h"
#include "tests/fuzz/fuzz.h"

/* A reply must pack into a frame a client can read back. */
static inline void fsm_reply(void *ctx, void *conn, const Semd__Reply *r)
{
	Semd__Reply *back;
	uint8_t *buf;
	size_t n;

	(void)ctx;
	FUZZ_ASSERT(conn != NULL);
	n = semd__reply__get_packed_size(r);
	FUZZ_ASSERT(n <= FRAME_MAX_LIMIT);
	buf = malloc(n + 1);
	FUZZ_ASSERT(buf != NULL);
	FUZZ_ASSERT(semd__reply__pack(r, buf) == n);
	back = semd__reply__unpack(NULL, n, buf);
	FUZZ_ASSERT(back != NULL && back->id == r->id && back->code == r->code);
	semd__reply__free_unpacked(back, NULL);
	free(buf);
}

static inline void fsm_close(void *ctx, void *conn)
{
	(void)ctx;
	FUZZ_ASSERT(conn != NULL);
}

/* Every client opened by an entry is bound to "its connection": its id. */
static void *fsm_bind(void *arg, uint64_t id)
{
	(void)arg;
	return (void *)(uintptr_t)id;
}

static const struct sm_apply_hooks fsm_hooks = { fsm_bind, NULL, NULL };
static const struct sm_out fsm_out = { fsm_reply, NULL, fsm_close, NULL, NULL, NULL };

/* The node's settings (the log's own come through CONFIG entries). */
static inline void fsm_config(struct sm_config *cfg)
{
	sm_config_defaults(cfg);
	cfg->wall_ms = 1700000000000ull;
	memset(cfg->hash_key, 0x5a, sizeof(cfg->hash_key));
	cfg->server = "semd fuzz";
	cfg->durable = true;
}

static inline struct sm *fsm_new(void)
{
	struct sm_config cfg;

	fsm_config(&cfg);
	return sm_new(&cfg, &fsm_out, 1000);
}

static inline struct sm *fsm_restore(const uint8_t *p, size_t len)
{
	struct sm_config cfg;
	char err[256];

	fsm_config(&cfg);
	return sm_restore(&cfg, &fsm_out, p, len, err, sizeof(err));
}

static inline void fsm_check(const struct sm *sm)
{
	char err[512];

	if (sm_check(sm, err, sizeof(err)) != 0) {
		fprintf(stderr, "sm_check: %s\n", err);
		abort();
	}
}

/* An entry of the batch's commands stamped time (padded to 8 bytes). */
static inline uint8_t *fsm_entry(const struct sm_batch *b, uint64_t time,
    size_t *len)
{
	size_t hl = sm_entry_header_size();
	uint8_t *p;

	*len = (hl + b->len + 7) & ~(size_t)7;
	p = calloc(1, *len);
	FUZZ_ASSERT(p != NULL && !b->failed);
	sm_entry_header(p, time, 1700000000000ull + time);
	if (b->len > 0)
		memcpy(p + hl, b->p, b->len);
	return p;
}

/* Apply an entry of b's commands at time; it must apply. */
static inline void fsm_apply_batch(struct sm *sm, const struct sm_batch *b,
    uint64_t time)
{
	char err[160];
	uint8_t *p;
	size_t len;

	p = fsm_entry(b, time, &len);
	FUZZ_ASSERT(sm_apply(sm, p, len, &fsm_hooks, err, sizeof(err)) == 0);
	free(p);
}

/* The snapshot of sm; the caller frees it. */
static inline uint8_t *fsm_snapshot(const struct sm *sm, size_t *len)
{
	uint8_t *p = NULL;

	FUZZ_ASSERT(sm_snapshot(sm, &p, len) == 0 && p != NULL);
	return p;
}

/* Two machines in the same state: their snapshots are the same bytes. */
static inline void fsm_same(const struct sm *a, const struct sm *b)
{
	uint8_t *pa, *pb;
	size_t la, lb;

	pa = fsm_snapshot(a, &la);
	pb = fsm_snapshot(b, &lb);
	FUZZ_ASSERT(la == lb && memcmp(pa, pb, la) == 0);
	free(pa);
	free(pb);
}

/*
 * When the leases are the leader's (a LEASES entry), no deadline ends a
 * session: the leader's sweep does, with EXPIRE entries. Sweep as a leader
 * would, far past every lease, until none is due (and the deadlines that
 * follows, in order); false if that does not end.
 */
#define FSM_FAR	(100ULL * 86400000)	/* 100 days, past every lease */
static inline bool fsm_sweep(struct sm *sm, struct sm *copy)
{
	uint64_t ids[256], far, next;
	struct sm_clock k;
	struct sm_batch b;
	size_t n, j;
	int round, i;

	for (round = 0; round < 64; round++) {
		/* past every lease (hostile stamps come near 2^64: no wrap) */
		far = sm_now(sm) < UINT64_MAX - 1 - FSM_FAR ?
		    sm_now(sm) + FSM_FAR : UINT64_MAX - 1;
		sm_clock_start(&k, far, 0, far);
		n = sm_leases_due(sm, &k, far, 0, ids, 256);
		if (n == 0)
			return true;
		sm_batch_init(&b);
		for (j = 0; j < n; j++)
			sm_batch_expire(&b, ids[j]);
		fsm_apply_batch(sm, &b, far);
		fsm_apply_batch(copy, &b, far);
		sm_batch_free(&b);
		sm_batch_init(&b);
		for (i = 0; i < 10000 &&
		    (next = sm_next_deadline(sm)) != UINT64_MAX; i++) {
			fsm_apply_batch(sm, &b, next);
			fsm_apply_batch(copy, &b, next);
		}
		sm_batch_free(&b);
		fsm_check(sm);
		fsm_check(copy);
		fsm_same(sm, copy);
	}
	return false;
}

/*
 * The checks on a state that came out of hostile bytes (see the top);
 * frees sm.
 */
static inline void fsm_finish(struct sm *sm)
{
	struct sm_counters ca, cb;
	struct sm_config cfg;
	struct sm_batch b;
	struct sm *copy;
	char err[256];
	uint8_t *snap;
	uint64_t next;
	size_t len;
	int i;

	fsm_check(sm);
	snap = fsm_snapshot(sm, &len);
	fsm_config(&cfg);
	copy = sm_restore(&cfg, &fsm_out, snap, len, err, sizeof(err));
	free(snap);
	if (copy == NULL)
		fprintf(stderr, "its own snapshot is refused: %s\n", err);
	FUZZ_ASSERT(copy != NULL);
	fsm_check(copy);
	fsm_same(sm, copy);

	/* The service comes back; then every deadline comes, in order. */
	sm_batch_init(&b);
	sm_batch_restart(&b, 1000);
	fsm_apply_batch(sm, &b, sm_now(sm));
	fsm_apply_batch(copy, &b, sm_now(sm));
	sm_batch_free(&b);
	fsm_check(sm);
	fsm_check(copy);
	fsm_same(sm, copy);
	sm_batch_init(&b);
	for (i = 0; i < 10000 && (next = sm_next_deadline(sm)) != UINT64_MAX;
	    i++) {
		FUZZ_ASSERT(sm_next_deadline(copy) == next);
		fsm_apply_batch(sm, &b, next);
		fsm_apply_batch(copy, &b, next);
		fsm_check(sm);
		fsm_check(copy);
	}
	sm_batch_free(&b);
	fsm_same(sm, copy);
	if (i < 10000)
		i = fsm_sweep(sm, copy) ? i : 10000;
	if (i < 10000) {
		sm_get_counters(sm, &ca);
		sm_get_counters(copy, &cb);
		FUZZ_ASSERT(ca.clients == 0 && cb.clients == 0);
		FUZZ_ASSERT(ca.sessions == 0 && cb.sessions == 0);
		FUZZ_ASSERT(ca.holders == 0 && cb.holders == 0);
		FUZZ_ASSERT(ca.waiters == 0 && cb.waiters == 0);
	}
	sm_free(sm);
	sm_free(copy);
}

#endif
