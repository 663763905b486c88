/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_watch.c - the state machine driven directly, with
 * fake time (tests/daemon/test_state.h): watches, Renew, Holds and Where
 * (sm_watch.c, sm_holds.c).
 */
#include "tests/daemon/test_state.h"
#include "daemon/state/sm-int.h"

/* Renew. */
static void t_renew(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint64_t permit, uint32_t lease)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_RENEW,
	    "name=%s permit_id=%" PRIu64 " lease_ms=%u", name, permit, lease);
}

/* Holds; the reply, whatever its code. */
static Semd__Reply *t_holds(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *principal, uint64_t after, uint32_t max)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_HOLDS,
	    "principal=%s after_permit=%" PRIu64 " max=%u", principal, after, max);
	return take(k, id);
}

/* Where; the reply, whatever its code. */
static Semd__Reply *t_where(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, uint64_t which)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_WHERE, "request_id=%" PRIu64, which);
	return take(k, id);
}

/*
 * Watches: every kind of event, for a name or a prefix, in the order the
 * state changed; identities only for those who may see them; a cancel
 * ends one; nothing is sent to a client not bound here.
 */
static void test_watch(void)
{
	struct sm_client *a, *b, *adm, *v;
	struct sm *sm = t_start_checked(1000, "watch: a name's events, in order",
	    NULL, "uid:1 uid:2 uid:0 uid:4", &a, &b, &adm, &v);
	Semd__WatchEvent *ev;
	Semd__Grant *g;
	int i;

	t_watch(sm, adm, 2, "jobs/x", false);
	expect_code(3, 2, SEMD__CODE__OK);
	t_who = &(struct sm_caller){ 0, { 0 } };	/* v: no administrator */
	t_watch(sm, v, 2, "jobs/", true);
	expect_code(4, 2, SEMD__CODE__OK);
	t_who = NULL;
	t_create(sm, a, 2, "jobs/x", 1, SEMD__MODE__OWNED, 0);
	g = t_held(sm, a, 1, 3, "jobs/x", 1);
	t_down(sm, b, 2, "jobs/x", 1, -1, 0);
	t_down(sm, b, 3, "jobs/x", 1, 50, 0);
	t_tick(sm, now + 50);
	expect_code(2, 3, SEMD__CODE__TIMEOUT);
	t_up(sm, a, 4, "jobs/x", 1, 0);
	grant_of(2, 2);
	t_set_limit(sm, a, 5, "jobs/x", 3);
	t_cancel(sm, b, 4, 99);			/* nothing: no event */
	t_held(sm, a, 1, 6, "jobs/x", 2);
	t_delete(sm, a, 7, "jobs/x", 1);
	event_of(3, EVENT_CREATE, "jobs/x");
	ev = event_of(3, EVENT_GRANT, "jobs/x");
	if (ev != NULL) {
		EXPECT_U64(2, ev->watch);
		EXPECT(g != NULL && ev->permit_id == g->permit_id);
		EXPECT(strcmp(ev->principal, "uid:1") == 0);	/* an admin sees who */
		EXPECT_U64(1, ev->holders);
	}
	ev = event_of(3, EVENT_WAIT, "jobs/x");
	if (ev != NULL)
		EXPECT_U64(1, ev->waiters);
	event_of(3, EVENT_WAIT, "jobs/x");
	event_of(3, EVENT_TIMEOUT, "jobs/x");
	ev = event_of(3, EVENT_RELEASE, "jobs/x");
	if (ev != NULL)
		EXPECT_I64(1, ev->available);	/* told before it goes on */
	event_of(3, EVENT_GRANT, "jobs/x");
	ev = event_of(3, EVENT_LIMIT, "jobs/x");
	if (ev != NULL)
		EXPECT_U64(3, ev->limit);
	event_of(3, EVENT_GRANT, "jobs/x");
	event_of(3, EVENT_RELEASE, "jobs/x");	/* the delete takes the holds */
	event_of(3, EVENT_RELEASE, "jobs/x");
	event_of(3, EVENT_DELETE, "jobs/x");
	EXPECT_U64(0, events_left(3));
	TEST_START("watch: a prefix; who did it hidden from those who may not see");
	for (i = 0; i < 11; i++) {
		ev = event_of(4, EVENT_CREATE, "jobs/x");	/* the same, here */
		if (i > 0 && ev != NULL)
			FAIL("events came twice");
		break;
	}
	ev = event_of(4, EVENT_GRANT, "jobs/x");
	if (ev != NULL) {
		EXPECT_U64(2, ev->watch);
		EXPECT_U64(0, strlen(ev->principal));	/* uid:4 is no manager */
	}
	TEST_START("watch: cancelled by its id, or ended with its connection");
	caps_clear();
	t_cancel(sm, v, 3, 2);
	expect_code(4, 3, SEMD__CODE__OK);
	t_down(sm, a, 8, "jobs/y", 1, 0, 0);
	grant_of(1, 8);
	EXPECT_U64(0, events_left(4));
	t_watch(sm, v, 4, "jobs/y", false);
	t_watch(sm, v, 4, "jobs/y", false);
	expect_code(4, 4, SEMD__CODE__OK);
	expect_code(4, 4, SEMD__CODE__INVALID_ARGUMENT);	/* id taken */
	t_watch(sm, v, 0, "jobs/y", false);
	expect_code(4, 0, SEMD__CODE__INVALID_ARGUMENT);
	for (i = 0; i < 16; i++)
		t_watch(sm, v, 100 + (uint64_t)i, "z", false);
	expect_code(4, 114, SEMD__CODE__OK);
	expect_code(4, 115, SEMD__CODE__RESOURCE_EXHAUSTED);
	t_watch(sm, v, 200, "\x01", false);
	expect_code(4, 200, SEMD__CODE__INVALID_ARGUMENT);
	TEST_START("watch: nothing is sent where the client is not bound");
	sm_client_bind(v, NULL);
	t_up(sm, a, 9, "jobs/y", 1, 0);
	EXPECT_U64(0, events_left(4));
	sm_client_bind(v, (void *)4);
	sm_client_close(sm, v, now);
	CHECK_SM(sm);
	t_end(sm);
}

/*
 * The watches cap (issue 35): a principal's watches on all its connections
 * count against it; past it RESOURCE_EXHAUSTED naming the quota, and
 * nobody else's watches are touched; a watch that ends, by a cancel or
 * with its connection, makes room again. The counts are checked against a
 * recount after every step (t_start_checked).
 */
static void test_watch_quota(void)
{
	struct sm_client *a, *a2, *b;
	struct sm *sm = t_start_checked(1000, "watch: the watches cap counts a "
	    "principal's watches on all its connections", NULL,
	    "uid:1 uid:1 uid:2", &a, &a2, &b);
	Semd__Reply *r;

	t_who = &(struct sm_caller){ 0, { [SM_LIMIT_WATCHES] = 3 } };
	t_watch(sm, a, 1, "", true);
	t_watch(sm, a, 2, "jobs/", true);
	t_watch(sm, a2, 1, "x", false);
	expect_code(1, 1, SEMD__CODE__OK);
	expect_code(1, 2, SEMD__CODE__OK);
	expect_code(2, 1, SEMD__CODE__OK);
	t_watch(sm, a2, 2, "", true);
	r = expect_code(2, 2, SEMD__CODE__RESOURCE_EXHAUSTED);
	EXPECT(r != NULL && strcmp(r->message, "quota: uid:1 has 3 watches, 1 "
	    "more would pass its watches quota (3)") == 0);
	t_watch(sm, b, 1, "", true);
	expect_code(3, 1, SEMD__CODE__OK);
	/* The refused watch sends nothing; the others their notices. */
	t_create(sm, b, 2, "jobs/y", 1, SEMD__MODE__OWNED, 0);
	event_of(1, EVENT_CREATE, "jobs/y");
	event_of(1, EVENT_CREATE, "jobs/y");
	event_of(3, EVENT_CREATE, "jobs/y");
	EXPECT_U64(0, events_left(1));
	EXPECT_U64(0, events_left(2));
	EXPECT_U64(0, events_left(3));
	caps_clear();
	t_cancel(sm, a, 3, 2);
	expect_code(1, 3, SEMD__CODE__OK);
	t_watch(sm, a2, 3, "", true);
	expect_code(2, 3, SEMD__CODE__OK);
	t_watch(sm, a2, 4, "y", false);
	expect_code(2, 4, SEMD__CODE__RESOURCE_EXHAUSTED);
	sm_client_close(sm, a, now);
	t_watch(sm, a2, 5, "y", false);
	expect_code(2, 5, SEMD__CODE__OK);
	t_who = NULL;
	t_end(sm);
}

/* Append v as n little-endian bytes at *p. */
static void le_put(uint8_t **p, uint64_t v, unsigned int n)
{
	while (n-- > 0) {
		*(*p)++ = (uint8_t)v;
		v >>= 8;
	}
}

/*
 * A log written before the watches cap: its REQUEST commands (kind 5, four
 * caps) still apply, their caps read as they were and no watches cap; the
 * CAPS_REQUEST semd writes now carries the watches cap.
 */
static void test_old_request_entry(void)
{
	struct sm_client *a;
	struct sm *sm = t_start_checked(1000, "watch: a REQUEST entry of four "
	    "caps (an older log) applies, without a watches cap", NULL, "uid:1",
	    &a);
	size_t hl = sm_entry_header_size(), len;
	uint8_t e[512], *p;
	struct sm_caller who = { 0, { [SM_LIMIT_SEMAPHORES] = 1,
	    [SM_LIMIT_WATCHES] = 1 } };
	struct sm_batch b;
	struct req q;
	char err[128];
	int i;

	for (i = 0; i < 3; i++) {
		p = e + hl;
		sm_entry_header(e, now, 1700000000000ULL + now);
		if (i < 2)
			req_make(&q, 10 + (uint64_t)i, SEMD__REQUEST__OP_CREATE,
			    "name=%s limit=%u", i == 0 ? "n/1" : "n/2", 1);
		else
			req_make(&q, 12, SEMD__REQUEST__OP_WATCH, "name=%s "
			    "prefix=%d", "", 1);
		len = semd__request__get_packed_size(&q.r);
		*p++ = 5;				/* REQUEST */
		le_put(&p, 1, 8);			/* client 1: a */
		le_put(&p, 0, 4);			/* privs */
		le_put(&p, 0, 8);			/* sessions */
		le_put(&p, 0, 8);			/* permits */
		le_put(&p, 0, 8);			/* waiters */
		le_put(&p, 1, 8);			/* semaphores */
		le_put(&p, len, 4);
		p += semd__request__pack(&q.r, p);
		if (sm_apply(sm, e, (size_t)(p - e), NULL, err, sizeof err) != 0)
			FAIL("old REQUEST entry refused: %s", err);
	}
	expect_code(1, 10, SEMD__CODE__OK);
	expect_code(1, 11, SEMD__CODE__RESOURCE_EXHAUSTED);	/* its cap */
	expect_code(1, 12, SEMD__CODE__OK);
	/* Today's entry: the second watch is over its cap of one. */
	sm_batch_init(&b);
	req_make(&q, 13, SEMD__REQUEST__OP_WATCH, "name=%s prefix=%d", "n/", 1);
	len = semd__request__get_packed_size(&q.r);
	semd__request__pack(&q.r, e);
	sm_batch_request(&b, 1, &who, e, len);
	p = malloc(hl + b.len);
	if (p == NULL || b.failed) {
		FAIL("out of memory");
	} else {
		sm_entry_header(p, now, 1700000000000ULL + now);
		memcpy(p + hl, b.p, b.len);
		if (sm_apply(sm, p, hl + b.len, NULL, err, sizeof err) != 0)
			FAIL("CAPS_REQUEST entry refused: %s", err);
	}
	free(p);
	sm_batch_free(&b);
	expect_code(1, 13, SEMD__CODE__RESOURCE_EXHAUSTED);
	t_end(sm);
}

/* Renew, Holds and Where. */
static void test_holds(void)
{
	static const char *const ab[] = { "a", "b" };
	struct sm_client *a, *b, *adm;
	struct sm *sm = t_start_checked(1000,
	    "renew: a detached hold's lease, from now", NULL,
	    "uid:1 uid:2 uid:0", &a, &b, &adm);
	Semd__Reply *r;
	Semd__Grant *g;
	uint64_t t0;

	t0 = now;
	t_down(sm, a, 2, "d", 1, -1, 1000);
	g = grant_of(1, 2);
	t_tick(sm, t0 + 800);
	t_renew(sm, a, 3, "d", g ? g->permit_id : 0, 2000);
	r = expect_code(1, 3, SEMD__CODE__OK);
	if (r != NULL && r->body_case == SEMD__REPLY__BODY_RENEWED) {
		EXPECT_U64(1, r->renewed->holds);
		EXPECT_U64(1700000000000ULL + t0 + 2800 - 1000, r->renewed->expires_ms);
	}
	t_tick(sm, t0 + 1000);
	t_down(sm, b, 2, "d", 1, 0, 0);
	expect_code(2, 2, SEMD__CODE__WOULD_BLOCK);	/* still held */
	t_renew(sm, b, 3, "d", g ? g->permit_id : 0, 1000);
	expect_code(2, 3, SEMD__CODE__NOT_HOLDER);	/* not b's */
	t_renew(sm, a, 4, "d", 0, 0);			/* all, their own lease */
	r = expect_code(1, 4, SEMD__CODE__OK);
	t_tick(sm, t0 + 2999);
	t_down(sm, b, 4, "d", 1, 0, 0);
	expect_code(2, 4, SEMD__CODE__WOULD_BLOCK);
	t_tick(sm, t0 + 3000);
	t_down(sm, b, 5, "d", 1, 0, 0);
	grant_of(2, 5);
	t_renew(sm, b, 6, "d", 0, 1000);		/* a session's hold */
	expect_code(2, 6, SEMD__CODE__NOT_HOLDER);
	TEST_START("holds: a principal's holds on every name, by permit");
	t_multi(sm, a, 5, ab, NULL, 2, -1, 0);
	multi_of(1, 5, ab, 2);
	t_down(sm, a, 6, "e", 1, -1, 600000);
	grant_of(1, 6);
	r = t_holds(sm, a, 1, 7, "", 0, 2);
	if (r != NULL && r->body_case == SEMD__REPLY__BODY_HOLDS) {
		EXPECT_U64(2, r->holds->n_holds);
		EXPECT_U64(3, r->holds->total);
		EXPECT(strcmp(r->holds->holds[0]->name, "a") == 0);
		EXPECT(strcmp(r->holds->holds[1]->name, "b") == 0);
		EXPECT(r->holds->next_permit != 0);
		r = t_holds(sm, a, 1, 8, "", r->holds->next_permit, 2);
		if (r != NULL && r->body_case == SEMD__REPLY__BODY_HOLDS) {
			EXPECT_U64(1, r->holds->n_holds);
			EXPECT(strcmp(r->holds->holds[0]->name, "e") == 0);
			EXPECT(r->holds->holds[0]->detached);
			EXPECT_U64(0, r->holds->next_permit);
		}
	} else {
		FAIL("no holds reply");
	}
	t_who = &(struct sm_caller){ 0, { 0 } };
	r = t_holds(sm, b, 2, 7, "uid:1", 0, 0);
	EXPECT(r != NULL && r->code == SEMD__CODE__PERMISSION_DENIED);
	t_who = &(struct sm_caller){ SM_PRIV_ADMIN, { 0 } };
	r = t_holds(sm, adm, 3, 2, "uid:1", 0, 0);
	EXPECT(r != NULL && r->body_case == SEMD__REPLY__BODY_HOLDS &&
	    r->holds->n_holds == 3);
	r = t_holds(sm, adm, 3, 3, "nobody", 0, 0);
	EXPECT(r != NULL && r->body_case == SEMD__REPLY__BODY_HOLDS &&
	    r->holds->n_holds == 0);
	t_who = NULL;
	TEST_START("where: a waiter's place in each of its queues");
	t_down(sm, b, 8, "a", 1, -1, 0);
	t_down(sm, adm, 4, "a", 1, -1, 0);
	t_multi(sm, b, 9, ab, NULL, 2, -1, 0);
	r = t_where(sm, b, 2, 10, 9);
	if (r != NULL && r->body_case == SEMD__REPLY__BODY_WHERE &&
	    r->where->n_places == 2) {
		EXPECT_U64(3, r->where->places[0]->position);
		EXPECT_U64(3, r->where->places[0]->waiters);
		EXPECT_U64(1, r->where->places[0]->held);
		EXPECT_U64(1, r->where->places[1]->position);
	} else {
		FAIL("no where reply");
	}
	r = t_where(sm, b, 2, 11, 777);
	EXPECT(r != NULL && r->code == SEMD__CODE__NOT_FOUND);
	r = t_where(sm, adm, 3, 5, 9);		/* another session's id */
	EXPECT(r != NULL && r->code == SEMD__CODE__NOT_FOUND);
	t_end(sm);
}

/* A history of 1 KiB: a few events. */
static void tune_history(struct sm_config *cfg)
{
	cfg->watch_history = 1024;
}

/*
 * Every event has a revision, one more than the last; a watch from a
 * revision gets the events it missed from the history (identities as it may
 * see them), then the live ones; one from a revision no longer kept is
 * refused COMPACTED with the oldest kept, one from the future refused.
 */
static void test_resume(void)
{
	struct sm_client *a, *adm, *v;
	struct sm *sm = t_start_checked(1000, "watch: revisions, and a resume from one",
	    NULL, "uid:1 uid:0 uid:4", &a, &adm, &v);
	static const struct sm_caller plain = { 0, { 0 } };
	Semd__WatchEvent *ev;
	Semd__Reply *r;
	uint64_t r1 = 0, oldest;
	int i;

	t_watch(sm, adm, 2, "r/", true);
	expect_code(2, 2, SEMD__CODE__OK);
	t_create(sm, a, 2, "r/x", 2, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, SEMD__CODE__OK);
	if ((ev = event_of(2, EVENT_CREATE, "r/x")) != NULL)
		r1 = ev->revision;
	EXPECT(r1 >= 1);
	t_held(sm, a, 1, 3, "r/x", 1);
	ev = event_of(2, EVENT_GRANT, "r/x");
	EXPECT(ev != NULL && ev->revision == r1 + 1 && strcmp(ev->principal, "uid:1") == 0);
	t_up(sm, a, 4, "r/x", 1, 0);
	expect_code(1, 4, SEMD__CODE__OK);
	ev = event_of(2, EVENT_RELEASE, "r/x");
	EXPECT(ev != NULL && ev->revision == r1 + 2);
	/* v missed them: from r1 + 1, the grant and the release, then live */
	t_who = &plain;
	t_op(sm, v, 2, SEMD__REQUEST__OP_WATCH, "name=%s from_revision=%" PRIu64, "r/x", r1 + 1);
	t_who = NULL;
	expect_code(3, 2, SEMD__CODE__OK);
	ev = event_of(3, EVENT_GRANT, "r/x");
	EXPECT(ev != NULL && ev->revision == r1 + 1 && ev->watch == 2);
	EXPECT(ev != NULL && strcmp(ev->principal, "") == 0 && ev->pid == 0);
	ev = event_of(3, EVENT_RELEASE, "r/x");
	EXPECT(ev != NULL && ev->revision == r1 + 2);
	EXPECT_U64(0, events_left(3));
	t_held(sm, a, 1, 5, "r/x", 1);
	ev = event_of(3, EVENT_GRANT, "r/x");
	EXPECT(ev != NULL && ev->revision == r1 + 3);
	event_of(2, EVENT_GRANT, "r/x");
	/* from the next revision: nothing missed, nothing repeated */
	t_op(sm, adm, 3, SEMD__REQUEST__OP_WATCH, "name=%s from_revision=%" PRIu64, "r/x", r1 + 4);
	expect_code(2, 3, SEMD__CODE__OK);
	EXPECT_U64(0, events_left(2));
	t_op(sm, adm, 4, SEMD__REQUEST__OP_WATCH, "name=%s from_revision=%" PRIu64, "r/x", r1 + 5);
	expect_code(2, 4, SEMD__CODE__INVALID_ARGUMENT);
	t_end(sm);

	sm = t_start_checked(1000, "watch: a resume from what the history no longer keeps",
	    tune_history, "uid:1 uid:0", &a, &adm);
	t_create(sm, a, 2, "h", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, SEMD__CODE__OK);
	for (i = 0; i < 20; i++) {
		t_held(sm, a, 1, (uint64_t)(10 + 2 * i), "h", 1);
		t_up(sm, a, (uint64_t)(11 + 2 * i), "h", 1, 0);
		expect_code(1, (uint64_t)(11 + 2 * i), SEMD__CODE__OK);
	}
	t_op(sm, adm, 2, SEMD__REQUEST__OP_WATCH, "name=%s from_revision=%d", "h", 1);
	r = expect_code(2, 2, SEMD__CODE__COMPACTED);
	oldest = r != NULL ? r->oldest_revision : 0;
	EXPECT(oldest > 1 && oldest <= 41);
	EXPECT(r != NULL && strstr(r->message, "compacted") != NULL);
	t_op(sm, adm, 3, SEMD__REQUEST__OP_WATCH, "name=%s from_revision=%" PRIu64, "h", oldest);
	expect_code(2, 3, SEMD__CODE__OK);
	EXPECT_U64(41 - oldest + 1, events_left(2));
	t_end(sm);
}

/* Little-endian u32 and u64 of a snapshot's bytes. */
static uint64_t snap_le(const uint8_t *p, unsigned int size)
{
	uint64_t v = 0;

	while (size-- > 0)
		v = v << 8 | p[size];
	return v;
}

/*
 * The watch history in a snapshot (section 21, as ever: each event as a
 * WatchEvent's protobuf bytes) and back: a restored state replays the same
 * events, field for field; and a history whose records fill its size as
 * protobuf - as the semd of before counted them, which held them so - loads
 * with the oldest dropped where they no longer all fit as held now, and
 * resumes from the oldest it kept.
 */
static void test_history_snapshot(void)
{
	struct sm_client *a, *adm;
	struct sm_config cfg;
	struct sm_out out = { cap_reply, NULL, cap_close, NULL, NULL, NULL };
	struct sm *sm = t_start_checked(1000, "watch: the history through a snapshot",
	    NULL, "uid:1 uid:0", &a, &adm), *rs;
	uint64_t kinds[41], oldest, rev, size, total = 0;
	uint8_t *snap = NULL, *p, *sec = NULL;
	size_t len = 0, off;
	uint32_t n, i, rl;
	Semd__WatchEvent *ev;
	Semd__Reply *r;
	char err[256];

	t_watch(sm, adm, 2, "h", false);
	expect_code(2, 2, SEMD__CODE__OK);
	t_create(sm, a, 2, "h", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, SEMD__CODE__OK);
	ev = event_of(2, EVENT_CREATE, "h");
	kinds[0] = ev != NULL ? ev->kind : 0;
	for (i = 0; i < 20; i++) {
		t_held(sm, a, 1, (uint64_t)(10 + 2 * i), "h", 1);
		t_up(sm, a, (uint64_t)(11 + 2 * i), "h", 1, 0);
		expect_code(1, (uint64_t)(11 + 2 * i), SEMD__CODE__OK);
		kinds[1 + 2 * i] = SEMD__EVENT_KIND__EVENT_GRANT;
		kinds[2 + 2 * i] = SEMD__EVENT_KIND__EVENT_RELEASE;
	}
	caps_clear();
	rs = t_snap_restore(sm, "another key 1234", &snap, &len);
	if (rs == NULL) {
		free(snap);
		t_end(sm);
		return;
	}
	sm = t_switch(sm, rs);
	adm = sm_client_find(sm, 2);
	t_op(sm, adm, 3, SEMD__REQUEST__OP_WATCH, "name=%s from_revision=%d", "h", 1);
	expect_code(2, 3, SEMD__CODE__OK);
	for (i = 0; i < 41; i++) {
		ev = event_of_(__LINE__, 2, (int)kinds[i], "h");
		EXPECT(ev != NULL && ev->revision == i + 1 && ev->watch == 3 &&
		    strcmp(ev->principal, "uid:1") == 0 && ev->limit == 1 &&
		    (i == 0 || ev->n == 1));
		EXPECT(ev == NULL || i == 0 || ev->kind != SEMD__EVENT_KIND__EVENT_GRANT ||
		    (ev->permit_id != 0 && ev->token != 0 && ev->request_id == 10 + (i - 1)));
	}
	EXPECT_U64(0, events_left(2));
	t_end(sm);

	/* Section 21: u32 tag and length, u64 last revision 41, u32 size. */
	for (off = 0; snap != NULL && off + 20 <= len; off++)
		if (snap_le(snap + off, 4) == 21 && snap_le(snap + off + 8, 8) == 41 &&
		    snap_le(snap + off + 16, 4) == SM_WATCH_HISTORY) {
			sec = snap + off + 8;
			break;
		}
	EXPECT(sec != NULL);
	if (sec == NULL) {
		free(snap);
		return;
	}
	n = (uint32_t)snap_le(sec + 12, 4);
	EXPECT_U64(41, n);
	for (p = sec + 16, i = 0; i < n && p + 12 <= snap + len; i++) {
		rl = (uint32_t)snap_le(p + 8, 4);
		total += 12 + rl;
		p += 12 + rl;
	}
	/* The size they fill as protobuf records: as held now, fewer fit. */
	size = total;
	for (i = 0; i < 4; i++)
		sec[8 + i] = (uint8_t)(size >> (8 * i));
	sm_config_defaults(&cfg);
	rs = sm_restore(&cfg, &out, snap, len, err, sizeof err);
	free(snap);
	EXPECT(rs != NULL);
	if (rs == NULL) {
		printf("# restore: %s\n", err);
		return;
	}
	CHECK_SM(rs);
	sm_client_bind(sm_client_find(rs, 2), (void *)2);
	adm = sm_client_find(rs, 2);
	t_op(rs, adm, 4, SEMD__REQUEST__OP_WATCH, "name=%s from_revision=%d", "h", 1);
	r = expect_code(2, 4, SEMD__CODE__COMPACTED);
	oldest = r != NULL ? r->oldest_revision : 0;
	EXPECT(oldest > 1 && oldest < 41);
	printf("# %" PRIu64 " of the 41 events kept in %" PRIu64 " bytes\n", 42 - oldest, size);
	t_op(rs, adm, 5, SEMD__REQUEST__OP_WATCH, "name=%s from_revision=%" PRIu64, "h", oldest);
	expect_code(2, 5, SEMD__CODE__OK);
	EXPECT_U64(41 - oldest + 1, events_left(2));
	for (rev = oldest; rev <= 41; rev++) {
		ev = event_of_(__LINE__, 2, (int)kinds[rev - 1], "h");
		EXPECT(ev != NULL && ev->revision == rev);
	}
	caps_clear();
	sm_free(rs);
}

/* Did conn k get an event that tells a rate (the record's rate fields)? */
static bool ev_has_rate(uintptr_t k)
{
	int i;

	for (i = 0; i < ncaps; i++)
		if (caps[i].conn == k && caps[i].r->body_case == SEMD__REPLY__BODY_WATCH_EVENT &&
		    caps[i].r->watch_event->rate == 5 &&
		    caps[i].r->watch_event->rate_period_ms == 1000 &&
		    caps[i].r->watch_event->burst == 3 && caps[i].r->watch_event->pid == 42 &&
		    strcmp(caps[i].r->watch_event->host, "localhost") == 0)
			return true;
	return false;
}

/*
 * An event replayed from the history is the event sent live, field for
 * field (the record's layout both ways): a name with a limit and a rate,
 * an identity with a client name, host and pid, a grant, a wait, its
 * timeout with a reason, a release and a limit change, watched live by an
 * administrator and then replayed to another of its watches from the
 * first revision.
 */
static void test_replay_same(void)
{
	struct sm_client *a, *b, *adm;
	struct sm *sm = t_start_checked(1000, "watch: a replayed event is the live one",
	    NULL, "uid:1 uid:2 uid:0", &a, &b, &adm);
	uint8_t x[1024], y[1024];
	size_t lx, ly;
	int i, j, live = 0, same = 0;

	t_watch(sm, adm, 2, "e/", true);
	expect_code(3, 2, SEMD__CODE__OK);
	t_create_rate(sm, a, 2, "e/r", 2, 5, 1000, 3);
	expect_code(1, 2, SEMD__CODE__OK);
	t_held(sm, a, 1, 3, "e/r", 2);
	t_down(sm, b, 2, "e/r", 1, 50, 0);
	t_tick(sm, now + 50);
	expect_code(2, 2, SEMD__CODE__TIMEOUT);
	t_up(sm, a, 4, "e/r", 2, 0);
	expect_code(1, 4, SEMD__CODE__OK);
	t_set_limit(sm, a, 5, "e/r", 4);
	expect_code(1, 5, SEMD__CODE__OK);
	t_op(sm, adm, 3, SEMD__REQUEST__OP_WATCH, "name=%s prefix=%d from_revision=%d", "e/", 1, 1);
	expect_code(3, 3, SEMD__CODE__OK);
	for (i = 0; i < ncaps; i++) {
		Semd__WatchEvent *ev = caps[i].r->watch_event;

		if (caps[i].conn != 3 || caps[i].r->body_case != SEMD__REPLY__BODY_WATCH_EVENT ||
		    ev->watch != 2)
			continue;
		live++;
		ev->watch = 0;
		lx = semd__watch_event__pack(ev, x);
		ev->watch = 2;
		for (j = 0; j < ncaps; j++) {
			Semd__WatchEvent *rv = caps[j].r->watch_event;

			if (caps[j].conn != 3 ||
			    caps[j].r->body_case != SEMD__REPLY__BODY_WATCH_EVENT ||
			    rv->watch != 3 || rv->revision != ev->revision)
				continue;
			rv->watch = 0;
			ly = semd__watch_event__pack(rv, y);
			rv->watch = 3;
			if (lx == ly && memcmp(x, y, lx) == 0)
				same++;
			else
				FAIL("revision %" PRIu64 ": the replayed event differs from the live one",
				    ev->revision);
		}
	}
	EXPECT(live >= 6 && ev_has_rate(3));
	EXPECT_U64(live, same);
	t_end(sm);
}

/* The ring test's model: the kept records' revisions and lengths, oldest first. */
struct ring_model {
	uint64_t	rev[4096];
	uint32_t	len[4096];
	uint32_t	first, n;
	uint64_t	used;
};

/* Does ring r keep what model m keeps, each record's bytes as written? */
static bool ring_same(const struct sm_evring *r, const struct ring_model *m)
{
	struct evring_it it;
	const uint8_t *p;
	uint64_t rev;
	uint32_t len, i = 0, j;

	evring_first(r, &it);
	while (evring_next(r, &it, &rev, &p, &len)) {
		if (i >= m->n || rev != m->rev[m->first + i] || len != m->len[m->first + i])
			return false;
		for (j = 0; j < len; j++)
			if (p[j] != (uint8_t)(rev * 7 + j))
				return false;
		i++;
	}
	return i == m->n && evring_count(r) == m->n &&
	    evring_oldest(r) == (m->n > 0 ? m->rev[m->first] : 0);
}

/* Keep event rev, len bytes, in r (bytes that say rev); false when not kept. */
static bool ring_put(struct sm_evring *r, uint64_t rev, uint32_t len)
{
	uint8_t *p = evring_put(r, rev, len);
	uint32_t j;

	for (j = 0; p != NULL && j < len; j++)
		p[j] = (uint8_t)(rev * 7 + j);
	return p != NULL;
}

/*
 * The history's ring keeps, whatever the sizes of its records and however
 * often it wraps, the newest records whose bytes (12 each beside theirs)
 * fit its size, none after one bigger than half of it (no gap); and a ring
 * refilled with what another keeps, as a snapshot's restore does, goes on
 * keeping the same records as the one it was taken from.
 */
static void test_ring_kept(void)
{
	static struct ring_model m;
	struct sm_evring a = { 0 }, b = { 0 };
	struct evring_it it;
	const uint8_t *p;
	uint64_t rev, x = 12345, r2;
	uint32_t size, len, l2, i, bad = 0, kept = 0;

	for (size = 300; size <= 5000; size += 1175) {
		evring_resize(&a, size);
		evring_resize(&b, size);
		memset(&m, 0, sizeof m);
		for (rev = 1; rev <= 6000; rev++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			len = 1 + (uint32_t)(x >> 33) % (size / 2 - 12);
			if ((x >> 20) % 97 == 0)
				len = size / 2 - 11 + (uint32_t)(x >> 40) % 50;	/* too big */
			if (m.first + m.n >= 4096) {
				memmove(m.rev, m.rev + m.first, m.n * sizeof m.rev[0]);
				memmove(m.len, m.len + m.first, m.n * sizeof m.len[0]);
				m.first = 0;
			}
			if (12 + len > size / 2) {
				m.n = m.first = 0;
				m.used = 0;
			} else {
				m.rev[m.first + m.n] = rev;
				m.len[m.first + m.n++] = len;
				m.used += 12 + len;
				while (m.used > size) {
					m.used -= 12 + m.len[m.first++];
					m.n--;
				}
			}
			if (ring_put(&a, rev, len) != (12 + len <= size / 2) ||
			    ring_put(&b, rev, len) != (12 + len <= size / 2) ||
			    !ring_same(&a, &m) || !ring_same(&b, &m))
				bad++;
			kept += m.n;
			if (rev % 37 != 0)
				continue;
			/* b restored from what a keeps */
			evring_resize(&b, size);
			evring_first(&a, &it);
			while (evring_next(&a, &it, &r2, &p, &l2))
				if (!evring_push(&b, r2, p, l2))
					bad++;
			if (!ring_same(&b, &m))
				bad++;
		}
	}
	if (bad > 0)
		FAIL("%u puts left a ring that keeps other records than it should", bad);
	EXPECT(kept > 6000);
	for (i = 0; i < 2; i++)
		evring_free(i == 0 ? &a : &b);
}

int main(void)
{
	test_ring_kept();
	test_watch();
	test_watch_quota();
	test_old_request_entry();
	test_resume();
	test_history_snapshot();
	test_replay_same();
	test_holds();
	caps_clear();
	return check_done("state watch");
}
