/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_rate.c - the state machine driven directly, with
 * fake time (tests/daemon/test_state.h): token buckets: rates, a rate with a
 * limit, a model, a billion refills (sm_rate.c).
 */
#include "tests/daemon/test_state.h"

/* SetRate. */
static void t_set_rate(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t rate, uint32_t period, uint32_t burst)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_SET_RATE,
	    "name=%s rate=%u rate_period_ms=%u burst=%u", name, rate, period, burst);
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

int main(void)
{
	test_rate();
	test_rate_limit();
	test_rate_model();
	test_rate_billion();
	caps_clear();
	return check_done("state rate");
}
