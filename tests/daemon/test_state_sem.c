/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_sem.c - the state machine driven directly, with fake
 * time (tests/daemon/test_state.h): semaphores and holds: the operations on
 * names and permits (sm_sem.c, sm_need.c, sm_down.c, sm_ops_name.c,
 * sm_ops_permit.c).
 */
#include "tests/daemon/test_state.h"

/* Send q again as request id (its fields changed since, or not). */
static void t_again(struct sm *sm, struct sm_client *c, struct req *q,
    uint64_t id)
{
	q->r.id = id;
	t_req(sm, c, &q->r);
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
		{ SEMD__REQUEST__OP_SET_QUEUE, "name", SM_RIGHT_MANAGE,
		    "set the queue of" },
		{ SEMD__REQUEST__OP_BACKUP, "", SM_RIGHT_MANAGE, "back up" },
		/* The node's: a change of the cluster wants admin (access.c). */
		{ SEMD__REQUEST__OP_CLUSTER, "", SM_RIGHT_INSPECT,
		    "inspect the cluster" },
	};
	const struct sm_op *op;
	struct req q;
	const char *name = "some/name", *got;
	size_t i, n = 0;

	TEST_START("op table: rights, the field with the name, refusals");
	EXPECT(sm_op(0) == NULL);
	EXPECT(sm_op(SEMD__REQUEST__OP_CLUSTER + 1) == NULL);
	/* Cluster is the node's, and no read: the state never runs it. */
	EXPECT(sm_op_is_node(SEMD__REQUEST__OP_CLUSTER));
	EXPECT(!sm_op_is_read(SEMD__REQUEST__OP_CLUSTER));
	EXPECT(!sm_op_is_node(SEMD__REQUEST__OP_DOWN));
	EXPECT(!sm_op_is_node(SEMD__REQUEST__OP_PING));
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
	for (i = 1; i <= SEMD__REQUEST__OP_CLUSTER; i++)
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

/* set-limit shrink revokes nobody; grow wakes waiters. */
static void test_set_limit(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_pair("set-limit shrink and grow", &a, &b);
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
	struct sm *sm = t_pair("delete with force", &a, &b);
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
	struct sm *sm = t_pair("a client's last semaphore after it is freed",
	    &a, &b);
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

/* Release of a waiter (by its seq): its creator, administrators, itself. */
static void test_release_waiter(void)
{
	struct sm_client *a, *b, *adm;
	struct sm *sm = t_start("a waiter is cancelled by its seq: by its own "
	    "principal or the name's manager, not another", NULL,
	    "uid:1 uid:2 uid:0", &a, &b, &adm);
	struct sm_caller user = { 0, { 0 } };
	Semd__Reply *r;
	uint64_t seq;

	t_who = &user;
	t_created(sm, a, 1, 1, "rw", 1, SEMD__MODE__OWNED);
	t_held(sm, a, 1, 2, "rw", 1);
	t_down(sm, b, 1, "rw", 1, -1, 0);
	t_down(sm, adm, 1, "rw", 1, -1, 0);
	r = t_info(sm, a, 1, 3, "rw", SEMD__CODE__OK);
	EXPECT(r && r->info->n_waiters == 2);
	seq = r && r->info->n_waiters == 2 ? r->info->waiters[0]->seq : 0;
	t_op(sm, adm, 2, SEMD__REQUEST__OP_RELEASE, "name=%s waiter=%" PRIu64, "rw", seq);
	expect_code(3, 2, SEMD__CODE__PERMISSION_DENIED);	/* not its own, no admin */
	t_op(sm, b, 2, SEMD__REQUEST__OP_RELEASE, "name=%s waiter=%" PRIu64, "rw", seq);
	expect_code(2, 1, SEMD__CODE__CANCELLED);		/* its down hears it */
	expect_code(2, 2, SEMD__CODE__OK);
	CHECK_SM(sm);
	t_op(sm, b, 3, SEMD__REQUEST__OP_RELEASE, "name=%s waiter=%" PRIu64, "rw", seq);
	expect_code(2, 3, SEMD__CODE__NOT_FOUND);
	r = t_info(sm, a, 1, 4, "rw", SEMD__CODE__OK);
	seq = r && r->info->n_waiters == 1 ? r->info->waiters[0]->seq : 0;
	t_op(sm, a, 5, SEMD__REQUEST__OP_RELEASE, "name=%s waiter=%" PRIu64, "rw", seq);
	expect_code(3, 1, SEMD__CODE__CANCELLED);		/* the creator may */
	expect_code(1, 5, SEMD__CODE__OK);
	r = t_info(sm, a, 1, 6, "rw", SEMD__CODE__OK);
	EXPECT(r && r->info->n_waiters == 0 && r->info->n_holders == 1);
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

int main(void)
{
	test_op_table();
	test_ops();
	test_fifo();
	test_npermits();
	test_set_limit();
	test_issue_set_limit_shrink_overgrant();
	test_delete();
	test_autocreate();
	test_name_cache();
	test_limits();
	test_invalid();
	test_name_bytes();
	test_info_cap();
	test_create_options();
	test_ownership();
	test_release_waiter();
	test_signal();
	test_tokens();
	caps_clear();
	return check_done("state sem");
}
