/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state.c - the semaphore table and sessions, driven
 * directly: fake time, replies captured through the sink (packed and
 * unpacked again, so they are real wire messages).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/state.h"
#include "tests/common/check.h"
#include "tests/common/req.h"

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

/* Check the invariants after every request (the tests of issue 15). */
static bool t_check_each;

/* Send one request. */
static int t_req(struct sm *sm, struct sm_client *c, Semd__Request *req)
{
	int r = sm_request(sm, c, req, t_who, now);

	if (t_check_each)
		CHECK_SM(sm);
	return r;
}

/* Send request id of op with the fields fmt names (tests/common/req.h). */
__attribute__((format(printf, 5, 6)))
static int t_op(struct sm *sm, struct sm_client *c, uint64_t id, int op,
    const char *fmt, ...)
{
	struct req q;
	va_list ap;

	req_op(&q, id, op);
	va_start(ap, fmt);
	req_vset(&q, fmt, ap);
	va_end(ap);
	return t_req(sm, c, &q.r);
}

/* Send q again as request id (its fields changed since, or not). */
static void t_again(struct sm *sm, struct sm_client *c, struct req *q,
    uint64_t id)
{
	q->r.id = id;
	t_req(sm, c, &q->r);
}

/* Hello with a lease and optional resume. */
static int t_hello(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t lease, uint64_t resume, const uint8_t *secret)
{
	return t_op(sm, c, id, SEMD__REQUEST__OP_HELLO,
	    "version=%d client_name=%s host=%s pid=%d lease_ms=%u resume_session=%" PRIu64
	    " resume_secret=%.*s", 1, "test", "localhost", 42, lease, resume,
	    secret != NULL ? SM_SECRET_LEN : 0,
	    secret != NULL ? (const char *)secret : "");
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
	t_op(sm, c, id, SEMD__REQUEST__OP_DOWN, "name=%s n=%u timeout_ms=%" PRId64
	    " lease_ms=%u", name, n, timeout, lease);
}

/* Up by n or by permit id. */
static void t_up(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t n, uint64_t permit)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_UP, "name=%s n=%u permit_id=%" PRIu64,
	    name, n, permit);
}

/* Create. */
static void t_create(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit, int mode, int ine)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_CREATE,
	    "name=%s limit=%u mode=%d if_not_exists=%d", name, limit, mode, ine);
}

/* Info; returns the reply (or NULL). */
static Semd__Reply *t_info(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *name, int code)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_INFO, "name=%s", name);
	return expect_code(k, id, code);
}

/* SetLimit. */
static void t_set_limit(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_SET_LIMIT, "name=%s limit=%u", name, limit);
}

/* Delete. */
static void t_delete(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, int force)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_DELETE, "name=%s force=%d", name, force);
}

/* Cancel. */
static void t_cancel(struct sm *sm, struct sm_client *c, uint64_t id,
    uint64_t which)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_CANCEL, "request_id=%" PRIu64, which);
}

/* Validate; returns validity, -1 on an error reply. */
static int t_validate(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *name, uint64_t token)
{
	Semd__Reply *r;

	t_op(sm, c, id, SEMD__REQUEST__OP_VALIDATE, "name=%s token=%" PRIu64,
	    name, token);
	r = expect_code(k, id, SEMD__CODE__OK);
	if (r == NULL || r->body_case != SEMD__REPLY__BODY_VALIDATE)
		return -1;
	return r->validate->valid;
}

/* Value of a stats counter. */
static uint64_t t_stat(struct sm *sm, struct sm_client *c, uintptr_t k,
    const char *name)
{
	struct req q;
	Semd__Reply *r;
	size_t i;

	t_req(sm, c, req_op(&q, 999999, SEMD__REQUEST__OP_STATS));
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

/* A down on conn k that waits forever, granted at once: its Grant, checked. */
static Semd__Grant *t_held_(int line, struct sm *sm, struct sm_client *c,
    uintptr_t k, uint64_t id, const char *name, uint32_t n)
{
	t_down(sm, c, id, name, n, -1, 0);
	return grant_of_(line, k, id);
}
#define t_held(sm, c, k, id, name, n) t_held_(__LINE__, sm, c, k, id, name, n)

/* A create on conn k, answered OK. */
static void t_created_(int line, struct sm *sm, struct sm_client *c,
    uintptr_t k, uint64_t id, const char *name, uint32_t limit, int mode)
{
	t_create(sm, c, id, name, limit, mode, 0);
	expect_code_(line, k, id, SEMD__CODE__OK);
}
#define t_created(sm, c, k, id, name, limit, mode) \
	t_created_(__LINE__, sm, c, k, id, name, limit, mode)

/*
 * The start of a test: TEST_START(title), a state machine at the usual wall
 * clock (tuned by tune, or not), and for each principal of who (separated
 * by spaces; "uid:1/5000" asks a lease of 5000 ms) a client on conn 1, 2,
 * ... in turn, said hello, in the next of the clients given. With t0 (not
 * 0) the clock is set to t0 first, and the invariants are checked after
 * every request until t_end() (the tests of issue 15).
 */
static struct sm *t_start_(uint64_t t0, const char *title,
    void (*tune)(struct sm_config *), const char *who,
    struct sm_client **const *c)
{
	struct sm *sm;
	char principal[32];
	uintptr_t k = 1;
	size_t n, len;

	TEST_START(title);
	if (t0 != 0) {
		now = t0;
		t_check_each = true;
	}
	sm = t_new(1700000000000ULL, tune);
	for (; *who != '\0'; who += n + strspn(who + n, " "), k++) {
		n = strcspn(who, " ");
		len = strcspn(who, "/ ");
		if (c[k - 1] == NULL || len >= sizeof principal) {
			fprintf(stderr, "t_start: \"%s\": not one client each\n", who);
			abort();
		}
		memcpy(principal, who, len);
		principal[len] = '\0';
		*c[k - 1] = t_client(sm, k, principal,
		    len < n ? (uint32_t)strtoul(who + len + 1, NULL, 10) : 0);
	}
	if (c[k - 1] != NULL) {
		fprintf(stderr, "t_start: more clients than principals\n");
		abort();
	}
	return sm;
}
#define t_start(title, tune, who, ...) t_start_(0, title, tune, who,	\
	(struct sm_client **const []){ __VA_ARGS__, NULL })
#define t_start_checked(t0, title, tune, who, ...) t_start_(t0, title, tune, \
	who, (struct sm_client **const []){ __VA_ARGS__, NULL })

/* The end of a test: the invariants hold; the state machine and its replies go. */
static void t_end(struct sm *sm)
{
	CHECK_SM(sm);
	caps_clear();
	sm_free(sm);
	t_check_each = false;
}

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
		struct req q;

		req_make(&q, 8, SEMD__REQUEST__OP_HELLO, "version=%d", 2);
		EXPECT_I64(SM_CLOSE, sm_request(sm, c, &q.r, NULL, now));
		expect_code(2, 8, SEMD__CODE__PROTOCOL_ERROR);
	}
	sm_client_close(sm, c, now);
	t_end(sm);
}

/*
 * The op table: each op's right is checked on the field that holds its
 * name (the access layer reads it), with the vocabulary of its refusals.
 */
static void test_op_table(void)
{
	static const struct {
		int		op;
		const char	*field;		/* NULL: no name; "": all */
		enum sm_right	right;
		const char	*verb;
	} want[] = {
		{ SEMD__REQUEST__OP_HELLO, NULL, SM_RIGHT_NONE, "" },
		{ SEMD__REQUEST__OP_CREATE, "name", SM_RIGHT_CREATE, "create" },
		{ SEMD__REQUEST__OP_DOWN, "name", SM_RIGHT_USE, "use" },
		{ SEMD__REQUEST__OP_UP, "name", SM_RIGHT_USE, "use" },
		{ SEMD__REQUEST__OP_CANCEL, NULL, SM_RIGHT_NONE, "" },
		{ SEMD__REQUEST__OP_INFO, "name", SM_RIGHT_INSPECT, "inspect" },
		{ SEMD__REQUEST__OP_LIST, "prefix", SM_RIGHT_INSPECT, "inspect" },
		{ SEMD__REQUEST__OP_DELETE, "name", SM_RIGHT_MANAGE, "delete" },
		{ SEMD__REQUEST__OP_SET_LIMIT, "name", SM_RIGHT_MANAGE,
		    "set the limit of" },
		{ SEMD__REQUEST__OP_PING, NULL, SM_RIGHT_NONE, "" },
		{ SEMD__REQUEST__OP_STATS, "", SM_RIGHT_INSPECT, "inspect" },
		{ SEMD__REQUEST__OP_VALIDATE, "name", SM_RIGHT_USE, "use" },
		{ SEMD__REQUEST__OP_RELEASE, "name", SM_RIGHT_MANAGE,
		    "release holds on" },
		{ SEMD__REQUEST__OP_DETACH, NULL, SM_RIGHT_NONE, "" },
		{ SEMD__REQUEST__OP_SET_RATE, "name", SM_RIGHT_MANAGE,
		    "set the rate of" },
		{ SEMD__REQUEST__OP_DOWN_MULTI, NULL, SM_RIGHT_USE, "use" },
		{ SEMD__REQUEST__OP_WATCH, "name", SM_RIGHT_INSPECT, "watch" },
		{ SEMD__REQUEST__OP_RENEW, "name", SM_RIGHT_USE, "use" },
		{ SEMD__REQUEST__OP_HOLDS, "", SM_RIGHT_INSPECT, "inspect" },
		{ SEMD__REQUEST__OP_WHERE, NULL, SM_RIGHT_NONE, "" },
	};
	const struct sm_op *op;
	struct req q;
	const char *name = "some/name", *got;
	size_t i, n = 0;

	TEST_START("op table: rights, the field with the name, refusals");
	EXPECT(sm_op(0) == NULL);
	EXPECT(sm_op(SEMD__REQUEST__OP_CLUSTER) == NULL);
	for (i = 0; i < sizeof want / sizeof want[0]; i++) {
		op = sm_op(want[i].op);
		EXPECT(op != NULL);
		if (op == NULL)
			continue;
		n++;
		if (want[i].field == NULL || want[i].field[0] == '\0')
			req_op(&q, 1, want[i].op);
		else if (strcmp(want[i].field, "prefix") == 0)
			req_make(&q, 1, want[i].op, "prefix=%s", name);
		else
			req_make(&q, 1, want[i].op, "name=%s", name);
		got = sm_op_target(op, &q.r);
		if (want[i].field == NULL)
			EXPECT(got == NULL);
		else if (want[i].field[0] == '\0')
			EXPECT(got != NULL && strcmp(got, "") == 0);
		else
			EXPECT(got == name);
		EXPECT_I64(want[i].right, op->right);
		if (strcmp(op->verb, want[i].verb) != 0)
			FAIL("%s: verb \"%s\", want \"%s\"", op->name, op->verb,
			    want[i].verb);
		EXPECT(strcmp(op->after, want[i].op == SEMD__REQUEST__OP_LIST ?
		    " (list)" : "") == 0);
	}
	/* Every op of the table is listed above. */
	for (i = 1; i < SM_NOPS; i++)
		if (sm_op((int)i) != NULL)
			n--;
	EXPECT_U64(0, n);
}

/* Every basic operation. */
static void test_ops(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start("create, down, up, info, list, delete, ping, stats",
	    NULL, "uid:1 uid:2", &a, &b);
	Semd__Grant *g1, *g2;
	Semd__Reply *r;
	uint64_t p1, t1, t2;

	t_created(sm, a, 1, 2, "db/main", 2, SEMD__MODE__OWNED);
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
		struct req q;

		t_req(sm, a, req_make(&q, 25, SEMD__REQUEST__OP_LIST,
		    "prefix=%s max=%d", "db/", 2));
		r = expect_code(1, 25, SEMD__CODE__OK);
		if (r != NULL) {
			EXPECT_U64(2, r->list->n_entries);
			EXPECT(strcmp(r->list->entries[0]->name, "db/aux") == 0);
			EXPECT(strcmp(r->list->entries[1]->name, "db/main") == 0);
			EXPECT(strcmp(r->list->next, "db/main") == 0);
		}
		req_set(&q, "after=%s", "db/main");
		t_again(sm, a, &q, 26);
		r = expect_code(1, 26, SEMD__CODE__OK);
		if (r != NULL) {
			EXPECT_U64(1, r->list->n_entries);
			EXPECT(strcmp(r->list->entries[0]->name, "db/zed") == 0);
			EXPECT(strcmp(r->list->next, "") == 0);
		}
	}
	t_op(sm, a, 27, SEMD__REQUEST__OP_PING, "payload=%.*s", 2, "hi");
	r = expect_code(1, 27, SEMD__CODE__OK);
	EXPECT(r && r->body_case == SEMD__REPLY__BODY_PONG &&
	    r->pong->payload.len == 2 && memcmp(r->pong->payload.data, "hi", 2) == 0);
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
	t_end(sm);
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
	g = t_held(sm, c[0], 100, 2, "q", 1);
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
	EXPECT_U64(UINT64_MAX, sm_next_deadline(sm));
	t_end(sm);
}

/* n permits: a big head blocks small later ones (no barging). */
static void test_npermits(void)
{
	struct sm_client *a, *b, *c;
	struct sm *sm = t_start("n-permit hand-off", NULL, "uid:1 uid:1 uid:1",
	    &a, &b, &c);
	Semd__Grant *g;

	t_created(sm, a, 1, 2, "pool", 3, SEMD__MODE__OWNED);
	t_held(sm, a, 1, 3, "pool", 2);
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
	t_end(sm);
}

/* A deadline fires exactly at its tick. */
static void test_deadline(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start("deadline expiry exactly at the tick", NULL,
	    "uid:1 uid:1", &a, &b);
	Semd__Reply *r;

	t_held(sm, a, 1, 2, "m", 1);
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
	t_end(sm);
}

/* Disconnect: waiters cancelled, holds back at once. */
static void test_disconnect(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start("disconnect frees holds at once", NULL,
	    "uid:1 uid:1", &a, &b);

	t_held(sm, a, 1, 2, "m", 1);
	t_held(sm, a, 1, 3, "other", 1);
	t_down(sm, b, 4, "other", 1, -1, 0);	/* b waits on other */
	t_held(sm, a, 1, 4, "m2", 1);
	t_down(sm, b, 5, "m", 1, 5000, 0);
	EXPECT(none(2, 5));
	sm_client_close(sm, a, now);
	grant_of(2, 5);
	grant_of(2, 4);
	EXPECT_U64(2, t_stat(sm, b, 2, "semaphores"));	/* m2 freed */
	sm_client_close(sm, b, now);
	CHECK_SM(sm);
	EXPECT_U64(0, t_stat(sm, t_client(sm, 3, "x", 0), 3, "semaphores"));
	t_end(sm);
}

/* Session lease: holds survive a disconnect, resume, expiry. */
static void test_lease(void)
{
	struct sm_client *a, *b, *a2;
	struct sm *sm = t_start("lease keep, resume, expiry", NULL,
	    "uid:1/5000 uid:1", &a, &b);
	uint8_t bad[SM_SECRET_LEN];
	uint64_t sid = sm_client_session(a), permit;
	Semd__Reply *r;
	Semd__Grant *g;

	g = t_held(sm, a, 1, 2, "m", 1);
	permit = g ? g->permit_id : 0;
	t_held(sm, a, 1, 3, "n", 1);
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
	g = t_held(sm, a2, 3, 2, "m", 1);
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
	t_end(sm);
}

/* Detached holds belong to the principal. */
static void test_detached(void)
{
	struct sm_client *a, *b, *c;
	struct sm *sm = t_start("detached hold outlives its connection", NULL,
	    "uid:1", &a);
	Semd__Reply *r;

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
	t_end(sm);
}

/* A retried down does not take a second permit. */
static void test_idempotent(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start("idempotent retry", NULL,
	    "uid:1 uid:1", &a, &b);
	Semd__Grant *g1, *g2;
	Semd__Reply *r;

	t_created(sm, a, 1, 2, "r", 3, SEMD__MODE__OWNED);
	g1 = t_held(sm, a, 1, 7, "r", 1);
	g2 = t_held(sm, a, 1, 7, "r", 1);
	EXPECT(g1 && g2 && g1->permit_id == g2->permit_id && g1->token == g2->token);
	r = t_info(sm, a, 1, 8, "r", SEMD__CODE__OK);
	EXPECT(r && r->info->available == 2);
	t_down(sm, a, 7, "other", 1, -1, 0);
	expect_code(1, 7, SEMD__CODE__INVALID_ARGUMENT);
	/* a waiting down retried stays one waiter */
	t_held(sm, b, 2, 3, "r", 2);
	t_down(sm, a, 9, "r", 1, -1, 0);
	t_down(sm, a, 9, "r", 1, -1, 0);
	EXPECT(none(1, 9));
	r = t_info(sm, a, 1, 10, "r", SEMD__CODE__OK);
	EXPECT(r && r->info->n_waiters == 1);
	t_up(sm, b, 4, "r", 1, 0);
	grant_of(1, 9);
	EXPECT(none(1, 9));
	t_end(sm);
}

/* set-limit shrink revokes nobody; grow wakes waiters. */
static void test_set_limit(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start("set-limit shrink and grow", NULL,
	    "uid:1 uid:1", &a, &b);
	Semd__Reply *r;

	t_created(sm, a, 1, 2, "s", 3, SEMD__MODE__OWNED);
	t_held(sm, a, 1, 3, "s", 3);
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
	t_end(sm);
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
	struct sm_client *a, *b, *c;
	struct sm *sm = t_start("set-limit shrink does not grant beyond the new limit",
	    NULL, "uid:1 uid:1 uid:1", &a, &b, &c);
	Semd__Reply *r;

	t_created(sm, a, 1, 2, "g", 10, SEMD__MODE__OWNED);
	t_held(sm, a, 1, 3, "g", 3);
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
	t_end(sm);
}

/* delete --force cancels waiters and drops holders. */
static void test_delete(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start("delete with force", NULL,
	    "uid:1 uid:1", &a, &b);
	Semd__Reply *r;

	t_created(sm, a, 1, 2, "d", 1, SEMD__MODE__OWNED);
	t_held(sm, a, 1, 3, "d", 1);
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
	t_end(sm);
}

/*
 * A client's last-named semaphore is remembered; freeing it (auto-created
 * and idle, or deleted) must make the client look the name up again even
 * though the freed record, kept for reuse, still holds the name.
 */
static void test_name_cache(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start("a client's last semaphore after it is freed",
	    NULL, "uid:1 uid:1", &a, &b);
	Semd__Reply *r;

	t_held(sm, a, 1, 2, "nc/x", 1);
	t_up(sm, a, 3, "nc/x", 1, 0);
	expect_code(1, 3, 0);
	/* Freed when idle: an up names nothing now. */
	t_up(sm, a, 4, "nc/x", 1, 0);
	expect_code(1, 4, SEMD__CODE__NOT_FOUND);
	t_info(sm, a, 1, 5, "nc/x", SEMD__CODE__NOT_FOUND);
	/* Explicit, then deleted by another client, then made again. */
	t_created(sm, a, 1, 6, "nc/y", 3, SEMD__MODE__OWNED);
	t_down(sm, a, 7, "nc/y", 1, 0, 0);
	grant_of(1, 7);
	t_delete(sm, b, 3, "nc/y", 1);
	expect_code(2, 3, SEMD__CODE__OK);
	expect_code(1, 0, SEMD__CODE__CANCELLED);	/* lost-hold notice */
	t_up(sm, a, 8, "nc/y", 1, 0);
	expect_code(1, 8, SEMD__CODE__NOT_FOUND);
	t_created(sm, b, 2, 4, "nc/y", 1, SEMD__MODE__OWNED);
	t_down(sm, a, 9, "nc/y", 1, 0, 0);
	grant_of(1, 9);
	t_down(sm, a, 10, "nc/y", 1, 0, 0);
	expect_code(1, 10, SEMD__CODE__WOULD_BLOCK);	/* limit 1 now */
	r = t_info(sm, a, 1, 11, "nc/y", SEMD__CODE__OK);
	EXPECT(r && r->info->limit == 1 && r->info->n_holders == 1);
	t_end(sm);
}

/* Auto-created names are freed when idle; explicit ones stay. */
static void test_autocreate(void)
{
	struct sm_client *a;
	struct sm *sm = t_start("auto-create and freeing", NULL, "uid:1", &a);
	Semd__Reply *r;

	t_held(sm, a, 1, 2, "auto/x", 1);
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
	t_end(sm);
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
	struct sm_client *a, *b;
	struct sm *sm = t_start("limits: semaphores, waiters and holds per session",
	    tune_tiny, "uid:1 uid:1", &a, &b);
	Semd__Reply *r;

	t_held(sm, a, 1, 2, "l1", 2);
	t_created(sm, a, 1, 3, "l2", 1, SEMD__MODE__OWNED);
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
	t_held(sm, a, 1, 8, "l2", 1);
	t_down(sm, a, 9, "l2", 1, -1, 0);	/* 2 holds + 1 waiter */
	t_down(sm, a, 10, "l1", 1, -1, 0);	/* 4th */
	t_down(sm, a, 11, "l1", 1, -1, 0);
	r = expect_code(1, 11, SEMD__CODE__RESOURCE_EXHAUSTED);
	EXPECT(r && strstr(r->message, "max-holds-per-session") != NULL);
	t_end(sm);
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
	t_op(sm, c, id, SEMD__REQUEST__OP_INFO, "name=%s max=%u after_permit=%" PRIu64
	    " after_waiter=%" PRIu64, name, max, after_permit, after_waiter);
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
	struct sm_client *a, *b;
	struct sm *sm = t_start("info of a semaphore with 10,005 holders comes in pages",
	    tune_big, "uid:1", &a);
	Semd__Reply *r;
	size_t nh, nw, np;
	int i;

	t_created(sm, a, 1, 2, "big", 20000, SEMD__MODE__OWNED);
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
	t_end(sm);

	sm = t_start("info pages waiters by seq, bounded by max_reply bytes",
	    tune_small_reply, "uid:1 uid:2", &a, &b);
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
	t_end(sm);
}


/* Release: force-release a hold by permit id. */
static void t_release(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint64_t permit)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_RELEASE, "name=%s permit_id=%" PRIu64,
	    name, permit);
}

/* A bare request of op (ping, detach). */
static void t_simple(struct sm *sm, struct sm_client *c, uint64_t id, int op)
{
	struct req q;

	t_req(sm, c, req_op(&q, id, op));
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
	struct sm_client *a, *adm;
	struct sm *sm = t_start("force-release pushes HoldLost(CANCELLED) to the holder",
	    NULL, "uid:1/5000 uid:0", &a, &adm);
	Semd__Grant *g;

	g = t_held(sm, a, 1, 2, "x", 1);
	t_release(sm, adm, 3, "x", g ? g->permit_id : 0);
	expect_code(2, 3, SEMD__CODE__OK);
	expect_lost(1, SEMD__CODE__CANCELLED, "x", g ? g->permit_id : 0);
	TEST_START("delete --force pushes HoldLost(CANCELLED)");
	t_create(sm, adm, 4, "y", 2, SEMD__MODE__OWNED, 0);
	t_held(sm, a, 1, 3, "y", 2);
	t_delete(sm, adm, 5, "y", 1);
	expect_code(2, 5, SEMD__CODE__OK);
	expect_lost(1, SEMD__CODE__CANCELLED, "y", 0);
	TEST_START("shutdown pushes HoldLost(UNAVAILABLE) and a stop notice");
	t_held(sm, a, 1, 4, "z", 1);
	sm_shutdown(sm, now);
	expect_lost(1, SEMD__CODE__UNAVAILABLE, "z", 0);
	expect_code(1, 0, SEMD__CODE__UNAVAILABLE);
	expect_code(2, 0, SEMD__CODE__UNAVAILABLE);
	t_end(sm);
}

/* A silent session loses its holds one lease after the last request. */
static void test_lease_silence(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start("requests keep a connected session alive", NULL,
	    "uid:1/3000 uid:2", &a, &b);
	uint64_t t0 = now;

	t_held(sm, a, 1, 2, "s", 1);
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
	t_end(sm);
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
	t_held(sm, a, 1, 2, "l", 1);
	t_down(sm, b, 2, "l", 1, -1, 0);
	sm_client_close(sm, a, now);
	grant_of(2, 2);
	EXPECT_U64(0, t_stat(sm, b, 2, "sessions") - 1);
	TEST_START("after Detach the lease applies");
	a = sm_client_open(sm, (uint64_t)3, (void *)3, "uid:1", secret_a, SM_CLIENT_LOCAL, now);
	t_hello(sm, a, 1, 60000, 0, NULL);
	expect_code(3, 1, SEMD__CODE__OK);
	sid = sm_client_session(a);
	t_held(sm, a, 3, 2, "k", 1);
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
	t_held(sm, a, 5, 2, "k", 1);
	sm_client_close(sm, a, now);
	t_down(sm, b, 4, "k", 1, 0, 0);
	grant_of(2, 4);
	t_end(sm);
}

/* A waiter of an absent session keeps its place in the queue. */
static void test_resume_place(void)
{
	struct sm_client *h, *a, *b, *a2;
	struct sm *sm = t_start("A waits first, B second; A away and back: A is granted first",
	    NULL, "uid:9 uid:1/5000 uid:2", &h, &a, &b);
	uint64_t sid = sm_client_session(a);
	Semd__Grant *g;
	Semd__Reply *r;

	t_held(sm, h, 1, 2, "f", 1);
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
	t_held(sm, b, 3, 5, "g", 1);
	a2 = sm_client_open(sm, (uint64_t)5, (void *)5, "uid:1", secret_a, 0, now);
	t_hello(sm, a2, 1, 5000, sid, secret_a);
	t_down(sm, a2, 7, "g", 1, -1, 0);
	sm_client_close(sm, a2, now);
	t_up(sm, b, 6, "g", 1, 0);		/* granted to the absent session */
	CHECK_SM(sm);
	a2 = sm_client_open(sm, (uint64_t)6, (void *)6, "uid:1", secret_a, 0, now);
	t_hello(sm, a2, 1, 5000, sid, secret_a);
	g = t_held(sm, a2, 6, 7, "g", 1);
	EXPECT(g != NULL && g->permit_id != 0);
	TEST_START("signal mode: an absent waiter is passed over, served when back");
	t_created(sm, b, 3, 8, "sig", 2, SEMD__MODE__SIGNAL);
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
	t_end(sm);
}

/* Create.initial, Down.limit, partial ups and the permit count. */
static void test_create_options(void)
{
	struct sm_client *a;
	struct sm *sm = t_start("create --mode signal --initial 0 starts empty",
	    NULL, "uid:1", &a);
	struct sm_caller cap = { SM_PRIV_ADMIN, { 0 } };
	struct req q;

	t_req(sm, a, req_make(&q, 2, SEMD__REQUEST__OP_CREATE,
	    "name=%s limit=%d mode=%d initial=%d initial_set=%d",
	    "pc", 3, SEMD__MODE__SIGNAL, 0, 1));
	expect_code(1, 2, SEMD__CODE__OK);
	t_down(sm, a, 3, "pc", 1, 0, 0);
	expect_code(1, 3, SEMD__CODE__WOULD_BLOCK);
	t_up(sm, a, 4, "pc", 1, 0);
	expect_code(1, 4, SEMD__CODE__OK);
	t_down(sm, a, 5, "pc", 1, 0, 0);
	grant_of(1, 5);
	req_set(&q, "name=%s mode=%d", "bad", SEMD__MODE__OWNED);
	t_again(sm, a, &q, 6);
	expect_code(1, 6, SEMD__CODE__INVALID_ARGUMENT);
	req_set(&q, "mode=%d initial=%d", SEMD__MODE__SIGNAL, 4);
	t_again(sm, a, &q, 7);
	expect_code(1, 7, SEMD__CODE__INVALID_ARGUMENT);
	TEST_START("down --limit creates a missing name with that limit");
	t_req(sm, a, req_make(&q, 8, SEMD__REQUEST__OP_DOWN,
	    "name=%s n=%d limit=%d timeout_ms=%d", "dl", 1, 3, 0));
	grant_of(1, 8);
	t_again(sm, a, &q, 9);
	grant_of(1, 9);
	req_set(&q, "limit=%d", 2);
	t_again(sm, a, &q, 10);
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
	t_end(sm);
}

/* Without SM_PRIV_ADMIN only a name's creator manages it. */
static void test_ownership(void)
{
	struct sm_client *a, *b, *adm;
	struct sm *sm = t_start("the creator deletes and sets the limit; others may not",
	    NULL, "uid:1 uid:2 uid:0", &a, &b, &adm);
	struct sm_caller user = { 0, { 0 } };
	Semd__Grant *g;
	Semd__Reply *r;

	t_who = &user;
	t_created(sm, a, 1, 2, "mine", 2, SEMD__MODE__OWNED);
	t_set_limit(sm, b, 2, "mine", 5);
	expect_code(2, 2, SEMD__CODE__PERMISSION_DENIED);
	t_delete(sm, b, 3, "mine", 1);
	expect_code(2, 3, SEMD__CODE__PERMISSION_DENIED);
	t_set_limit(sm, a, 3, "mine", 3);
	expect_code(1, 3, SEMD__CODE__OK);
	TEST_START("only the creator and administrators release others' holds");
	g = t_held(sm, b, 2, 4, "mine", 1);
	t_release(sm, b, 5, "mine", g ? g->permit_id : 0);	/* its own */
	expect_code(2, 5, SEMD__CODE__OK);
	g = t_held(sm, b, 2, 6, "mine", 1);
	t_held(sm, a, 1, 4, "mine", 1);
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
	t_held(sm, a, 1, 7, "auto", 1);
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
	t_end(sm);
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
	t_created(sm, b, 5, 3, "n3", 1, SEMD__MODE__OWNED);
	t_who = NULL;
	t_end(sm);
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
	struct sm_client *a;
	struct sm *sm = t_start("bad names and counts", NULL, "uid:1", &a);
	char longname[300];
	size_t i;

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
	t_end(sm);
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
	struct sm_client *a, *b;
	struct sm *sm = t_start("signal mode", NULL, "uid:1 uid:2", &a, &b);
	Semd__Reply *r;

	t_created(sm, a, 1, 2, "sig", 2, SEMD__MODE__SIGNAL);
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
	t_end(sm);
}

/* Tokens grow per semaphore, across re-creation and restarts. */
static void test_tokens(void)
{
	struct sm_client *a;
	struct sm *sm = t_start("fencing tokens only grow", NULL, "uid:1", &a);
	Semd__Grant *g;
	uint64_t last = 0;
	int i;

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
	t_end(sm);
	/* a "restart" a millisecond later starts above */
	sm = t_new(1700000000001ULL, NULL);
	a = t_client(sm, 1, "uid:1", 0);
	t_down(sm, a, 2, "tok", 1, 0, 0);
	g = grant_of(1, 2);
	EXPECT(g && g->token > last);
	t_end(sm);
}

/* Shutdown answers every waiter UNAVAILABLE. */
static void test_shutdown(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start("shutdown", NULL, "uid:1 uid:1", &a, &b);

	t_held(sm, a, 1, 2, "x", 1);
	t_down(sm, b, 2, "x", 1, -1, 0);
	t_down(sm, b, 3, "x", 1, 5000, 0);
	sm_shutdown(sm, now);
	expect_code(2, 2, SEMD__CODE__UNAVAILABLE);
	expect_code(2, 3, SEMD__CODE__UNAVAILABLE);
	t_down(sm, b, 4, "x", 1, -1, 0);
	expect_code(2, 4, SEMD__CODE__UNAVAILABLE);
	t_end(sm);
}

/* --- List paging against a model ----------------------------------------- */

#define L_PREFIXES 6
#define L_PER 40
#define L_NAMES (L_PREFIXES * L_PER + 3)

static char l_names[L_NAMES][16];	/* sorted by strcmp() */
static int l_state[L_NAMES];		/* 0 absent, 1 created, 2 auto-created, held */
static uint64_t l_rng = 0x9e3779b97f4a7c15ULL;

/* xorshift64: the next number of the sequence in *s (each test has its own). */
static uint64_t xs64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The list tests' sequence (apart from test_random's). */
static uint64_t l_rand(void)
{
	return xs64(&l_rng);
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
	Semd__Reply *r;

	t_op(sm, c, id, SEMD__REQUEST__OP_LIST, "prefix=%s after=%s max=%u",
	    prefix, after, max);
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
	struct sm_client *a;
	struct sm *sm = t_start("list paging across creates, auto-creates and deletes",
	    NULL, "uid:1", &a);
	const char *prefix;
	char after[64], err[256];
	uint64_t id = 10;
	uint32_t max;
	int i, j, walk, page, pages = 0, failed = failures;
	Semd__Reply *r;

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
	t_end(sm);
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
	struct sm_client *a;
	struct sm *sm = t_start("list: full pages of 1000 at 5000 names",
	    tune_many, "uid:1", &a);
	char name[32], after[32] = "";
	uint64_t id = 10;
	size_t seen;
	int i, page;
	Semd__Reply *r;

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
	t_end(sm);
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

/* test_random's sequence. */
static uint64_t r_rand(void)
{
	return xs64(&rng);
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
	t_end(sm);
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
	Semd__Reply *r;

	t_op(sm, c, id, SEMD__REQUEST__OP_LIST, "prefix=%s after=%s max=%u",
	    prefix, after, max);
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
	struct sm_client *a, *b;
	struct sm *sm = t_start("list with a visibility hook: hidden runs, paging, skip_len",
	    NULL, "uid:1 uid:2", &a, &b);
	struct vis v = { 0, 0 };
	char name[32], after[32], want[64][32], got[64][32];
	size_t nwant = 0, ngot, g, p, k, total = 0;
	uint64_t id = 10;
	uint32_t max;
	int i, page;
	Semd__Reply *r;

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
	t_end(sm);
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
	struct sm_client *a, *b;
	struct sm *sm = t_start("list with a visibility hook: the cap on hidden names",
	    tune_hidden, "uid:1 uid:2", &a, &b);
	struct vis v = { 0, 0 };
	char name[32];
	uint64_t id = 10;
	int i;
	Semd__Reply *r;

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
	t_end(sm);
}

/* --- issue 15: rates, multi-name downs, deadlocks, watches, holds -------- */

/* Let time pass to t and fire what is due; the invariants hold after. */
static void t_tick(struct sm *sm, uint64_t t)
{
	now = t;
	sm_tick(sm, now);
	CHECK_SM(sm);
}

/* Create with every option of issue 15 (limit 0 and a rate: rate-only). */
static void t_create_rate(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit, uint32_t rate, uint32_t period,
    uint32_t burst)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_CREATE,
	    "name=%s limit=%u rate=%u rate_period_ms=%u burst=%u",
	    name, limit, rate, period, burst);
}

/* SetRate. */
static void t_set_rate(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t rate, uint32_t period, uint32_t burst)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_SET_RATE,
	    "name=%s rate=%u rate_period_ms=%u burst=%u", name, rate, period, burst);
}

/* DownMulti of k names (n[i] each; n NULL: 1 each). */
static void t_multi(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *const *names, const uint32_t *n, size_t k, int64_t timeout,
    uint32_t lease)
{
	Semd__Want wv[20], *wp[20];
	struct req q;
	size_t i;

	for (i = 0; i < k && i < 20; i++) {
		semd__want__init(&wv[i]);
		wv[i].name = (char *)names[i];
		wv[i].n = n != NULL ? n[i] : 1;
		wp[i] = &wv[i];
	}
	req_make(&q, id, SEMD__REQUEST__OP_DOWN_MULTI,
	    "timeout_ms=%" PRId64 " lease_ms=%u", timeout, lease);
	q.r.down_multi->n_wants = k;
	q.r.down_multi->wants = wp;
	t_req(sm, c, &q.r);
}

/* Watch. */
static void t_watch(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, bool prefix)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_WATCH, "name=%s prefix=%d", name, prefix);
}

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

/* The MultiGrant of a reply, checked to name names[0..k) in order. */
static Semd__MultiGrant *multi_of_(int line, uintptr_t k, uint64_t id,
    const char *const *names, size_t nk)
{
	Semd__Reply *r = expect_code_(line, k, id, SEMD__CODE__OK);
	size_t i;

	if (r == NULL || r->body_case != SEMD__REPLY__BODY_MULTI_GRANT) {
		FAIL("line %d: reply %" PRIu64 " is not a multi-grant", line, id);
		return NULL;
	}
	if (r->multi_grant->n_grants != nk) {
		FAIL("line %d: %zu grants, want %zu", line,
		    r->multi_grant->n_grants, nk);
		return NULL;
	}
	for (i = 0; i < nk; i++)
		if (strcmp(r->multi_grant->grants[i]->name, names[i]) != 0 ||
		    r->multi_grant->grants[i]->token == 0)
			FAIL("line %d: grant %zu is of %s", line, i,
			    r->multi_grant->grants[i]->name);
	return r->multi_grant;
}
#define multi_of(k, id, names, nk) multi_of_(__LINE__, k, id, names, nk)

/* The next watch event to conn k, checked to be of kind on name. */
static Semd__WatchEvent *event_of_(int line, uintptr_t k, int kind,
    const char *name)
{
	int i;

	for (i = 0; i < ncaps; i++) {
		if (caps[i].used || caps[i].conn != k || caps[i].r->id != 0 ||
		    caps[i].r->body_case != SEMD__REPLY__BODY_WATCH_EVENT)
			continue;
		caps[i].used = 1;
		if ((int)caps[i].r->watch_event->kind != kind ||
		    strcmp(caps[i].r->watch_event->name, name) != 0) {
			FAIL("line %d: event %d on %s, want %d on %s", line,
			    (int)caps[i].r->watch_event->kind,
			    caps[i].r->watch_event->name, kind, name);
			return NULL;
		}
		return caps[i].r->watch_event;
	}
	FAIL("line %d: no event %d on %s", line, kind, name);
	return NULL;
}
#define event_of(k, kind, name) event_of_(__LINE__, k, SEMD__EVENT_KIND__##kind, name)

/* Watch events to conn k not taken yet. */
static int events_left(uintptr_t k)
{
	int i, n = 0;

	for (i = 0; i < ncaps; i++)
		if (!caps[i].used && caps[i].conn == k && caps[i].r->id == 0 &&
		    caps[i].r->body_case == SEMD__REPLY__BODY_WATCH_EVENT)
			n++;
	return n;
}

/* The InfoReply of a name. */
static Semd__InfoReply *info_of(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *name)
{
	Semd__Reply *r = t_info(sm, c, k, id, name, SEMD__CODE__OK);

	return r != NULL && r->body_case == SEMD__REPLY__BODY_INFO ? r->info : NULL;
}

/*
 * A rate-only name: the bucket starts full, a down takes tokens for good,
 * waiters are served in FIFO order at the exact ms their tokens are due,
 * deadlines still apply, nothing can be upped.
 */
static void test_rate(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start_checked(1000,
	    "rate: a rate-only name starts with a full bucket", NULL,
	    "uid:1 uid:2", &a, &b);
	Semd__InfoReply *in;
	Semd__Grant *g;
	uint64_t t0;

	t_create_rate(sm, a, 2, "api", 0, 10, 1000, 5);	/* 10/s, burst 5 */
	expect_code(1, 2, SEMD__CODE__OK);
	in = info_of(sm, a, 1, 3, "api");
	if (in != NULL) {
		EXPECT_U64(SEMD__MODE__RATE, in->mode);
		EXPECT_U64(0, in->limit);
		EXPECT_U64(10, in->rate);
		EXPECT_U64(1000, in->rate_period_ms);
		EXPECT_U64(5, in->burst);
		EXPECT_U64(5000000000ULL, in->tokens_nano);
		EXPECT_U64(0, in->next_token_ms);
	}
	t_down(sm, a, 4, "api", 5, 0, 0);
	g = grant_of(1, 4);
	if (g != NULL)
		EXPECT_U64(0, g->permit_id);	/* nothing is held */
	t_down(sm, a, 5, "api", 1, 0, 0);
	expect_code(1, 5, SEMD__CODE__WOULD_BLOCK);
	TEST_START("rate: the next token comes 100 ms later, not before");
	t0 = now;
	t_down(sm, a, 6, "api", 1, -1, 0);
	EXPECT(none(1, 6));
	EXPECT_U64(t0 + 100, sm_next_deadline(sm));
	t_tick(sm, t0 + 99);
	EXPECT(none(1, 6));
	in = info_of(sm, a, 1, 7, "api");
	if (in != NULL) {
		EXPECT_U64(990000000ULL, in->tokens_nano);
		EXPECT_U64(1700000000000ULL + t0 + 100 - 1000, in->next_token_ms);
	}
	t_tick(sm, t0 + 100);
	grant_of(1, 6);
	TEST_START("rate: FIFO - one wanting 3 is not passed by one wanting 1");
	t_down(sm, a, 8, "api", 3, -1, 0);
	t_down(sm, b, 2, "api", 1, -1, 0);
	t_tick(sm, t0 + 200);
	EXPECT(none(1, 8) && none(2, 2));
	t_tick(sm, t0 + 399);
	EXPECT(none(1, 8));
	t_tick(sm, t0 + 400);
	grant_of(1, 8);
	EXPECT(none(2, 2));
	t_tick(sm, t0 + 500);
	grant_of(2, 2);
	TEST_START("rate: a deadline before the tokens answers TIMEOUT");
	t_down(sm, a, 9, "api", 2, 150, 0);
	t_tick(sm, t0 + 650);
	expect_code(1, 9, SEMD__CODE__TIMEOUT);
	TEST_START("rate: no up, n above the burst, nothing to validate");
	t_up(sm, a, 10, "api", 1, 0);
	expect_code(1, 10, SEMD__CODE__NOT_HOLDER);
	t_down(sm, a, 11, "api", 6, -1, 0);
	expect_code(1, 11, SEMD__CODE__INVALID_ARGUMENT);
	t_set_limit(sm, a, 12, "api", 3);
	expect_code(1, 12, SEMD__CODE__INVALID_ARGUMENT);
	TEST_START("set-rate: faster, live; the first waiter's tokens come sooner");
	t_tick(sm, t0 + 1000);			/* full again: 5 */
	t_down(sm, a, 13, "api", 5, 0, 0);
	grant_of(1, 13);
	t_down(sm, a, 14, "api", 2, -1, 0);	/* due in 200 ms at 10/s */
	EXPECT_U64(t0 + 1200, sm_next_deadline(sm));
	t_who = &(struct sm_caller){ 0, { 0 } };
	t_set_rate(sm, b, 3, "api", 1000, 1000, 5);
	expect_code(2, 3, SEMD__CODE__PERMISSION_DENIED);	/* not its creator */
	t_who = NULL;
	t_set_rate(sm, a, 15, "api", 1000, 1000, 5);
	expect_code(1, 15, SEMD__CODE__OK);
	EXPECT_U64(t0 + 1002, sm_next_deadline(sm));
	t_tick(sm, t0 + 1002);
	grant_of(1, 14);
	TEST_START("set-rate: a smaller burst cancels waiters wanting more");
	t_tick(sm, t0 + 2000);
	t_down(sm, a, 16, "api", 5, 0, 0);
	grant_of(1, 16);
	t_down(sm, a, 17, "api", 4, -1, 0);
	t_set_rate(sm, a, 18, "api", 1, 1000, 3);
	expect_code(1, 18, SEMD__CODE__OK);
	expect_code(1, 17, SEMD__CODE__INVALID_ARGUMENT);
	t_set_rate(sm, a, 19, "api", 0, 0, 0);
	expect_code(1, 19, SEMD__CODE__INVALID_ARGUMENT);	/* rate-only */
	TEST_START("rate: bad settings are refused");
	t_create_rate(sm, a, 20, "bad", 0, 0, 1000, 1);
	expect_code(1, 20, SEMD__CODE__INVALID_ARGUMENT);
	t_create_rate(sm, a, 21, "bad", 0, 1, 86400001, 1);
	expect_code(1, 21, SEMD__CODE__INVALID_ARGUMENT);
	t_create_rate(sm, a, 22, "bad", 0, (1u << 30) + 1, 1000, 1);
	expect_code(1, 22, SEMD__CODE__INVALID_ARGUMENT);
	t_created(sm, a, 1, 23, "sig", 2, SEMD__MODE__SIGNAL);
	t_set_rate(sm, a, 24, "sig", 5, 1000, 5);
	expect_code(1, 24, SEMD__CODE__INVALID_ARGUMENT);
	t_end(sm);
}

/*
 * An owned name with a limit and a rate: a grant needs a free permit and a
 * token; an up gives back the permit only; set-rate adds and removes the
 * bucket of a name with waiters.
 */
static void test_rate_limit(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start_checked(5000,
	    "limit and rate: a permit needs a free slot and a token", NULL,
	    "uid:1 uid:2", &a, &b);
	uint64_t t0 = now;
	Semd__InfoReply *in;
	Semd__Grant *g;

	t_create_rate(sm, a, 2, "gh", 2, 1, 1000, 1);	/* 1/s, burst 1, limit 2 */
	expect_code(1, 2, SEMD__CODE__OK);
	g = t_held(sm, a, 1, 3, "gh", 1);
	EXPECT(g != NULL && g->permit_id != 0);
	t_down(sm, b, 2, "gh", 1, -1, 0);	/* a slot, but no token */
	EXPECT(none(2, 2));
	EXPECT_U64(t0 + 1000, sm_next_deadline(sm));
	t_tick(sm, t0 + 999);
	EXPECT(none(2, 2));
	t_tick(sm, t0 + 1000);
	grant_of(2, 2);
	TEST_START("limit and rate: at the token's time without a slot, it waits for the up");
	t_down(sm, b, 3, "gh", 1, -1, 0);
	t_tick(sm, t0 + 2500);			/* a token, no slot */
	EXPECT(none(2, 3));
	in = info_of(sm, a, 1, 4, "gh");
	if (in != NULL) {
		EXPECT_U64(1000000000ULL, in->tokens_nano);
		EXPECT_I64(0, in->available);
	}
	t_up(sm, a, 5, "gh", 1, g ? g->permit_id : 0);
	expect_code(1, 5, SEMD__CODE__OK);
	grant_of(2, 3);
	TEST_START("limit and rate: an up gives back the permit, not the token");
	in = info_of(sm, a, 1, 6, "gh");
	if (in != NULL) {
		/* full (1) from 2000 on, taken at 2500: nothing accrued while full */
		EXPECT_U64(0, in->tokens_nano);
		EXPECT_I64(0, in->available);
		EXPECT_U64(1700000000000ULL + t0 + 3500 - 5000, in->next_token_ms);
	}
	t_up(sm, b, 4, "gh", 1, 0);
	expect_code(2, 4, SEMD__CODE__OK);
	t_down(sm, a, 7, "gh", 1, 0, 0);
	expect_code(1, 7, SEMD__CODE__WOULD_BLOCK);	/* a slot, no token */
	TEST_START("set-rate 0 takes the bucket away: waiters need a slot only");
	t_up(sm, b, 40, "gh", 1, 0);
	expect_code(2, 40, SEMD__CODE__OK);
	t_down(sm, a, 8, "gh", 2, -1, 0);
	expect_code(1, 8, SEMD__CODE__INVALID_ARGUMENT);	/* more than the burst */
	t_down(sm, a, 8, "gh", 1, -1, 0);	/* 2 slots, no token */
	EXPECT(none(1, 8));
	t_set_rate(sm, a, 9, "gh", 0, 0, 0);
	expect_code(1, 9, SEMD__CODE__OK);
	grant_of(1, 8);
	TEST_START("set-rate adds a bucket to a name with waiters: they wait for tokens");
	t_create(sm, a, 10, "plain", 1, SEMD__MODE__OWNED, 0);
	g = t_held(sm, a, 1, 11, "plain", 1);
	t_down(sm, b, 5, "plain", 1, -1, 0);
	t_set_rate(sm, a, 12, "plain", 1, 1000, 1);
	expect_code(1, 12, SEMD__CODE__OK);
	t_up(sm, a, 13, "plain", 1, 0);		/* the bucket starts full */
	grant_of(2, 5);
	t_up(sm, b, 6, "plain", 1, 0);
	t_down(sm, a, 14, "plain", 1, -1, 0);
	EXPECT(none(1, 14));			/* a slot, the token used */
	t_tick(sm, now + 1000);
	grant_of(1, 14);
	t_end(sm);
}

/* The model tests' sequence. */
static uint64_t m_rng = 0x9e3779b97f4a7c15ULL;
static uint64_t m_rand(void)
{
	return xs64(&m_rng);
}

/*
 * The bucket against a model that keeps the level in one integer of
 * 1/period token units (no whole/fraction split) and serves its queue
 * event by event: random downs (some with deadlines), and time passing in
 * random steps, often far past several events at once (one tick). Every
 * grant must have waited exactly as long as the model says (Grant's
 * waited_us), every timeout come, in the model's order, and the level
 * agree. At one ms a deadline comes before the tokens.
 */
#define MR_MAX 64
struct mr_entry {
	uint64_t	id;
	uint32_t	n;
	uint64_t	since;
	uint64_t	deadline;	/* 0: none */
};

struct mr_out {
	uint64_t	id;
	uint64_t	at;		/* granted at; 0: timed out */
	uint64_t	since;
};

static void test_rate_model(void)
{
	static const uint32_t rates[][3] = {	/* rate, period, burst */
		{ 5000, 3600000, 100 }, { 3, 7, 5 }, { 1, 1000, 1 },
		{ 1000, 1000, 50 }, { 7, 60000, 3 }, { 13, 1000, 4 },
	};
	static struct mr_entry q[MR_MAX];
	static struct mr_out o[4 * MR_MAX];
	struct sm *sm;
	struct sm_client *a;
	uint64_t level, cap, id = 10, target, e, need, m_now;
	uint32_t rate, period, burst, n;
	int qn, no, step, v, i, j, grants = 0, timeouts = 0;
	Semd__InfoReply *in;
	Semd__Grant *g;

	TEST_START("rate against a model: grants at the exact ms, level exact");
	for (v = 0; v < 6; v++) {
		rate = rates[v][0];
		period = rates[v][1];
		burst = rates[v][2];
		now = 100000;
		sm = t_new(1700000000000ULL, NULL);
		a = t_client(sm, 1, "uid:1", 0);
		t_create_rate(sm, a, 2, "m", 0, rate, period, burst);
		expect_code(1, 2, SEMD__CODE__OK);
		cap = (uint64_t)burst * period;
		level = cap;
		m_now = now;
		qn = 0;
		for (step = 0; step < 2000 && failures == 0; step++) {
			if (m_rand() % 3 != 0 && qn < MR_MAX) {
				n = 1 + (uint32_t)(m_rand() % burst);
				if (qn == 0 && level >= (uint64_t)n * period) {
					t_down(sm, a, ++id, "m", n, -1, 0);
					grant_of(1, id);
					level -= (uint64_t)n * period;
					continue;
				}
				q[qn].id = ++id;
				q[qn].n = n;
				q[qn].since = now;
				q[qn].deadline = m_rand() % 4 == 0 ?
				    now + 1 + m_rand() % (3 * (uint64_t)period / rate + 3) : 0;
				t_down(sm, a, id, "m", n, q[qn].deadline ?
				    (int64_t)(q[qn].deadline - now) : -1, 0);
				EXPECT(none(1, id));
				qn++;
				continue;
			}
			/* Time passes to target: the model goes event by event. */
			target = now + 1 + m_rand() % (6 * (uint64_t)period / rate + 6);
			no = 0;
			for (;;) {
				e = target;
				if (qn > 0) {
					need = (uint64_t)q[0].n * period;
					if (level >= need)
						e = m_now;
					else if (m_now + (need - level + rate - 1) / rate < e)
						e = m_now + (need - level + rate - 1) / rate;
				}
				for (i = 0; i < qn; i++)
					if (q[i].deadline != 0 && q[i].deadline < e)
						e = q[i].deadline;
				level += (e - m_now) * (uint64_t)rate;
				if (level > cap)
					level = cap;
				m_now = e;
				for (i = 0, j = 0; i < qn; i++) {
					if (q[i].deadline != 0 && q[i].deadline <= e) {
						o[no].id = q[i].id;
						o[no++].at = 0;
						continue;
					}
					q[j++] = q[i];
				}
				qn = j;
				while (qn > 0 && level >= (uint64_t)q[0].n * period) {
					level -= (uint64_t)q[0].n * period;
					o[no].id = q[0].id;
					o[no].since = q[0].since;
					o[no++].at = e;
					memmove(q, q + 1, (size_t)--qn * sizeof q[0]);
				}
				if (e == target)
					break;
			}
			/* The state machine: one tick, or a few, to target. */
			if (m_rand() % 2)
				t_tick(sm, now + (target - now) / 2);
			t_tick(sm, target);
			for (i = 0; i < no; i++) {
				if (o[i].at == 0) {
					expect_code(1, o[i].id, SEMD__CODE__TIMEOUT);
					timeouts++;
					continue;
				}
				g = grant_of(1, o[i].id);
				if (g != NULL && g->waited_us != (o[i].at - o[i].since) * 1000)
					FAIL("rate %u/%u: %" PRIu64 " waited %" PRIu64
					    " us, the model %" PRIu64 " ms", rate, period,
					    o[i].id, g->waited_us, o[i].at - o[i].since);
				grants++;
			}
			for (i = 0; i < qn; i++)
				EXPECT(none(1, q[i].id));
			in = info_of(sm, a, 1, 3, "m");
			if (in != NULL && in->tokens_nano != level / period *
			    1000000000ULL + level % period * 1000000000ULL / period)
				FAIL("rate %u/%u: level %" PRIu64 " units, daemon %"
				    PRIu64 " nano", rate, period, level, in->tokens_nano);
			if (ncaps > MAX_CAPS - 400)
				caps_clear();
		}
		t_end(sm);
	}
	printf("# %d grants and %d timeouts as the model said\n", grants, timeouts);
	EXPECT(grants > 1000 && timeouts > 50);
}

/*
 * The bucket's arithmetic alone, a billion refills: exact, no drift. The
 * level after T ms of refills is rate * T units whatever the steps.
 */
static void test_rate_billion(void)
{
	uint64_t whole = 0, frac = 0, units = 0, i, add = 0, n;
	const char *env = getenv("SEMD_TEST_REFILLS");

	n = env != NULL ? strtoull(env, NULL, 10) : 1000000000ULL;
	TEST_START("a billion refills: exact to the unit");
	for (i = 0; i < n; i++) {
		uint64_t dt = 1 + (i & 3);	/* 1, 2, 3, 4 ms */

		add += sm_rate_accrue(&whole, &frac, 3, 7, 1u << 30, dt);
		units += 3 * dt;
	}
	EXPECT_U64(units / 7, whole);
	EXPECT_U64(units % 7, frac);
	EXPECT_U64(whole, add);
	printf("# %" PRIu64 " refills: %" PRIu64 " tokens and %" PRIu64
	    "/7, exactly rate x time\n", n, whole, frac);
	whole = 5;
	frac = 0;
	EXPECT_U64(0, sm_rate_accrue(&whole, &frac, 3, 7, 5, 1000));
	EXPECT_U64(5, whole);
	whole = 0;
	EXPECT_U64(1u << 30, sm_rate_accrue(&whole, &frac, 1u << 30, 86400000,
	    1u << 30, UINT64_MAX / 2));	/* no overflow: capped */
	EXPECT_U64(0, frac);
	EXPECT_U64(3, sm_rate_wait_ms(0, 0, 1, 3, 1));
	EXPECT_U64(2, sm_rate_wait_ms(0, 1, 1, 3, 1));
	EXPECT_U64(0, sm_rate_wait_ms(2, 0, 1, 3, 2));
}

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
	struct sm_out out = { cap_reply, NULL, cap_close, NULL };
	struct sm *sm, *rs;
	struct sm_client *x, *z, *adm;
	uint8_t *s1 = NULL, *s2 = NULL;
	size_t l1 = 0, l2 = 0;
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
	if (sm_snapshot(sm, &s1, &l1) != 0)
		FAIL("snapshot");
	sm_config_defaults(&cfg);
	memcpy(cfg.hash_key, "another key!!!!!", 16);
	rs = sm_restore(&cfg, &out, s1, l1, err, sizeof err);
	if (rs == NULL) {
		FAIL("restore: %s", err);
		free(s1);
		sm_free(sm);
		return;
	}
	CHECK_SM(rs);
	if (sm_snapshot(rs, &s2, &l2) != 0 || l1 != l2 || memcmp(s1, s2, l1) != 0)
		FAIL("the restored state snapshots to other bytes");
	/* Both go on alike: the same replies, the same snapshots. */
	sm_free(sm);
	sm = rs;
	caps_clear();
	sm_client_bind(sm_client_find(sm, 1), (void *)1);
	sm_client_bind(sm_client_find(sm, 3), (void *)3);
	sm_client_bind(sm_client_find(sm, 5), (void *)5);
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
	free(s2);
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

int main(void)
{
	test_hello();
	test_op_table();
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
	test_rate();
	test_rate_limit();
	test_rate_model();
	test_rate_billion();
	test_multi();
	test_multi_snapshot();
	test_deadlock();
	test_watch();
	test_holds();
	caps_clear();
	return check_done("state");
}
