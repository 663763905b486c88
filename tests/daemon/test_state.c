/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state.c - the semaphore table and sessions, driven
 * directly: fake time, replies captured through the sink (packed and
 * unpacked again, so they are real wire messages).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state.h"

static int failures;
static const char *current;

#define TEST_START(name) do { current = (name); printf("# %s\n", name); } while (0)
#define FAIL(...) do {							\
	failures++;							\
	printf("not ok - %s: %s:%d: ", current, __FILE__, __LINE__);	\
	printf(__VA_ARGS__);						\
	printf("\n");							\
} while (0)
#define EXPECT(cond) do { if (!(cond)) FAIL("%s", #cond); } while (0)
#define EXPECT_U64(want, got) do {					\
	uint64_t w_ = (uint64_t)(want), g_ = (uint64_t)(got);		\
	if (w_ != g_)							\
		FAIL("%s: want %" PRIu64 ", got %" PRIu64, #got, w_, g_); \
} while (0)
#define EXPECT_I64(want, got) do {					\
	int64_t w_ = (int64_t)(want), g_ = (int64_t)(got);		\
	if (w_ != g_)							\
		FAIL("%s: want %" PRId64 ", got %" PRId64, #got, w_, g_); \
} while (0)
#define CHECK_SM(sm) do {						\
	char e_[256];							\
	if (sm_check((sm), e_, sizeof e_) != 0)				\
		FAIL("invariant: %s", e_);				\
} while (0)

/* --- captured replies --------------------------------------------------- */

#define MAX_CAPS 20000

struct cap {
	uintptr_t	conn;
	Semd__Reply	*r;
	int		used;
};

static struct cap caps[MAX_CAPS];
static int ncaps;

/* The sink: deep-copy a reply through the wire format. */
static void cap_reply(void *ctx, void *conn, const Semd__Reply *r)
{
	size_t len = semd__reply__get_packed_size(r);
	uint8_t *buf = malloc(len ? len : 1);

	semd__reply__pack(r, buf);
	if (ncaps == MAX_CAPS) {
		FAIL("too many replies captured");
		free(buf);
		return;
	}
	caps[ncaps].conn = (uintptr_t)conn;
	caps[ncaps].r = semd__reply__unpack(NULL, len, buf);
	caps[ncaps].used = 0;
	ncaps++;
	free(buf);
}

/* Forget every captured reply. */
static void caps_clear(void)
{
	int i;

	for (i = 0; i < ncaps; i++)
		semd__reply__free_unpacked(caps[i].r, NULL);
	ncaps = 0;
}

/* Take the first unused reply for (conn, id), or NULL. */
static Semd__Reply *take(uintptr_t conn, uint64_t id)
{
	int i;

	for (i = 0; i < ncaps; i++) {
		if (!caps[i].used && caps[i].conn == conn && caps[i].r->id == id) {
			caps[i].used = 1;
			return caps[i].r;
		}
	}
	return NULL;
}

/* Take a reply and check its code; prints the message on mismatch. */
static Semd__Reply *expect_code_(int line, uintptr_t conn, uint64_t id, int code)
{
	Semd__Reply *r = take(conn, id);

	if (r == NULL) {
		FAIL("line %d: no reply for conn %lu id %" PRIu64 " (want code %d)",
		    line, (unsigned long)conn, id, code);
		return NULL;
	}
	if ((int)r->code != code)
		FAIL("line %d: conn %lu id %" PRIu64 ": want code %d, got %d (%s)",
		    line, (unsigned long)conn, id, code, r->code, r->message);
	return r;
}
#define expect_code(conn, id, code) expect_code_(__LINE__, conn, id, code)

/* No (unused) reply for (conn, id) yet. */
static int none(uintptr_t conn, uint64_t id)
{
	int i;

	for (i = 0; i < ncaps; i++)
		if (!caps[i].used && caps[i].conn == conn && caps[i].r->id == id)
			return 0;
	return 1;
}

/* --- building requests ------------------------------------------------ */

static uint64_t now = 1000;
static const uint8_t secret_a[SM_SECRET_LEN] = "0123456789abcdef";

/* The access layer's decision for the next requests (NULL: admin, no caps). */
static const struct sm_caller *t_who;

/* Connections the state machine asked to close, in order. */
static uintptr_t closed[64];
static int nclosed;

/* The close effect: record it. */
static void cap_close(void *ctx, void *conn)
{
	if (nclosed < 64)
		closed[nclosed++] = (uintptr_t)conn;
}

/* A state machine with a fixed clock and hash key. */
static struct sm *t_new(uint64_t wall_ms, void (*tune)(struct sm_config *))
{
	struct sm_config cfg;
	struct sm_out out = { cap_reply, NULL, cap_close, NULL };

	sm_config_defaults(&cfg);
	cfg.wall_ms = wall_ms;
	memcpy(cfg.hash_key, "fixed hash key!!", 16);
	cfg.stats_local = true;
	if (tune != NULL)
		tune(&cfg);
	caps_clear();
	nclosed = 0;
	t_who = NULL;
	return sm_new(&cfg, &out, now);
}

/* Send one request. */
static int t_req(struct sm *sm, struct sm_client *c, Semd__Request *req)
{
	return sm_request(sm, c, req, t_who, now);
}

/* Hello with a lease and optional resume. */
static int t_hello(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t lease, uint64_t resume, const uint8_t *secret)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Hello h = SEMD__HELLO__INIT;

	h.version = 1;
	h.client_name = "test";
	h.host = "localhost";
	h.pid = 42;
	h.lease_ms = lease;
	h.resume_session = resume;
	if (secret != NULL) {
		h.resume_secret.data = (uint8_t *)secret;
		h.resume_secret.len = SM_SECRET_LEN;
	}
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_HELLO;
	req.hello = &h;
	return t_req(sm, c, &req);
}

/* Open a client on conn k with a principal and say hello. */
static struct sm_client *t_client(struct sm *sm, uintptr_t k,
    const char *principal, uint32_t lease)
{
	struct sm_client *c = sm_client_open(sm, (uint64_t)k, (void *)k, principal, secret_a, 0, now);

	t_hello(sm, c, 1, lease, 0, NULL);
	expect_code(k, 1, SEMD__CODE__OK);
	return c;
}

/* Down. */
static void t_down(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t n, int64_t timeout, uint32_t lease)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Down d = SEMD__DOWN__INIT;

	d.name = (char *)name;
	d.n = n;
	d.timeout_ms = timeout;
	d.lease_ms = lease;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_DOWN;
	req.down = &d;
	t_req(sm, c, &req);
}

/* Up by n or by permit id. */
static void t_up(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t n, uint64_t permit)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Up u = SEMD__UP__INIT;

	u.name = (char *)name;
	u.n = n;
	u.permit_id = permit;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_UP;
	req.up = &u;
	t_req(sm, c, &req);
}

/* Create. */
static void t_create(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit, int mode, int ine)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Create cr = SEMD__CREATE__INIT;

	cr.name = (char *)name;
	cr.limit = limit;
	cr.mode = mode;
	cr.if_not_exists = ine;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_CREATE;
	req.create = &cr;
	t_req(sm, c, &req);
}

/* Info; returns the reply (or NULL). */
static Semd__Reply *t_info(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *name, int code)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Info in = SEMD__INFO__INIT;

	in.name = (char *)name;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_INFO;
	req.info = &in;
	t_req(sm, c, &req);
	return expect_code(k, id, code);
}

/* SetLimit. */
static void t_set_limit(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__SetLimit sl = SEMD__SET_LIMIT__INIT;

	sl.name = (char *)name;
	sl.limit = limit;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_SET_LIMIT;
	req.set_limit = &sl;
	t_req(sm, c, &req);
}

/* Delete. */
static void t_delete(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, int force)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Delete dl = SEMD__DELETE__INIT;

	dl.name = (char *)name;
	dl.force = force;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_DELETE;
	req.delete_ = &dl;
	t_req(sm, c, &req);
}

/* Cancel. */
static void t_cancel(struct sm *sm, struct sm_client *c, uint64_t id,
    uint64_t which)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Cancel cn = SEMD__CANCEL__INIT;

	cn.request_id = which;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_CANCEL;
	req.cancel = &cn;
	t_req(sm, c, &req);
}

/* Validate; returns validity, -1 on an error reply. */
static int t_validate(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *name, uint64_t token)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Validate v = SEMD__VALIDATE__INIT;
	Semd__Reply *r;

	v.name = (char *)name;
	v.token = token;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_VALIDATE;
	req.validate = &v;
	t_req(sm, c, &req);
	r = expect_code(k, id, SEMD__CODE__OK);
	if (r == NULL || r->body_case != SEMD__REPLY__BODY_VALIDATE)
		return -1;
	return r->validate->valid;
}

/* Value of a stats counter. */
static uint64_t t_stat(struct sm *sm, struct sm_client *c, uintptr_t k,
    const char *name)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Stats st = SEMD__STATS__INIT;
	Semd__Reply *r;
	size_t i;

	req.id = 999999;
	req.op_case = SEMD__REQUEST__OP_STATS;
	req.stats = &st;
	t_req(sm, c, &req);
	r = expect_code(k, 999999, SEMD__CODE__OK);
	if (r == NULL || r->body_case != SEMD__REPLY__BODY_STATS)
		return UINT64_MAX;
	for (i = 0; i < r->stats->n_counters; i++)
		if (strcmp(r->stats->counters[i]->name, name) == 0)
			return r->stats->counters[i]->value;
	FAIL("no counter %s", name);
	return UINT64_MAX;
}

/* The Grant of a reply, checked. */
static Semd__Grant *grant_of_(int line, uintptr_t k, uint64_t id)
{
	Semd__Reply *r = expect_code_(line, k, id, SEMD__CODE__OK);

	if (r == NULL || r->body_case != SEMD__REPLY__BODY_GRANT) {
		FAIL("line %d: reply %" PRIu64 " is not a grant", line, id);
		return NULL;
	}
	return r->grant;
}
#define grant_of(k, id) grant_of_(__LINE__, k, id)

/* --- the tests ---------------------------------------------------------- */

/* Hello must come first and speak version 1. */
static void test_hello(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *c = sm_client_open(sm, (uint64_t)1, (void *)1, "uid:1", secret_a, 0, now);
	Semd__Reply *r;

	TEST_START("hello must be first, version 1");
	t_down(sm, c, 5, "x", 1, 0, 0);
	expect_code(1, 5, SEMD__CODE__PROTOCOL_ERROR);
	EXPECT_I64(SM_OK, t_hello(sm, c, 6, 0, 0, NULL));
	r = expect_code(1, 6, SEMD__CODE__OK);
	EXPECT(r && r->body_case == SEMD__REPLY__BODY_HELLO && r->hello->session > 0);
	EXPECT(r && strcmp(r->hello->principal, "uid:1") == 0);
	EXPECT(r && r->hello->secret.len == SM_SECRET_LEN);
	t_hello(sm, c, 7, 0, 0, NULL);
	expect_code(1, 7, SEMD__CODE__PROTOCOL_ERROR);
	sm_client_close(sm, c, now);
	c = sm_client_open(sm, (uint64_t)2, (void *)2, "uid:1", secret_a, 0, now);
	{
		Semd__Request req = SEMD__REQUEST__INIT;
		Semd__Hello h = SEMD__HELLO__INIT;

		h.version = 2;
		req.id = 8;
		req.op_case = SEMD__REQUEST__OP_HELLO;
		req.hello = &h;
		EXPECT_I64(SM_CLOSE, sm_request(sm, c, &req, NULL, now));
		expect_code(2, 8, SEMD__CODE__PROTOCOL_ERROR);
	}
	sm_client_close(sm, c, now);
	CHECK_SM(sm);
	sm_free(sm);
}

/* Every basic operation. */
static void test_ops(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:2", 0);
	Semd__Grant *g1, *g2;
	Semd__Reply *r;
	uint64_t p1, t1, t2;

	TEST_START("create, down, up, info, list, delete, ping, stats");
	t_create(sm, a, 2, "db/main", 2, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, SEMD__CODE__OK);
	t_create(sm, a, 3, "db/main", 2, SEMD__MODE__OWNED, 0);
	expect_code(1, 3, SEMD__CODE__EXISTS);
	t_create(sm, a, 4, "db/main", 5, SEMD__MODE__OWNED, 1);
	expect_code(1, 4, SEMD__CODE__OK);
	t_down(sm, a, 10, "db/main", 1, 0, 0);
	g1 = grant_of(1, 10);
	t_down(sm, b, 11, "db/main", 1, 1000, 0);
	g2 = grant_of(2, 11);
	if (g1 == NULL || g2 == NULL)
		goto out;
	EXPECT(g2->token > g1->token);
	EXPECT(g1->permit_id != g2->permit_id);
	p1 = g1->permit_id;
	t1 = g1->token;
	t2 = g2->token;
	t_down(sm, b, 12, "db/main", 1, 0, 0);
	expect_code(2, 12, SEMD__CODE__WOULD_BLOCK);
	r = t_info(sm, a, 1, 13, "db/main", SEMD__CODE__OK);
	if (r != NULL) {
		EXPECT_U64(2, r->info->limit);
		EXPECT_I64(0, r->info->available);
		EXPECT_U64(2, r->info->n_holders);
		EXPECT_U64(p1, r->info->holders[0]->permit_id);
		EXPECT(strcmp(r->info->holders[0]->principal, "uid:1") == 0);
		EXPECT(strcmp(r->info->holders[0]->client_name, "test") == 0);
		EXPECT_U64(1700000000000ULL, r->info->holders[0]->since_ms);
		EXPECT_U64(t2, r->info->last_token);
		EXPECT_U64(2, r->info->holders_total);
		EXPECT_U64(0, r->info->waiters_total);
	}
	/* b cannot up a's permit, nor more than it holds. */
	t_up(sm, b, 14, "db/main", 0, p1);
	expect_code(2, 14, SEMD__CODE__NOT_HOLDER);
	t_up(sm, b, 15, "db/main", 2, 0);
	expect_code(2, 15, SEMD__CODE__NOT_HOLDER);
	EXPECT_I64(1, t_validate(sm, b, 2, 16, "db/main", t1));
	t_up(sm, a, 17, "db/main", 0, p1);
	r = expect_code(1, 17, SEMD__CODE__OK);
	EXPECT(r && r->body_case == SEMD__REPLY__BODY_RELEASED && r->released->n == 1);
	EXPECT_I64(0, t_validate(sm, b, 2, 18, "db/main", t1));
	t_up(sm, a, 19, "db/main", 1, 0);
	expect_code(1, 19, SEMD__CODE__NOT_HOLDER);	/* double up */
	t_up(sm, b, 20, "db/main", 1, 0);
	expect_code(2, 20, SEMD__CODE__OK);
	t_up(sm, a, 21, "nope", 1, 0);
	expect_code(1, 21, SEMD__CODE__NOT_FOUND);
	/* list with paging */
	t_create(sm, a, 22, "db/aux", 1, SEMD__MODE__OWNED, 0);
	t_create(sm, a, 23, "db/zed", 1, SEMD__MODE__OWNED, 0);
	t_create(sm, a, 24, "other", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, 22, 0); expect_code(1, 23, 0); expect_code(1, 24, 0);
	{
		Semd__Request req = SEMD__REQUEST__INIT;
		Semd__List l = SEMD__LIST__INIT;

		l.prefix = "db/";
		l.max = 2;
		req.id = 25;
		req.op_case = SEMD__REQUEST__OP_LIST;
		req.list = &l;
		t_req(sm, a, &req);
		r = expect_code(1, 25, SEMD__CODE__OK);
		if (r != NULL) {
			EXPECT_U64(2, r->list->n_entries);
			EXPECT(strcmp(r->list->entries[0]->name, "db/aux") == 0);
			EXPECT(strcmp(r->list->entries[1]->name, "db/main") == 0);
			EXPECT(strcmp(r->list->next, "db/main") == 0);
		}
		l.after = "db/main";
		req.id = 26;
		t_req(sm, a, &req);
		r = expect_code(1, 26, SEMD__CODE__OK);
		if (r != NULL) {
			EXPECT_U64(1, r->list->n_entries);
			EXPECT(strcmp(r->list->entries[0]->name, "db/zed") == 0);
			EXPECT(strcmp(r->list->next, "") == 0);
		}
	}
	{
		Semd__Request req = SEMD__REQUEST__INIT;
		Semd__Ping p = SEMD__PING__INIT;

		p.payload.data = (uint8_t *)"hi";
		p.payload.len = 2;
		req.id = 27;
		req.op_case = SEMD__REQUEST__OP_PING;
		req.ping = &p;
		t_req(sm, a, &req);
		r = expect_code(1, 27, SEMD__CODE__OK);
		EXPECT(r && r->body_case == SEMD__REPLY__BODY_PONG &&
		    r->pong->payload.len == 2 && memcmp(r->pong->payload.data, "hi", 2) == 0);
	}
	t_delete(sm, a, 28, "other", 0);
	expect_code(1, 28, SEMD__CODE__OK);
	t_info(sm, a, 1, 29, "other", SEMD__CODE__NOT_FOUND);
	EXPECT_U64(3, t_stat(sm, a, 1, "semaphores"));
	EXPECT_U64(2, t_stat(sm, a, 1, "connections"));
	EXPECT_U64(2, t_stat(sm, a, 1, "grants"));
	EXPECT_U64(2, t_stat(sm, a, 1, "ops_down") - 1);
	EXPECT(t_stat(sm, a, 1, "memory_bytes") > 1000);
	{
		Semd__Request req = SEMD__REQUEST__INIT;

		req.id = 30;	/* no op set */
		t_req(sm, a, &req);
		expect_code(1, 30, SEMD__CODE__INVALID_ARGUMENT);
	}
out:
	CHECK_SM(sm);
	sm_free(sm);
}

/* FIFO hand-off across many sessions. */
static void test_fifo(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *c[51];
	Semd__Grant *g;
	uint64_t last = 0;
	int i;

	TEST_START("FIFO across 50 sessions");
	for (i = 0; i <= 50; i++)
		c[i] = t_client(sm, 100 + i, "uid:1", 0);
	t_down(sm, c[0], 2, "q", 1, -1, 0);
	g = grant_of(100, 2);
	for (i = 1; i <= 50; i++) {
		t_down(sm, c[i], 2, "q", 1, -1, 0);
		EXPECT(none(100 + i, 2));
		now++;
	}
	CHECK_SM(sm);
	t_up(sm, c[0], 3, "q", 1, 0);
	expect_code(100, 3, SEMD__CODE__OK);
	for (i = 1; i <= 50; i++) {
		g = grant_of(100 + i, 2);
		if (g != NULL) {
			EXPECT(g->token > last);
			last = g->token;
		}
		if (i < 50)
			EXPECT(none(100 + i + 1, 2));
		t_up(sm, c[i], 3, "q", 1, 0);
		expect_code(100 + i, 3, SEMD__CODE__OK);
		CHECK_SM(sm);
	}
	for (i = 0; i <= 50; i++)
		sm_client_close(sm, c[i], now);
	CHECK_SM(sm);
	EXPECT_U64(UINT64_MAX, sm_next_deadline(sm));
	sm_free(sm);
}

/* n permits: a big head blocks small later ones (no barging). */
static void test_npermits(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);
	struct sm_client *c = t_client(sm, 3, "uid:1", 0);
	Semd__Grant *g;

	TEST_START("n-permit hand-off");
	t_create(sm, a, 2, "pool", 3, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, 0);
	t_down(sm, a, 3, "pool", 2, -1, 0);
	grant_of(1, 3);
	t_down(sm, b, 3, "pool", 3, -1, 0);
	t_down(sm, c, 3, "pool", 1, -1, 0);
	EXPECT(none(2, 3));
	EXPECT(none(3, 3));	/* one is free, but b is first */
	t_down(sm, c, 4, "pool", 1, 0, 0);
	expect_code(3, 4, SEMD__CODE__WOULD_BLOCK);
	t_down(sm, c, 5, "pool", 4, 0, 0);
	expect_code(3, 5, SEMD__CODE__INVALID_ARGUMENT);
	CHECK_SM(sm);
	t_up(sm, a, 6, "pool", 1, 0);
	expect_code(1, 6, 0);
	EXPECT(none(2, 3));
	t_up(sm, a, 7, "pool", 1, 0);
	g = grant_of(2, 3);
	EXPECT(g && g->n == 3);
	EXPECT(none(3, 3));
	t_up(sm, b, 8, "pool", 2, 0);	/* partial up of a 3-permit hold */
	expect_code(2, 8, 0);
	grant_of(3, 3);
	CHECK_SM(sm);
	sm_free(sm);
}

/* A deadline fires exactly at its tick. */
static void test_deadline(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);
	Semd__Reply *r;

	TEST_START("deadline expiry exactly at the tick");
	t_down(sm, a, 2, "m", 1, -1, 0);
	grant_of(1, 2);
	t_down(sm, b, 2, "m", 1, 250, 0);
	t_down(sm, b, 3, "m", 1, 100, 0);
	EXPECT_U64(now + 100, sm_next_deadline(sm));
	sm_tick(sm, now + 99);
	EXPECT(none(2, 3));
	sm_tick(sm, now + 100);
	r = expect_code(2, 3, SEMD__CODE__TIMEOUT);
	EXPECT(r && strstr(r->message, "100 ms") != NULL);
	EXPECT(none(2, 2));
	EXPECT_U64(now + 250, sm_next_deadline(sm));
	sm_tick(sm, now + 250);
	expect_code(2, 2, SEMD__CODE__TIMEOUT);
	EXPECT_U64(UINT64_MAX, sm_next_deadline(sm));
	EXPECT_U64(2, t_stat(sm, a, 1, "timeouts"));
	CHECK_SM(sm);
	sm_free(sm);
}

/* Disconnect: waiters cancelled, holds back at once. */
static void test_disconnect(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);

	TEST_START("disconnect frees holds at once");
	t_down(sm, a, 2, "m", 1, -1, 0);
	grant_of(1, 2);
	t_down(sm, a, 3, "other", 1, -1, 0);
	grant_of(1, 3);
	t_down(sm, b, 4, "other", 1, -1, 0);	/* b waits on other */
	t_down(sm, a, 4, "m2", 1, -1, 0);
	grant_of(1, 4);
	t_down(sm, b, 5, "m", 1, 5000, 0);
	EXPECT(none(2, 5));
	sm_client_close(sm, a, now);
	grant_of(2, 5);
	grant_of(2, 4);
	EXPECT_U64(2, t_stat(sm, b, 2, "semaphores"));	/* m2 freed */
	sm_client_close(sm, b, now);
	CHECK_SM(sm);
	EXPECT_U64(0, t_stat(sm, t_client(sm, 3, "x", 0), 3, "semaphores"));
	sm_free(sm);
}

/* Session lease: holds survive a disconnect, resume, expiry. */
static void test_lease(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 5000);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);
	struct sm_client *a2;
	uint8_t bad[SM_SECRET_LEN];
	uint64_t sid = sm_client_session(a), permit;
	Semd__Reply *r;
	Semd__Grant *g;

	TEST_START("lease keep, resume, expiry");
	t_down(sm, a, 2, "m", 1, -1, 0);
	g = grant_of(1, 2);
	permit = g ? g->permit_id : 0;
	t_down(sm, a, 3, "n", 1, -1, 0);
	grant_of(1, 3);
	t_down(sm, b, 2, "m", 1, -1, 0);
	sm_client_close(sm, a, now);
	EXPECT(none(2, 2));		/* kept for the lease */
	now += 4000;
	sm_tick(sm, now);
	EXPECT(none(2, 2));
	a2 = sm_client_open(sm, (uint64_t)3, (void *)3, "uid:1", secret_a, 0, now);
	memcpy(bad, secret_a, sizeof bad);
	bad[0] ^= 1;
	t_hello(sm, a2, 1, 5000, sid, bad);
	expect_code(3, 1, SEMD__CODE__SESSION_EXPIRED);
	t_hello(sm, a2, 2, 5000, sid, secret_a);
	r = expect_code(3, 2, SEMD__CODE__OK);
	EXPECT(r && r->hello->resumed && r->hello->session == sid);
	/* The retried down finds the grant it had. */
	t_down(sm, a2, 2, "m", 1, -1, 0);
	g = grant_of(3, 2);
	EXPECT(g && g->permit_id == permit);
	now += 2000;
	sm_tick(sm, now);		/* past the old expiry: nothing */
	EXPECT(none(2, 2));
	/* The lease counts from the last request heard (2000 ms ago). */
	sm_client_close(sm, a2, now);
	EXPECT_U64(now + 3000, sm_next_deadline(sm));
	sm_tick(sm, now + 2999);
	EXPECT(none(2, 2));
	sm_tick(sm, now + 3000);
	grant_of(2, 2);
	a2 = sm_client_open(sm, (uint64_t)4, (void *)4, "uid:1", secret_a, 0, now);
	t_hello(sm, a2, 1, 0, sid, secret_a);
	expect_code(4, 1, SEMD__CODE__SESSION_EXPIRED);
	/* a resume by another principal is refused */
	{
		struct sm_client *x = t_client(sm, 5, "uid:1", 1000);
		struct sm_client *y = sm_client_open(sm, (uint64_t)6, (void *)6, "uid:2", secret_a, 0, now);
		uint64_t xs = sm_client_session(x);

		sm_client_close(sm, x, now);
		t_hello(sm, y, 1, 0, xs, secret_a);
		expect_code(6, 1, SEMD__CODE__PERMISSION_DENIED);
	}
	EXPECT_U64(1, t_stat(sm, b, 2, "sessions_expired"));
	CHECK_SM(sm);
	sm_free(sm);
}

/* Detached holds belong to the principal. */
static void test_detached(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b, *c;
	Semd__Reply *r;

	TEST_START("detached hold outlives its connection");
	t_down(sm, a, 2, "job", 1, 0, 60000);
	grant_of(1, 2);
	sm_client_close(sm, a, now);
	b = t_client(sm, 2, "uid:2", 0);
	t_down(sm, b, 2, "job", 1, 0, 0);
	expect_code(2, 2, SEMD__CODE__WOULD_BLOCK);
	r = t_info(sm, b, 2, 3, "job", SEMD__CODE__OK);
	EXPECT(r && r->info->n_holders == 1 && r->info->holders[0]->detached &&
	    r->info->holders[0]->expires_ms == 1700000000000ULL + 60000);
	t_up(sm, b, 4, "job", 1, 0);
	expect_code(2, 4, SEMD__CODE__NOT_HOLDER);
	c = t_client(sm, 3, "uid:1", 0);
	t_up(sm, c, 4, "job", 1, 0);
	expect_code(3, 4, SEMD__CODE__OK);
	t_info(sm, c, 3, 5, "job", SEMD__CODE__NOT_FOUND);	/* auto, freed */
	/* expiry hands the permit to the next waiter */
	t_down(sm, c, 6, "job", 1, 0, 1000);
	grant_of(3, 6);
	t_down(sm, b, 7, "job", 1, -1, 0);
	sm_tick(sm, now + 999);
	EXPECT(none(2, 7));
	sm_tick(sm, now + 1000);
	grant_of(2, 7);
	EXPECT_U64(1, t_stat(sm, b, 2, "leases_expired"));
	CHECK_SM(sm);
	sm_free(sm);
}

/* A retried down does not take a second permit. */
static void test_idempotent(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);
	Semd__Grant *g1, *g2;
	Semd__Reply *r;

	TEST_START("idempotent retry");
	t_create(sm, a, 2, "r", 3, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, 0);
	t_down(sm, a, 7, "r", 1, -1, 0);
	g1 = grant_of(1, 7);
	t_down(sm, a, 7, "r", 1, -1, 0);
	g2 = grant_of(1, 7);
	EXPECT(g1 && g2 && g1->permit_id == g2->permit_id && g1->token == g2->token);
	r = t_info(sm, a, 1, 8, "r", SEMD__CODE__OK);
	EXPECT(r && r->info->available == 2);
	t_down(sm, a, 7, "other", 1, -1, 0);
	expect_code(1, 7, SEMD__CODE__INVALID_ARGUMENT);
	/* a waiting down retried stays one waiter */
	t_down(sm, b, 3, "r", 2, -1, 0);
	grant_of(2, 3);
	t_down(sm, a, 9, "r", 1, -1, 0);
	t_down(sm, a, 9, "r", 1, -1, 0);
	EXPECT(none(1, 9));
	r = t_info(sm, a, 1, 10, "r", SEMD__CODE__OK);
	EXPECT(r && r->info->n_waiters == 1);
	t_up(sm, b, 4, "r", 1, 0);
	grant_of(1, 9);
	EXPECT(none(1, 9));
	CHECK_SM(sm);
	sm_free(sm);
}

/* set-limit shrink revokes nobody; grow wakes waiters. */
static void test_set_limit(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);
	Semd__Reply *r;

	TEST_START("set-limit shrink and grow");
	t_create(sm, a, 2, "s", 3, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, 0);
	t_down(sm, a, 3, "s", 3, -1, 0);
	grant_of(1, 3);
	t_down(sm, b, 3, "s", 1, -1, 0);
	t_down(sm, b, 4, "s", 2, -1, 0);
	t_set_limit(sm, a, 4, "s", 1);
	expect_code(1, 4, 0);
	expect_code(2, 4, SEMD__CODE__INVALID_ARGUMENT);	/* wants 2 > 1 */
	r = t_info(sm, a, 1, 5, "s", SEMD__CODE__OK);
	EXPECT(r && r->info->available == -2 && r->info->n_holders == 1);
	CHECK_SM(sm);
	t_up(sm, a, 6, "s", 2, 0);
	expect_code(1, 6, 0);
	EXPECT(none(2, 3));		/* still at the limit */
	t_up(sm, a, 7, "s", 1, 0);
	grant_of(2, 3);
	t_down(sm, a, 8, "s", 1, -1, 0);
	EXPECT(none(1, 8));
	t_set_limit(sm, a, 9, "s", 2);
	expect_code(1, 9, 0);
	grant_of(1, 8);
	t_set_limit(sm, a, 10, "s", 0);
	expect_code(1, 10, SEMD__CODE__INVALID_ARGUMENT);
	CHECK_SM(sm);
	sm_free(sm);
}

/*
 * Shrinking a limit cancels the waiters that ask for more than the new
 * limit. Cancelling the head used to let the waiters behind it be granted at
 * the old count, before the shrink was applied: with limit 10, 3 held, a
 * head waiting for 9 and one for 4 behind it, set-limit 4 granted the 4
 * (7 held under a limit of 4).
 */
static void test_issue_set_limit_shrink_overgrant(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);
	struct sm_client *c = t_client(sm, 3, "uid:1", 0);
	Semd__Reply *r;

	TEST_START("set-limit shrink does not grant beyond the new limit");
	t_create(sm, a, 2, "g", 10, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, 0);
	t_down(sm, a, 3, "g", 3, -1, 0);
	grant_of(1, 3);
	t_down(sm, b, 4, "g", 9, -1, 0);	/* head: needs 9 of 7 free */
	t_down(sm, c, 5, "g", 4, -1, 0);	/* behind it: 4 would fit now */
	EXPECT(none(2, 4));
	EXPECT(none(3, 5));
	t_set_limit(sm, a, 6, "g", 4);
	expect_code(1, 6, 0);
	expect_code(2, 4, SEMD__CODE__INVALID_ARGUMENT);	/* 9 > 4 */
	EXPECT(none(3, 5));		/* 3 held + 4 > 4: must still wait */
	r = t_info(sm, a, 1, 7, "g", SEMD__CODE__OK);
	EXPECT(r && r->info->available == 1 && r->info->n_holders == 1 &&
	    r->info->n_waiters == 1);
	CHECK_SM(sm);
	t_up(sm, a, 8, "g", 3, 0);
	expect_code(1, 8, 0);
	grant_of(3, 5);			/* now 4 of 4 */
	r = t_info(sm, a, 1, 9, "g", SEMD__CODE__OK);
	EXPECT(r && r->info->available == 0 && r->info->n_holders == 1);
	CHECK_SM(sm);
	sm_free(sm);
}

/* delete --force cancels waiters and drops holders. */
static void test_delete(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);
	Semd__Reply *r;

	TEST_START("delete with force");
	t_create(sm, a, 2, "d", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, 0);
	t_down(sm, a, 3, "d", 1, -1, 0);
	grant_of(1, 3);
	t_down(sm, b, 3, "d", 1, 1000, 0);
	t_down(sm, a, 4, "d", 1, -1, 0);
	t_delete(sm, b, 4, "d", 0);
	expect_code(2, 4, SEMD__CODE__INVALID_ARGUMENT);
	t_delete(sm, b, 5, "d", 1);
	expect_code(2, 5, SEMD__CODE__OK);
	expect_code(2, 3, SEMD__CODE__CANCELLED);
	expect_code(1, 4, SEMD__CODE__CANCELLED);
	r = expect_code(1, 0, SEMD__CODE__CANCELLED);	/* lost-hold notice */
	EXPECT(r && r->body_case == SEMD__REPLY__BODY_HOLD_LOST &&
	    strcmp(r->hold_lost->name, "d") == 0 && r->hold_lost->n == 1);
	EXPECT_U64(UINT64_MAX, sm_next_deadline(sm));
	t_info(sm, a, 1, 6, "d", SEMD__CODE__NOT_FOUND);
	CHECK_SM(sm);
	sm_free(sm);
}

/*
 * A client's last-named semaphore is remembered; freeing it (auto-created
 * and idle, or deleted) must make the client look the name up again even
 * though the freed record, kept for reuse, still holds the name.
 */
static void test_name_cache(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);
	Semd__Reply *r;

	TEST_START("a client's last semaphore after it is freed");
	t_down(sm, a, 2, "nc/x", 1, -1, 0);
	grant_of(1, 2);
	t_up(sm, a, 3, "nc/x", 1, 0);
	expect_code(1, 3, 0);
	/* Freed when idle: an up names nothing now. */
	t_up(sm, a, 4, "nc/x", 1, 0);
	expect_code(1, 4, SEMD__CODE__NOT_FOUND);
	t_info(sm, a, 1, 5, "nc/x", SEMD__CODE__NOT_FOUND);
	/* Explicit, then deleted by another client, then made again. */
	t_create(sm, a, 6, "nc/y", 3, SEMD__MODE__OWNED, 0);
	expect_code(1, 6, 0);
	t_down(sm, a, 7, "nc/y", 1, 0, 0);
	grant_of(1, 7);
	t_delete(sm, b, 3, "nc/y", 1);
	expect_code(2, 3, SEMD__CODE__OK);
	expect_code(1, 0, SEMD__CODE__CANCELLED);	/* lost-hold notice */
	t_up(sm, a, 8, "nc/y", 1, 0);
	expect_code(1, 8, SEMD__CODE__NOT_FOUND);
	t_create(sm, b, 4, "nc/y", 1, SEMD__MODE__OWNED, 0);
	expect_code(2, 4, 0);
	t_down(sm, a, 9, "nc/y", 1, 0, 0);
	grant_of(1, 9);
	t_down(sm, a, 10, "nc/y", 1, 0, 0);
	expect_code(1, 10, SEMD__CODE__WOULD_BLOCK);	/* limit 1 now */
	r = t_info(sm, a, 1, 11, "nc/y", SEMD__CODE__OK);
	EXPECT(r && r->info->limit == 1 && r->info->n_holders == 1);
	CHECK_SM(sm);
	sm_free(sm);
}

/* Auto-created names are freed when idle; explicit ones stay. */
static void test_autocreate(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	Semd__Reply *r;

	TEST_START("auto-create and freeing");
	t_down(sm, a, 2, "auto/x", 1, -1, 0);
	grant_of(1, 2);
	r = t_info(sm, a, 1, 3, "auto/x", SEMD__CODE__OK);
	EXPECT(r && r->info->auto_created && r->info->limit == 1);
	t_up(sm, a, 4, "auto/x", 1, 0);
	expect_code(1, 4, 0);
	t_info(sm, a, 1, 5, "auto/x", SEMD__CODE__NOT_FOUND);
	t_down(sm, a, 6, "auto/y", 1, 0, 0);
	grant_of(1, 6);
	t_down(sm, a, 7, "auto/y", 1, 0, 0);
	expect_code(1, 7, SEMD__CODE__WOULD_BLOCK);
	t_cancel(sm, a, 8, 77);
	expect_code(1, 8, SEMD__CODE__NOT_FOUND);
	t_down(sm, a, 9, "auto/y", 1, -1, 0);
	t_cancel(sm, a, 10, 9);
	expect_code(1, 10, SEMD__CODE__OK);
	expect_code(1, 9, SEMD__CODE__CANCELLED);
	sm_client_close(sm, a, now);
	a = t_client(sm, 2, "uid:1", 0);
	EXPECT_U64(0, t_stat(sm, a, 2, "semaphores"));
	EXPECT_U64(1, t_stat(sm, a, 2, "cancels"));
	CHECK_SM(sm);
	sm_free(sm);
}

static void tune_tiny(struct sm_config *cfg)
{
	cfg->max_semaphores = 2;
	cfg->max_waiters_per_session = 2;
	cfg->max_holds_per_session = 4;
	cfg->default_limit = 2;
}

/* Limits give RESOURCE_EXHAUSTED with a message. */
static void test_limits(void)
{
	struct sm *sm = t_new(1700000000000ULL, tune_tiny);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);
	Semd__Reply *r;

	TEST_START("limits: semaphores, waiters and holds per session");
	t_down(sm, a, 2, "l1", 2, -1, 0);
	grant_of(1, 2);
	t_create(sm, a, 3, "l2", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, 3, 0);
	t_create(sm, a, 4, "l3", 1, SEMD__MODE__OWNED, 0);
	r = expect_code(1, 4, SEMD__CODE__RESOURCE_EXHAUSTED);
	EXPECT(r && strstr(r->message, "max-semaphores") != NULL);
	t_down(sm, a, 5, "l4", 1, -1, 0);
	expect_code(1, 5, SEMD__CODE__RESOURCE_EXHAUSTED);
	t_down(sm, b, 5, "l1", 1, -1, 0);
	t_down(sm, b, 6, "l1", 1, -1, 0);
	t_down(sm, b, 7, "l1", 1, -1, 0);
	r = expect_code(2, 7, SEMD__CODE__RESOURCE_EXHAUSTED);
	EXPECT(r && strstr(r->message, "max-waiters-per-session") != NULL);
	t_down(sm, a, 8, "l2", 1, -1, 0);
	grant_of(1, 8);
	t_down(sm, a, 9, "l2", 1, -1, 0);	/* 2 holds + 1 waiter */
	t_down(sm, a, 10, "l1", 1, -1, 0);	/* 4th */
	t_down(sm, a, 11, "l1", 1, -1, 0);
	r = expect_code(1, 11, SEMD__CODE__RESOURCE_EXHAUSTED);
	EXPECT(r && strstr(r->message, "max-holds-per-session") != NULL);
	CHECK_SM(sm);
	sm_free(sm);
}

static void tune_big(struct sm_config *cfg)
{
	cfg->max_holds_per_session = 20000;
}

/* Info with paging: max, after_permit, after_waiter. */
static Semd__Reply *t_info_page(struct sm *sm, struct sm_client *c,
    uintptr_t k, uint64_t id, const char *name, uint32_t max,
    uint64_t after_permit, uint64_t after_waiter)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Info in = SEMD__INFO__INIT;

	in.name = (char *)name;
	in.max = max;
	in.after_permit = after_permit;
	in.after_waiter = after_waiter;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_INFO;
	req.info = &in;
	t_req(sm, c, &req);
	return expect_code(k, id, SEMD__CODE__OK);
}

/*
 * Walk every Info page of name with pages of max, checking that the
 * holders come in grant order and the waiters in queue order, each once;
 * returns how many of each were seen.
 */
static void info_walk(struct sm *sm, struct sm_client *c, uintptr_t k,
    const char *name, uint32_t max, size_t *holders, size_t *waiters,
    size_t *pages)
{
	uint64_t ap = 0, aw = 0, last_p = 0, last_w = 0, id = 1000000;
	Semd__Reply *r;
	size_t i;

	*holders = *waiters = *pages = 0;
	for (;;) {
		r = t_info_page(sm, c, k, id++, name, max, ap, aw);
		if (r == NULL || r->info == NULL)
			return;
		(*pages)++;
		if (*pages > 100000) {
			FAIL("info paging does not end");
			return;
		}
		EXPECT(r->info->n_holders <= (max ? max : SM_INFO_PAGE));
		EXPECT(r->info->n_waiters <= (max ? max : SM_INFO_PAGE));
		for (i = 0; i < r->info->n_holders; i++) {
			EXPECT(r->info->holders[i]->permit_id > last_p);
			last_p = r->info->holders[i]->permit_id;
		}
		for (i = 0; i < r->info->n_waiters; i++) {
			EXPECT(r->info->waiters[i]->seq > last_w);
			last_w = r->info->waiters[i]->seq;
		}
		*holders += r->info->n_holders;
		*waiters += r->info->n_waiters;
		if (r->info->next_permit != 0)
			EXPECT_U64(last_p, r->info->next_permit);
		if (r->info->next_waiter != 0)
			EXPECT_U64(last_w, r->info->next_waiter);
		if (r->info->next_permit == 0 && r->info->next_waiter == 0)
			return;
		/* A list that is done stays done: its cursor goes past the end. */
		ap = r->info->next_permit ? r->info->next_permit : UINT64_MAX;
		aw = r->info->next_waiter ? r->info->next_waiter : UINT64_MAX;
		caps_clear();
	}
}

static void tune_small_reply(struct sm_config *cfg)
{
	cfg->max_holds_per_session = 20000;
	cfg->max_waiters_per_session = 20000;
	cfg->max_reply = 8192;
}

/* Info pages its holders and waiters and never builds a big reply. */
static void test_info_cap(void)
{
	struct sm *sm = t_new(1700000000000ULL, tune_big);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b;
	Semd__Reply *r;
	size_t nh, nw, np;
	int i;

	TEST_START("info of a semaphore with 10,005 holders comes in pages");
	t_create(sm, a, 2, "big", 20000, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, 0);
	for (i = 0; i < 10005; i++)
		t_down(sm, a, 100 + (uint64_t)i, "big", 1, 0, 0);
	caps_clear();
	r = t_info(sm, a, 1, 3, "big", SEMD__CODE__OK);
	if (r != NULL) {
		EXPECT_U64(SM_INFO_PAGE, r->info->n_holders);
		EXPECT_U64(10005, r->info->holders_total);
		EXPECT_I64(20000 - 10005, r->info->available);
		EXPECT(r->info->next_permit != 0);
		EXPECT_U64(0, r->info->next_waiter);
	}
	info_walk(sm, a, 1, "big", 0, &nh, &nw, &np);
	EXPECT_U64(10005, nh);
	EXPECT_U64(101, np);
	info_walk(sm, a, 1, "big", 5000, &nh, &nw, &np);	/* capped at 1000 */
	EXPECT_U64(10005, nh);
	EXPECT_U64(11, np);
	CHECK_SM(sm);
	sm_free(sm);

	TEST_START("info pages waiters by seq, bounded by max_reply bytes");
	sm = t_new(1700000000000ULL, tune_small_reply);
	a = t_client(sm, 1, "uid:1", 0);
	b = t_client(sm, 2, "uid:2", 0);
	t_create(sm, a, 2, "q", 1, SEMD__MODE__OWNED, 0);
	t_down(sm, a, 3, "q", 1, 0, 0);
	expect_code(1, 3, 0);
	for (i = 0; i < 3000; i++)
		t_down(sm, i % 2 ? a : b, 100 + (uint64_t)i, "q", 1, -1, 0);
	caps_clear();
	info_walk(sm, a, 1, "q", 1000, &nh, &nw, &np);
	EXPECT_U64(1, nh);
	EXPECT_U64(3000, nw);
	EXPECT(np > 3);		/* 8 KiB a reply cannot hold 1000 waiters */
	TEST_START("info shows a non-manager only its own holders and waiters");
	info_walk(sm, b, 2, "q", 1000, &nh, &nw, &np);
	EXPECT_U64(3000, nw);	/* NULL caller: an administrator */
	CHECK_SM(sm);
	sm_free(sm);
}


/* Release: force-release a hold by permit id. */
static void t_release(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint64_t permit)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Release rl = SEMD__RELEASE__INIT;

	rl.name = (char *)name;
	rl.permit_id = permit;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_RELEASE;
	req.release = &rl;
	t_req(sm, c, &req);
}

/* A bare request of op (ping, detach). */
static void t_simple(struct sm *sm, struct sm_client *c, uint64_t id, int op)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Ping p = SEMD__PING__INIT;
	Semd__Detach d = SEMD__DETACH__INIT;

	req.id = id;
	req.op_case = op;
	if (op == SEMD__REQUEST__OP_PING)
		req.ping = &p;
	else
		req.detach = &d;
	t_req(sm, c, &req);
}

/* The hold-lost notice to conn k (id 0): its code and name. */
static void expect_lost_(int line, uintptr_t k, int code, const char *name,
    uint64_t permit)
{
	Semd__Reply *r = expect_code_(line, k, 0, code);

	if (r != NULL && (r->body_case != SEMD__REPLY__BODY_HOLD_LOST ||
	    strcmp(r->hold_lost->name, name) != 0 ||
	    (permit != 0 && r->hold_lost->permit_id != permit)))
		FAIL("line %d: not a hold-lost notice for %s (%s)", line, name,
		    r->message);
}
#define expect_lost(k, code, name, permit) \
	expect_lost_(__LINE__, k, code, name, permit)

/* Force-release and delete --force tell the holder at once. */
static void test_lost_push(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 5000);
	struct sm_client *adm = t_client(sm, 2, "uid:0", 0);
	Semd__Grant *g;

	TEST_START("force-release pushes HoldLost(CANCELLED) to the holder");
	t_down(sm, a, 2, "x", 1, -1, 0);
	g = grant_of(1, 2);
	t_release(sm, adm, 3, "x", g ? g->permit_id : 0);
	expect_code(2, 3, SEMD__CODE__OK);
	expect_lost(1, SEMD__CODE__CANCELLED, "x", g ? g->permit_id : 0);
	TEST_START("delete --force pushes HoldLost(CANCELLED)");
	t_create(sm, adm, 4, "y", 2, SEMD__MODE__OWNED, 0);
	t_down(sm, a, 3, "y", 2, -1, 0);
	grant_of(1, 3);
	t_delete(sm, adm, 5, "y", 1);
	expect_code(2, 5, SEMD__CODE__OK);
	expect_lost(1, SEMD__CODE__CANCELLED, "y", 0);
	TEST_START("shutdown pushes HoldLost(UNAVAILABLE) and a stop notice");
	t_down(sm, a, 4, "z", 1, -1, 0);
	grant_of(1, 4);
	sm_shutdown(sm, now);
	expect_lost(1, SEMD__CODE__UNAVAILABLE, "z", 0);
	expect_code(1, 0, SEMD__CODE__UNAVAILABLE);
	expect_code(2, 0, SEMD__CODE__UNAVAILABLE);
	CHECK_SM(sm);
	sm_free(sm);
}

/* A silent session loses its holds one lease after the last request. */
static void test_lease_silence(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 3000);
	struct sm_client *b = t_client(sm, 2, "uid:2", 0);
	uint64_t t0 = now;

	TEST_START("requests keep a connected session alive");
	t_down(sm, a, 2, "s", 1, -1, 0);
	grant_of(1, 2);
	t_down(sm, b, 2, "s", 1, -1, 0);
	t_down(sm, a, 3, "w", 1, -1, 0);	/* a waiter too */
	grant_of(1, 3);
	t_down(sm, a, 4, "w", 1, -1, 0);
	now = t0 + 2000;
	sm_tick(sm, now);
	t_simple(sm, a, 5, SEMD__REQUEST__OP_PING);	/* heard at t0 + 2000 */
	expect_code(1, 5, SEMD__CODE__OK);
	now = t0 + 4000;
	sm_tick(sm, now);
	EXPECT(none(2, 2));
	EXPECT_I64(0, nclosed);
	CHECK_SM(sm);
	TEST_START("silent for a lease: holds lost, waiters answered, connection closed");
	sm_tick(sm, t0 + 4999);
	EXPECT(none(2, 2));
	sm_tick(sm, t0 + 5000);
	expect_lost(1, SEMD__CODE__SESSION_EXPIRED, "s", 0);
	expect_lost(1, SEMD__CODE__SESSION_EXPIRED, "w", 0);
	expect_code(1, 4, SEMD__CODE__SESSION_EXPIRED);
	expect_code(1, 0, SEMD__CODE__SESSION_EXPIRED);
	grant_of(2, 2);
	EXPECT_I64(1, nclosed);
	EXPECT_U64(1, closed[0]);
	t_simple(sm, a, 6, SEMD__REQUEST__OP_PING);
	expect_code(1, 6, SEMD__CODE__SESSION_EXPIRED);
	sm_client_close(sm, a, t0 + 5000);
	CHECK_SM(sm);
	sm_free(sm);
	now = t0;
}

/* UNIX peers: a close is death unless they sent Detach. */
static void test_local_death(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a, *b = t_client(sm, 2, "uid:2", 0);
	uint64_t sid;

	TEST_START("a local client's close frees its holds at once, lease or not");
	a = sm_client_open(sm, (uint64_t)1, (void *)1, "uid:1", secret_a, SM_CLIENT_LOCAL, now);
	t_hello(sm, a, 1, 60000, 0, NULL);
	expect_code(1, 1, SEMD__CODE__OK);
	t_down(sm, a, 2, "l", 1, -1, 0);
	grant_of(1, 2);
	t_down(sm, b, 2, "l", 1, -1, 0);
	sm_client_close(sm, a, now);
	grant_of(2, 2);
	EXPECT_U64(0, t_stat(sm, b, 2, "sessions") - 1);
	TEST_START("after Detach the lease applies");
	a = sm_client_open(sm, (uint64_t)3, (void *)3, "uid:1", secret_a, SM_CLIENT_LOCAL, now);
	t_hello(sm, a, 1, 60000, 0, NULL);
	expect_code(3, 1, SEMD__CODE__OK);
	sid = sm_client_session(a);
	t_down(sm, a, 2, "k", 1, -1, 0);
	grant_of(3, 2);
	t_simple(sm, a, 3, SEMD__REQUEST__OP_DETACH);
	expect_code(3, 3, SEMD__CODE__OK);
	sm_client_close(sm, a, now);
	EXPECT_U64(2, t_stat(sm, b, 2, "sessions"));
	a = sm_client_open(sm, (uint64_t)4, (void *)4, "uid:1", secret_a, SM_CLIENT_LOCAL, now);
	t_hello(sm, a, 1, 60000, sid, secret_a);
	expect_code(4, 1, SEMD__CODE__OK);
	TEST_START("a session without a lease ends with its connection, over TCP too");
	sm_client_close(sm, a, now);	/* no Detach on this connection */
	a = t_client(sm, 5, "uid:1", 0);
	t_down(sm, a, 2, "k", 1, -1, 0);
	grant_of(5, 2);
	sm_client_close(sm, a, now);
	t_down(sm, b, 4, "k", 1, 0, 0);
	grant_of(2, 4);
	CHECK_SM(sm);
	sm_free(sm);
}

/* A waiter of an absent session keeps its place in the queue. */
static void test_resume_place(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *h = t_client(sm, 1, "uid:9", 0);
	struct sm_client *a = t_client(sm, 2, "uid:1", 5000);
	struct sm_client *b = t_client(sm, 3, "uid:2", 0);
	struct sm_client *a2;
	uint64_t sid = sm_client_session(a);
	Semd__Grant *g;
	Semd__Reply *r;

	TEST_START("A waits first, B second; A away and back: A is granted first");
	t_down(sm, h, 2, "f", 1, -1, 0);
	grant_of(1, 2);
	t_down(sm, a, 2, "f", 1, -1, 0);
	t_down(sm, b, 2, "f", 1, -1, 0);
	sm_client_close(sm, a, now);
	r = t_info(sm, b, 3, 9, "f", SEMD__CODE__OK);
	EXPECT(r && r->info->n_waiters == 2 && r->info->waiters[0]->detached &&
	    strcmp(r->info->waiters[0]->principal, "uid:1") == 0);
	a2 = sm_client_open(sm, (uint64_t)4, (void *)4, "uid:1", secret_a, 0, now);
	t_hello(sm, a2, 1, 5000, sid, secret_a);
	expect_code(4, 1, SEMD__CODE__OK);
	t_down(sm, a2, 2, "f", 1, -1, 0);	/* the library's retry */
	EXPECT(none(4, 2));
	t_up(sm, h, 3, "f", 1, 0);
	grant_of(4, 2);
	EXPECT(none(3, 2));
	CHECK_SM(sm);
	TEST_START("owned: granted while away, the retried down gets that grant");
	sm_client_close(sm, a2, now);
	t_down(sm, b, 5, "g", 1, -1, 0);
	grant_of(3, 5);
	a2 = sm_client_open(sm, (uint64_t)5, (void *)5, "uid:1", secret_a, 0, now);
	t_hello(sm, a2, 1, 5000, sid, secret_a);
	t_down(sm, a2, 7, "g", 1, -1, 0);
	sm_client_close(sm, a2, now);
	t_up(sm, b, 6, "g", 1, 0);		/* granted to the absent session */
	CHECK_SM(sm);
	a2 = sm_client_open(sm, (uint64_t)6, (void *)6, "uid:1", secret_a, 0, now);
	t_hello(sm, a2, 1, 5000, sid, secret_a);
	t_down(sm, a2, 7, "g", 1, -1, 0);
	g = grant_of(6, 7);
	EXPECT(g != NULL && g->permit_id != 0);
	TEST_START("signal mode: an absent waiter is passed over, served when back");
	t_create(sm, b, 8, "sig", 2, SEMD__MODE__SIGNAL, 0);
	expect_code(3, 8, SEMD__CODE__OK);
	t_down(sm, b, 9, "sig", 2, 0, 0);
	grant_of(3, 9);
	t_down(sm, a2, 8, "sig", 1, -1, 0);
	t_down(sm, b, 10, "sig", 1, -1, 0);
	sm_client_close(sm, a2, now);
	t_up(sm, b, 11, "sig", 1, 0);
	grant_of(3, 10);			/* b, behind the absent a */
	CHECK_SM(sm);
	t_up(sm, b, 12, "sig", 1, 0);
	a2 = sm_client_open(sm, (uint64_t)7, (void *)7, "uid:1", secret_a, 0, now);
	t_hello(sm, a2, 1, 5000, sid, secret_a);
	g = grant_of(7, 8);		/* unparked: granted on resume */
	TEST_START("a signal-mode grant is found again by its retry, not taken twice");
	t_down(sm, a2, 8, "sig", 1, -1, 0);	/* the library's retry */
	EXPECT(grant_of(7, 8) != NULL && g != NULL);
	r = t_info(sm, b, 3, 14, "sig", SEMD__CODE__OK);
	EXPECT(r && r->info->available == 0 && r->info->waiters_total == 0);
	CHECK_SM(sm);
	TEST_START("a deadline that passes while away is answered to the retry");
	t_down(sm, b, 13, "sig", 2, -1, 0);
	t_down(sm, a2, 9, "sig", 1, 500, 0);
	sm_client_close(sm, a2, now);
	now += 600;
	sm_tick(sm, now);
	a2 = sm_client_open(sm, (uint64_t)8, (void *)8, "uid:1", secret_a, 0, now);
	t_hello(sm, a2, 1, 5000, sid, secret_a);
	t_down(sm, a2, 9, "sig", 1, 500, 0);
	expect_code(8, 9, SEMD__CODE__TIMEOUT);
	t_down(sm, a2, 10, "sig", 1, 0, 0);
	expect_code(8, 10, SEMD__CODE__WOULD_BLOCK);
	CHECK_SM(sm);
	sm_free(sm);
}

/* Create.initial, Down.limit, partial ups and the permit count. */
static void test_create_options(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Create cr = SEMD__CREATE__INIT;
	Semd__Down d = SEMD__DOWN__INIT;
	struct sm_caller cap = { SM_PRIV_ADMIN, { 0 } };

	TEST_START("create --mode signal --initial 0 starts empty");
	cr.name = "pc";
	cr.limit = 3;
	cr.mode = SEMD__MODE__SIGNAL;
	cr.initial = 0;
	cr.initial_set = 1;
	req.id = 2;
	req.op_case = SEMD__REQUEST__OP_CREATE;
	req.create = &cr;
	t_req(sm, a, &req);
	expect_code(1, 2, SEMD__CODE__OK);
	t_down(sm, a, 3, "pc", 1, 0, 0);
	expect_code(1, 3, SEMD__CODE__WOULD_BLOCK);
	t_up(sm, a, 4, "pc", 1, 0);
	expect_code(1, 4, SEMD__CODE__OK);
	t_down(sm, a, 5, "pc", 1, 0, 0);
	grant_of(1, 5);
	cr.name = "bad";
	cr.mode = SEMD__MODE__OWNED;
	req.id = 6;
	t_req(sm, a, &req);
	expect_code(1, 6, SEMD__CODE__INVALID_ARGUMENT);
	cr.mode = SEMD__MODE__SIGNAL;
	cr.initial = 4;
	req.id = 7;
	t_req(sm, a, &req);
	expect_code(1, 7, SEMD__CODE__INVALID_ARGUMENT);
	TEST_START("down --limit creates a missing name with that limit");
	d.name = "dl";
	d.n = 1;
	d.limit = 3;
	d.timeout_ms = 0;
	req.id = 8;
	req.op_case = SEMD__REQUEST__OP_DOWN;
	req.down = &d;
	t_req(sm, a, &req);
	grant_of(1, 8);
	req.id = 9;
	t_req(sm, a, &req);
	grant_of(1, 9);
	d.limit = 2;
	req.id = 10;
	t_req(sm, a, &req);
	expect_code(1, 10, SEMD__CODE__EXISTS);
	TEST_START("partial ups give the permits back to the principal's count");
	t_who = &cap;
	cap.limit[SM_LIMIT_PERMITS] = 3;
	t_create(sm, a, 11, "pu", 5, SEMD__MODE__OWNED, 0);
	t_up(sm, a, 12, "dl", 2, 0);
	expect_code(1, 12, SEMD__CODE__OK);
	t_down(sm, a, 13, "pu", 3, 0, 0);
	grant_of(1, 13);
	t_up(sm, a, 14, "pu", 1, 0);
	t_up(sm, a, 15, "pu", 2, 0);
	CHECK_SM(sm);
	t_down(sm, a, 16, "pu", 3, 0, 0);
	grant_of(1, 16);
	t_who = NULL;
	CHECK_SM(sm);
	sm_free(sm);
}

/* Without SM_PRIV_ADMIN only a name's creator manages it. */
static void test_ownership(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:2", 0);
	struct sm_client *adm = t_client(sm, 3, "uid:0", 0);
	struct sm_caller user = { 0, { 0 } };
	Semd__Grant *g;
	Semd__Reply *r;

	t_who = &user;
	TEST_START("the creator deletes and sets the limit; others may not");
	t_create(sm, a, 2, "mine", 2, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, SEMD__CODE__OK);
	t_set_limit(sm, b, 2, "mine", 5);
	expect_code(2, 2, SEMD__CODE__PERMISSION_DENIED);
	t_delete(sm, b, 3, "mine", 1);
	expect_code(2, 3, SEMD__CODE__PERMISSION_DENIED);
	t_set_limit(sm, a, 3, "mine", 3);
	expect_code(1, 3, SEMD__CODE__OK);
	TEST_START("only the creator and administrators release others' holds");
	t_down(sm, b, 4, "mine", 1, -1, 0);
	g = grant_of(2, 4);
	t_release(sm, b, 5, "mine", g ? g->permit_id : 0);	/* its own */
	expect_code(2, 5, SEMD__CODE__OK);
	t_down(sm, b, 6, "mine", 1, -1, 0);
	g = grant_of(2, 6);
	t_down(sm, a, 4, "mine", 1, -1, 0);
	grant_of(1, 4);
	t_release(sm, b, 7, "mine", 0);
	expect_code(2, 7, SEMD__CODE__NOT_FOUND);
	TEST_START("info hides others' holders from a non-manager");
	r = t_info(sm, b, 2, 8, "mine", SEMD__CODE__OK);
	EXPECT(r && r->info->n_holders == 1 && r->info->holders_total == 2 &&
	    strcmp(r->info->holders[0]->principal, "uid:2") == 0);
	r = t_info(sm, a, 1, 5, "mine", SEMD__CODE__OK);
	EXPECT(r && r->info->n_holders == 2);
	t_release(sm, a, 6, "mine", g ? g->permit_id : 0);
	expect_code(1, 6, SEMD__CODE__OK);
	expect_lost(2, SEMD__CODE__CANCELLED, "mine", 0);
	TEST_START("nobody but administrators manages an auto-created name");
	t_down(sm, a, 7, "auto", 1, -1, 0);
	grant_of(1, 7);
	t_delete(sm, a, 8, "auto", 1);
	expect_code(1, 8, SEMD__CODE__PERMISSION_DENIED);
	t_down(sm, b, 9, "auto", 1, -1, 0);
	t_create(sm, a, 9, "auto", 1, SEMD__MODE__OWNED, 1);	/* not taken over */
	expect_code(1, 9, SEMD__CODE__OK);
	t_delete(sm, a, 10, "auto", 1);
	expect_code(1, 10, SEMD__CODE__PERMISSION_DENIED);
	user.privs = SM_PRIV_ADMIN;
	t_delete(sm, adm, 2, "auto", 1);
	expect_code(3, 2, SEMD__CODE__OK);
	t_who = NULL;
	CHECK_SM(sm);
	sm_free(sm);
}

/* Per-principal caps: the one at its cap is refused, the others are not. */
static void test_principal_caps(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_caller cap = { 0, { 2, 3, 2, 2 } };
	struct sm_client *a, *a2, *a3, *b;
	Semd__Reply *r;

	t_who = &cap;
	TEST_START("sessions: the third session of uid:1 is refused, naming the cap");
	a = t_client(sm, 1, "uid:1", 60000);
	a2 = t_client(sm, 2, "uid:1", 60000);
	a3 = sm_client_open(sm, (uint64_t)3, (void *)3, "uid:1", secret_a, 0, now);
	t_hello(sm, a3, 1, 60000, 0, NULL);
	r = expect_code(3, 1, SEMD__CODE__RESOURCE_EXHAUSTED);
	EXPECT(r && strstr(r->message, "sessions") != NULL);
	sm_client_close(sm, a3, now);
	sm_client_close(sm, a2, now);	/* lingering sessions count too */
	a3 = sm_client_open(sm, (uint64_t)4, (void *)4, "uid:1", secret_a, 0, now);
	t_hello(sm, a3, 1, 0, 0, NULL);
	expect_code(4, 1, SEMD__CODE__RESOURCE_EXHAUSTED);
	sm_client_close(sm, a3, now);
	b = t_client(sm, 5, "uid:2", 0);
	TEST_START("permits: detached holds count");
	t_down(sm, a, 2, "p1", 1, 0, 86400000);
	grant_of(1, 2);
	t_down(sm, a, 3, "p2", 1, 0, 86400000);
	grant_of(1, 3);
	t_down(sm, a, 4, "p3", 1, 0, 0);
	grant_of(1, 4);
	t_down(sm, a, 5, "p4", 1, 0, 86400000);
	r = expect_code(1, 5, SEMD__CODE__RESOURCE_EXHAUSTED);
	EXPECT(r && strstr(r->message, "permits") != NULL);
	t_down(sm, b, 2, "p4", 1, 0, 0);
	grant_of(5, 2);
	TEST_START("waiters and names");
	t_down(sm, a, 6, "p4", 1, -1, 0);
	expect_code(1, 6, SEMD__CODE__RESOURCE_EXHAUSTED);	/* permits */
	cap.limit[SM_LIMIT_PERMITS] = 10;
	t_down(sm, a, 7, "p4", 1, -1, 0);
	t_down(sm, a, 8, "p4", 1, -1, 0);
	t_down(sm, a, 9, "p4", 1, -1, 0);
	r = expect_code(1, 9, SEMD__CODE__RESOURCE_EXHAUSTED);
	EXPECT(r && strstr(r->message, "waiters") != NULL);
	t_create(sm, a, 10, "n1", 1, SEMD__MODE__OWNED, 0);
	t_create(sm, a, 11, "n2", 1, SEMD__MODE__OWNED, 0);
	t_create(sm, a, 12, "n3", 1, SEMD__MODE__OWNED, 0);
	r = expect_code(1, 12, SEMD__CODE__RESOURCE_EXHAUSTED);
	EXPECT(r && strstr(r->message, "semaphores") != NULL);
	t_create(sm, b, 3, "n3", 1, SEMD__MODE__OWNED, 0);
	expect_code(5, 3, SEMD__CODE__OK);
	t_who = NULL;
	CHECK_SM(sm);
	sm_free(sm);
}

/* Bad names and counts are INVALID_ARGUMENT. */
static void test_invalid(void)
{
	static const char *bad[] = {
		"", "a\001b", "tab\there", "del\177", "\xc3\x28", "\xc0\xaf",
		"\xed\xa0\x80", "\xc2\x85", "\xf4\x90\x80\x80", "\xe2\x82",
		"\xff",
		/* bidi, zero-width and separator code points */
		"a\xe2\x80\xae" "b", "a\xe2\x80\x8b" "b", "a\xe2\x80\xa8" "b",
		"\xef\xbb\xbfname", "x\xe2\x81\xa6y", "soft\xc2\xadhyphen",
	};
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	char longname[300];
	size_t i;

	TEST_START("bad names and counts");
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		EXPECT(!sm_name_valid(bad[i], strlen(bad[i])) || i == 0);
		t_down(sm, a, 100 + i, bad[i], 1, 0, 0);
		expect_code(1, 100 + i, SEMD__CODE__INVALID_ARGUMENT);
	}
	EXPECT(sm_name_valid("jobs/\xc3\xa9t\xc3\xa9", 10));
	EXPECT(sm_name_valid("\xf0\x9f\x94\x92", 4));
	memset(longname, 'x', sizeof longname);
	longname[255] = 0;
	t_down(sm, a, 2, longname, 1, 0, 0);
	grant_of(1, 2);
	longname[255] = 'x';
	longname[256] = 0;
	t_down(sm, a, 3, longname, 1, 0, 0);
	expect_code(1, 3, SEMD__CODE__INVALID_ARGUMENT);
	t_create(sm, a, 4, "c", 0, SEMD__MODE__OWNED, 0);
	expect_code(1, 4, SEMD__CODE__INVALID_ARGUMENT);
	t_create(sm, a, 5, "c", 1, 7, 0);
	expect_code(1, 5, SEMD__CODE__INVALID_ARGUMENT);
	t_down(sm, a, 6, "c2", 2, 0, 0);	/* default limit 1 */
	expect_code(1, 6, SEMD__CODE__INVALID_ARGUMENT);
	t_down(sm, a, 7, "c3", 0xffffffffu, -1, 0);
	expect_code(1, 7, SEMD__CODE__INVALID_ARGUMENT);
	CHECK_SM(sm);
	sm_free(sm);
}

/*
 * Every byte value at every place of a 24-byte name (the rest 'a'): the
 * name is valid exactly when that byte is printable ASCII (a lone byte
 * of 0x80 or more is not UTF-8). Covers the eight-bytes-at-once check.
 */
static void test_name_bytes(void)
{
	char name[24];
	size_t pos;
	int b, want;

	TEST_START("each byte value at each place of a name");
	for (pos = 0; pos < sizeof name; pos++) {
		for (b = 0; b < 256; b++) {
			memset(name, 'a', sizeof name);
			name[pos] = (char)b;
			want = b >= 0x20 && b < 0x7f;
			if ((int)sm_name_valid(name, sizeof name) != want) {
				failures++;
				printf("not ok - name byte 0x%02x at %zu: valid %d, want %d\n",
				    b, pos, !want, want);
			}
		}
	}
	/* A valid two-byte sequence across an eight-byte boundary. */
	memset(name, 'a', sizeof name);
	name[7] = '\xc3';
	name[8] = '\xa9';
	EXPECT(sm_name_valid(name, sizeof name));
	name[8] = 'a';
	EXPECT(!sm_name_valid(name, sizeof name));
}

/* Signal mode: anyone ups, bounded by the limit. */
static void test_signal(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:2", 0);
	Semd__Reply *r;

	TEST_START("signal mode");
	t_create(sm, a, 2, "sig", 2, SEMD__MODE__SIGNAL, 0);
	expect_code(1, 2, 0);
	t_up(sm, b, 3, "sig", 1, 0);
	expect_code(2, 3, SEMD__CODE__RESOURCE_EXHAUSTED);	/* full */
	t_down(sm, a, 4, "sig", 2, 0, 0);
	grant_of(1, 4);
	t_down(sm, a, 5, "sig", 1, -1, 0);
	EXPECT(none(1, 5));
	sm_client_close(sm, a, now);	/* consumption: nothing comes back */
	a = t_client(sm, 3, "uid:1", 0);
	r = t_info(sm, a, 3, 6, "sig", SEMD__CODE__OK);
	EXPECT(r && r->info->available == 0 && r->info->n_holders == 0);
	t_down(sm, a, 7, "sig", 1, -1, 0);
	t_up(sm, b, 8, "sig", 2, 0);	/* one to the waiter, one free */
	expect_code(2, 8, 0);
	grant_of(3, 7);
	t_up(sm, b, 9, "sig", 2, 0);
	expect_code(2, 9, SEMD__CODE__RESOURCE_EXHAUSTED);
	CHECK_SM(sm);
	sm_free(sm);
}

/* Tokens grow per semaphore, across re-creation and restarts. */
static void test_tokens(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	Semd__Grant *g;
	uint64_t last = 0;
	int i;

	TEST_START("fencing tokens only grow");
	for (i = 0; i < 20; i++) {
		t_down(sm, a, 10 + i, "tok", 1, 0, 0);	/* auto, freed each time */
		g = grant_of(1, 10 + i);
		if (g == NULL)
			break;
		EXPECT(g->token > last);
		EXPECT(g->token > 1700000000000ULL * 1000);
		last = g->token;
		t_up(sm, a, 100 + i, "tok", 1, 0);
		expect_code(1, 100 + i, 0);
	}
	sm_free(sm);
	/* a "restart" a millisecond later starts above */
	sm = t_new(1700000000001ULL, NULL);
	a = t_client(sm, 1, "uid:1", 0);
	t_down(sm, a, 2, "tok", 1, 0, 0);
	g = grant_of(1, 2);
	EXPECT(g && g->token > last);
	sm_free(sm);
}

/* Shutdown answers every waiter UNAVAILABLE. */
static void test_shutdown(void)
{
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:1", 0);

	TEST_START("shutdown");
	t_down(sm, a, 2, "x", 1, -1, 0);
	grant_of(1, 2);
	t_down(sm, b, 2, "x", 1, -1, 0);
	t_down(sm, b, 3, "x", 1, 5000, 0);
	sm_shutdown(sm, now);
	expect_code(2, 2, SEMD__CODE__UNAVAILABLE);
	expect_code(2, 3, SEMD__CODE__UNAVAILABLE);
	t_down(sm, b, 4, "x", 1, -1, 0);
	expect_code(2, 4, SEMD__CODE__UNAVAILABLE);
	CHECK_SM(sm);
	sm_free(sm);
}

/* --- List paging against a model ----------------------------------------- */

#define L_PREFIXES 6
#define L_PER 40
#define L_NAMES (L_PREFIXES * L_PER + 3)

static char l_names[L_NAMES][16];	/* sorted by strcmp() */
static int l_state[L_NAMES];		/* 0 absent, 1 created, 2 auto-created, held */
static uint64_t l_rng = 0x9e3779b97f4a7c15ULL;

/* xorshift64 for the list tests (apart from test_random's sequence). */
static uint64_t l_rand(void)
{
	l_rng ^= l_rng << 13;
	l_rng ^= l_rng >> 7;
	l_rng ^= l_rng << 17;
	return l_rng;
}

/* qsort order of the model's names. */
static int l_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* List; returns the reply (or NULL). */
static Semd__Reply *t_list(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *prefix, const char *after, uint32_t max)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__List l = SEMD__LIST__INIT;
	Semd__Reply *r;

	l.prefix = (char *)prefix;
	l.after = (char *)after;
	l.max = max;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_LIST;
	req.list = &l;
	t_req(sm, c, &req);
	r = expect_code(k, id, SEMD__CODE__OK);
	if (r != NULL && r->body_case != SEMD__REPLY__BODY_LIST) {
		FAIL("reply %" PRIu64 " is not a list", id);
		return NULL;
	}
	return r;
}

/*
 * One page against the model: the first max names with the prefix after the
 * cursor, and next set (to the last one) only when more follow. Returns 0,
 * or -1 after a failure.
 */
static int l_check_page(const Semd__Reply *r, const char *prefix,
    const char *after, uint32_t max)
{
	size_t plen = strlen(prefix), n = 0, want = max ? max : 100;
	int j, more = 0;

	for (j = 0; j < L_NAMES; j++) {
		if (l_state[j] == 0 || strncmp(l_names[j], prefix, plen) != 0 ||
		    strcmp(l_names[j], after) <= 0)
			continue;
		if (n == want) {
			more = 1;
			break;
		}
		if (n >= r->list->n_entries ||
		    strcmp(r->list->entries[n]->name, l_names[j]) != 0) {
			FAIL("list prefix '%s' after '%s' max %u: entry %zu is "
			    "'%s', want '%s'", prefix, after, max, n,
			    n < r->list->n_entries ? r->list->entries[n]->name :
			    "(none)", l_names[j]);
			return -1;
		}
		if (r->list->entries[n]->holders != (l_state[j] == 2 ? 1u : 0u)) {
			FAIL("%s: holders %u", l_names[j],
			    r->list->entries[n]->holders);
			return -1;
		}
		n++;
	}
	if (n != r->list->n_entries) {
		FAIL("list prefix '%s' after '%s' max %u: %zu entries, want %zu",
		    prefix, after, max, r->list->n_entries, n);
		return -1;
	}
	if (more ? strcmp(r->list->next, r->list->entries[n - 1]->name) != 0 :
	    r->list->next[0] != '\0') {
		FAIL("list prefix '%s' after '%s' max %u: next '%s' (more: %d)",
		    prefix, after, max, r->list->next, more);
		return -1;
	}
	return 0;
}

/* Create, auto-create (a held down), free (up) or delete a random name. */
static void l_mutate(struct sm *sm, struct sm_client *a, uint64_t id)
{
	int j = (int)(l_rand() % L_NAMES);

	switch (l_rand() % 4) {
	case 0:
		t_create(sm, a, id, l_names[j], 1 + (uint32_t)(l_rand() % 3),
		    SEMD__MODE__OWNED, 0);
		expect_code(1, id, l_state[j] ? SEMD__CODE__EXISTS : SEMD__CODE__OK);
		if (l_state[j] == 0)
			l_state[j] = 1;
		break;
	case 1:
		if (l_state[j] != 0)
			break;
		t_down(sm, a, id, l_names[j], 1, 0, 0);
		if (grant_of(1, id) != NULL)
			l_state[j] = 2;
		break;
	case 2:
		if (l_state[j] != 2)
			break;
		t_up(sm, a, id, l_names[j], 1, 0);
		expect_code(1, id, SEMD__CODE__OK);
		l_state[j] = 0;		/* an idle auto-created name goes */
		break;
	default:
		if (l_state[j] == 2)
			break;
		t_delete(sm, a, id, l_names[j], 0);
		expect_code(1, id, l_state[j] ? SEMD__CODE__OK :
		    SEMD__CODE__NOT_FOUND);
		l_state[j] = 0;
		break;
	}
}

/*
 * Walks through List pages (random prefix, cursor, page size) while names
 * are created, auto-created, freed and deleted between the pages; every
 * page is checked against a sorted model and sm_check() after each step.
 */
static void test_list_paging(void)
{
	static const char *const parts[L_PREFIXES] = {
		"a/", "a/b/", "ab", "b/", "\xc3\xa9/", "z"
	};
	static const char *const prefixes[] = {
		"", "a", "a/", "a/b/", "a/1", "ab", "b", "\xc3", "\xc3\xa9/",
		"z", "zz", "~"
	};
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	const char *prefix;
	char after[64], err[256];
	uint64_t id = 10;
	uint32_t max;
	int i, j, walk, page, pages = 0, failed = failures;
	Semd__Reply *r;

	TEST_START("list paging across creates, auto-creates and deletes");
	for (i = 0, j = 0; i < L_PREFIXES; i++)
		for (int k = 0; k < L_PER; k++)
			snprintf(l_names[j++], sizeof l_names[0], "%s%d", parts[i], k);
	snprintf(l_names[j++], sizeof l_names[0], "a");
	snprintf(l_names[j++], sizeof l_names[0], "a/");
	snprintf(l_names[j++], sizeof l_names[0], "\xc3\xa9");
	qsort(l_names, L_NAMES, sizeof l_names[0], l_cmp);
	memset(l_state, 0, sizeof l_state);
	for (i = 0; i < 150; i++)
		l_mutate(sm, a, id++);
	for (walk = 0; walk < 400 && failures == failed; walk++) {
		prefix = prefixes[l_rand() % (sizeof prefixes / sizeof prefixes[0])];
		max = (uint32_t)(l_rand() % 8);		/* 0: the default */
		if (l_rand() % 3 == 0)
			snprintf(after, sizeof after, "%s%s",
			    l_names[l_rand() % L_NAMES], l_rand() % 2 ? "x" : "");
		else
			after[0] = '\0';
		for (page = 0; page < 300 && failures == failed; page++) {
			r = t_list(sm, a, 1, id, prefix, after, max);
			id++;
			pages++;
			if (r == NULL || l_check_page(r, prefix, after, max) != 0)
				break;
			for (i = (int)(l_rand() % 4); i > 0; i--)
				l_mutate(sm, a, id++);
			if (sm_check(sm, err, sizeof err) != 0)
				FAIL("walk %d page %d: %s", walk, page, err);
			if (r->list->next[0] == '\0')
				break;
			snprintf(after, sizeof after, "%s", r->list->next);
		}
		if (ncaps > MAX_CAPS - 400)
			caps_clear();
	}
	printf("# %d walks, %d pages\n", walk, pages);
	CHECK_SM(sm);
	sm_free(sm);
}

static void tune_many(struct sm_config *cfg)
{
	cfg->max_semaphores = 20000;
}

/*
 * 5,000 names in full pages of 1,000: next is set on the first four pages
 * and empty on the fifth (exactly full, nothing follows); then half are
 * deleted and the walk sees the other half, in order.
 */
static void test_list_full_pages(void)
{
	struct sm *sm = t_new(1700000000000ULL, tune_many);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	char name[32], after[32] = "";
	uint64_t id = 10;
	size_t seen;
	int i, page;
	Semd__Reply *r;

	TEST_START("list: full pages of 1000 at 5000 names");
	/* Created out of order: 7 is prime to 5000. */
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "m/%05d", (i * 7) % 5000);
		t_create(sm, a, id, name, 1, SEMD__MODE__OWNED, 0);
		expect_code(1, id, SEMD__CODE__OK);
		id++;
		if (ncaps > MAX_CAPS - 100)
			caps_clear();
	}
	t_create(sm, a, id, "n", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, id++, SEMD__CODE__OK);
	caps_clear();
	for (page = 0; page < 5; page++) {
		r = t_list(sm, a, 1, id++, "m/", after, 5000);	/* capped */
		if (r == NULL)
			break;
		EXPECT_U64(SM_LIST_MAX, r->list->n_entries);
		for (i = 0; i < (int)r->list->n_entries; i++) {
			snprintf(name, sizeof name, "m/%05d", page * 1000 + i);
			if (strcmp(r->list->entries[i]->name, name) != 0) {
				FAIL("page %d entry %d: %s, want %s", page, i,
				    r->list->entries[i]->name, name);
				break;
			}
		}
		if (page < 4)
			EXPECT(strcmp(r->list->next, name) == 0);
		else
			EXPECT(strcmp(r->list->next, "") == 0);
		snprintf(after, sizeof after, "%s", r->list->next);
	}
	for (i = 0; i < 5000; i += 2) {
		snprintf(name, sizeof name, "m/%05d", i);
		t_delete(sm, a, id, name, 0);
		expect_code(1, id++, SEMD__CODE__OK);
		if (ncaps > MAX_CAPS - 100)
			caps_clear();
	}
	CHECK_SM(sm);
	seen = 0;
	after[0] = '\0';
	for (page = 0; page < 40; page++) {
		r = t_list(sm, a, 1, id++, "m/", after, 0);	/* 100 a page */
		if (r == NULL)
			break;
		for (i = 0; i < (int)r->list->n_entries; i++) {
			snprintf(name, sizeof name, "m/%05zu", 2 * seen + 1);
			EXPECT(strcmp(r->list->entries[i]->name, name) == 0);
			seen++;
		}
		if (r->list->next[0] == '\0')
			break;
		snprintf(after, sizeof after, "%s", r->list->next);
	}
	EXPECT_U64(2500, seen);
	EXPECT_U64(24, page);
	CHECK_SM(sm);
	sm_free(sm);
}

/* --- randomized model check -------------------------------------------- */

#define R_SESS 8
#define R_NAMES 4
#define R_STEPS 20000
#define R_QMAX 256

struct r_pending {
	int		sess;
	uint64_t	id;
};

static const char *r_names[R_NAMES] = { "ra", "rb", "rc", "rd" };
static struct r_pending r_queue[R_NAMES][R_QMAX];
static int r_qlen[R_NAMES];
static uint64_t r_last_token[R_NAMES];
static uint64_t r_last_permit;
static uint64_t rng = 88172645463325252ULL;

/* xorshift64: deterministic. */
static uint64_t r_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Drop (sess, id) from the model queues. */
static void r_unqueue(int sess, uint64_t id)
{
	int q, i;

	for (q = 0; q < R_NAMES; q++) {
		for (i = 0; i < r_qlen[q]; i++) {
			if (r_queue[q][i].sess != sess || r_queue[q][i].id != id)
				continue;
			memmove(&r_queue[q][i], &r_queue[q][i + 1],
			    (size_t)(r_qlen[q] - i - 1) * sizeof r_queue[q][0]);
			r_qlen[q]--;
			return;
		}
	}
}

/*
 * Check the replies from index from on against the model: every grant has a
 * new permit id and a larger token; an immediate grant (the down just sent,
 * down_id) finds nobody queued; any other grant goes to the head of the
 * name's queue.
 */
static void r_consume(int from, int down_sess, uint64_t down_id)
{
	Semd__Reply *r;
	int i, q, sess;

	for (i = from; i < ncaps; i++) {
		r = caps[i].r;
		caps[i].used = 1;
		sess = (int)caps[i].conn - 1;
		if (r->code != SEMD__CODE__OK) {
			if (r->id != 0)
				r_unqueue(sess, r->id);
			continue;
		}
		if (r->body_case != SEMD__REPLY__BODY_GRANT)
			continue;
		q = (int)(r->id % R_NAMES);
		if (r->grant->permit_id <= r_last_permit)
			FAIL("permit %" PRIu64 " after %" PRIu64 ": granted twice?",
			    r->grant->permit_id, r_last_permit);
		r_last_permit = r->grant->permit_id;
		if (r->grant->token <= r_last_token[q])
			FAIL("token of %s went from %" PRIu64 " to %" PRIu64,
			    r_names[q], r_last_token[q], r->grant->token);
		r_last_token[q] = r->grant->token;
		if (sess == down_sess && r->id == down_id) {
			if (r_qlen[q] != 0)
				FAIL("immediate grant on %s with %d queued (barging)",
				    r_names[q], r_qlen[q]);
			continue;
		}
		if (r_qlen[q] == 0 || r_queue[q][0].id != r->id ||
		    r_queue[q][0].sess != sess)
			FAIL("grant of %s to %d/%" PRIu64 " is not the queue head (%d/%" PRIu64 " of %d)",
			    r_names[q], sess, r->id, r_qlen[q] ? r_queue[q][0].sess : -1,
			    r_qlen[q] ? r_queue[q][0].id : 0, r_qlen[q]);
		else
			r_unqueue(sess, r->id);
	}
}

static void tune_random(struct sm_config *cfg)
{
	cfg->default_limit = 3;
}

/* Random operations across sessions; invariants after every step. */
static void test_random(void)
{
	struct sm *sm = t_new(1700000000000ULL, tune_random);
	struct sm_client *c[R_SESS];
	struct sm_counters k;
	uint64_t next_id[R_SESS], id;
	struct r_pending p;
	uint32_t n, lease;
	int64_t t;
	int i, j, step, s, q, from, op, failed = failures;
	char err[256];

	TEST_START("randomized invariants (20000 steps)");
	for (i = 0; i < R_SESS; i++) {
		c[i] = t_client(sm, (uintptr_t)i + 1, i % 2 ? "uid:1" : "uid:2", 0);
		next_id[i] = 8;
	}
	caps_clear();
	for (step = 0; step < R_STEPS && failures == failed; step++) {
		s = (int)(r_rand() % R_SESS);
		q = (int)(r_rand() % R_NAMES);
		from = ncaps;
		op = (int)(r_rand() % 10);
		if (getenv("T_TRACE"))
			printf("# step %d: op %d sess %d name %s\n", step, op, s, r_names[q]);
		switch (op) {
		case 0: case 1: case 2: case 3:
			t = (int64_t)(r_rand() % 4) - 1;	/* -1, 0, 50, 100 */
			t = t > 0 ? t * 50 : t;
			id = next_id[s]++ * R_NAMES + (uint64_t)q;
			n = 1 + (uint32_t)(r_rand() % 2);
			lease = r_rand() % 8 == 0 ? 200 : 0;
			t_down(sm, c[s], id, r_names[q], n, t, lease);
			if (ncaps == from) {
				if (r_qlen[q] == R_QMAX) {
					FAIL("model queue full");
					break;
				}
				r_queue[q][r_qlen[q]].sess = s;
				r_queue[q][r_qlen[q]++].id = id;
			}
			r_consume(from, s, id);
			break;
		case 4: case 5:
			t_up(sm, c[s], 1, r_names[q], 1, 0);
			r_consume(from, -1, 0);
			break;
		case 6:
			now += r_rand() % 120;
			sm_tick(sm, now);
			r_consume(from, -1, 0);
			break;
		case 7:
			if (r_rand() % 4 != 0)
				break;
			/* its waiters leave the queues before anyone is granted */
			for (i = 0; i < R_NAMES; i++)
				for (j = r_qlen[i] - 1; j >= 0; j--)
					if (r_queue[i][j].sess == s)
						r_unqueue(s, r_queue[i][j].id);
			sm_client_close(sm, c[s], now);
			c[s] = sm_client_open(sm, (uint64_t)s + 1, (void *)((uintptr_t)s + 1),
			    s % 2 ? "uid:1" : "uid:2", secret_a, 0, now);
			t_hello(sm, c[s], 1, 0, 0, NULL);
			r_consume(from, -1, 0);
			break;
		case 8:
			if (r_qlen[q] == 0)
				break;
			p = r_queue[q][r_rand() % (uint64_t)r_qlen[q]];
			t_cancel(sm, c[p.sess], 2, p.id);
			r_consume(from, -1, 0);
			break;
		case 9:
			if (r_rand() % 4 != 0)
				break;
			t_create(sm, c[s], 3, r_names[q], 3, SEMD__MODE__OWNED, 1);
			t_set_limit(sm, c[s], 4, r_names[q],
			    1 + (uint32_t)(r_rand() % 4));
			r_consume(from, -1, 0);
			break;
		}
		if (sm_check(sm, err, sizeof err) != 0)
			FAIL("step %d: %s", step, err);
		if (ncaps > MAX_CAPS - 100)
			caps_clear();
	}
	for (i = 0; i < R_SESS; i++)
		sm_client_close(sm, c[i], now);
	CHECK_SM(sm);
	sm_get_counters(sm, &k);
	EXPECT_U64(0, k.waiters);
	EXPECT_U64(0, k.clients);
	EXPECT(k.grants > 1000);
	EXPECT(k.timeouts > 100);
	printf("# %" PRIu64 " grants, %" PRIu64 " timeouts, %" PRIu64
	    " cancels, %" PRIu64 " disconnect cancels, %" PRIu64 " lease expiries\n",
	    k.grants, k.timeouts, k.cancels, k.cancels_disconnect,
	    k.leases_expired);
	sm_free(sm);
}

/* --- List with a visibility hook ----------------------------------------- */

/*
 * The test hook: conn 1 sees everything; for conn 2, names beginning "h/"
 * are hidden as one subtree (skip_len 2), names beginning "x" one by one,
 * names beginning "q" report a skip_len longer than the name (ignored: one
 * by one), and names beginning "s" are hidden under their first byte
 * (skip_len 1). Counts the calls.
 */
struct vis {
	unsigned long	calls;
	unsigned long	bad_conn;
};

static bool vis_hook(void *arg, void *conn, const char *name, size_t len,
    size_t *skip_len)
{
	struct vis *v = arg;

	v->calls++;
	if (*skip_len != 0 || strlen(name) != len)
		v->bad_conn++;
	if ((uintptr_t)conn == 1)
		return true;
	if ((uintptr_t)conn != 2)
		v->bad_conn++;
	if (len >= 2 && memcmp(name, "h/", 2) == 0) {
		*skip_len = 2;
		return false;
	}
	if (name[0] == 's') {
		*skip_len = 1;
		return false;
	}
	if (name[0] == 'q') {
		*skip_len = len + 1;
		return false;
	}
	return name[0] != 'x';
}

/* Is name visible to conn 2 under vis_hook? */
static bool vis_shown(const char *name)
{
	return strncmp(name, "h/", 2) != 0 && name[0] != 'x' &&
	    name[0] != 'q' && name[0] != 's';
}

/* A list reply of exactly one entry, name, with next as given. */
static void expect_list1(int line, const Semd__Reply *r, const char *name,
    const char *next)
{
	if (r == NULL)
		return;
	if (r->list->n_entries != 1 ||
	    strcmp(r->list->entries[0]->name, name) != 0 ||
	    strcmp(r->list->next, next) != 0)
		FAIL("line %d: want [%s] next '%s', got %zu entries (%s) next '%s'",
		    line, name, next, r->list->n_entries,
		    r->list->n_entries > 0 ? r->list->entries[0]->name : "",
		    r->list->next);
}
#define EXPECT_LIST1(r, name, next) expect_list1(__LINE__, r, name, next)

/* Send List and return the reply, whatever its code. */
static Semd__Reply *t_list_any(struct sm *sm, struct sm_client *c,
    uintptr_t k, uint64_t id, const char *prefix, const char *after,
    uint32_t max)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__List l = SEMD__LIST__INIT;
	Semd__Reply *r;

	l.prefix = (char *)prefix;
	l.after = (char *)after;
	l.max = max;
	req.id = id;
	req.op_case = SEMD__REQUEST__OP_LIST;
	req.list = &l;
	t_req(sm, c, &req);
	if ((r = take(k, id)) == NULL)
		FAIL("no reply to list %" PRIu64, id);
	return r;
}

/*
 * Hidden runs (a subtree, one by one, a bogus skip_len) between visible
 * ones: the restricted conn gets exactly the visible names, in order, in
 * pages of every size, with next always the last name listed; the subtree
 * costs one hook call; another conn sees everything; without the hook,
 * everything again.
 */
static void test_list_visible(void)
{
	static const char *const groups[] = { "a", "h/", "m", "q", "s", "x", "z" };
	static const char *const prefixes[] = { "", "h", "h/", "m", "q", "x", "z", "s" };
	struct sm *sm = t_new(1700000000000ULL, NULL);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:2", 0);
	struct vis v = { 0, 0 };
	char name[32], after[32], want[64][32], got[64][32];
	size_t nwant = 0, ngot, g, p, k, total = 0;
	uint64_t id = 10;
	uint32_t max;
	int i, page;
	Semd__Reply *r;

	TEST_START("list with a visibility hook: hidden runs, paging, skip_len");
	for (g = 0; g < sizeof groups / sizeof groups[0]; g++) {
		for (i = 0; i < 12; i++) {
			snprintf(name, sizeof name, "%s%02d", groups[g], i);
			t_create(sm, a, id, name, 1, SEMD__MODE__OWNED, 0);
			expect_code(1, id++, SEMD__CODE__OK);
			total++;
			if (vis_shown(name))
				snprintf(want[nwant++], sizeof want[0], "%s", name);
		}
	}
	caps_clear();
	sm_set_visible(sm, vis_hook, &v);
	/* One page: the "h/" subtree and the "s" run cost one call each. */
	r = t_list(sm, b, 2, id++, "", "", 0);
	if (r != NULL) {
		EXPECT_U64(nwant, r->list->n_entries);
		for (k = 0; k < r->list->n_entries && k < nwant; k++)
			EXPECT(strcmp(r->list->entries[k]->name, want[k]) == 0);
		EXPECT(strcmp(r->list->next, "") == 0);
	}
	/* a, m, z visible (36), q and x one by one (24), h/ and s once each */
	EXPECT_U64(36 + 24 + 2, v.calls);
	EXPECT_U64(0, v.bad_conn);
	/* Pages of 1..7: exactly the visible names, next = last entry. */
	for (max = 1; max <= 7; max++) {
		ngot = 0;
		after[0] = '\0';
		for (page = 0; page < 100; page++) {
			r = t_list(sm, b, 2, id++, "", after, max);
			if (r == NULL)
				break;
			for (k = 0; k < r->list->n_entries && ngot < 64; k++)
				snprintf(got[ngot++], sizeof got[0], "%s",
				    r->list->entries[k]->name);
			if (r->list->next[0] != '\0' && (r->list->n_entries == 0 ||
			    strcmp(r->list->next, r->list->entries[
			    r->list->n_entries - 1]->name) != 0 ||
			    !vis_shown(r->list->next)))
				FAIL("max %u: next '%s' is not the last entry",
				    max, r->list->next);
			if (r->list->next[0] == '\0')
				break;
			snprintf(after, sizeof after, "%s", r->list->next);
		}
		EXPECT_U64(nwant, ngot);
		for (k = 0; k < ngot && k < nwant; k++) {
			if (strcmp(got[k], want[k]) != 0) {
				FAIL("max %u: entry %zu is %s, want %s", max, k,
				    got[k], want[k]);
				break;
			}
		}
		caps_clear();
	}
	/* Prefixes and cursors inside hidden runs. */
	for (p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
		r = t_list(sm, b, 2, id++, prefixes[p], "", 0);
		if (r == NULL)
			continue;
		for (k = 0, i = 0; k < nwant; k++)
			i += strncmp(want[k], prefixes[p], strlen(prefixes[p])) == 0;
		EXPECT_U64((size_t)i, r->list->n_entries);
		for (k = 0; k < r->list->n_entries; k++)
			EXPECT(vis_shown(r->list->entries[k]->name));
	}
	r = t_list(sm, b, 2, id++, "", "h/05", 1);
	EXPECT_LIST1(r, "m00", "m00");
	r = t_list(sm, b, 2, id++, "", "m11", 1);
	EXPECT_LIST1(r, "z00", "z00");
	/* The unrestricted conn sees every name. */
	r = t_list(sm, a, 1, id++, "", "", 1000);
	if (r != NULL)
		EXPECT_U64(total, r->list->n_entries);
	/* No hook: every name again, and no call. */
	sm_set_visible(sm, NULL, NULL);
	v.calls = 0;
	r = t_list(sm, b, 2, id++, "", "", 1000);
	if (r != NULL)
		EXPECT_U64(total, r->list->n_entries);
	EXPECT_U64(0, v.calls);
	CHECK_SM(sm);
	caps_clear();
	sm_free(sm);
}

/*
 * More than SM_LIST_HIDDEN_MAX names hidden one by one: a page with entries
 * ends at its last one (next set); a page with none is RESOURCE_EXHAUSTED
 * and names no hidden name; exactly SM_LIST_HIDDEN_MAX is still fine; the
 * same names hidden as a subtree cost one call.
 */
static void tune_hidden(struct sm_config *cfg)
{
	cfg->max_semaphores = 2 * SM_LIST_HIDDEN_MAX + 100;
}

static void test_list_hidden_cap(void)
{
	struct sm *sm = t_new(1700000000000ULL, tune_hidden);
	struct sm_client *a = t_client(sm, 1, "uid:1", 0);
	struct sm_client *b = t_client(sm, 2, "uid:2", 0);
	struct vis v = { 0, 0 };
	char name[32];
	uint64_t id = 10;
	int i;
	Semd__Reply *r;

	TEST_START("list with a visibility hook: the cap on hidden names");
	for (i = 0; i < SM_LIST_HIDDEN_MAX + 5; i++) {
		snprintf(name, sizeof name, "x%05d", i);
		t_create(sm, a, id, name, 1, SEMD__MODE__OWNED, 0);
		expect_code(1, id++, SEMD__CODE__OK);
		snprintf(name, sizeof name, "s%05d", i);
		t_create(sm, a, id, name, 1, SEMD__MODE__OWNED, 0);
		expect_code(1, id++, SEMD__CODE__OK);
		if (ncaps > MAX_CAPS - 100)
			caps_clear();
	}
	t_create(sm, a, id, "a", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, id++, SEMD__CODE__OK);
	t_create(sm, a, id, "zz", 1, SEMD__MODE__OWNED, 0);
	expect_code(1, id++, SEMD__CODE__OK);
	caps_clear();
	sm_set_visible(sm, vis_hook, &v);
	/* "a", then the s subtree (one call), then too many x: end at "a" */
	r = t_list(sm, b, 2, id++, "", "", 10);
	EXPECT_LIST1(r, "a", "a");
	EXPECT_U64(1 + 1 + SM_LIST_HIDDEN_MAX, v.calls);
	/* the same with a full page (max 1) */
	r = t_list(sm, b, 2, id++, "", "", 1);
	EXPECT_LIST1(r, "a", "a");
	/* from there on nothing visible within the cap */
	r = t_list_any(sm, b, 2, id++, "", "a", 10);
	if (r != NULL) {
		EXPECT_U64(SEMD__CODE__RESOURCE_EXHAUSTED, r->code);
		EXPECT(r->message != NULL && strstr(r->message,
		    "names you may not inspect under this prefix; list a "
		    "narrower prefix") != NULL);
		EXPECT(r->message != NULL && strstr(r->message, "x0") == NULL);
		EXPECT(r->body_case != SEMD__REPLY__BODY_LIST);
	}
	r = t_list_any(sm, b, 2, id++, "x", "", 0);
	if (r != NULL)
		EXPECT_U64(SEMD__CODE__RESOURCE_EXHAUSTED, r->code);
	/* exactly SM_LIST_HIDDEN_MAX under "x0": an empty page, no next */
	r = t_list(sm, b, 2, id++, "x0", "", 0);
	if (r != NULL) {
		EXPECT_U64(0, r->list->n_entries);
		EXPECT(strcmp(r->list->next, "") == 0);
	}
	/* a narrower prefix past them, and the s subtree is one call */
	r = t_list(sm, b, 2, id++, "zz", "", 0);
	EXPECT_LIST1(r, "zz", "");
	v.calls = 0;
	r = t_list(sm, b, 2, id++, "s", "", 0);
	if (r != NULL)
		EXPECT_U64(0, r->list->n_entries);
	EXPECT_U64(1, v.calls);
	EXPECT_U64(0, v.bad_conn);
	CHECK_SM(sm);
	caps_clear();
	sm_free(sm);
}

int main(void)
{
	test_hello();
	test_ops();
	test_fifo();
	test_npermits();
	test_deadline();
	test_disconnect();
	test_lease();
	test_detached();
	test_idempotent();
	test_set_limit();
	test_issue_set_limit_shrink_overgrant();
	test_delete();
	test_autocreate();
	test_name_cache();
	test_limits();
	test_invalid();
	test_name_bytes();
	test_info_cap();
	test_lost_push();
	test_lease_silence();
	test_local_death();
	test_resume_place();
	test_create_options();
	test_ownership();
	test_principal_caps();
	test_signal();
	test_tokens();
	test_shutdown();
	test_list_paging();
	test_list_full_pages();
	test_list_visible();
	test_list_hidden_cap();
	test_random();
	caps_clear();
	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("all state tests passed\n");
	return 0;
}
