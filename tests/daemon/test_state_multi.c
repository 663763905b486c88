/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_multi.c - the state machine driven directly, with
 * fake time (tests/daemon/test_state.h): DownMulti, gated waiters and
 * deadlocks (sm_multi.c, sm_wait.c, sm_deadlock.c, sm_family.c).
 */
#include <errno.h>

#include "tests/daemon/test_state.h"

/*
 * DownMulti: all names at once or none, nothing held while waiting, FIFO
 * on every name, oldest first when two overlap, one deadline, a retry
 * answered again.
 */
static void test_multi(void)
{
	static const char *const ab[] = { "a", "b" };
	static const char *const ba[] = { "b", "a" };
	static const char *const abc[] = { "a", "b", "c" };
	static const uint32_t n12[] = { 1, 2 };
	struct sm_client *x, *y, *z, *w, *adm;
	struct sm *sm = t_start_checked(1000,
	    "multi: both names at once, one hold and token each", NULL,
	    "uid:1 uid:2 uid:3 uid:4 uid:0", &x, &y, &z, &w, &adm);
	Semd__MultiGrant *mg;
	Semd__InfoReply *in;
	Semd__Grant *g;
	Semd__Reply *r;
	const char *many[17];
	char buf[17][8];
	int i;

	t_create(sm, adm, 2, "a", 1, SEMD__MODE__OWNED, 0);
	t_create(sm, adm, 3, "b", 2, SEMD__MODE__OWNED, 0);
	t_multi(sm, x, 2, ab, n12, 2, -1, 0);
	mg = multi_of(1, 2, ab, 2);
	if (mg != NULL) {
		EXPECT_U64(1, mg->grants[0]->n);
		EXPECT_U64(2, mg->grants[1]->n);
		EXPECT(mg->grants[0]->permit_id != 0 && mg->grants[1]->permit_id != 0);
	}
	t_multi(sm, x, 2, ab, n12, 2, -1, 0);	/* a retry: the same answer */
	multi_of(1, 2, ab, 2);
	t_down(sm, x, 2, "a", 1, -1, 0);	/* the id is a multi's */
	expect_code(1, 2, SEMD__CODE__INVALID_ARGUMENT);
	t_up(sm, x, 3, "a", 1, 0);
	t_up(sm, x, 4, "b", 2, 0);
	expect_code(1, 3, SEMD__CODE__OK);
	expect_code(1, 4, SEMD__CODE__OK);
	TEST_START("multi: nothing is held while it waits; FIFO on every name");
	g = t_held(sm, z, 3, 2, "a", 1);
	t_multi(sm, x, 5, ab, NULL, 2, -1, 0);	/* a is z's: x waits */
	EXPECT(none(1, 5));
	in = info_of(sm, adm, 5, 4, "b");
	if (in != NULL) {
		EXPECT_I64(2, in->available);	/* b is not held meanwhile */
		EXPECT_U64(1, in->waiters_total);
	}
	t_down(sm, y, 2, "b", 2, -1, 0);	/* behind x on b: no barging */
	EXPECT(none(2, 2));
	t_down(sm, y, 3, "b", 1, 0, 0);
	expect_code(2, 3, SEMD__CODE__WOULD_BLOCK);
	t_up(sm, z, 3, "a", 1, g ? g->permit_id : 0);
	multi_of(1, 5, ab, 2);			/* both at once */
	EXPECT(none(2, 2));			/* b: 1 free, y wants 2 */
	t_up(sm, x, 6, "b", 1, 0);
	grant_of(2, 2);
	t_up(sm, x, 7, "a", 1, 0);
	t_up(sm, y, 4, "b", 2, 0);
	TEST_START("multi: two waiters on the same names in opposite orders, oldest first");
	g = t_held(sm, z, 3, 4, "a", 1);
	t_multi(sm, x, 8, ab, NULL, 2, -1, 0);
	t_multi(sm, y, 5, ba, NULL, 2, -1, 0);
	t_up(sm, z, 5, "a", 1, g ? g->permit_id : 0);
	multi_of(1, 8, ab, 2);
	EXPECT(none(2, 5));
	t_up(sm, x, 9, "a", 1, 0);
	multi_of(2, 5, ba, 2);
	t_up(sm, y, 6, "a", 1, 0);
	t_up(sm, y, 7, "b", 1, 0);
	t_up(sm, x, 10, "b", 1, 0);
	TEST_START("multi: one deadline; nothing held after a timeout; auto names freed");
	g = t_held(sm, z, 3, 6, "a", 1);
	t_multi(sm, x, 11, abc, NULL, 3, 100, 0);	/* c is auto-created */
	EXPECT(none(1, 11));
	t_tick(sm, now + 100);
	expect_code(1, 11, SEMD__CODE__TIMEOUT);
	t_info(sm, adm, 5, 5, "c", SEMD__CODE__NOT_FOUND);
	t_multi(sm, x, 11, abc, NULL, 3, 100, 0);	/* its retry: the memo */
	expect_code(1, 11, SEMD__CODE__TIMEOUT);
	TEST_START("multi: a cancel, a session's end, a delete end the wait");
	t_multi(sm, x, 12, abc, NULL, 3, -1, 0);
	t_cancel(sm, x, 13, 12);
	expect_code(1, 12, SEMD__CODE__CANCELLED);
	expect_code(1, 13, SEMD__CODE__OK);
	t_multi(sm, w, 2, abc, NULL, 3, -1, 0);
	sm_client_close(sm, w, now);
	CHECK_SM(sm);
	w = t_client(sm, 4, "uid:4", 0);
	t_multi(sm, x, 14, ab, NULL, 2, -1, 0);
	t_delete(sm, adm, 6, "b", 1);
	expect_code(5, 6, SEMD__CODE__OK);
	expect_code(1, 14, SEMD__CODE__CANCELLED);
	t_create(sm, adm, 7, "b", 2, SEMD__MODE__OWNED, 0);
	t_up(sm, z, 7, "a", 1, g ? g->permit_id : 0);
	TEST_START("multi: bad requests");
	t_create(sm, adm, 8, "s", 1, SEMD__MODE__SIGNAL, 0);
	t_create_rate(sm, adm, 9, "r", 0, 5, 1000, 5);
	{
		static const char *const as[] = { "a", "s" };
		static const char *const ar[] = { "a", "r" };
		static const char *const aa[] = { "a", "a" };
		static const uint32_t n13[] = { 1, 3 };

		t_multi(sm, x, 15, as, NULL, 2, -1, 0);
		expect_code(1, 15, SEMD__CODE__INVALID_ARGUMENT);
		t_multi(sm, x, 16, ar, NULL, 2, -1, 0);
		expect_code(1, 16, SEMD__CODE__INVALID_ARGUMENT);
		t_multi(sm, x, 17, aa, NULL, 2, -1, 0);
		expect_code(1, 17, SEMD__CODE__INVALID_ARGUMENT);
		t_multi(sm, x, 18, ab, n13, 2, -1, 0);	/* 3 > limit of b */
		expect_code(1, 18, SEMD__CODE__INVALID_ARGUMENT);
		t_multi(sm, x, 19, ab, NULL, 0, -1, 0);
		expect_code(1, 19, SEMD__CODE__INVALID_ARGUMENT);
	}
	for (i = 0; i < 17; i++) {
		snprintf(buf[i], sizeof buf[i], "m%d", i);
		many[i] = buf[i];
	}
	t_multi(sm, x, 20, many, NULL, 17, -1, 0);
	expect_code(1, 20, SEMD__CODE__INVALID_ARGUMENT);
	t_multi(sm, x, 21, many, NULL, 16, 0, 0);	/* 16 is the most */
	multi_of(1, 21, many, 16);
	TEST_START("multi: the permits cap counts every name's n");
	t_who = &(struct sm_caller){ 0, { [SM_LIMIT_PERMITS] = 2 } };
	t_multi(sm, y, 8, ab, n12, 2, -1, 0);
	r = expect_code(2, 8, SEMD__CODE__RESOURCE_EXHAUSTED);
	EXPECT(r != NULL && strstr(r->message, "permits") != NULL);
	t_who = NULL;
	TEST_START("multi: detached holds with a lease, all of them");
	t_multi(sm, y, 9, ab, NULL, 2, -1, 500);
	mg = multi_of(2, 9, ab, 2);
	t_tick(sm, now + 500);
	in = info_of(sm, adm, 5, 10, "a");
	if (in != NULL)
		EXPECT_U64(0, in->holders_total);
	t_end(sm);
}

/* A multi-name waiter and a rate: all in a snapshot, and on after a restore. */
static void test_multi_snapshot(void)
{
	static const char *const ab[] = { "a", "b" };
	struct sm_config cfg;
	struct sm_out out = { cap_reply, NULL, cap_close, NULL, NULL, NULL };
	struct sm *sm, *rs;
	struct sm_client *x, *z, *adm;
	uint8_t *s1 = NULL;
	size_t l1 = 0;
	char err[256];
	Semd__Grant *g;
	uint64_t zp;

	TEST_START("snapshot: multi-name waiters, buckets and watches come back");
	now = 1000;
	sm = t_new(1700000000000ULL, NULL);
	x = t_client(sm, 1, "uid:1", 0);
	z = t_client(sm, 3, "uid:3", 0);
	adm = t_client(sm, 5, "uid:0", 0);
	t_create_rate(sm, adm, 2, "a", 1, 1, 1000, 1);
	t_create_rate(sm, adm, 3, "r", 0, 3, 7, 2);
	t_watch(sm, adm, 4, "", true);
	expect_code(5, 4, SEMD__CODE__OK);
	g = t_held(sm, z, 3, 2, "a", 1);
	zp = g ? g->permit_id : 0;
	t_multi(sm, x, 2, ab, NULL, 2, 5000, 0);
	t_down(sm, x, 5, "r", 2, 0, 0);		/* the bucket, emptied */
	grant_of(1, 5);
	t_down(sm, x, 3, "r", 2, -1, 0);
	t_down(sm, x, 4, "r", 1, -1, 0);
	EXPECT(none(1, 3) && none(1, 4));
	t_tick(sm, now + 3);			/* r: 1 token and 2/7 */
	CHECK_SM(sm);
	rs = t_snap_restore(sm, "another key!!!!!", &s1, &l1);
	if (rs == NULL) {
		free(s1);
		sm_free(sm);
		return;
	}
	TEST_START("snapshot: a section this semd does not know refuses it");
	{
		/* The last 4 bytes are the end tag: a section 999 of 1 byte first. */
		uint8_t *s3 = malloc(l1 + 9);
		struct sm *bad;

		sm_config_defaults(&cfg);
		if (s3 != NULL && l1 >= 4) {
			memcpy(s3, s1, l1 - 4);
			memcpy(s3 + l1 - 4, "\xe7\x03\0\0\x01\0\0\0x\0\0\0\0", 13);
			bad = sm_restore(&cfg, &out, s3, l1 + 9, err, sizeof err);
			EXPECT(bad == NULL && strstr(err, "section 999 not known") != NULL);
			sm_free(bad);
			/* Without its end tag: ends early. */
			bad = sm_restore(&cfg, &out, s1, l1 - 4, err, sizeof err);
			EXPECT(bad == NULL);
			sm_free(bad);
		}
		free(s3);
	}
	/* Both go on alike: the same replies, the same snapshots. */
	sm = t_switch(sm, rs);
	caps_clear();
	t_tick(sm, now + 1000);		/* r: tokens for the 2, then the 1 */
	grant_of(1, 3);
	grant_of(1, 4);
	t_up(sm, sm_client_find(sm, 3), 3, "a", 1, zp);
	multi_of(1, 2, ab, 2);
	event_of(5, EVENT_GRANT, "r");
	event_of(5, EVENT_GRANT, "r");
	event_of(5, EVENT_RELEASE, "a");
	event_of(5, EVENT_GRANT, "a");
	event_of(5, EVENT_GRANT, "b");
	EXPECT_U64(0, events_left(5));
	free(s1);
	t_end(sm);
}

/*
 * Backup: an administrator's copy is the state's snapshot at that request
 * (restored, it snapshots to the same bytes: the "ops" section of the
 * later ops' counters included), a principal without admin is refused,
 * and a SEED entry carrying it is told from the others.
 */
static void test_backup(void)
{
	static const struct sm_caller user = { 0 };
	struct sm_config cfg;
	struct sm_out out = { cap_reply, NULL, cap_close, NULL, NULL, NULL };
	struct sm_batch b;
	uint8_t *e;
	size_t elen, hl = sm_entry_header_size();
	struct sm *sm, *rs;
	struct sm_client *adm, *u;
	const uint8_t *snap;
	uint8_t *s1 = NULL, *s2 = NULL;
	size_t l1 = 0, l2 = 0, slen;
	char err[256];

	TEST_START("backup: an administrator's copy of the whole state");
	now = 1000;
	sm = t_new(1700000000000ULL, NULL);
	adm = t_client(sm, 5, "uid:0", 0);
	u = t_client(sm, 6, "uid:6", 0);
	t_create(sm, adm, 2, "a", 2, 0, 0);
	expect_code(5, 2, SEMD__CODE__OK);
	t_down(sm, u, 3, "a", 1, 0, 0);
	grant_of(6, 3);
	t_op(sm, adm, 4, SEMD__REQUEST__OP_BACKUP, "offset=%d", 0);
	EXPECT(bk_snap != NULL && bk_conn == 5 && bk_id == 4);
	EXPECT(none(5, 4));	/* the shell answers it */
	if (sm_snapshot(sm, &s1, &l1) != 0)
		FAIL("snapshot");
	EXPECT(bk_snap != NULL && l1 == bk_len && memcmp(s1, bk_snap, l1) == 0);
	sm_config_defaults(&cfg);
	memcpy(cfg.hash_key, "another key!!!!!", 16);
	rs = bk_snap != NULL ? sm_restore(&cfg, &out, bk_snap, bk_len, err, sizeof err) : NULL;
	if (rs == NULL) {
		FAIL("restore: %s", err);
	} else {
		CHECK_SM(rs);
		if (sm_snapshot(rs, &s2, &l2) != 0 || l1 != l2 || memcmp(s1, s2, l1) != 0)
			FAIL("the backup restores to another state");
		sm_free(rs);
	}
	t_who = &user;
	t_op(sm, u, 5, SEMD__REQUEST__OP_BACKUP, "offset=%d", 0);
	expect_code(6, 5, SEMD__CODE__PERMISSION_DENIED);
	t_who = NULL;
	t_op(sm, adm, 6, SEMD__REQUEST__OP_BACKUP, "offset=%d", 100);
	expect_code(5, 6, SEMD__CODE__INVALID_ARGUMENT);

	TEST_START("backup: the SEED entry that starts a log from it");
	sm_batch_init(&b);
	sm_batch_seed(&b, s1, l1);
	/* the header, the command, zeros to a multiple of 8 (as the log pads) */
	elen = (hl + b.len + 7) & ~(size_t)7;
	if (!b.failed && (e = calloc(1, elen)) != NULL) {
		sm_entry_header(e, 5000, 1700000005000ULL);
		memcpy(e + hl, b.p, b.len);
		EXPECT(sm_entry_seed(e, elen, &snap, &slen) == 1 && slen == l1 &&
		    memcmp(snap, s1, l1) == 0);
		EXPECT(sm_apply(sm, e, elen, NULL, err, sizeof err) == -EINVAL);
		EXPECT(sm_entry_seed(e, hl + b.len - 16, &snap, &slen) == -EINVAL);
		e[elen - 1] = 1;	/* something after the snapshot */
		EXPECT(elen == hl + b.len ||
		    sm_entry_seed(e, elen, &snap, &slen) == -EINVAL);
		sm_batch_reset(&b);
		sm_batch_boot(&b);
		memcpy(e + hl, b.p, b.len);
		EXPECT(sm_entry_seed(e, hl + b.len, &snap, &slen) == 0);
		free(e);
	} else {
		FAIL("out of memory");
	}
	sm_batch_free(&b);
	free(s1);
	free(s2);
	free(bk_snap);
	bk_snap = NULL;
	t_end(sm);
}

/*
 * Deadlocks: a cycle closed by a new down is answered at once, naming the
 * cycle; one closed by a grant ends its newest waiter; none is seen where
 * other holders could serve, or in a session waiting for itself.
 */
static void test_deadlock(void)
{
	static const char *const bc[] = { "b", "c" };
	struct sm_client *s, *t, *u, *adm;
	struct sm *sm = t_start_checked(1000,
	    "deadlock: S holds a and waits for b, T holds b and downs a", NULL,
	    "uid:1 uid:2 uid:3 uid:0", &s, &t, &u, &adm);
	Semd__Reply *r;
	Semd__Grant *g;
	int i;

	t_watch(sm, adm, 2, "a", false);
	t_held(sm, s, 1, 2, "a", 1);
	t_held(sm, t, 2, 2, "b", 1);
	t_down(sm, s, 3, "b", 1, -1, 0);
	EXPECT(none(1, 3));
	t_down(sm, t, 3, "a", 1, -1, 0);
	r = expect_code(2, 3, SEMD__CODE__DEADLOCK);
	if (r != NULL) {
		EXPECT(strstr(r->message, "waits for a, held by session 1") != NULL);
		EXPECT(strstr(r->message, "waits for b, held by session 2 (you)") != NULL);
	}
	event_of(4, EVENT_GRANT, "a");
	event_of(4, EVENT_DEADLOCK, "a");
	EXPECT_U64(1, t_stat(sm, adm, 4, "deadlocks"));
	t_down(sm, t, 4, "a", 1, 0, 0);		/* a trydown never waits */
	expect_code(2, 4, SEMD__CODE__WOULD_BLOCK);
	t_up(sm, t, 5, "b", 1, 0);
	grant_of(1, 3);
	t_up(sm, s, 4, "a", 1, 0);
	t_up(sm, s, 5, "b", 1, 0);
	TEST_START("deadlock: not when another holder can serve (limit 2)");
	t_create(sm, adm, 3, "c2", 2, SEMD__MODE__OWNED, 0);
	t_down(sm, s, 6, "c2", 1, -1, 0);
	t_down(sm, t, 6, "c2", 1, -1, 0);
	t_down(sm, u, 2, "c2", 1, -1, 0);	/* u holds nothing: no check */
	t_held(sm, s, 1, 7, "d", 1);
	t_down(sm, t, 7, "d", 1, -1, 0);	/* t waits for s */
	t_down(sm, s, 8, "c2", 1, -1, 0);	/* s waits for c2: t's or u's up */
	EXPECT(none(1, 8));
	TEST_START("deadlock: not for a session waiting for itself");
	t_down(sm, s, 9, "d", 1, -1, 0);
	EXPECT(none(1, 9));
	sm_client_close(sm, s, now);
	sm_client_close(sm, t, now);
	sm_client_close(sm, u, now);
	CHECK_SM(sm);
	caps_clear();
	s = t_client(sm, 1, "uid:1", 0);
	t = t_client(sm, 2, "uid:2", 0);
	u = t_client(sm, 3, "uid:3", 0);
	TEST_START("deadlock: a multi-name down closing a cycle is refused whole");
	t_held(sm, s, 1, 2, "a", 1);
	t_held(sm, t, 2, 2, "b", 1);
	t_down(sm, t, 3, "a", 1, -1, 0);	/* t waits for s */
	t_multi(sm, s, 3, bc, NULL, 2, -1, 0);	/* s would wait for t */
	expect_code(1, 3, SEMD__CODE__DEADLOCK);
	t_info(sm, adm, 4, 5, "c", SEMD__CODE__NOT_FOUND);	/* freed again */
	t_up(sm, s, 4, "a", 1, 0);
	grant_of(2, 3);
	t_up(sm, t, 4, "a", 1, 0);
	t_up(sm, t, 5, "b", 1, 0);
	TEST_START("deadlock: closed by a grant, the newest waiter of the cycle is answered");
	t_down(sm, s, 5, "a", 1, -1, 0);	/* s holds a */
	grant_of(1, 5);
	t_down(sm, u, 2, "x", 1, -1, 0);	/* u holds x */
	g = grant_of(3, 2);
	t_down(sm, t, 6, "a", 1, -1, 0);	/* t waits for a (s) */
	t_down(sm, t, 7, "x", 1, -1, 0);	/* and for x (u) */
	t_down(sm, s, 6, "x", 1, -1, 0);	/* s waits for x after t: u holds it */
	EXPECT(none(1, 6) && none(2, 6) && none(2, 7));
	t_up(sm, u, 3, "x", 1, g ? g->permit_id : 0);
	grant_of(2, 7);				/* t holds x, waits for a */
	r = expect_code(1, 6, SEMD__CODE__DEADLOCK);	/* s's is the newest */
	if (r != NULL)
		EXPECT(strstr(r->message, "deadlock:") != NULL);
	EXPECT(none(2, 6));
	t_up(sm, s, 7, "a", 1, 0);
	grant_of(2, 6);
	TEST_START("deadlock: a chain of 1000 sessions, one search");
	sm_free(sm);
	sm = t_new(1700000000000ULL, tune_big);
	{
		struct sm_client *cs[1000];
		char name[16], next[16];
		uint64_t checks;

		for (i = 0; i < 1000; i++) {
			cs[i] = t_client(sm, 10 + (uintptr_t)i, "uid:1", 0);
			snprintf(name, sizeof name, "n%d", i);
			t_down(sm, cs[i], 2, name, 1, -1, 0);
			grant_of(10 + (uintptr_t)i, 2);
		}
		t_check_each = false;
		for (i = 0; i < 999; i++) {
			snprintf(next, sizeof next, "n%d", i + 1);
			t_down(sm, cs[i], 3, next, 1, -1, 0);
		}
		checks = t_stat(sm, cs[0], 10, "deadlock_checks");
		t_down(sm, cs[999], 3, "n0", 1, -1, 0);
		r = expect_code(1009, 3, SEMD__CODE__DEADLOCK);
		if (r != NULL)
			EXPECT(strstr(r->message, "more)") != NULL);
		EXPECT_U64(checks + 1, t_stat(sm, cs[0], 10, "deadlock_checks"));
		CHECK_SM(sm);
	}
	t_end(sm);
}

/*
 * A detached-hold down of a session that is away is parked: it keeps its
 * place and blocks nobody. A multi-name down (gated) arriving behind it
 * while permits are free was queued and never offered, and a rate name's
 * bucket waited for the parked head's tokens (test_replay seed 1151892897).
 */
static void test_issue_parked_head_blocks_nobody(void)
{
	static const char *const p1[] = { "p" };
	static const uint32_t one[] = { 1 };
	struct sm_client *h, *a, *b, *d;
	struct sm *sm = t_start_checked(1000,
	    "a parked detached down blocks nobody: a multi behind it is granted at once",
	    NULL, "uid:9 uid:1/5000 uid:2 uid:3/5000", &h, &a, &b, &d);

	t_created(sm, h, 1, 2, "p", 2, SEMD__MODE__OWNED);
	t_held(sm, h, 1, 3, "p", 2);
	t_down(sm, a, 2, "p", 1, -1, 60000);	/* a detached hold, waiting */
	EXPECT(none(2, 2));
	sm_client_close(sm, a, now);		/* away: parked in its place */
	t_up(sm, h, 4, "p", 1, 0);
	expect_code(1, 4, SEMD__CODE__OK);
	EXPECT(none(2, 2));
	t_multi(sm, b, 2, p1, one, 1, -1, 0);
	multi_of(3, 2, p1, 1);
	TEST_START("a parked detached down blocks nobody: a trydown behind it gets the permit");
	t_up(sm, b, 3, "p", 1, 0);
	expect_code(3, 3, SEMD__CODE__OK);
	t_multi(sm, b, 4, p1, one, 1, 0, 0);
	multi_of(3, 4, p1, 1);
	TEST_START("a rate name's bucket waits for the first waiter not parked");
	t_create_rate(sm, h, 5, "r", 2, 1, 1000, 1);	/* 1/s, burst 1, limit 2 */
	expect_code(1, 5, SEMD__CODE__OK);
	t_held(sm, h, 1, 6, "r", 1);		/* the token */
	t_down(sm, d, 2, "r", 1, -1, 60000);	/* a detached hold, waiting */
	sm_client_close(sm, d, now);		/* away: parked */
	t_down(sm, b, 5, "r", 1, -1, 0);
	EXPECT(none(3, 5));
	t_tick(sm, now + 1000);			/* a token: to b, not the parked */
	grant_of(3, 5);
	t_end(sm);
}

/*
 * A client on conn k that says hello as the child of session parent with
 * link (0, 0: none); *link gets its own session's link.
 */
static struct sm_client *t_child(struct sm *sm, uintptr_t k,
    const char *principal, uint64_t parent, uint64_t plink, uint64_t *link)
{
	struct sm_client *c = sm_client_open(sm, (uint64_t)k, (void *)k,
	    principal, secret_a, 0, now);
	Semd__Reply *r;

	t_op(sm, c, 1, SEMD__REQUEST__OP_HELLO, "version=%d client_name=%s "
	    "host=%s pid=%d parent_session=%" PRIu64 " parent_link=%" PRIu64,
	    1, "test", "localhost", 42, parent, plink);
	r = expect_code(k, 1, SEMD__CODE__OK);
	*link = r != NULL && r->hello != NULL ? r->hello->link : 0;
	EXPECT(*link != 0);
	return c;
}

/*
 * semctl run A -- semctl down B against its mirror image: the nested
 * down's session is a child of the run's (Hello.parent_session), which
 * waits for it; the cycle through both is a deadlock. The link is checked:
 * a wrong one, or another principal's parent, leaves the session alone.
 */
static void test_family(void)
{
	struct sm_client *p, *q, *c1, *c2, *x, *u, *v, *p2, *c5;
	uint64_t lp, lq, l, lp2;
	Semd__Reply *r;
	Semd__Grant *g;
	struct sm *sm;

	TEST_START("family: run A -- down B against run B -- down A is a deadlock");
	now = 1700000000000ULL;
	t_check_each = true;
	sm = t_new(1700000000000ULL, NULL);
	p = t_child(sm, 1, "uid:1", 0, 0, &lp);
	q = t_child(sm, 2, "uid:1", 0, 0, &lq);
	t_held(sm, p, 1, 2, "a", 1);
	t_held(sm, q, 2, 2, "b", 1);
	c1 = t_child(sm, 3, "uid:1", 1, lp, &l);
	c2 = t_child(sm, 4, "uid:1", 2, lq, &l);
	t_down(sm, c1, 2, "b", 1, -1, 0);
	EXPECT(none(3, 2));
	t_down(sm, c2, 2, "a", 1, -1, 0);
	r = expect_code(4, 2, SEMD__CODE__DEADLOCK);
	if (r != NULL)
		EXPECT(strstr(r->message, "session 1 (uid:1, test@localhost "
		    "pid 42), which waits for the command it runs, session 3")
		    != NULL);
	TEST_START("family: a child waiting for its parent's hold is a deadlock");
	t_down(sm, c2, 3, "b", 1, -1, 0);
	expect_code(4, 3, SEMD__CODE__DEADLOCK);
	TEST_START("family: a wrong link, or another principal, links nothing");
	x = t_child(sm, 5, "uid:1", 1, lp + 1, &l);
	t_down(sm, x, 2, "a", 1, -1, 0);
	EXPECT(none(5, 2));
	u = t_child(sm, 6, "uid:2", 1, lp, &l);
	t_down(sm, u, 2, "a", 1, -1, 0);
	EXPECT(none(6, 2));
	sm_client_close(sm, x, now);
	sm_client_close(sm, u, now);
	TEST_START("family: closed by a grant to a parent whose child waits");
	v = t_child(sm, 7, "uid:1", 0, 0, &l);
	g = t_held(sm, v, 7, 2, "y", 1);	/* v holds y */
	p2 = t_child(sm, 8, "uid:1", 0, 0, &lp2);
	t_down(sm, p2, 2, "y", 1, -1, 0);	/* p2 waits for y (v) */
	t_held(sm, q, 2, 3, "x", 1);		/* q holds b and x */
	t_down(sm, q, 4, "y", 1, -1, 0);	/* q waits for y, after p2 */
	c5 = t_child(sm, 9, "uid:1", 8, lp2, &l);
	t_down(sm, c5, 2, "x", 1, -1, 0);	/* c5 waits for x (q) */
	EXPECT(none(8, 2) && none(2, 4) && none(9, 2));
	t_up(sm, v, 3, "y", 1, g != NULL ? g->permit_id : 0);
	grant_of(8, 2);				/* p2 -> c5 -> q -> p2 */
	expect_code(9, 2, SEMD__CODE__DEADLOCK);	/* c5's is the newest */
	EXPECT(none(2, 4));
	TEST_START("family: the links survive a snapshot");
	sm_free(t_snap_restore(sm, "another key!!!!!", NULL, NULL));
	TEST_START("family: a parent that ends leaves its children alone");
	sm_client_close(sm, p, now);
	sm_client_close(sm, c1, now);
	sm_client_close(sm, c2, now);
	sm_client_close(sm, c5, now);
	CHECK_SM(sm);
	t_end(sm);
}

int main(void)
{
	test_multi();
	test_multi_snapshot();
	test_backup();
	test_deadlock();
	test_family();
	test_issue_parked_head_blocks_nobody();
	caps_clear();
	return check_done("state multi");
}
