/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_idem.c - the state machine driven directly, with
 * fake time (tests/daemon/test_state.h): idempotency keys (sm_idem.c), kept
 * with the hold or waiter their down made, found again from any session of
 * their principal, forgotten with what they made.
 */
#include "tests/daemon/test_state.h"

/* A keyed down (hash h, "" for none) of one name. */
static void t_kdown(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, int64_t timeout, uint32_t lease, const char *key,
    const char *h)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_DOWN, "name=%s timeout_ms=%" PRId64
	    " lease_ms=%u idempotency_key=%s request_hash=%.*s", name, timeout,
	    lease, key, (int)strlen(h), h);
}

/* A keyed DownMulti of two names. */
static void t_kmulti(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *const *names, const char *key, const char *h)
{
	Semd__Want wv[2], *wp[2];
	struct req q;
	size_t i;

	for (i = 0; i < 2; i++) {
		semd__want__init(&wv[i]);
		wv[i].name = (char *)names[i];
		wv[i].n = 1;
		wp[i] = &wv[i];
	}
	req_make(&q, id, SEMD__REQUEST__OP_DOWN_MULTI, "timeout_ms=%d lease_ms=%u "
	    "idempotency_key=%s request_hash=%.*s", -1, 60000u, key,
	    (int)strlen(h), h);
	q.r.down_multi->n_wants = 2;
	q.r.down_multi->wants = wp;
	t_req(sm, c, &q.r);
}

/* The reply of id on k: refused, as another request's key. */
static void expect_reused_(int line, uintptr_t k, uint64_t id)
{
	Semd__Reply *r = expect_code_(line, k, id, SEMD__CODE__INVALID_ARGUMENT);

	if (r != NULL && !r->key_reused)
		FAIL("line %d: not said to be a key reused: %s", line, r->message);
}
#define expect_reused(k, id) expect_reused_(__LINE__, k, id)

/*
 * A key's hold, found from another session of the principal (and after a
 * snapshot); another request with the key refused; another principal's
 * key of the same text its own; a release forgets it.
 */
static void test_hold(void)
{
	struct sm_client *a, *b, *c;
	struct sm *sm = t_start_checked(1000, "a key's hold, from any session, "
	    "after a restore; forgotten with it", NULL, "uid:1 uid:1 uid:2",
	    &a, &b, &c), *rs;
	Semd__Grant *g, *g2;
	Semd__InfoReply *ir;
	uint64_t permit = 0, token = 0;

	t_create(sm, a, 2, "k/x", 2, SEMD__MODE__OWNED, 0);
	expect_code(1, 2, SEMD__CODE__OK);
	t_kdown(sm, a, 3, "k/x", -1, 60000, "K1", "h1");
	if ((g = grant_of(1, 3)) != NULL) {
		permit = g->permit_id;
		token = g->token;
	}
	t_kdown(sm, b, 2, "k/x", -1, 60000, "K1", "h1");
	g2 = grant_of(2, 2);
	EXPECT(g2 != NULL && g2->permit_id == permit && g2->token == token);
	ir = info_of(sm, a, 1, 4, "k/x");
	EXPECT(ir != NULL && ir->holders_total == 1);
	t_kdown(sm, b, 3, "k/x", -1, 60000, "K1", "h2");
	expect_reused(2, 3);
	t_kdown(sm, b, 4, "k/y", -1, 60000, "K1", "h1");
	expect_reused(2, 4);
	/* uid:2's K1 is another key */
	t_kdown(sm, c, 2, "k/x", -1, 60000, "K1", "h1");
	g2 = grant_of(3, 2);
	EXPECT(g2 != NULL && g2->permit_id != permit);
	/* a snapshot keeps the key with its hold */
	rs = t_snap_restore(sm, "another hash key", NULL, NULL);
	if (rs != NULL) {
		sm = t_switch(sm, rs);
		b = sm_client_find(sm, 2);
		t_kdown(sm, b, 5, "k/x", -1, 60000, "K1", "h1");
		g2 = grant_of(2, 5);
		EXPECT(g2 != NULL && g2->permit_id == permit);
	}
	t_up(sm, b, 6, "k/x", 0, permit);
	expect_code(2, 6, SEMD__CODE__OK);
	/* released: the key is forgotten, the same down takes a new permit */
	t_kdown(sm, b, 7, "k/x", -1, 60000, "K1", "h1");
	g2 = grant_of(2, 7);
	EXPECT(g2 != NULL && g2->permit_id != permit && g2->token > token);
	t_end(sm);
}

/*
 * A key's waiter: a retry is told it waits (Pending: its session, secret
 * and request); granted, the key goes with the hold; a waiter that ends
 * without a grant forgets it.
 */
static void test_wait(void)
{
	struct sm_client *a, *w, *b;
	struct sm *sm = t_start_checked(1000, "a key's waiter: Pending, then its "
	    "hold; a timeout forgets it", NULL, "uid:1 uid:1/30000 uid:1",
	    &a, &w, &b);
	Semd__Reply *r;
	Semd__Grant *g;
	uint64_t held = 0, granted = 0;

	if ((g = t_held(sm, a, 1, 2, "k/w", 1)) != NULL)
		held = g->permit_id;
	t_kdown(sm, w, 2, "k/w", -1, 60000, "K2", "h");
	EXPECT(none(2, 2));
	t_kdown(sm, b, 2, "k/w", 0, 60000, "K2", "h");
	r = expect_code(3, 2, SEMD__CODE__WOULD_BLOCK);
	EXPECT(r != NULL && r->body_case == SEMD__REPLY__BODY_PENDING);
	if (r != NULL && r->body_case == SEMD__REPLY__BODY_PENDING) {
		EXPECT_U64(sm_client_session(w), r->pending->session);
		EXPECT_U64(2, r->pending->request_id);
		EXPECT_U64(30000, r->pending->lease_ms);
		EXPECT(r->pending->secret.len == SM_SECRET_LEN &&
		    memcmp(r->pending->secret.data, secret_a, SM_SECRET_LEN) == 0);
	}
	/* a waiting retry (not a try) is told the same, and waits nowhere */
	t_kdown(sm, b, 3, "k/w", -1, 60000, "K2", "h");
	r = expect_code(3, 3, SEMD__CODE__WOULD_BLOCK);
	EXPECT(r != NULL && r->body_case == SEMD__REPLY__BODY_PENDING);
	t_kdown(sm, b, 4, "k/w", -1, 60000, "K2", "other");
	expect_reused(3, 4);
	t_up(sm, a, 3, "k/w", 0, held);
	if ((g = grant_of(2, 2)) != NULL)
		granted = g->permit_id;
	t_kdown(sm, b, 5, "k/w", 0, 60000, "K2", "h");
	g = grant_of(3, 5);
	EXPECT(g != NULL && g->permit_id == granted);
	/* a keyed waiter that times out forgets its key */
	t_kdown(sm, b, 6, "k/w", 50, 60000, "K3", "h");
	t_tick(sm, now + 50);
	expect_code(3, 6, SEMD__CODE__TIMEOUT);
	t_kdown(sm, b, 7, "k/w", 0, 60000, "K3", "h");
	r = expect_code(3, 7, SEMD__CODE__WOULD_BLOCK);
	EXPECT(r != NULL && r->body_case != SEMD__REPLY__BODY_PENDING);
	/* a try that would block keeps nothing either */
	t_up(sm, w, 8, "k/w", 0, granted);
	expect_code(2, 8, SEMD__CODE__OK);
	t_kdown(sm, b, 8, "k/w", 0, 60000, "K3", "h");
	EXPECT(grant_of(3, 8) != NULL);
	t_end(sm);
}

/*
 * A DownMulti's key: its holds again, those that remain after a release;
 * a single down with it refused; waiting, Pending.
 */
static void test_multi(void)
{
	static const char *const names[] = { "m/1", "m/2" };
	struct sm_client *a, *b, *w;
	struct sm *sm = t_start_checked(1000, "a DownMulti's key: its holds, "
	    "those left; Pending while it waits", NULL, "uid:1 uid:1 uid:1/30000",
	    &a, &b, &w);
	Semd__MultiGrant *mg;
	Semd__Reply *r;
	uint64_t p1 = 0, p2 = 0;

	t_kmulti(sm, a, 2, names, "K4", "h");
	if ((mg = multi_of(1, 2, names, 2)) != NULL) {
		p1 = mg->grants[0]->permit_id;
		p2 = mg->grants[1]->permit_id;
	}
	t_kmulti(sm, b, 2, names, "K4", "h");
	mg = multi_of(2, 2, names, 2);
	EXPECT(mg != NULL && mg->grants[0]->permit_id == p1 &&
	    mg->grants[1]->permit_id == p2);
	t_kdown(sm, b, 3, "m/1", -1, 60000, "K4", "h");
	expect_reused(2, 3);
	t_up(sm, a, 3, "m/1", 0, p1);
	expect_code(1, 3, SEMD__CODE__OK);
	t_kmulti(sm, b, 4, names, "K4", "h");
	r = expect_code(2, 4, SEMD__CODE__OK);
	EXPECT(r != NULL && r->body_case == SEMD__REPLY__BODY_MULTI_GRANT &&
	    r->multi_grant->n_grants == 1 &&
	    r->multi_grant->grants[0]->permit_id == p2);
	/* m/2 is held (limit 1): a keyed multi waits, a retry is told so */
	t_kmulti(sm, w, 2, names, "K5", "h");
	EXPECT(none(3, 2));
	t_kmulti(sm, b, 5, names, "K5", "h");
	r = expect_code(2, 5, SEMD__CODE__WOULD_BLOCK);
	EXPECT(r != NULL && r->body_case == SEMD__REPLY__BODY_PENDING &&
	    r->pending->session == sm_client_session(w));
	t_up(sm, a, 6, "m/2", 0, p2);
	expect_code(1, 6, SEMD__CODE__OK);
	mg = multi_of(3, 2, names, 2);
	t_kmulti(sm, b, 6, names, "K5", "h");
	r = expect_code(2, 6, SEMD__CODE__OK);
	EXPECT(mg != NULL && r != NULL &&
	    r->body_case == SEMD__REPLY__BODY_MULTI_GRANT &&
	    r->multi_grant->grants[0]->permit_id == mg->grants[0]->permit_id);
	t_end(sm);
}

/* What holds nothing keeps no key: a signal-mode grant, a refusal. */
static void test_nothing(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start_checked(1000, "a grant that holds nothing keeps "
	    "no key; bad keys refused", NULL, "uid:1 uid:1", &a, &b);
	char longkey[300];

	t_create(sm, a, 2, "sig", 2, SEMD__MODE__SIGNAL, 0);
	expect_code(1, 2, SEMD__CODE__OK);
	t_kdown(sm, a, 3, "sig", 0, 0, "K6", "h");
	EXPECT(grant_of(1, 3) != NULL);
	t_kdown(sm, b, 2, "sig", 0, 0, "K6", "h");
	EXPECT(grant_of(2, 2) != NULL);		/* another permit consumed */
	t_kdown(sm, b, 3, "sig", 0, 0, "K6", "h");
	expect_code(2, 3, SEMD__CODE__WOULD_BLOCK);
	memset(longkey, 'k', sizeof longkey - 1);
	longkey[sizeof longkey - 1] = '\0';
	t_kdown(sm, b, 4, "x", 0, 0, longkey, "h");
	expect_code(2, 4, SEMD__CODE__INVALID_ARGUMENT);
	t_kdown(sm, b, 5, "x", 0, 0, "a\tb", "h");
	expect_code(2, 5, SEMD__CODE__INVALID_ARGUMENT);
	t_end(sm);
}

int main(void)
{
	test_hold();
	test_wait();
	test_multi();
	test_nothing();
	caps_clear();
	return check_done("state idempotency key");
}
