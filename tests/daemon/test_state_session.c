/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_session.c - the state machine driven directly, with
 * fake time (tests/daemon/test_state.h): sessions and clients: hello, leases,
 * detached holds, retries, notices, caps, shutdown (sm_session.c, sm_memo.c,
 * sm_client.c, sm_time.c, sm_principal.c).
 */
#include "tests/daemon/test_state.h"

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

/* A deadline fires exactly at its tick. */
static void test_deadline(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_pair("deadline expiry exactly at the tick", &a, &b);
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
	struct sm *sm = t_pair("disconnect frees holds at once", &a, &b);

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
	struct sm *sm = t_pair("idempotent retry", &a, &b);
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

/* A bare request of op (ping, detach). */
static void t_simple(struct sm *sm, struct sm_client *c, uint64_t id, int op)
{
	struct req q;

	t_req(sm, c, req_op(&q, id, op));
}

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

/* Shutdown answers every waiter UNAVAILABLE. */
static void test_shutdown(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_pair("shutdown", &a, &b);

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

/* Apply an entry of the batch's commands at state time t (and empty b). */
static void t_entry(struct sm *sm, struct sm_batch *b, uint64_t t)
{
	size_t hl = sm_entry_header_size();
	uint8_t *e = calloc(1, hl + b->len + 8);
	char err[128];

	if (e == NULL || b->failed) {
		FAIL("out of memory");
		free(e);
		return;
	}
	sm_entry_header(e, t, 1700000000000ULL + t);
	memcpy(e + hl, b->p, b->len);
	if (sm_apply(sm, e, hl + b->len, NULL, err, sizeof err) != 0)
		FAIL("entry refused: %s", err);
	free(e);
	sm_batch_reset(b);
	CHECK_SM(sm);
}

/* An EXPIRE entry of session s at state time t: does s live on? */
static bool t_expire(struct sm *sm, struct sm_batch *b, uint64_t s, uint64_t t)
{
	sm_batch_expire(b, s);
	t_entry(sm, b, t);
	return sm_session_exists(sm, s);
}

/*
 * A new leader's LEADER entry (its node, its grace) at now: the EXPIREs of
 * session s are refused until ms after it, and taken from then.
 */
static void t_leader_expires(struct sm *sm, struct sm_batch *b, uint64_t node,
    uint32_t grace, uint64_t s, uint64_t ms)
{
	sm_batch_leader(b, node, grace, "");
	t_entry(sm, b, now);
	EXPECT(t_expire(sm, b, s, now + ms - 1));
	EXPECT(!t_expire(sm, b, s, now + ms));
}

/*
 * Leases the leader's (issue 23): no timer ends a session; the leader's
 * memory of what it answered without an entry (sm_heard_local) and its
 * sweep (sm_leases_due) decide, an EXPIRE entry ends it unless an entry
 * heard it since; a new leader starts every lease afresh with the grace.
 */
static void test_leader_leases(void)
{
	struct sm_client *a, *b, *c;
	struct sm *sm = t_start("leases the leader's: EXPIRE entries end them",
	    NULL, "uid:1/3000 uid:2 uid:3/2000", &a, &b, &c);
	uint64_t t0 = now, sa = sm_client_session(a), sc = sm_client_session(c);
	uint64_t ids[8];
	struct sm_clock k;
	struct sm_batch bt;

	sm_batch_init(&bt);
	t_held(sm, a, 1, 2, "s", 1);
	t_down(sm, b, 2, "s", 1, -1, 0);
	sm_batch_leases(&bt, 300);
	t_entry(sm, &bt, now);
	EXPECT_U64(UINT64_MAX, sm_next_deadline(sm));	/* no lease timer */
	now = t0 + 60000;
	t_entry(sm, &bt, now);
	EXPECT(none(2, 2));
	EXPECT_I64(0, nclosed);
	EXPECT(sm_session_exists(sm, sa) && sm_session_exists(sm, sc));
	/* The leader took over at now, its clock at mono 5000. */
	sm_clock_start(&k, now, 0, 5000);
	EXPECT(sm_heard_local(sm, 1, 5000));
	EXPECT(!sm_heard_local(sm, 99, 5000));
	EXPECT_U64(1, sm_leases_due(sm, &k, 7000, 1000, ids, 8));
	EXPECT_U64(sc, ids[0]);			/* c: not heard by this leader */
	EXPECT_U64(0, sm_leases_due(sm, &k, 7999, 1000, ids, 8));  /* asked */
	EXPECT_U64(1, sm_leases_due(sm, &k, 8000, 5000, ids, 8));
	EXPECT_U64(sa, ids[0]);			/* a: heard at 5000, lease 3000 */
	/* A request through the log since: the EXPIRE is not taken. */
	t_simple(sm, c, 9, SEMD__REQUEST__OP_PING);
	expect_code(3, 9, SEMD__CODE__OK);
	EXPECT(t_expire(sm, &bt, sc, now + 1999));
	/* Nothing heard for the lease: the EXPIRE is. */
	EXPECT(!t_expire(sm, &bt, sa, now + 3000));
	expect_lost(1, SEMD__CODE__SESSION_EXPIRED, "s", 0);
	expect_code(1, 0, SEMD__CODE__SESSION_EXPIRED);
	grant_of(2, 2);
	EXPECT_I64(1, nclosed);
	/* A close leaves the session to its lease, however old heard is. */
	now += 3000;
	sm_client_close(sm, c, now + 5000);
	EXPECT(sm_session_exists(sm, sc));
	/* A new leader: every lease afresh from its entry, with the grace. */
	now += 100000;
	t_leader_expires(sm, &bt, 2, 500, sc, 2500);	/* lease 2000 + 500 */
	/* Without a grace, a new leader still gives the floor (300 ms). */
	{
		struct sm_client *d = t_client(sm, 4, "uid:4", 1000);
		uint64_t sd = sm_client_session(d);

		now += 10000;
		t_leader_expires(sm, &bt, 3, 0, sd, 1300);	/* 1000 + 300 */
	}
	/* And the flag outlives a snapshot. */
	{
		struct sm_client *d = t_client(sm, 5, "uid:4", 1000);
		struct sm_config cfg;
		struct sm *sm2;
		uint8_t *p;
		size_t len;
		char err[128];

		(void)d;
		EXPECT_I64(0, sm_snapshot(sm, &p, &len));
		sm_config_defaults(&cfg);
		sm2 = sm_restore(&cfg, NULL, p, len, err, sizeof err);
		EXPECT(sm2 != NULL);
		if (sm2 != NULL) {
			EXPECT_U64(UINT64_MAX, sm_next_deadline(sm2));
			CHECK_SM(sm2);
			sm_free(sm2);
		}
		free(p);
	}
	sm_batch_free(&bt);
	t_end(sm);
	now = t0;
}

int main(void)
{
	test_hello();
	test_deadline();
	test_disconnect();
	test_lease();
	test_detached();
	test_idempotent();
	test_lost_push();
	test_lease_silence();
	test_local_death();
	test_resume_place();
	test_principal_caps();
	test_shutdown();
	test_leader_leases();
	caps_clear();
	return check_done("state session");
}
