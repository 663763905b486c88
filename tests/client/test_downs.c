/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/client/test_downs.c - the four downs (semc_down2() and its
 * asynchronous and multi-name forms, with one struct semc_down_options)
 * and the older downs kept for compatibility: each of the twelve older
 * calls is made here as a program of an older release makes it, against
 * the real semd, and gives what it gave (its grant, the checks it made
 * before sending, its policy handed on to the daemon). tests/client/abi.sh
 * checks that their symbols keep their versions.
 */
#include "tests/client/api.h"

/* What an asynchronous down's callback got. */
struct got {
	bool done;
	int error;
	uint32_t n;		/* a grant's permits, or the first named grant's */
	uint64_t permit_id;
	size_t names;		/* a multi-name grant's names */
};

/* An asynchronous down completed: note its outcome. */
static void on_got(struct semc *c, const struct semc_result *r, void *arg)
{
	struct got *g = arg;

	(void)c;
	g->done = true;
	g->error = r->error;
	if (r->grant != NULL) {
		g->n = r->grant->n;
		g->permit_id = r->grant->permit_id;
	}
	if (r->multi != NULL && r->multi->n > 0) {
		g->names = r->multi->n;
		g->n = r->multi->grants[0].n;
	}
}

/* Pump c until g's down completed (3 s at most): its error is want. */
#define GOT(c, g, want) do {						\
	PUMP_UNTIL(c, (g).done, 3000);					\
	CHECK((g).done, "the callback ran");				\
	CHECK_EQ(want, (g).error);					\
} while (0)

/* Whether name has one waiter, of priority prio and replace key key,
 * within 3 s (a down another handle sent may not have reached the daemon
 * yet when this handle asks). */
static bool waiter_is(struct semc *c, const char *name, int prio, const char *key)
{
	long long end = t_now_ms() + 3000;
	struct semc_info *in;
	bool ok = false;

	/* bounded: 3 s */
	while (!ok && t_now_ms() < end) {
		in = NULL;
		if (semc_info(c, name, &in) == 0)
			ok = in->n_waiter_classes == 1 && in->waiter_classes[0].priority == prio &&
			     strcmp(in->waiter_classes[0].replace, key) == 0;
		semc_info_free(in);
		if (!ok)
			t_sleep_ms(10);
	}
	return ok;
}

/* The limit of name (0: no such name). */
static uint32_t limit_of(struct semc *c, const char *name)
{
	struct semc_info *in = NULL;
	uint32_t limit = 0;

	if (semc_info(c, name, &in) == 0)
		limit = in->limit;
	semc_info_free(in);
	return limit;
}

/* The four downs take what their options say. */
static void test_downs(struct semc *c, struct semc *h)
{
	struct semc_want w[2] = { { .name = "d2/m1", .n = 1 }, { .name = "d2/m2", .n = 2 } };
	struct semc_down_options o = SEMC_DOWN_OPTIONS_INIT;
	struct semc_multi_grant *mg = NULL;
	struct got a = { 0 }, b = { 0 }, m = { 0 };
	struct semc_grant g, g2, gh;
	struct semc_info *in = NULL;
	int64_t id;

	TEST_START("semc_down2 and its forms take what their options say");
	CHECK_EQ(0, semc_create(h, "d2/a", 3, SEMC_MODE_OWNED, false));
	CHECK_EQ(0, semc_down2(c, "d2/a", NULL, &g));	/* NULL: one, waiting */
	CHECK_EQ(1, g.n);
	o.n = 2;
	o.timeout_ms = 0;
	CHECK_EQ(0, semc_down2(c, "d2/a", &o, &g2));
	CHECK_EQ(2, g2.n);
	o.n = 1;
	CHECK_EQ(SEMC_E_WOULD_BLOCK, semc_down2(c, "d2/a", &o, NULL));
	o.timeout_ms = 100;
	CHECK_EQ(SEMC_E_TIMEOUT, semc_down2(c, "d2/a", &o, NULL));
	CHECK_EQ(0, semc_up(c, "d2/a", 0, g.permit_id, NULL));
	CHECK_EQ(0, semc_up(c, "d2/a", 0, g2.permit_id, NULL));

	o = (struct semc_down_options)SEMC_DOWN_OPTIONS_INIT;
	o.create_limit = 5;
	o.lease_ms = 60000;
	CHECK_EQ(0, semc_down2(c, "d2/new", &o, &g));
	CHECK_EQ(5, limit_of(c, "d2/new"));
	CHECK_EQ(0, semc_info(c, "d2/new", &in));
	if (in != NULL && in->n_holders == 1)
		CHECK(in->holders[0].detached && in->holders[0].expires_ms > 0, "a detached hold");
	semc_info_free(in);

	/* the policy goes with the request: priority, replace key */
	CHECK_EQ(0, semc_create(h, "d2/p", 1, SEMC_MODE_OWNED, false));
	CHECK_EQ(0, semc_down(h, "d2/p", 1, 1000, 0, &gh));
	o = (struct semc_down_options)SEMC_DOWN_OPTIONS_INIT;
	o.priority = 3;
	o.replace = "job";
	id = semc_down2_async(c, "d2/p", &o, on_got, &a);
	CHECK(id > 0, "queued: %lld", (long long)id);
	CHECK(waiter_is(h, "d2/p", 3, "job"), "it waits with priority 3, key job");
	o.priority = 1;
	CHECK(semc_down2_async(c, "d2/p", &o, on_got, &b) > 0, "a second with the key");
	GOT(c, a, SEMC_E_REPLACED);
	CHECK(waiter_is(h, "d2/p", 1, "job"), "the newer waits in its place");
	CHECK_EQ(0, semc_up(h, "d2/p", 0, gh.permit_id, NULL));
	GOT(c, b, 0);
	CHECK_EQ(1, b.n);

	/* several names at once */
	CHECK_EQ(0, semc_create(h, "d2/m1", 2, SEMC_MODE_OWNED, false));
	CHECK_EQ(0, semc_create(h, "d2/m2", 2, SEMC_MODE_OWNED, false));
	CHECK_EQ(0, semc_down2_multi(c, w, 2, NULL, &mg));
	CHECK(mg != NULL && mg->n == 2 && mg->grants[1].n == 2, "both names granted");
	semc_multi_grant_free(mg);
	mg = NULL;
	o = (struct semc_down_options)SEMC_DOWN_OPTIONS_INIT;
	o.timeout_ms = 0;
	CHECK_EQ(SEMC_E_WOULD_BLOCK, semc_down2_multi(c, w, 2, &o, &mg));
	CHECK(mg == NULL, "no grant");
	w[1].n = 0;
	w[0].name = "d2/m3";
	w[0].create_limit = 4;
	CHECK(semc_down2_multi_async(c, w, 1, &o, on_got, &m) > 0, "a multi-name down queued");
	GOT(c, m, 0);
	CHECK_EQ(1, m.names);
	CHECK_EQ(4, limit_of(c, "d2/m3"));
	delete_names(h, (const char *const[]){ "d2/a", "d2/new", "d2/p", "d2/m1", "d2/m2",
					       "d2/m3", NULL });
}

/* Options a down cannot take are refused before anything is sent. */
static void test_options_checked(struct semc *c)
{
	struct semc_want w[17];
	struct semc_down_options o, zero;
	struct semc_multi_grant *mg = NULL;
	size_t i;

	TEST_START("semc_down2's options are checked before anything is sent");
	memset(&zero, 0, sizeof zero);
	for (i = 0; i < 17; i++)
		w[i] = (struct semc_want){ .name = "d2/chk", .n = 1 };
	CHECK_EQ(SEMC_E_ARG, semc_down2(c, "d2/chk", &zero, NULL));
	CHECK(strstr(semc_last_message(), "version") != NULL, "says why: %s",
	      semc_last_message());
	o = (struct semc_down_options)SEMC_DOWN_OPTIONS_INIT;
	o.version = SEMC_DOWN_OPTIONS_VERSION + 1;
	CHECK_EQ(SEMC_E_ARG, semc_down2(c, "d2/chk", &o, NULL));
	CHECK_EQ(SEMC_E_ARG, semc_down2_async(c, "d2/chk", &zero, on_got, NULL));
	CHECK_EQ(SEMC_E_ARG, semc_down2_multi(c, w, 1, &zero, &mg));
	o = (struct semc_down_options)SEMC_DOWN_OPTIONS_INIT;
	o.priority = SEMC_PRIO_MAX + 1;
	CHECK_EQ(SEMC_E_ARG, semc_down2(c, "d2/chk", &o, NULL));
	o.priority = SEMC_PRIO_MIN - 1;
	CHECK_EQ(SEMC_E_ARG, semc_down2_multi_async(c, w, 1, &o, on_got, NULL));
	o = (struct semc_down_options)SEMC_DOWN_OPTIONS_INIT;
	o.replace = "k";
	CHECK_EQ(SEMC_E_ARG, semc_down2_multi(c, w, 1, &o, &mg));
	CHECK(strstr(semc_last_message(), "replace") != NULL, "says why: %s",
	      semc_last_message());
	o = (struct semc_down_options)SEMC_DOWN_OPTIONS_INIT;
	o.n = 2;
	CHECK_EQ(SEMC_E_ARG, semc_down2_multi(c, w, 1, &o, &mg));
	o.n = 0;
	CHECK_EQ(SEMC_E_ARG, semc_down2_multi(c, w, 17, &o, &mg));
	CHECK_EQ(SEMC_E_ARG, semc_down2_multi(c, NULL, 1, &o, &mg));
	CHECK(mg == NULL, "no grant");
	o.lease_ms = semc_max_lease(c) + 1;
	CHECK_EQ(SEMC_E_INVALID, semc_down2(c, "d2/chk", &o, NULL));
	CHECK_EQ(SEMC_E_INVALID, semc_down2_multi(c, w, 1, &o, &mg));
	CHECK_EQ(SEMC_E_INVALID, semc_down2(c, "", NULL, NULL));
	CHECK_EQ(SEMC_E_ARG, semc_down2(c, NULL, NULL, NULL));
	CHECK_EQ(0, semc_pending(c));
	CHECK_EQ(0, limit_of(c, "d2/chk"));	/* nothing reached the daemon */
}

/* Each older down, as a program of an older release calls it. */
static void test_older_downs(struct semc *c, struct semc *h)
{
	struct semc_down_opts so = { .n = 2, .timeout_ms = 1000 };
	struct semc_down_policy pol = { .priority = 2, .replace = "old" };
	struct semc_want w[2] = { { .name = "old/m1", .n = 1 }, { .name = "old/m2", .n = 1 } };
	struct semc_multi_grant *mg = NULL, *sentinel = (struct semc_multi_grant *)&so;
	struct got a = { 0 }, b = { 0 }, m = { 0 }, mp = { 0 }, p = { 0 };
	struct semc_grant g, g2, gh;

	TEST_START("the older downs, kept for compatibility, behave as before");
	CHECK_EQ(0, semc_create(h, "old/a", 2, SEMC_MODE_OWNED, false));
	CHECK_EQ(0, semc_down(c, "old/a", 2, 1000, 0, &g));			/* LIBSEMCLIENT_1 */
	CHECK_EQ(2, g.n);
	CHECK_EQ(SEMC_E_WOULD_BLOCK, semc_trydown(c, "old/a", 1, &g2));
	CHECK_EQ(SEMC_E_TIMEOUT, semc_down(c, "old/a", 1, 100, 0, &g2));
	CHECK(semc_down_async(c, "old/a", 1, -1, 0, on_got, &a) > 0, "semc_down_async");
	CHECK_EQ(0, semc_up(c, "old/a", 0, g.permit_id, NULL));
	GOT(c, a, 0);
	CHECK_EQ(1, a.n);
	CHECK_EQ(0, semc_up(c, "old/a", 0, a.permit_id, NULL));
	CHECK_EQ(0, semc_trydown(c, "old/a", 1, &g2));
	CHECK_EQ(0, semc_up(c, "old/a", 0, g2.permit_id, NULL));

	so.create_limit = 3;
	CHECK_EQ(0, semc_down_ex(c, "old/b", &so, &g));				/* LIBSEMCLIENT_1.1 */
	CHECK_EQ(2, g.n);
	CHECK_EQ(3, limit_of(c, "old/b"));
	CHECK_EQ(SEMC_E_ARG, semc_down_ex(c, "old/b", NULL, &g));
	CHECK(strcmp(semc_last_message(), "no down options") == 0, "says why: %s",
	      semc_last_message());
	CHECK_EQ(SEMC_E_ARG, semc_down_ex(c, NULL, &so, &g));
	CHECK(semc_down_ex_async(c, "old/b", &so, on_got, &b) > 0, "semc_down_ex_async");
	CHECK_EQ(SEMC_E_ARG, semc_down_ex_async(c, "old/b", NULL, on_got, &b));
	CHECK_EQ(0, semc_up(c, "old/b", 0, g.permit_id, NULL));
	GOT(c, b, 0);
	CHECK_EQ(2, b.n);

	CHECK_EQ(0, semc_create(h, "old/m1", 4, SEMC_MODE_OWNED, false));
	CHECK_EQ(0, semc_create(h, "old/m2", 4, SEMC_MODE_OWNED, false));
	CHECK_EQ(0, semc_down_multi(c, w + 1, 1, 1000, 0, &mg));		/* LIBSEMCLIENT_1.2 */
	CHECK(mg != NULL && mg->n == 1, "semc_down_multi");
	semc_multi_grant_free(mg);
	mg = NULL;
	CHECK_EQ(SEMC_E_ARG, semc_down_multi(c, w, 0, 1000, 0, &mg));
	CHECK(semc_down_multi_async(c, w, 1, 1000, 0, on_got, &m) > 0, "semc_down_multi_async");
	GOT(c, m, 0);
	CHECK_EQ(1, m.names);

	/* LIBSEMCLIENT_1.4: a policy, handed on; checked as before */
	CHECK_EQ(0, semc_create(h, "old/p", 1, SEMC_MODE_OWNED, false));
	CHECK_EQ(0, semc_down(h, "old/p", 1, 1000, 0, &gh));
	so = (struct semc_down_opts){ .n = 1, .timeout_ms = -1 };
	CHECK(semc_down_policy_async(c, "old/p", &so, &pol, on_got, &p) > 0,
	      "semc_down_policy_async");
	CHECK(waiter_is(h, "old/p", 2, "old"), "it waits with priority 2, key old");
	so.timeout_ms = 100;
	pol.priority = 5;
	CHECK_EQ(SEMC_E_TIMEOUT, semc_down_policy(c, "old/p", &so, &pol, &g));
	GOT(c, p, SEMC_E_REPLACED);	/* replaced by the blocking one */
	CHECK_EQ(SEMC_E_ARG, semc_down_policy(c, "old/p", &so, NULL, &g));
	CHECK(strcmp(semc_last_message(), "no policy") == 0, "says why: %s", semc_last_message());
	pol.priority = SEMC_PRIO_MIN - 1;
	CHECK_EQ(SEMC_E_ARG, semc_down_policy(c, "old/p", &so, &pol, &g));
	CHECK(strcmp(semc_last_message(), "priority out of range") == 0, "says why: %s",
	      semc_last_message());
	CHECK_EQ(SEMC_E_ARG, semc_down_policy(c, "old/p", NULL, &pol, &g));
	CHECK_EQ(SEMC_E_ARG, semc_down_policy_async(c, "old/p", &so, NULL, on_got, NULL));
	CHECK_EQ(0, semc_up(h, "old/p", 0, gh.permit_id, NULL));

	pol = (struct semc_down_policy){ .priority = 1 };
	CHECK_EQ(0, semc_down_multi_policy(c, w, 2, 1000, 0, &pol, &mg));
	CHECK(mg != NULL && mg->n == 2, "semc_down_multi_policy");
	semc_multi_grant_free(mg);
	mg = sentinel;
	CHECK_EQ(SEMC_E_ARG, semc_down_multi_policy(c, w, 2, 1000, 0, NULL, &mg));
	CHECK(mg == NULL, "the result cleared");
	pol.replace = "k";
	mg = sentinel;
	CHECK_EQ(SEMC_E_ARG, semc_down_multi_policy(c, w, 2, 1000, 0, &pol, &mg));
	CHECK(mg == NULL, "the result cleared");
	CHECK(strcmp(semc_last_message(), "a multi-name down has no replace key or group") == 0,
	      "says why: %s", semc_last_message());
	CHECK_EQ(SEMC_E_ARG, semc_down_multi_policy_async(c, w, 2, 1000, 0, &pol, on_got, NULL));
	pol.replace = NULL;
	CHECK(semc_down_multi_policy_async(c, w, 2, 1000, 0, &pol, on_got, &mp) > 0,
	      "semc_down_multi_policy_async");
	GOT(c, mp, 0);
	CHECK_EQ(2, mp.names);
	delete_names(h, (const char *const[]){ "old/a", "old/b", "old/p", "old/m1", "old/m2",
					       NULL });
}

/* Start semd, run the tests, report. */
int main(void)
{
	struct semc *c, *h;

	watchdog_arm();
	if (api_daemon_start() != 0)
		return 1;
	c = open_client(D.unix_addr, 0);
	h = open_client(D.unix_addr, 0);
	CHECK(c != NULL && h != NULL, "connect");
	if (c != NULL && h != NULL) {
		test_downs(c, h);
		test_options_checked(c);
		test_older_downs(c, h);
	}
	semc_free(c);
	semc_free(h);
	return api_report();
}
