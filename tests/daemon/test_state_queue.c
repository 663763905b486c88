/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_queue.c - queue policies (sm_queue.c): a bound
 * on a name's waiters (QUEUE_FULL), replace keys (REPLACED), SetQueue,
 * their watch events, retries and snapshots, and the whole against a
 * model over many random steps.
 */
#include "tests/daemon/test_state.h"

/* SetQueue. */
static void t_set_queue(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t max)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_SET_QUEUE, "name=%s max_waiters=%u",
	    name, max);
}

/* Down with a replace key. */
#define t_down_key(sm, c, id, name, n, timeout, key)			\
	t_down_policy(sm, c, id, name, n, timeout, key, "")

/* A bound on the waiters: QUEUE_FULL at once, trydowns and grants untouched. */
static void test_max_waiters(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start_checked(1000, "max-waiters: a full queue refuses at once",
	    NULL, "uid:1 uid:2", &a, &b);
	Semd__InfoReply *in;
	Semd__Reply *r;

	t_op(sm, a, 2, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u max_waiters=%u", "q", 1, 2);
	expect_code(1, 2, SEMD__CODE__OK);
	t_held(sm, a, 1, 3, "q", 1);
	t_down(sm, b, 4, "q", 1, -1, 0);
	t_down(sm, b, 5, "q", 1, 5000, 0);
	EXPECT(none(2, 4) && none(2, 5));
	t_down(sm, b, 6, "q", 1, -1, 0);
	r = expect_code(2, 6, SEMD__CODE__QUEUE_FULL);
	EXPECT(r != NULL && strstr(r->message, "at most 2") != NULL);
	t_down(sm, b, 7, "q", 1, 0, 0);			/* a trydown: not concerned */
	expect_code(2, 7, SEMD__CODE__WOULD_BLOCK);
	in = info_of(sm, a, 1, 8, "q");
	EXPECT(in != NULL && in->max_waiters == 2 && in->waiters_total == 2);
	/* Lowered below the waiters there: nobody cancelled, new ones refused. */
	t_set_queue(sm, a, 9, "q", 1);
	expect_code(1, 9, SEMD__CODE__OK);
	EXPECT(none(2, 4) && none(2, 5));
	t_down(sm, b, 10, "q", 1, -1, 0);
	expect_code(2, 10, SEMD__CODE__QUEUE_FULL);
	t_cancel(sm, b, 11, 5);
	expect_code(2, 11, SEMD__CODE__OK);
	expect_code(2, 5, SEMD__CODE__CANCELLED);
	t_down(sm, b, 12, "q", 1, -1, 0);		/* 1 waits: still full */
	expect_code(2, 12, SEMD__CODE__QUEUE_FULL);
	t_set_queue(sm, a, 13, "q", 0);			/* no bound */
	expect_code(1, 13, SEMD__CODE__OK);
	t_down(sm, b, 14, "q", 1, -1, 0);
	EXPECT(none(2, 14));
	t_set_queue(sm, a, 15, "q", (1u << 30) + 1);
	expect_code(1, 15, SEMD__CODE__INVALID_ARGUMENT);
	t_set_queue(sm, a, 16, "nosuch", 3);
	expect_code(1, 16, SEMD__CODE__NOT_FOUND);
	t_op(sm, a, 17, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u max_waiters=%u", "big", 1,
	    (1u << 30) + 1);
	expect_code(1, 17, SEMD__CODE__INVALID_ARGUMENT);
	/* A multi-name down is bounded on every name. */
	t_set_queue(sm, a, 18, "q", 2);
	expect_code(1, 18, SEMD__CODE__OK);
	{
		static const char *const qz[] = { "z", "q" };

		t_multi(sm, b, 19, qz, NULL, 2, -1, 0);
		expect_code(2, 19, SEMD__CODE__QUEUE_FULL);
	}
	EXPECT_U64(3, t_stat(sm, a, 1, "replies_down_QUEUE_FULL"));
	EXPECT_U64(1, t_stat(sm, a, 1, "replies_down_multi_QUEUE_FULL"));
	t_end(sm);
}

/* Replace keys: latest wins, within one principal. */
static void test_replace(void)
{
	struct sm_client *a, *a2, *b, *w;
	struct sm *sm = t_start_checked(1000, "replace: a newer down with the key cancels the older",
	    NULL, "uid:1 uid:1 uid:2 uid:0", &a, &a2, &b, &w);
	Semd__WatchEvent *ev;
	Semd__InfoReply *in;
	Semd__Reply *r;

	t_watch(sm, w, 2, "q", false);
	expect_code(4, 2, SEMD__CODE__OK);
	t_op(sm, a, 2, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u max_waiters=%u", "q", 1, 3);
	expect_code(1, 2, SEMD__CODE__OK);
	event_of(4, EVENT_CREATE, "q");
	t_held(sm, b, 3, 3, "q", 1);
	event_of(4, EVENT_GRANT, "q");
	t_down_key(sm, a, 4, "q", 1, -1, "deploy");
	t_down_key(sm, b, 5, "q", 1, -1, "deploy");	/* uid:2's own key */
	t_down(sm, a, 6, "q", 1, -1, 0);
	event_of(4, EVENT_WAIT, "q");
	event_of(4, EVENT_WAIT, "q");
	event_of(4, EVENT_WAIT, "q");
	EXPECT(none(1, 4) && none(3, 5) && none(1, 6));
	in = info_of(sm, a, 1, 7, "q");
	EXPECT(in != NULL && in->n_waiters == 3 && in->waiters_total == 3 &&
	    strcmp(in->waiters[0]->replace, "deploy") == 0 &&
	    strcmp(in->waiters[1]->replace, "deploy") == 0 &&
	    strcmp(in->waiters[2]->replace, "") == 0);
	/* Another session of uid:1: replaces 4, not uid:2's 5; full, but not grown. */
	t_down_key(sm, a2, 8, "q", 1, -1, "deploy");
	EXPECT(none(2, 8));
	r = expect_code(1, 4, SEMD__CODE__REPLACED);
	EXPECT(r != NULL && strstr(r->message, "request 8") != NULL);
	EXPECT(none(3, 5));
	event_of(4, EVENT_WAIT, "q");
	ev = event_of(4, EVENT_REPLACED, "q");
	EXPECT(ev != NULL && ev->request_id == 4 && ev->waiters == 3 &&
	    ev->max_waiters == 3);
	/* The retry of the replaced down is answered the same. */
	t_down_key(sm, a, 4, "q", 1, -1, "deploy");
	expect_code(1, 4, SEMD__CODE__REPLACED);
	/* Full, and no key to replace: refused. */
	t_down_key(sm, a, 9, "q", 1, -1, "other");
	expect_code(1, 9, SEMD__CODE__QUEUE_FULL);
	/* A bad key. */
	t_down_key(sm, a, 10, "q", 1, -1, "two words");
	expect_code(1, 10, SEMD__CODE__INVALID_ARGUMENT);
	t_down_key(sm, a, 11, "q", 1, -1,
	    "k1234567890123456789012345678901234567890123456789012345678901234");
	expect_code(1, 11, SEMD__CODE__INVALID_ARGUMENT);
	/* Served in order: 5, 6, 8. */
	t_up(sm, b, 12, "q", 1, 0);
	expect_code(3, 12, SEMD__CODE__OK);
	grant_of(3, 5);
	t_up(sm, b, 13, "q", 1, 0);
	grant_of(1, 6);
	t_up(sm, a, 14, "q", 1, 0);
	grant_of(2, 8);
	/* A down granted at once replaces a parked waiter... none here: a key
	 * granted at once with nobody to replace is plain. */
	t_up(sm, a2, 15, "q", 1, 0);
	expect_code(2, 15, SEMD__CODE__OK);
	t_down_key(sm, a, 16, "q", 1, 0, "deploy");
	grant_of(1, 16);
	t_end(sm);
}

/*
 * A down answered REPLACED, its retry's answer lost with the client's
 * connection: the next retry hears REPLACED again, never waits or is
 * granted (the cluster simulation's seed 1133529021); a TIMEOUT alike.
 */
static void test_replace_retried_twice(void)
{
	struct sm_client *a, *a2, *h, *x;
	struct sm *sm = t_start_checked(1000, "replace: a replaced down retried twice is answered REPLACED twice",
	    NULL, "uid:1/5000 uid:1 uid:2", &a, &a2, &h);
	uint64_t sid = sm_client_session(a);
	Semd__InfoReply *in;

	t_op(sm, h, 20, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u", "q", 1);
	expect_code(3, 20, SEMD__CODE__OK);
	t_held(sm, h, 3, 2, "q", 1);
	t_down_key(sm, a, 4, "q", 1, -1, "k");
	sm_client_close(sm, a, now);		/* away, its waiter kept */
	x = sm_client_open(sm, (uint64_t)4, (void *)4, "uid:1", secret_a, 0, now);
	t_hello(sm, x, 1, 5000, sid, secret_a);
	expect_code(4, 1, SEMD__CODE__OK);
	t_down_key(sm, x, 4, "q", 1, -1, "k");	/* the retry: it waits on */
	EXPECT(none(4, 4));
	t_down_key(sm, a2, 8, "q", 1, -1, "k");
	expect_code(4, 4, SEMD__CODE__REPLACED);
	t_down_key(sm, x, 4, "q", 1, -1, "k");	/* a retry sent before it heard */
	expect_code(4, 4, SEMD__CODE__REPLACED);
	sm_client_close(sm, x, now);		/* and gone before it heard */
	x = sm_client_open(sm, (uint64_t)5, (void *)5, "uid:1", secret_a, 0, now);
	t_hello(sm, x, 1, 5000, sid, secret_a);
	expect_code(5, 1, SEMD__CODE__OK);
	t_down_key(sm, x, 4, "q", 1, -1, "k");
	expect_code(5, 4, SEMD__CODE__REPLACED);
	in = info_of(sm, h, 3, 3, "q");
	EXPECT(in != NULL && in->waiters_total == 1);
	t_up(sm, h, 4, "q", 1, 0);
	grant_of(2, 8);
	t_up(sm, a2, 9, "q", 1, 0);
	expect_code(2, 9, SEMD__CODE__OK);
	EXPECT(none(5, 4));
	in = info_of(sm, h, 3, 5, "q");
	EXPECT(in != NULL && in->waiters_total == 0 && in->available == 1);
	/* A timed-out down, retried twice, times out twice; nothing is held. */
	t_held(sm, h, 3, 6, "q", 1);
	t_down(sm, x, 10, "q", 1, 100, 0);
	t_tick(sm, now + 100);
	expect_code(5, 10, SEMD__CODE__TIMEOUT);
	t_down(sm, x, 10, "q", 1, 100, 0);
	expect_code(5, 10, SEMD__CODE__TIMEOUT);
	t_down(sm, x, 10, "q", 1, 100, 0);
	expect_code(5, 10, SEMD__CODE__TIMEOUT);
	t_up(sm, h, 7, "q", 1, 0);
	EXPECT(none(5, 10));
	in = info_of(sm, h, 3, 8, "q");
	EXPECT(in != NULL && in->waiters_total == 0 && in->available == 1);
	t_end(sm);
}

/* A waiter of an away session with a key is replaced by a down granted at once. */
static void test_replace_parked(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start_checked(1000, "replace: a down granted at once replaces a parked waiter",
	    NULL, "uid:1/60000 uid:1", &a, &b);
	Semd__InfoReply *in;

	t_op(sm, a, 2, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u mode=%d initial=%u initial_set=%d", "s", 1,
	    1, 0, 1);
	expect_code(1, 2, SEMD__CODE__OK);
	t_down_key(sm, a, 3, "s", 1, -1, "job");
	EXPECT(none(1, 3));
	{
		struct req q;

		t_req(sm, a, req_op(&q, 4, SEMD__REQUEST__OP_DETACH));
		expect_code(1, 4, SEMD__CODE__OK);
	}
	sm_client_close(sm, a, now);		/* away: its signal waiter parks */
	t_up(sm, b, 5, "s", 1, 0);
	expect_code(2, 5, SEMD__CODE__OK);
	in = info_of(sm, b, 2, 6, "s");
	EXPECT(in != NULL && in->waiters_total == 1 && in->available == 1);
	t_down_key(sm, b, 7, "s", 1, 0, "job");
	grant_of(2, 7);
	in = info_of(sm, b, 2, 8, "s");
	EXPECT(in != NULL && in->waiters_total == 0 && in->available == 0);
	t_end(sm);
}

/* Policies and keys in a snapshot, and on alike after a restore. */
static void test_queue_snapshot(void)
{
	struct sm *sm, *rs;
	struct sm_client *a, *b;

	sm = t_start_checked(1000, "snapshot: bounds and replace keys come back",
	    NULL, "uid:1 uid:2", &a, &b);
	t_op(sm, a, 2, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u max_waiters=%u", "q", 1, 2);
	t_op(sm, a, 3, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u", "r", 1);
	t_held(sm, a, 1, 4, "q", 1);
	t_down_key(sm, b, 5, "q", 1, -1, "k");
	t_down(sm, b, 6, "q", 1, -1, 0);
	t_set_queue(sm, a, 7, "nosuch", 1);	/* a reply of the new op counted */
	expect_code(1, 7, SEMD__CODE__NOT_FOUND);
	if ((rs = t_snap_restore(sm, "yet another key!", NULL, NULL)) == NULL) {
		t_end(sm);
		return;
	}
	sm = t_switch(sm, rs);
	caps_clear();
	EXPECT_U64(1, t_stat(sm, sm_client_find(sm, 1), 1,
	    "replies_set_queue_NOT_FOUND"));
	b = sm_client_find(sm, 2);
	t_down(sm, b, 8, "q", 1, -1, 0);
	expect_code(2, 8, SEMD__CODE__QUEUE_FULL);
	t_down_key(sm, b, 9, "q", 1, -1, "k");
	expect_code(2, 5, SEMD__CODE__REPLACED);
	t_end(sm);
}

/* Down with a priority. */
static void t_down_prio(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t n, int64_t timeout, int prio)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_DOWN, "name=%s n=%u timeout_ms=%" PRId64
	    " priority=%d", name, n, timeout, prio);
}

/* Classes first, FIFO within one, the head not starved, aging. */
static void test_priorities(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start_checked(1000, "priorities: classes, FIFO within, the head blocks, aging",
	    NULL, "uid:1 uid:2", &a, &b);
	Semd__InfoReply *in;
	Semd__Grant *g;
	uint64_t p1;

	t_op(sm, a, 2, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u", "p", 3);
	expect_code(1, 2, SEMD__CODE__OK);
	g = t_held(sm, a, 1, 3, "p", 3);
	p1 = g != NULL ? g->permit_id : 0;
	t_down_prio(sm, b, 10, "p", 1, -1, 0);
	t_down_prio(sm, b, 11, "p", 1, -1, 2);
	t_down_prio(sm, b, 12, "p", 3, -1, 5);	/* a big one, the highest */
	t_down_prio(sm, b, 13, "p", 1, -1, 2);
	t_down_prio(sm, b, 14, "p", 1, -1, -8);
	t_down_prio(sm, b, 15, "p", 1, -1, 8);
	expect_code(2, 15, SEMD__CODE__INVALID_ARGUMENT);
	t_down_prio(sm, b, 16, "p", 1, -1, -9);
	expect_code(2, 16, SEMD__CODE__INVALID_ARGUMENT);
	in = info_of(sm, a, 1, 17, "p");
	EXPECT(in != NULL && in->n_waiters == 5 &&
	    in->waiters[0]->request_id == 12 && in->waiters[0]->priority == 5 &&
	    in->waiters[1]->request_id == 11 && in->waiters[2]->request_id == 13 &&
	    in->waiters[3]->request_id == 10 && in->waiters[4]->request_id == 14);
	/* One page at a time, by the line's order. */
	t_op(sm, a, 18, SEMD__REQUEST__OP_INFO, "name=%s max=%u", "p", 2);
	in = expect_code(1, 18, SEMD__CODE__OK)->info;
	EXPECT(in->n_waiters == 2 && in->next_waiter == 2);	/* 11's seq */
	t_op(sm, a, 19, SEMD__REQUEST__OP_INFO, "name=%s max=%u after_waiter=%u",
	    "p", 2, 2);		/* 11 arrived second */
	in = expect_code(1, 19, SEMD__CODE__OK)->info;
	EXPECT(in->n_waiters == 2 && in->waiters[0]->request_id == 13 &&
	    in->waiters[1]->request_id == 10);
	/* The big head is not passed: 1 free is not for the small ones. */
	t_up(sm, a, 20, "p", 1, 0);
	expect_code(1, 20, SEMD__CODE__OK);
	EXPECT(none(2, 11) && none(2, 13) && none(2, 10));
	t_up(sm, a, 21, "p", 2, 0);
	grant_of(2, 12);
	(void)p1;
	/* A trydown of a higher class passes lower waiters if free. */
	t_op(sm, b, 22, SEMD__REQUEST__OP_UP, "name=%s n=%u", "p", 1);
	grant_of(2, 11);
	t_op(sm, b, 23, SEMD__REQUEST__OP_UP, "name=%s n=%u", "p", 1);
	grant_of(2, 13);
	t_op(sm, b, 24, SEMD__REQUEST__OP_UP, "name=%s n=%u", "p", 1);
	grant_of(2, 10);
	/* 14 (class -8) waits: 1 of 3 held by b (10), and 14 waits alone. */
	t_end(sm);

	sm = t_start_checked(1000, "priorities: aging - 10 s a class", NULL,
	    "uid:1 uid:2", &a, &b);
	t_op(sm, a, 2, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u", "p", 1);
	t_held(sm, a, 1, 3, "p", 1);
	t_down_prio(sm, b, 10, "p", 1, -1, 0);
	t_tick(sm, now + 30000);		/* 10 waited 30 s: worth class 3 */
	t_down_prio(sm, b, 11, "p", 1, -1, 3);	/* ties: the older first */
	t_down_prio(sm, b, 12, "p", 1, -1, 4);	/* before 10 */
	t_down_prio(sm, b, 13, "p", 1, -1, 2);	/* after 10 */
	in = info_of(sm, a, 1, 4, "p");
	EXPECT(in != NULL && in->n_waiters == 4 &&
	    in->waiters[0]->request_id == 12 && in->waiters[1]->request_id == 10 &&
	    in->waiters[2]->request_id == 11 && in->waiters[3]->request_id == 13);
	/* Class -8 against a stream of class 7: first after 150 s. */
	t_down_prio(sm, b, 20, "p", 1, -1, -8);
	t_tick(sm, now + 149999);
	t_down_prio(sm, b, 21, "p", 1, -1, 7);
	t_tick(sm, now + 1);			/* a tie: the older first */
	t_down_prio(sm, b, 22, "p", 1, -1, 7);
	in = info_of(sm, a, 1, 5, "p");
	EXPECT(in != NULL && in->n_waiters == 7 &&
	    in->waiters[4]->request_id == 21 && in->waiters[5]->request_id == 20 &&
	    in->waiters[6]->request_id == 22);
	t_end(sm);
}

/* Multi-name downs with priorities: one order on every name, no deadlock. */
static void test_priorities_multi(void)
{
	static const char *const ab[] = { "a", "b" }, *const ba[] = { "b", "a" };
	struct sm_client *a, *b, *c;
	struct sm *sm = t_start_checked(1000, "priorities: multi-name downs keep one order",
	    NULL, "uid:1 uid:2 uid:3", &a, &b, &c);
	Semd__InfoReply *in;
	struct req q;

	t_held(sm, a, 1, 2, "a", 1);
	t_held(sm, a, 1, 3, "b", 1);
	t_multi(sm, b, 4, ab, NULL, 2, -1, 0);			/* class 0 */
	{
		Semd__Want wv[2] = { SEMD__WANT__INIT, SEMD__WANT__INIT };
		Semd__Want *wp[2] = { &wv[0], &wv[1] };

		wv[0].name = (char *)ba[0];
		wv[1].name = (char *)ba[1];
		req_make(&q, 5, SEMD__REQUEST__OP_DOWN_MULTI, "timeout_ms=%d priority=%d",
		    -1, 3);
		q.r.down_multi->n_wants = 2;
		q.r.down_multi->wants = wp;
		t_req(sm, c, &q.r);
	}
	in = info_of(sm, a, 1, 6, "a");
	EXPECT(in != NULL && in->n_waiters == 2 && in->waiters[0]->request_id == 5);
	in = info_of(sm, a, 1, 7, "b");
	EXPECT(in != NULL && in->n_waiters == 2 && in->waiters[0]->request_id == 5);
	t_up(sm, a, 8, "a", 1, 0);
	expect_code(1, 8, SEMD__CODE__OK);
	EXPECT(none(3, 5) && none(2, 4));
	t_up(sm, a, 9, "b", 1, 0);
	multi_of(3, 5, ba, 2);
	EXPECT(none(2, 4));
	t_end(sm);
}

/*
 * The model: a few names, their free permits, bounds and FIFO queues of
 * (conn, id, n, key), holds by permit id; clients 1 to 4 are one
 * principal, 5 and 6 another, and each holds or waits for one thing at a
 * time (so that no cycle of holds forms: no DEADLOCK). Random downs (keys or not, trydowns), ups,
 * cancels and bounds; every reply the state machine sends must be the
 * model's, and no other; each name's queue (Info) the model's, in order.
 * Now and then the state is snapshotted, restored on another hash key and
 * the run goes on with the copy.
 */
#define QM_NAMES	3
#define QM_Q		16
#define QM_HOLDS	64
#define QM_CLIENTS	6
struct qm_wait {
	uintptr_t	conn;
	uint64_t	id;
	uint32_t	n;
	int		key;		/* 0: none */
	int		prio;
	uint64_t	order;		/* arrival + (7 - prio) x 10 s */
};
struct qm_name {
	uint32_t	limit, max;
	long		free;
	int		nq;
	struct qm_wait	q[QM_Q];
};
struct qm_hold {
	uintptr_t	conn;
	uint64_t	permit;
	int		name;
	uint32_t	n;
};
static struct qm_name qn[QM_NAMES];
static struct qm_hold qh[QM_HOLDS];
static int nqh;
static uint64_t qm_rng = 0x2545f4914f6cdd1dULL;
static const char *const qm_names[QM_NAMES] = { "m0", "m1", "m2" };
static const char *const qm_keys[] = { "", "a", "b", "c" };

/* A grant the state machine must have sent: recorded as a hold. */
static void qm_granted(uintptr_t conn, uint64_t id, int name, uint32_t n)
{
	Semd__Grant *g = grant_of(conn, id);

	if (g == NULL || nqh == QM_HOLDS)
		return;
	EXPECT_U64(n, g->n);
	qh[nqh].conn = conn;
	qh[nqh].permit = g->permit_id;
	qh[nqh].name = name;
	qh[nqh++].n = n;
}

/* The queue of name i hands off: every head that fits is granted. */
static void qm_hand_off(int i)
{
	struct qm_name *m = &qn[i];

	while (m->nq > 0 && m->free >= (long)m->q[0].n) {
		m->free -= m->q[0].n;
		qm_granted(m->q[0].conn, m->q[0].id, i, m->q[0].n);
		memmove(m->q, m->q + 1, (size_t)--m->nq * sizeof m->q[0]);
	}
}

/* Take waiter j of name i off its queue. */
static void qm_drop(int i, int j)
{
	struct qm_name *m = &qn[i];

	memmove(m->q + j, m->q + j + 1, (size_t)(m->nq - j - 1) * sizeof m->q[0]);
	m->nq--;
}

/* Is there an unused reply left? */
static int qm_left(void)
{
	int i, n = 0;

	for (i = 0; i < ncaps; i++)
		if (!caps[i].used) {
			if (n++ == 0)
				FAIL("reply not in the model: conn %lu id %" PRIu64
				    " code %d (%s)", (unsigned long)caps[i].conn,
				    caps[i].r->id, caps[i].r->code, caps[i].r->message);
		}
	return n;
}

/* The state machine snapshotted and restored; clients bound again. */
static struct sm *qm_restore(struct sm *sm, struct sm_client **c)
{
	const uint8_t key[16] = { (uint8_t)qm_rng };	/* another each time */
	struct sm *rs = t_snap_restore(sm, key, NULL, NULL);
	int k;

	if (rs == NULL)
		return sm;
	sm = t_switch(sm, rs);
	for (k = 1; k <= QM_CLIENTS; k++)
		c[k] = sm_client_find(sm, (uint64_t)k);
	return sm;
}

static void test_queue_model(void)
{
	struct sm_client *c[QM_CLIENTS + 1] = { NULL };
	struct sm *sm;
	const char *env = getenv("SEMD_TEST_STEPS");
	long steps = env != NULL ? atol(env) : 1000000;
	uint64_t id = 100, r;
	long step;
	uint64_t order, oldid;
	int i, j, k, key, old, what, prio, pos, passed = 0, restores = 0, replaced = 0, full = 0;
	uint32_t n;
	uintptr_t conn;
	Semd__InfoReply *in;

	sm = t_start_checked(1000, "queue policies and priorities against a model", NULL,
	    "uid:1 uid:1 uid:1 uid:1 uid:2 uid:2", &c[1], &c[2], &c[3], &c[4],
	    &c[5], &c[6]);
	t_check_each = false;		/* sm_check every 97 steps instead */
	for (i = 0; i < QM_NAMES; i++) {
		qn[i].limit = 1 + (uint32_t)i;
		qn[i].free = qn[i].limit;
		qn[i].max = (uint32_t)i;
		t_op(sm, c[1], ++id, SEMD__REQUEST__OP_CREATE,
		    "name=%s limit=%u max_waiters=%u", qm_names[i], qn[i].limit,
		    qn[i].max);
		expect_code(1, id, SEMD__CODE__OK);
	}
	for (step = 0; step < steps && failures == 0; step++) {
		r = xs64(&qm_rng);
		i = (int)(r % QM_NAMES);
		r /= QM_NAMES;
		conn = 1 + (uintptr_t)(r % QM_CLIENTS);
		r /= QM_CLIENTS;
		/*
		 * A client that holds something does not wait (no cycle of
		 * holds, no DEADLOCK to model): it gives back instead.
		 */
		what = (int)(r % 8);
		for (k = 0; k < nqh && qh[k].conn != conn; k++)
			;
		if (k < nqh && what < 4)
			what = 4;			/* an up */
		for (j = 0; j < QM_NAMES * QM_Q && what < 4; j++)
			if (j % QM_Q < qn[j / QM_Q].nq &&
			    qn[j / QM_Q].q[j % QM_Q].conn == conn)
				what = 8;		/* nothing */
		switch (what) {
		case 0: case 1: case 2: case 3: {	/* a down, maybe keyed */
			bool try = (r >> 3) % 5 == 0;
			struct qm_name *m = &qn[i];

			if (m->nq == QM_Q)
				break;		/* the model's room */
			n = 1 + (uint32_t)((r >> 6) % qn[i].limit);
			key = (int)((r >> 9) % 4);
			prio = (r >> 11) % 2 ? 0 : (int)((r >> 12) % 16) - 8;
			order = now + (uint64_t)(7 - prio) * 10000;
			old = -1;
			for (j = 0; key != 0 && j < m->nq; j++)
				if (m->q[j].key == key &&
				    (m->q[j].conn > 4) == (conn > 4))
					old = j;
			oldid = old >= 0 ? m->q[old].id : 0;
			/* Its place: after every waiter of a smaller or equal order. */
			for (pos = 0; pos < m->nq && m->q[pos].order <= order; pos++)
				;
			++id;
			t_op(sm, c[conn], id, SEMD__REQUEST__OP_DOWN, "name=%s n=%u timeout_ms=%"
			    PRId64 " replace=%s priority=%d", qm_names[i], n,
			    (int64_t)(try ? 0 : -1), qm_keys[key], prio);
			if (pos == 0 && m->free >= (long)n) {
				m->free -= n;
				qm_granted(conn, id, i, n);
			} else if (try) {
				expect_code(conn, id, SEMD__CODE__WOULD_BLOCK);
				break;
			} else if (m->max != 0 &&
			    m->nq - (old >= 0) >= (int)m->max) {
				expect_code(conn, id, SEMD__CODE__QUEUE_FULL);
				full++;
				break;
			} else {
				memmove(m->q + pos + 1, m->q + pos,
				    (size_t)(m->nq - pos) * sizeof m->q[0]);
				m->q[pos].conn = conn;
				m->q[pos].id = id;
				m->q[pos].n = n;
				m->q[pos].key = key;
				m->q[pos].prio = prio;
				m->q[pos].order = order;
				m->nq++;
				passed += pos < m->nq - 1;
			}
			for (old = -1, j = 0; oldid != 0 && j < m->nq; j++)
				if (m->q[j].id == oldid)
					old = j;
			if (old >= 0) {
				expect_code(m->q[old].conn, m->q[old].id,
				    SEMD__CODE__REPLACED);
				qm_drop(i, old);
				replaced++;
				qm_hand_off(i);
			}
			break;
		}
		case 4: case 5:				/* an up of a hold */
			if (nqh == 0)
				break;
			k = (int)((r >> 3) % (uint64_t)nqh);
			t_up(sm, c[qh[k].conn], ++id, qm_names[qh[k].name], 0,
			    qh[k].permit);
			expect_code(qh[k].conn, id, SEMD__CODE__OK);
			j = qh[k].name;
			qn[j].free += qh[k].n;
			qh[k] = qh[--nqh];
			qm_hand_off(j);
			break;
		case 6:					/* a cancel */
			if (qn[i].nq == 0)
				break;
			j = (int)((r >> 3) % (uint64_t)qn[i].nq);
			conn = qn[i].q[j].conn;
			t_cancel(sm, c[conn], ++id, qn[i].q[j].id);
			expect_code(conn, id, SEMD__CODE__OK);
			expect_code(conn, qn[i].q[j].id, SEMD__CODE__CANCELLED);
			qm_drop(i, j);
			qm_hand_off(i);
			break;
		case 7:					/* a new bound */
			qn[i].max = (uint32_t)((r >> 3) % 5);
			t_set_queue(sm, c[1], ++id, qm_names[i], qn[i].max);
			expect_code(1, id, SEMD__CODE__OK);
			break;
		default:
			break;
		}
		if (qm_left() != 0)
			break;
		if (step % 97 == 0) {
			CHECK_SM(sm);
			in = info_of(sm, c[1], 1, ++id, qm_names[i]);
			if (in != NULL && (in->waiters_total != (uint32_t)qn[i].nq ||
			    in->available != qn[i].free || in->max_waiters != qn[i].max))
				FAIL("step %ld: %s has %u waiters, %" PRId64
				    " free, bound %u; the model %d, %ld, %u", step,
				    qm_names[i], in->waiters_total, in->available,
				    in->max_waiters, qn[i].nq, qn[i].free, qn[i].max);
			for (j = 0; in != NULL && j < qn[i].nq &&
			    j < (int)in->n_waiters; j++)
				if (in->waiters[j]->request_id != qn[i].q[j].id ||
				    in->waiters[j]->priority != qn[i].q[j].prio ||
				    strcmp(in->waiters[j]->replace,
				    qm_keys[qn[i].q[j].key]) != 0)
					FAIL("step %ld: %s waiter %d is %" PRIu64
					    ", the model's %" PRIu64, step, qm_names[i],
					    j, in->waiters[j]->request_id, qn[i].q[j].id);
		}
		if (xs64(&qm_rng) % 4 == 0)		/* time passes */
			t_tick(sm, now + xs64(&qm_rng) % 4000);
		if (step % 5003 == 5002) {
			sm = qm_restore(sm, c);
			restores++;
		}
		if (ncaps > 1000)
			caps_clear();
	}
	for (k = 0; k < nqh; k++)
		t_up(sm, c[qh[k].conn], ++id, qm_names[qh[k].name], 0, qh[k].permit);
	nqh = 0;
	printf("# %ld steps: %d replaced, %d refused QUEUE_FULL, %d restores, "
	    "%d queued before others\n", step, replaced, full, restores, passed);
	EXPECT(steps < 1000 || (replaced > steps / 1000 && full > steps / 1000 &&
	    passed > steps / 1000));
	t_end(sm);
}

int main(void)
{
	test_max_waiters();
	test_replace();
	test_replace_retried_twice();
	test_replace_parked();
	test_queue_snapshot();
	test_priorities();
	test_priorities_multi();
	test_queue_model();
	caps_clear();
	return check_done("state queue");
}
