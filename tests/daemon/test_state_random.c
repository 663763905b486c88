/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_random.c - the state machine driven directly, with
 * fake time (tests/daemon/test_state.h): random operations on four names
 * against a model of their queues (the whole machine).
 */
#include "tests/daemon/test_state.h"

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

int main(void)
{
	test_random();
	caps_clear();
	return check_done("state random");
}
