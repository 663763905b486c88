/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state_share.c - fair shares (sm_share.c): weighted fair
 * queueing at hand-off between groups, by principal or by key; the shares
 * of 10,000 hand-offs with weights 1:3; info's groups; refusals; a
 * snapshot; and the whole against a model over many random steps.
 */
#include "tests/daemon/test_state.h"

/* Create a name with shares: weights "a=1 b=3" (groups and weights). */
static void t_create_share(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *name, uint32_t limit, int by, const char *weights)
{
	Semd__GroupWeight wv[8], *wp[8];
	char gname[8][65];
	struct req q;
	size_t n = 0;
	unsigned int w;
	int used;

	while (n < 8 && sscanf(weights, " %64[^=]=%u%n", gname[n], &w, &used) == 2) {
		semd__group_weight__init(&wv[n]);
		wv[n].group = gname[n];
		wv[n].weight = w;
		wp[n] = &wv[n];
		n++;
		weights += used;
	}
	req_make(&q, id, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u share=%d",
	    name, limit, by);
	q.r.create->n_weights = n;
	q.r.create->weights = wp;
	t_req(sm, c, &q.r);
	expect_code(k, id, SEMD__CODE__OK);
}

/* Down of group key (may be ""). */
#define t_down_group(sm, c, id, name, n, timeout, group)		\
	t_down_policy(sm, c, id, name, n, timeout, "", group)

/*
 * Two groups of weights 1 and 3 keep 8 downs each waiting on a name of
 * limit 4; each grant is given back at once, and a new down of the same
 * group queued: of 10,000 hand-offs, a quarter and three quarters.
 */
static void test_share_1_3(void)
{
	struct sm_client *a, *b;
	struct sm *sm = t_start_checked(1000, "shares 1:3, both saturating: 10,000 hand-offs",
	    NULL, "uid:1 uid:2", &a, &b);
	uint64_t id = 10, got[2] = { 0, 0 }, permit[64];
	uintptr_t k, conn[64];
	int i, np = 0, handoffs = 0;
	Semd__Grant *g;

	t_check_each = false;
	t_create_share(sm, a, 1, 2, "j", 4, SEMD__SHARE_BY__SHARE_KEY, "light=1 heavy=3");
	/* 4 held by a third group, then 8 waiting of each. */
	for (i = 0; i < 4; i++) {
		t_down_group(sm, a, ++id, "j", 1, -1, "other");
		g = grant_of(1, id);
		(void)g;
	}
	for (i = 0; i < 8; i++) {
		t_down_group(sm, a, ++id, "j", 1, -1, "light");
		t_down_group(sm, b, ++id, "j", 1, -1, "heavy");
	}
	/* The holds go one by one; each grant is given back and asked again. */
	for (i = 0; i < 4; i++) {
		t_up(sm, a, ++id, "j", 1, 0);
		expect_code(1, id, SEMD__CODE__OK);
	}
	/*
	 * Every hand-off: the grants made so far join the line of holds (in
	 * the order they came), the oldest hold is given back, its group asks
	 * again.
	 */
	while (handoffs < 10000 && failures == 0) {
		for (i = 0; i < ncaps; i++) {
			if (caps[i].used || caps[i].r->body_case != SEMD__REPLY__BODY_GRANT)
				continue;
			caps[i].used = 1;
			if (np == 64)
				break;
			k = caps[i].conn;
			got[k - 1]++;
			handoffs++;
			conn[np] = k;
			permit[np++] = caps[i].r->grant->permit_id;
		}
		caps_clear();
		if (np == 0) {
			FAIL("no grant to give back after %d hand-offs", handoffs);
			break;
		}
		k = conn[0];
		t_up(sm, k == 1 ? a : b, ++id, "j", 0, permit[0]);
		memmove(conn, conn + 1, (size_t)--np * sizeof conn[0]);
		memmove(permit, permit + 1, (size_t)np * sizeof permit[0]);
		t_down_group(sm, k == 1 ? a : b, ++id, "j", 1, -1,
		    k == 1 ? "light" : "heavy");
	}
	printf("# weights 1:3, both saturating: %" PRIu64 " and %" PRIu64
	    " of %d hand-offs (%.2f%% and %.2f%%)\n", got[0], got[1], handoffs,
	    100.0 * (double)got[0] / handoffs, 100.0 * (double)got[1] / handoffs);
	/* Exact to a grant or two: the tags are integers, the order is fixed. */
	EXPECT(got[0] >= 2490 && got[0] <= 2510 && got[0] + got[1] == 10000);
	CHECK_SM(sm);
	t_end(sm);
}

/* Groups by principal, lending, info, refusals. */
static void test_share_basics(void)
{
	static const char *const jx[] = { "j", "x" };
	struct sm_client *a, *b, *c;
	struct sm *sm = t_start_checked(1000, "shares: by principal, lent and given back, info",
	    NULL, "uid:1 uid:2 uid:3", &a, &b, &c);
	Semd__InfoReply *in;
	size_t i;

	t_create_share(sm, a, 1, 2, "j", 2, SEMD__SHARE_BY__SHARE_PRINCIPAL, "uid:2=3");
	/* uid:1 alone takes both: its share is lent. */
	t_held(sm, a, 1, 3, "j", 1);
	t_held(sm, a, 1, 4, "j", 1);
	t_down(sm, a, 5, "j", 1, -1, 0);	/* uid:1 waits, tag V or more */
	t_down(sm, b, 6, "j", 1, -1, 0);	/* uid:2 asks: the next hand-off */
	t_down(sm, c, 7, "j", 1, -1, 0);
	in = info_of(sm, a, 1, 8, "j");
	EXPECT(in != NULL && in->share == SEMD__SHARE_BY__SHARE_PRINCIPAL &&
	    in->n_groups == 3);
	for (i = 0; in != NULL && i < in->n_groups; i++) {
		const Semd__GroupInfo *gi = in->groups[i];

		if (strcmp(gi->group, "uid:1") == 0)
			EXPECT(gi->weight == 1 && gi->held == 2 && gi->waiting == 1 &&
			    gi->share == 0);	/* 2 x 1 / 5 */
		else if (strcmp(gi->group, "uid:2") == 0)
			EXPECT(gi->weight == 3 && gi->held == 0 && gi->waiting == 1 &&
			    gi->share == 1);	/* 2 x 3 / 5 */
		else
			EXPECT(strcmp(gi->group, "uid:3") == 0 && gi->waiting == 1);
	}
	/*
	 * uid:1 used its share and more (its tag is 2 permits on): the
	 * newcomers uid:2 and uid:3 get tag V, the next hand-offs, in the
	 * order they asked; uid:1's 5 after them.
	 */
	t_up(sm, a, 9, "j", 1, 0);
	expect_code(1, 9, SEMD__CODE__OK);
	grant_of(2, 6);
	t_up(sm, a, 10, "j", 1, 0);
	expect_code(1, 10, SEMD__CODE__OK);
	grant_of(3, 7);
	EXPECT(none(1, 5));
	/* Refusals. */
	t_down_group(sm, a, 11, "j", 1, -1, "k");
	expect_code(1, 11, SEMD__CODE__INVALID_ARGUMENT);	/* by principal */
	t_op(sm, a, 12, SEMD__REQUEST__OP_DOWN, "name=%s n=%u priority=%d", "j", 1, 2);
	expect_code(1, 12, SEMD__CODE__INVALID_ARGUMENT);
	t_multi(sm, a, 13, jx, NULL, 2, -1, 0);
	expect_code(1, 13, SEMD__CODE__INVALID_ARGUMENT);
	t_down_group(sm, a, 14, "plain", 1, -1, "k");
	expect_code(1, 14, SEMD__CODE__INVALID_ARGUMENT);
	t_op(sm, a, 15, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u share=%d mode=%d",
	    "sig", 2, SEMD__SHARE_BY__SHARE_KEY, SEMD__MODE__SIGNAL);
	expect_code(1, 15, SEMD__CODE__INVALID_ARGUMENT);
	t_end(sm);
}

/* Shares in a snapshot: groups, tags, holds and waiters come back. */
static void test_share_snapshot(void)
{
	struct sm *sm, *rs;
	struct sm_client *a, *b;

	sm = t_start_checked(1000, "snapshot: fair shares come back", NULL,
	    "uid:1 uid:2", &a, &b);
	t_create_share(sm, a, 1, 2, "j", 1, SEMD__SHARE_BY__SHARE_KEY, "x=2 y=1");
	t_down_group(sm, a, 3, "j", 1, -1, "x");
	grant_of(1, 3);
	t_down_group(sm, b, 4, "j", 1, -1, "y");
	t_down_group(sm, b, 5, "j", 1, -1, "");		/* uid:2, weight 1 */
	t_down_group(sm, a, 6, "j", 1, -1, "x");
	if ((rs = t_snap_restore(sm, "share key 123456", NULL, NULL)) != NULL) {
		sm = t_switch(sm, rs);
		caps_clear();
		a = sm_client_find(sm, 1);
		t_up(sm, a, 7, "j", 1, 0);
		expect_code(1, 7, SEMD__CODE__OK);
		grant_of(2, 4);		/* y's tag (V) before x's second */
	}
	t_end(sm);
}

/*
 * The model: one name of limit L, groups g0..g3 of weights 1..4 (g3 not
 * listed: weight 1, and forgotten when it holds and waits for nothing),
 * each down of one client; the model keeps V, each
 * group's finish tag and the queue in (tag, arrival) order, in its own
 * words: the tag of a down is the later of V and its group's finish, the
 * finish moves on by n x 65536 / w rounded up, the first in line is served
 * when its permits are free, V is the tag of the last grant. Random downs,
 * ups and cancels; every reply must be the model's.
 */
#define SM_Q	24
struct sq_wait {
	uintptr_t	conn;
	uint64_t	id, tag, arr;
	uint32_t	n;
	int		grp;
};
struct sq_hold {
	uintptr_t	conn;
	uint64_t	permit;
	uint32_t	n;
	int		grp;
};
static uint64_t sq_rng = 0x1234567887654321ULL;

static void test_share_model(void)
{
	static const char *const gn[4] = { "g0", "g1", "g2", "g3" };
	static const uint32_t gw[4] = { 1, 2, 3, 1 };
	struct sq_wait q[SM_Q];
	struct sq_hold h[64];
	struct sm_client *c[5];
	struct sm *sm;
	const char *env = getenv("SEMD_TEST_STEPS");
	long steps = env != NULL ? atol(env) / 4 : 250000, step;
	uint64_t V = 0, fin[4] = { 0, 0, 0, 0 }, id = 100, arr = 0, r, tag;
	uint32_t limit = 4, n;
	long freep = 4;
	int nq = 0, nh = 0, i, j, pos, g, grants = 0;
	uintptr_t conn;
	Semd__Grant *gr;

	sm = t_start_checked(1000, "fair shares against a model", NULL,
	    "uid:1 uid:1 uid:1 uid:1", &c[1], &c[2], &c[3], &c[4]);
	t_check_each = false;
	t_create_share(sm, c[1], 1, 2, "m", limit, SEMD__SHARE_BY__SHARE_KEY,
	    "g0=1 g1=2 g2=3");
	for (step = 0; step < steps && failures == 0; step++) {
		r = xs64(&sq_rng);
		conn = 1 + (uintptr_t)(r % 4);
		r /= 4;
		if (r % 8 < 4 && nq < SM_Q) {		/* a down */
			g = (int)((r >> 3) % 4);
			n = 1 + (uint32_t)((r >> 5) % 2);
			tag = fin[g] > V ? fin[g] : V;
			for (pos = 0; pos < nq && q[pos].tag <= tag; pos++)
				;
			t_down_group(sm, c[conn], ++id, "m", n, -1, gn[g]);
			fin[g] = tag + (((uint64_t)n << 16) + gw[g] - 1) / gw[g];
			if (pos == 0 && freep >= (long)n) {
				gr = grant_of(conn, id);
				freep -= n;
				if (tag > V)
					V = tag;
				h[nh].conn = conn;
				h[nh].permit = gr != NULL ? gr->permit_id : 0;
				h[nh].n = n;
				h[nh++].grp = g;
				grants++;
			} else {
				memmove(q + pos + 1, q + pos, (size_t)(nq - pos) * sizeof q[0]);
				q[pos].conn = conn;
				q[pos].id = id;
				q[pos].tag = tag;
				q[pos].arr = ++arr;
				q[pos].n = n;
				q[pos].grp = g;
				nq++;
			}
		} else if (r % 8 < 7 && nh > 0) {	/* an up */
			j = (int)((r >> 3) % (uint64_t)nh);
			t_up(sm, c[h[j].conn], ++id, "m", 0, h[j].permit);
			expect_code(h[j].conn, id, SEMD__CODE__OK);
			freep += h[j].n;
			h[j] = h[--nh];
		} else if (nq > 0) {			/* a cancel */
			j = (int)((r >> 3) % (uint64_t)nq);
			t_cancel(sm, c[q[j].conn], ++id, q[j].id);
			expect_code(q[j].conn, id, SEMD__CODE__OK);
			expect_code(q[j].conn, q[j].id, SEMD__CODE__CANCELLED);
			memmove(q + j, q + j + 1, (size_t)(nq - j - 1) * sizeof q[0]);
			nq--;
		}
		/* The hand-off. */
		while (nq > 0 && freep >= (long)q[0].n && nh < 64) {
			gr = grant_of(q[0].conn, q[0].id);
			freep -= q[0].n;
			if (q[0].tag > V)
				V = q[0].tag;
			h[nh].conn = q[0].conn;
			h[nh].permit = gr != NULL ? gr->permit_id : 0;
			h[nh].n = q[0].n;
			h[nh++].grp = q[0].grp;
			memmove(q, q + 1, (size_t)--nq * sizeof q[0]);
			grants++;
		}
		/* An unlisted group that holds and waits for nothing is forgotten. */
		for (i = 0, j = 0; i < nq; i++)
			j += q[i].grp == 3;
		for (i = 0; i < nh; i++)
			j += h[i].grp == 3;
		if (j == 0)
			fin[3] = 0;
		for (i = 0; i < ncaps; i++)
			if (!caps[i].used) {
				FAIL("step %ld: a reply not in the model: conn %lu id %"
				    PRIu64 " code %d", step, (unsigned long)caps[i].conn,
				    caps[i].r->id, caps[i].r->code);
				break;
			}
		if (step % 101 == 0)
			CHECK_SM(sm);
		if (ncaps > 1000)
			caps_clear();
	}
	printf("# %ld steps, %d grants as the model said\n", step, grants);
	EXPECT(steps < 1000 || grants > steps / 10);
	t_end(sm);
}

int main(void)
{
	test_share_basics();
	test_share_1_3();
	test_share_snapshot();
	test_share_model();
	caps_clear();
	return check_done("state share");
}
