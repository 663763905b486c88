/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_read.c - the state machine driven directly, with
 * fake time (tests/daemon/test_state.h): reads off the log (sm_read). On a
 * state with every kind of record - limits with holders and waiters in
 * fair-share groups and in priority classes, a rate-only name and a name
 * with a limit and a rate, both untouched for a while, a child session, a
 * detached hold - each read and each refused request leaves the snapshot's
 * bytes, the counters, the clock and the deadlines as they were, and a read
 * is answered as sm_request() answers it at the same time. Guests (a
 * connection whose Hello came while the log took no writes: issue 35) are
 * answered a HelloReply without a session, and their reads as their
 * principal's, changing nothing either.
 */
#include "tests/daemon/test_state.h"

#define OP(CASE)	SEMD__REQUEST__OP_##CASE

/* The state's bytes (the caller frees them), or NULL. */
static uint8_t *snap_of(const struct sm *sm, size_t *len)
{
	uint8_t *p = NULL;

	if (sm_snapshot(sm, &p, len) != 0) {
		FAIL("snapshot");
		return NULL;
	}
	return p;
}

/* A reply as its wire bytes (the caller frees them). */
static uint8_t *reply_bytes(const Semd__Reply *r, size_t *len)
{
	uint8_t *p;

	*len = semd__reply__get_packed_size(r);
	p = malloc(*len ? *len : 1);
	if (p != NULL)
		semd__reply__pack(r, p);
	return p;
}

/* Everything sm_read() must leave alone, taken before and after it. */
struct seen {
	uint8_t			*snap;
	size_t			len;
	struct sm_counters	ctr;
	uint64_t		now;
	uint64_t		deadline;
};

static void seen_take(const struct sm *sm, struct seen *s)
{
	s->snap = snap_of(sm, &s->len);
	sm_get_counters(sm, &s->ctr);
	s->now = sm_now(sm);
	s->deadline = sm_next_deadline(sm);
}

/* Is the state now as a seen before? (Frees a's bytes.) */
static void seen_same_(int line, const struct sm *sm, struct seen *a)
{
	struct seen b;

	seen_take(sm, &b);
	if (a->snap == NULL || b.snap == NULL || a->len != b.len ||
	    memcmp(a->snap, b.snap, a->len) != 0)
		FAIL("line %d: the snapshot changed (%zu bytes, now %zu)", line,
		    a->len, b.len);
	if (memcmp(&a->ctr, &b.ctr, sizeof a->ctr) != 0)
		FAIL("line %d: a counter moved", line);
	EXPECT_U64(a->now, b.now);
	EXPECT_U64(a->deadline, b.deadline);
	CHECK_SM(sm);
	free(a->snap);
	free(b.snap);
}
#define seen_same(sm, a) seen_same_(__LINE__, sm, a)

/*
 * sm_read() of q by c (conn k), the state checked unchanged: its return
 * value is want, and its reply (want_code) is returned.
 */
static Semd__Reply *read_(int line, struct sm *sm, struct sm_client *c,
    uintptr_t k, const Semd__Request *q, int want, int want_code)
{
	struct seen before;
	int r;

	seen_take(sm, &before);
	r = sm_read(sm, c, q, t_who);
	if (r != want)
		FAIL("line %d: sm_read returned %d, want %d", line, r, want);
	seen_same_(line, sm, &before);
	return expect_code_(line, k, q->id, want_code);
}
#define t_read(sm, c, k, q, want, code) read_(__LINE__, sm, c, k, q, want, code)

/*
 * A read answered as a request: sm_read() of q, then sm_request() of the
 * same at the same time (the state's), their replies the same bytes.
 * Returns the read's reply.
 */
static Semd__Reply *as_request_(int line, struct sm *sm, struct sm_client *c,
    uintptr_t k, Semd__Request *q, int code)
{
	Semd__Reply *rd = read_(line, sm, c, k, q, SM_OK, code), *rq;
	uint8_t *b1, *b2;
	size_t l1, l2;

	if (sm_request(sm, c, q, t_who, sm_now(sm)) != SM_OK)
		FAIL("line %d: sm_request did not return SM_OK", line);
	CHECK_SM(sm);
	if ((rq = expect_code_(line, k, q->id, code)) == NULL || rd == NULL)
		return rd;
	b1 = reply_bytes(rd, &l1);
	b2 = reply_bytes(rq, &l2);
	if (b1 == NULL || b2 == NULL || l1 != l2 || memcmp(b1, b2, l1) != 0)
		FAIL("line %d: sm_read's reply is not sm_request's "
		    "(%zu, %zu bytes)", line, l1, l2);
	free(b1);
	free(b2);
	return rd;
}
#define as_request(sm, c, k, q, code) as_request_(__LINE__, sm, c, k, q, code)

/* The named records of the state the tests read. */
struct world {
	struct sm		*sm;
	struct sm_client	*a, *b, *adm, *kid;
	uint64_t		token_a;	/* a's hold on "jobs" */
	uint64_t		wait_b;		/* b's waiting down on "jobs" */
	uint64_t		wait_gate;	/* a's waiting down on "gate" */
};

/* The parent link in the HelloReply to conn k (taken or not), or 0. */
static uint64_t hello_link(uintptr_t k)
{
	int i;

	for (i = 0; i < ncaps; i++)
		if (caps[i].conn == k && caps[i].r->body_case ==
		    SEMD__REPLY__BODY_HELLO)
			return caps[i].r->hello->link;
	FAIL("no HelloReply to conn %lu", (unsigned long)k);
	return 0;
}

/* Down with a priority and a fair-share group. */
static void t_down_pg(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t n, int prio, const char *group)
{
	t_op(sm, c, id, OP(DOWN), "name=%s n=%u timeout_ms=%d"
	    " priority=%d group=%s", name, n, -1, prio, group);
}

/*
 * The state: "jobs" (limit 2, shares by key) held by a and the admin, with
 * b and a's child waiting in two groups; "prio" (limit 1) held by the
 * admin, with b and the child waiting in two priority classes; "api"
 * (rate-only, 10/s, burst 5) with 3 tokens taken; "gate" (limit 3, 1
 * token/s, burst 2) drained, a waiting for a token; uid:1's detached hold
 * on "locks"; then 250 ms with nothing done to the buckets, so that a
 * refill would change them.
 */
static void world_make(struct world *w)
{
	Semd__GroupWeight gv[2] = { SEMD__GROUP_WEIGHT__INIT,
	    SEMD__GROUP_WEIGHT__INIT }, *gp[2] = { &gv[0], &gv[1] };
	Semd__Grant *g;
	struct req q;

	w->sm = t_start_checked(1000, "read: a state with every kind of record",
	    NULL, "uid:1/5000 uid:2/5000 uid:0", &w->a, &w->b, &w->adm);
	/* A child of a's session, as semctl run's program would be. */
	w->kid = sm_client_open(w->sm, 4, (void *)4, "uid:1", secret_a, 0, now);
	t_op(w->sm, w->kid, 1, OP(HELLO), "version=%d "
	    "client_name=%s pid=%d parent_session=%" PRIu64 " parent_link=%"
	    PRIu64, 1, "kid", 7, sm_client_session(w->a), hello_link(1));
	expect_code(4, 1, SEMD__CODE__OK);
	gv[0].group = "light";
	gv[0].weight = 1;
	gv[1].group = "heavy";
	gv[1].weight = 3;
	req_make(&q, 3, OP(CREATE), "name=%s limit=%d share=%d",
	    "jobs", 2, SEMD__SHARE_BY__SHARE_KEY);
	q.r.create->n_weights = 2;
	q.r.create->weights = gp;
	t_req(w->sm, w->a, &q.r);
	expect_code(1, 3, SEMD__CODE__OK);
	t_down_pg(w->sm, w->a, 4, "jobs", 1, 0, "light");
	g = grant_of(1, 4);
	w->token_a = g != NULL ? g->token : 0;
	t_down_pg(w->sm, w->adm, 2, "jobs", 1, 0, "heavy");
	grant_of(3, 2);
	t_down_pg(w->sm, w->b, 3, "jobs", 1, 0, "light");
	w->wait_b = 3;
	t_down_pg(w->sm, w->kid, 2, "jobs", 1, 0, "heavy");
	t_down_pg(w->sm, w->adm, 3, "prio", 1, 0, "");
	grant_of(3, 3);
	t_down_pg(w->sm, w->b, 4, "prio", 1, -3, "");
	t_down_pg(w->sm, w->kid, 3, "prio", 1, 5, "");
	EXPECT(none(2, 3) && none(4, 2) && none(2, 4) && none(4, 3));
	t_create_rate(w->sm, w->a, 5, "api", 0, 10, 1000, 5);
	expect_code(1, 5, SEMD__CODE__OK);
	t_down(w->sm, w->a, 6, "api", 3, 0, 0);
	grant_of(1, 6);
	t_create_rate(w->sm, w->a, 7, "gate", 3, 1, 1000, 2);
	expect_code(1, 7, SEMD__CODE__OK);
	t_down(w->sm, w->a, 8, "gate", 2, 0, 0);
	grant_of(1, 8);
	t_down(w->sm, w->a, 9, "gate", 1, -1, 0);
	w->wait_gate = 9;
	EXPECT(none(1, 9));
	t_down(w->sm, w->a, 10, "locks", 1, 0, 60000);	/* a detached hold */
	grant_of(1, 10);
	t_tick(w->sm, now + 250);
	EXPECT(none(1, 9));
	EXPECT_U64(now, sm_now(w->sm));
}

/*
 * Every read, on every kind of record, answered as a request at the same
 * time would be, and changing nothing. The buckets first: their last
 * refill is 250 ms old, and a read tells their level as of now without
 * filling them (the request that follows does).
 */
static void test_reads(void)
{
	struct world w;
	struct req q;
	Semd__Reply *r;
	uint64_t ops;
	size_t i;

	world_make(&w);
	TEST_START("read: a bucket's level as of the state's clock, unfilled");
	r = as_request(w.sm, w.a, 1, req_make(&q, 20, OP(INFO),
	    "name=%s", "api"), SEMD__CODE__OK);
	if (r != NULL && r->info != NULL) {
		EXPECT_I64(4, r->info->available);
		/* 5 - 3 tokens, 250 ms at 10/s later: 4.5. */
		EXPECT_U64(4500000000ULL, r->info->tokens_nano);
		EXPECT_U64(1700000000000ULL + now - 1000 + 50,
		    r->info->next_token_ms);
	}
	r = as_request(w.sm, w.a, 1, req_make(&q, 21, OP(WHERE),
	    "request_id=%" PRIu64, w.wait_gate), SEMD__CODE__OK);
	if (r != NULL && r->where != NULL && r->where->n_places == 1)
		EXPECT_U64(250000000ULL, r->where->places[0]->tokens_nano);
	as_request(w.sm, w.a, 1, req_make(&q, 22, OP(INFO),
	    "name=%s", "gate"), SEMD__CODE__OK);
	TEST_START("read: holders, waiters, groups, pages");
	r = as_request(w.sm, w.adm, 3, req_make(&q, 23, OP(INFO),
	    "name=%s", "jobs"), SEMD__CODE__OK);
	EXPECT(r != NULL && r->info != NULL && r->info->n_holders == 2 &&
	    r->info->n_waiters == 2 && r->info->n_groups == 2);
	as_request(w.sm, w.b, 2, req_make(&q, 24, OP(INFO),
	    "name=%s max=%d", "jobs", 1), SEMD__CODE__OK);
	as_request(w.sm, w.b, 2, req_make(&q, 25, OP(LIST), "prefix=%s", ""),
	    SEMD__CODE__OK);
	as_request(w.sm, w.b, 2, req_make(&q, 26, OP(LIST),
	    "prefix=%s max=%d", "j", 1), SEMD__CODE__OK);
	r = as_request(w.sm, w.a, 1, req_make(&q, 27, OP(HOLDS),
	    "principal=%s", ""), SEMD__CODE__OK);
	EXPECT(r != NULL && r->holds != NULL && r->holds->total == 3);
	as_request(w.sm, w.adm, 3, req_make(&q, 28, OP(HOLDS),
	    "principal=%s max=%d", "uid:1", 2), SEMD__CODE__OK);
	as_request(w.sm, w.b, 2, req_make(&q, 29, OP(WHERE),
	    "request_id=%" PRIu64, w.wait_b), SEMD__CODE__OK);
	as_request(w.sm, w.kid, 4, req_make(&q, 30, OP(WHERE),
	    "request_id=%d", 2), SEMD__CODE__OK);
	r = as_request(w.sm, w.b, 2, req_make(&q, 34, OP(WHERE),
	    "request_id=%d", 4), SEMD__CODE__OK);	/* behind kid's class */
	EXPECT(r != NULL && r->where != NULL && r->where->n_places == 1 &&
	    r->where->places[0]->position == 2);
	/* b, no administrator, sees only its own. */
	t_who = &(struct sm_caller){ 0, { 0 } };
	r = as_request(w.sm, w.b, 2, req_make(&q, 35, OP(INFO),
	    "name=%s", "prio"), SEMD__CODE__OK);
	EXPECT(r != NULL && r->info != NULL && r->info->n_waiters == 1 &&
	    r->info->waiters_total == 2 && r->info->n_holders == 0);
	t_who = NULL;
	r = as_request(w.sm, w.b, 2, req_make(&q, 31, OP(VALIDATE),
	    "name=%s token=%" PRIu64, "jobs", w.token_a), SEMD__CODE__OK);
	EXPECT(r != NULL && r->validate != NULL && r->validate->valid);
	r = as_request(w.sm, w.b, 2, req_make(&q, 32, OP(VALIDATE),
	    "name=%s token=%" PRIu64, "jobs", w.token_a + 100), SEMD__CODE__OK);
	EXPECT(r != NULL && r->validate != NULL && !r->validate->valid);
	r = as_request(w.sm, w.kid, 4, req_make(&q, 33, OP(PING),
	    "payload=%.*s", 2, "hi"), SEMD__CODE__OK);
	EXPECT(r != NULL && r->pong != NULL && r->pong->payload.len == 2);
	TEST_START("read: refused reads are answered alike, changing nothing");
	as_request(w.sm, w.a, 1, req_make(&q, 40, OP(INFO),
	    "name=%s", "nope"), SEMD__CODE__NOT_FOUND);
	as_request(w.sm, w.a, 1, req_make(&q, 41, OP(INFO), "name=%s", ""),
	    SEMD__CODE__INVALID_ARGUMENT);
	as_request(w.sm, w.a, 1, req_make(&q, 42, OP(WHERE),
	    "request_id=%d", 999), SEMD__CODE__NOT_FOUND);
	as_request(w.sm, w.a, 1, req_make(&q, 43, OP(VALIDATE),
	    "name=%s token=%d", "bad\x01name", 1),
	    SEMD__CODE__INVALID_ARGUMENT);
	t_who = &(struct sm_caller){ 0, { 0 } };	/* no administrator */
	as_request(w.sm, w.b, 2, req_make(&q, 44, OP(HOLDS),
	    "principal=%s", "uid:1"), SEMD__CODE__PERMISSION_DENIED);
	t_who = NULL;
	TEST_START("read: Stats, counted by the request, not by the read");
	r = t_read(w.sm, w.adm, 3, req_op(&q, 50, OP(STATS)),
	    SM_OK, SEMD__CODE__OK);
	ops = UINT64_MAX;
	for (i = 0; r != NULL && r->stats != NULL &&
	    i < r->stats->n_counters; i++)
		if (strcmp(r->stats->counters[i]->name, "ops_stats") == 0)
			ops = r->stats->counters[i]->value;
	EXPECT_U64(ops + 1, t_stat(w.sm, w.adm, 3, "ops_stats"));
	t_end(w.sm);
}

/* A request that is no read, refused by sm_read() (of a, on conn 1). */
#define no_read(sm, a, q) \
	t_read(sm, a, 1, q, SM_OK, SEMD__CODE__INVALID_ARGUMENT)

/*
 * What is no read is refused, whatever it is (Hello, a down, an up, a
 * watch, a detach, no op at all), and one of a client without a session
 * closes it as a request would: each leaves the state as it was.
 */
static void test_refused(void)
{
	struct sm_client *none_yet, *lost;
	struct world w;
	struct req q;

	world_make(&w);
	TEST_START("read: what is no read is answered INVALID_ARGUMENT");
	no_read(w.sm, w.a, req_make(&q, 60, OP(HELLO), "version=%d", 1));
	no_read(w.sm, w.a, req_make(&q, 61, OP(DOWN), "name=%s", "jobs"));
	no_read(w.sm, w.a, req_make(&q, 62, OP(DOWN), "name=%s", "new"));
	no_read(w.sm, w.a, req_make(&q, 63, OP(UP), "name=%s", "jobs"));
	no_read(w.sm, w.a, req_make(&q, 64, OP(CREATE), "name=%s limit=%d",
	    "new", 1));
	no_read(w.sm, w.a, req_make(&q, 65, OP(WATCH), "name=%s", "jobs"));
	no_read(w.sm, w.a, req_make(&q, 66, OP(RENEW), "name=%s", "locks"));
	no_read(w.sm, w.a, req_make(&q, 67, OP(CANCEL), "request_id=%d", 9));
	no_read(w.sm, w.a, req_op(&q, 68, OP(DETACH)));
	no_read(w.sm, w.a, req_op(&q, 69, OP(BACKUP)));
	req_op(&q, 70, OP(PING));
	q.r.op_case = SEMD__REQUEST__OP__NOT_SET;
	no_read(w.sm, w.a, &q.r);
	EXPECT(!sm_op_is_read(SEMD__REQUEST__OP__NOT_SET) &&
	    !sm_op_is_read(SM_NOPS) && !sm_op_is_read(-1));
	TEST_START("read: no Hello yet, or a session taken over: closed");
	none_yet = sm_client_open(w.sm, 5, (void *)5, "uid:2", secret_a, 0,
	    now);
	t_read(w.sm, none_yet, 5, req_op(&q, 71, OP(PING)),
	    SM_CLOSE, SEMD__CODE__PROTOCOL_ERROR);
	lost = t_client(w.sm, 6, "uid:2", 5000);
	t_hello(w.sm, sm_client_open(w.sm, 7, (void *)7, "uid:2", secret_a, 0,
	    now), 1, 5000, sm_client_session(lost), secret_a);
	expect_code(7, 1, SEMD__CODE__OK);	/* resumed: lost's no more */
	EXPECT_U64(0, sm_client_session(lost));
	t_read(w.sm, lost, 6, req_make(&q, 72, OP(INFO), "name=%s", "jobs"),
	    SM_CLOSE, SEMD__CODE__SESSION_EXPIRED);
	t_end(w.sm);
}

/*
 * sm_guest_read() of q by a guest of principal on conn k, the state checked
 * unchanged: its reply (want_code) is returned.
 */
static Semd__Reply *guest_read_(int line, struct sm *sm, uintptr_t k,
    const char *principal, const Semd__Request *q, int want_code)
{
	struct seen before;
	int r;

	seen_take(sm, &before);
	r = sm_guest_read(sm, (void *)k, principal, q, t_who);
	if (r != SM_OK)
		FAIL("line %d: sm_guest_read returned %d", line, r);
	seen_same_(line, sm, &before);
	return expect_code_(line, k, q->id, want_code);
}
#define guest_read(sm, k, pr, q, code) guest_read_(__LINE__, sm, k, pr, q, code)

/* Are two replies the same bytes but for their ids? */
static bool same_but_id(Semd__Reply *a, Semd__Reply *b)
{
	uint64_t ia, ib;
	uint8_t *pa, *pb;
	size_t la, lb;
	bool same;

	if (a == NULL || b == NULL)
		return false;
	ia = a->id;
	ib = b->id;
	a->id = b->id = 0;
	pa = reply_bytes(a, &la);
	pb = reply_bytes(b, &lb);
	same = pa != NULL && pb != NULL && la == lb && memcmp(pa, pb, la) == 0;
	a->id = ia;
	b->id = ib;
	free(pa);
	free(pb);
	return same;
}

/*
 * Guests: a Hello answered without a session (nothing made: no session,
 * client or principal), reads answered as the principal's - its own holds
 * shown as a session of it is shown them - and what no guest can ask
 * (Where: it has no downs; what is no read) refused, the state unchanged.
 */
static void test_guests(void)
{
	struct world w;
	struct seen before;
	struct req q;
	Semd__Reply *r, *mine;
	struct sm_counters c0, c1;

	world_make(&w);
	TEST_START("guest: a HelloReply without a session, nothing made");
	sm_get_counters(w.sm, &c0);
	seen_take(w.sm, &before);
	EXPECT(sm_guest_hello(w.sm, (void *)20, "uid:1", req_make(&q, 1,
	    OP(HELLO), "version=%d lease_ms=%d", 1, 30000)) == SM_OK);
	seen_same(w.sm, &before);
	r = expect_code(20, 1, SEMD__CODE__OK);
	if (r != NULL && r->hello != NULL) {
		EXPECT_U64(0, r->hello->session);
		EXPECT_U64(0, r->hello->lease_ms);
		EXPECT_U64(0, r->hello->secret.len);
		EXPECT_U64(0, r->hello->link);
		EXPECT(strcmp(r->hello->principal, "uid:1") == 0);
		EXPECT(r->hello->version == 1 && r->hello->max_lease_ms > 0);
		EXPECT_U64(sm_instance(w.sm), r->hello->instance);
	}
	sm_get_counters(w.sm, &c1);
	EXPECT_U64(c0.sessions, c1.sessions);
	EXPECT_U64(c0.clients, c1.clients);
	seen_take(w.sm, &before);
	EXPECT(sm_guest_hello(w.sm, (void *)21, "uid:9", req_make(&q, 1,
	    OP(HELLO), "version=%d", 2)) == SM_CLOSE);
	seen_same(w.sm, &before);
	expect_code(21, 1, SEMD__CODE__PROTOCOL_ERROR);

	TEST_START("guest: reads as its principal's");
	r = guest_read(w.sm, 20, "uid:1", req_make(&q, 2, OP(INFO),
	    "name=%s", "jobs"), SEMD__CODE__OK);
	mine = t_read(w.sm, w.a, 1, req_make(&q, 3, OP(INFO), "name=%s",
	    "jobs"), SM_OK, SEMD__CODE__OK);
	EXPECT(same_but_id(r, mine));
	r = guest_read(w.sm, 20, "uid:1", req_make(&q, 4, OP(HOLDS),
	    "principal=%s", ""), SEMD__CODE__OK);
	EXPECT(r != NULL && r->holds != NULL && r->holds->total == 3);
	guest_read(w.sm, 20, "uid:1", req_make(&q, 5, OP(LIST), "prefix=%s",
	    ""), SEMD__CODE__OK);
	r = guest_read(w.sm, 20, "uid:1", req_make(&q, 6, OP(VALIDATE),
	    "name=%s token=%" PRIu64, "jobs", w.token_a), SEMD__CODE__OK);
	EXPECT(r != NULL && r->validate != NULL && r->validate->valid);
	r = guest_read(w.sm, 20, "uid:1", req_make(&q, 7, OP(PING),
	    "payload=%.*s", 2, "hi"), SEMD__CODE__OK);
	EXPECT(r != NULL && r->pong != NULL && r->pong->payload.len == 2);
	guest_read(w.sm, 20, "uid:1", req_op(&q, 8, OP(STATS)),
	    SEMD__CODE__OK);
	/* A principal the state has no record of holds nothing, sees less. */
	t_who = &(struct sm_caller){ 0, { 0 } };	/* no administrator */
	r = guest_read(w.sm, 22, "uid:9", req_make(&q, 9, OP(HOLDS),
	    "principal=%s", ""), SEMD__CODE__OK);
	EXPECT(r != NULL && r->holds != NULL && r->holds->total == 0);
	r = guest_read(w.sm, 22, "uid:9", req_make(&q, 10, OP(INFO),
	    "name=%s", "jobs"), SEMD__CODE__OK);
	EXPECT(r != NULL && r->info != NULL && r->info->n_holders == 0 &&
	    r->info->holders_total == 2);
	guest_read(w.sm, 22, "uid:9", req_make(&q, 11, OP(HOLDS),
	    "principal=%s", "uid:1"), SEMD__CODE__PERMISSION_DENIED);
	t_who = NULL;

	TEST_START("guest: no Where, nothing that is no read");
	guest_read(w.sm, 20, "uid:1", req_make(&q, 12, OP(WHERE),
	    "request_id=%" PRIu64, w.wait_gate), SEMD__CODE__NOT_FOUND);
	guest_read(w.sm, 20, "uid:1", req_make(&q, 13, OP(DOWN), "name=%s",
	    "jobs"), SEMD__CODE__INVALID_ARGUMENT);
	guest_read(w.sm, 20, "uid:1", req_make(&q, 14, OP(HELLO),
	    "version=%d", 1), SEMD__CODE__INVALID_ARGUMENT);
	guest_read(w.sm, 20, "uid:1", req_make(&q, 15, OP(WATCH), "name=%s",
	    "jobs"), SEMD__CODE__INVALID_ARGUMENT);
	t_end(w.sm);
}

int main(void)
{
	static const int reads[] = {
		OP(INFO), OP(LIST), OP(STATS), OP(HOLDS), OP(WHERE),
		OP(VALIDATE), OP(PING), OP(SESSIONS),
	};
	size_t i;
	int n = 0;

	TEST_START("read: the op table's reads");
	for (i = 0; i < sizeof reads / sizeof reads[0]; i++)
		EXPECT(sm_op_is_read(reads[i]));
	for (i = 0; i < SM_NOPS; i++)
		n += sm_op_is_read((int)i);
	EXPECT_U64(sizeof reads / sizeof reads[0], n);
	test_reads();
	test_refused();
	test_guests();
	return check_done("state read");
}
