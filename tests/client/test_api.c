/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/client/test_api.c - libsemclient against the real semd: every
 * blocking operation and its error codes, over UNIX and TCP; threads sharing
 * one connection; the asynchronous form driven by poll(); session resume
 * across a network cut (a byte relay between client and daemon that the
 * test can cut); holds lost to a daemon restart; the calls the language
 * bindings use (test_api_sessions.c has the rest).
 */
#include "tests/client/api.h"

/* Every operation and its answers, on one connection. */
static void test_operations(const char *addr, bool is_unix)
{
	struct semc *c = open_client(addr, 0), *c2 = open_client(addr, 0);
	struct semc_session s;
	struct semc_grant g1, g2, g3;
	struct semc_info *in = NULL;
	struct semc_list *l = NULL;
	struct semc_stats *st = NULL;
	uint32_t released;
	uint64_t rtt;
	long long t0, el;
	bool valid;
	char name[64];
	int i, pages;
	size_t total;

	TEST_START(is_unix ? "operations over UNIX" : "operations over TCP");
	CHECK(c != NULL && c2 != NULL, "connect to %s", addr);
	if (c == NULL || c2 == NULL)
		goto out;
	CHECK_EQ(0, semc_session(c, &s));
	if (is_unix)
		CHECK(strncmp(s.principal, "uid:", 4) == 0, "principal over UNIX is '%s'", s.principal);
	else
		CHECK(strcmp(s.principal, "anonymous") == 0, "principal over TCP is '%s'", s.principal);
	CHECK(strncmp(s.server, "semd", 4) == 0, "server '%s'", s.server);

	CHECK_EQ(0, semc_create(c, "ops/a", 2, SEMC_MODE_OWNED, false));
	CHECK_EQ(SEMC_E_EXISTS, semc_create(c, "ops/a", 2, SEMC_MODE_OWNED, false));
	CHECK(strstr(semc_last_message(), "ops/a") != NULL, "message names the semaphore: '%s'",
	      semc_last_message());
	CHECK_EQ(0, semc_create(c, "ops/a", 5, SEMC_MODE_OWNED, true));
	CHECK_EQ(SEMC_E_INVALID, semc_create(c, "", 1, SEMC_MODE_OWNED, false));
	CHECK_EQ(SEMC_E_INVALID, semc_create(c, "ops/zero", 0, SEMC_MODE_OWNED, false));

	CHECK_EQ(0, semc_down(c, "ops/a", 1, 1000, 0, &g1));
	CHECK_EQ(0, semc_trydown(c, "ops/a", 1, &g2));
	CHECK(g2.token > g1.token, "tokens grow: %" PRIu64 " then %" PRIu64, g1.token, g2.token);
	CHECK(g1.permit_id != g2.permit_id, "distinct permit ids");
	CHECK_EQ(SEMC_E_WOULD_BLOCK, semc_trydown(c2, "ops/a", 1, &g3));
	t0 = t_now_ms();
	CHECK_EQ(SEMC_E_TIMEOUT, semc_down(c2, "ops/a", 1, 200, 0, &g3));
	el = t_now_ms() - t0;
	/* the daemon counts 200 ms from the request, after t0; the upper bound
	 * tells a timeout from none, with room for a loaded machine */
	CHECK(el >= 199 && el < 10000, "a 200 ms down timed out after %lld ms", el);

	CHECK_EQ(0, semc_validate(c2, "ops/a", g1.token, &valid));
	CHECK(valid, "token %" PRIu64 " is valid while held", g1.token);
	CHECK_EQ(SEMC_E_NOT_HOLDER, semc_up(c2, "ops/a", 1, 0, NULL));
	CHECK_EQ(SEMC_E_NOT_HOLDER, semc_up(c2, "ops/a", 0, g1.permit_id, NULL));

	CHECK_EQ(0, semc_info(c2, "ops/a", &in));
	if (in != NULL) {
		CHECK_EQ(2, in->limit);
		CHECK_EQ(0, in->available);
		CHECK_QUEUE(in, 2, 0);
		CHECK(in->n_holders > 0 && strcmp(in->holders[0].client_name, "test_api") == 0,
		      "holder's client name");
		CHECK(in->n_holders > 0 && in->holders[0].pid == (uint32_t)getpid(), "holder's pid");
		CHECK_EQ(g2.token, in->last_token);
	}
	semc_info_free(in);
	in = NULL;

	released = 0;
	CHECK_EQ(0, semc_up(c, "ops/a", 0, g1.permit_id, &released));
	CHECK_EQ(1, released);
	CHECK_EQ(0, semc_validate(c2, "ops/a", g1.token, &valid));
	CHECK(!valid, "token %" PRIu64 " is invalid once given back", g1.token);
	CHECK_EQ(0, semc_up(c, "ops/a", 1, 0, &released));
	CHECK_EQ(SEMC_E_NOT_HOLDER, semc_up(c, "ops/a", 1, 0, NULL));

	/* set-limit: shrink below what is held, grow again */
	CHECK_EQ(0, semc_down(c, "ops/a", 2, 1000, 0, &g1));
	CHECK_EQ(0, semc_set_limit(c, "ops/a", 1));
	CHECK_EQ(0, semc_info(c, "ops/a", &in));
	if (in != NULL)
		CHECK_EQ(-1, in->available);
	semc_info_free(in);
	in = NULL;
	CHECK_EQ(0, semc_up(c, "ops/a", 2, 0, NULL));
	CHECK_EQ(0, semc_set_limit(c, "ops/a", 3));
	CHECK_EQ(SEMC_E_NOT_FOUND, semc_set_limit(c, "ops/none", 3));

	/* release (admin) of another client's permit */
	CHECK_EQ(0, semc_down(c2, "ops/a", 1, 1000, 0, &g3));
	CHECK_EQ(0, semc_release(c, "ops/a", g3.permit_id, &released));
	CHECK_EQ(1, released);
	CHECK_EQ(SEMC_E_NOT_FOUND, semc_release(c, "ops/a", g3.permit_id, NULL));

	/* list with paging: 7 names, pages of 3 */
	for (i = 0; i < 7; i++) {
		snprintf(name, sizeof name, "page/%02d", i);
		CHECK_EQ(0, semc_create(c, name, 1, SEMC_MODE_OWNED, false));
	}
	total = 0;
	{
		char after[256] = "";

		for (pages = 0; pages < 10; pages++) {
			CHECK_EQ(0, semc_list(c, "page/", after, 3, &l));
			if (l == NULL)
				break;
			total += l->n;
			CHECK(l->n <= 3, "page of %zu", l->n);
			if (l->n > 0 && pages == 0)
				CHECK(strcmp(l->entries[0].name, "page/00") == 0, "first is %s",
				      l->entries[0].name);
			snprintf(after, sizeof after, "%s", l->next);
			semc_list_free(l);
			l = NULL;
			if (after[0] == '\0')
				break;
		}
	}
	CHECK_EQ(7, total);
	CHECK(pages >= 2, "paged (%d pages)", pages + 1);

	CHECK_EQ(0, semc_delete(c, "page/03", false));
	CHECK_EQ(SEMC_E_NOT_FOUND, semc_delete(c, "page/03", false));
	CHECK_EQ(SEMC_E_NOT_FOUND, semc_info(c, "page/03", &in));
	CHECK(semc_last_message()[0] != '\0', "a message for NOT_FOUND");

	/* signal mode: anyone may up, bounded by the limit */
	CHECK_EQ(0, semc_create(c, "ops/sig", 1, SEMC_MODE_SIGNAL, false));
	CHECK_EQ(0, semc_down(c, "ops/sig", 1, 1000, 0, &g1));
	CHECK_EQ(0, semc_up(c2, "ops/sig", 1, 0, NULL));
	CHECK_EQ(SEMC_E_EXHAUSTED, semc_up(c2, "ops/sig", 1, 0, NULL));

	CHECK_EQ(0, semc_stats(c, &st));
	CHECK(st != NULL && st->n > 0, "stats has counters");
	semc_stats_free(st);
	CHECK_EQ(0, semc_ping(c, &rtt));
	CHECK(rtt < 5000000, "rtt %" PRIu64 " us", rtt);
	CHECK_EQ(0, semc_pending(c));
	/* leave nothing behind for the next transport's run */
	CHECK_EQ(0, semc_delete(c, "ops/a", true));
	CHECK_EQ(0, semc_delete(c, "ops/sig", true));
	for (i = 0; i < 7; i++) {
		snprintf(name, sizeof name, "page/%02d", i);
		if (i != 3)
			CHECK_EQ(0, semc_delete(c, name, false));
	}
out:
	semc_free(c);
	semc_free(c2);
}

/* Connection failures and argument errors, no server needed. */
static void test_errors(void)
{
	struct semc *c = semc_new();
	char path[200];

	TEST_START("errors without a server");
	snprintf(path, sizeof path, "unix:%s/nothing.sock", D.dir);
	CHECK_EQ(0, semc_set_address(c, path));
	CHECK_EQ(SEMC_E_CONNECT, semc_connect(c, 1000));
	CHECK(strstr(semc_last_message(), "nothing.sock") != NULL, "message names the socket: %s",
	      semc_last_message());
	CHECK_EQ(SEMC_E_DISCONNECTED, semc_ping(c, NULL));
	CHECK_EQ(SEMC_E_ADDRESS, semc_set_address(c, "tcp:"));
	semc_free(c);
	semc_free(NULL);
}

/* --- threads sharing one connection ------------------------------------ */

#define T_THREADS	8
#define T_ITERS		60
#define T_LIMIT		3

static struct semc *shared;
static atomic_int inside, max_inside, thread_errors;

/* One worker: down, count who is inside, up. */
static void *worker(void *arg)
{
	struct semc_grant g;
	int i, now, m, r;

	for (i = 0; i < T_ITERS; i++) {
		if ((r = semc_down(shared, "threads", 1, 10000, 0, &g)) != 0) {
			fprintf(stderr, "thread down: %s\n", semc_last_message());
			atomic_fetch_add(&thread_errors, 1);
			continue;
		}
		now = atomic_fetch_add(&inside, 1) + 1;
		while ((m = atomic_load(&max_inside)) < now &&
		       !atomic_compare_exchange_weak(&max_inside, &m, now))
			;
		if (i % 7 == 0) {
			bool v;

			if (semc_validate(shared, "threads", g.token, &v) != 0 || !v)
				atomic_fetch_add(&thread_errors, 1);
		}
		atomic_fetch_sub(&inside, 1);
		if (semc_up(shared, "threads", 0, g.permit_id, NULL) != 0) {
			fprintf(stderr, "thread up: %s\n", semc_last_message());
			atomic_fetch_add(&thread_errors, 1);
		}
	}
	return arg;
}

/* Several threads on one handle: replies reach the right thread. */
static void test_threads(const char *addr)
{
	pthread_t th[T_THREADS];
	struct semc_info *in = NULL;
	int i;

	TEST_START("threads sharing one connection");
	shared = open_client(addr, 0);
	CHECK(shared != NULL, "connect");
	if (shared == NULL)
		return;
	CHECK_EQ(0, semc_create(shared, "threads", T_LIMIT, SEMC_MODE_OWNED, false));
	for (i = 0; i < T_THREADS; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (i = 0; i < T_THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(0, atomic_load(&thread_errors));
	CHECK(atomic_load(&max_inside) <= T_LIMIT, "at most %d inside, saw %d", T_LIMIT,
	      atomic_load(&max_inside));
	CHECK(atomic_load(&max_inside) >= 2, "threads overlapped (max %d)",
	      atomic_load(&max_inside));
	CHECK_EQ(0, semc_info(shared, "threads", &in));
	if (in != NULL) {
		CHECK_EQ(T_LIMIT, in->available);
		CHECK_EQ(0, in->n_holders);
	}
	semc_info_free(in);
	CHECK_EQ(0, semc_pending(shared));
	semc_free(shared);
}

/* Async downs and ups completed by callbacks from semc_process(). */
static void test_async(const char *addr)
{
	struct async_state s = { .token_order_ok = true };
	struct semc *c = open_client(addr, 0), *c2 = open_client(addr, 0);
	struct semc_grant g;
	int64_t ids[20], id;
	int i;

	TEST_START("asynchronous form");
	CHECK(c != NULL && c2 != NULL, "connect");
	if (c == NULL || c2 == NULL)
		goto out;
	CHECK_EQ(0, semc_create(c, "async", 1, SEMC_MODE_OWNED, false));
	for (i = 0; i < 20; i++) {
		ids[i] = semc_down_async(c, "async", 1, 5000, 0, on_down, &s);
		CHECK(ids[i] > 0, "request id %" PRId64, ids[i]);
	}
	PUMP_UNTIL(c, s.released + s.failed >= 20, 10000);
	CHECK_EQ(20, s.granted);
	CHECK_EQ(20, s.released);
	CHECK_EQ(0, s.failed);
	CHECK(s.token_order_ok, "FIFO: tokens granted in request order");
	CHECK_EQ(0, semc_pending(c));

	/* cancel a waiting async down */
	CHECK_EQ(0, semc_down(c2, "async", 1, 1000, 0, &g));
	id = semc_down_async(c, "async", 1, -1, 0, on_down, &s);
	CHECK(id > 0, "queued");
	PUMP_UNTIL(c, false, 100);
	CHECK_EQ(0, semc_cancel(c, (uint64_t)id));
	PUMP_UNTIL(c, s.cancelled > 0, 5000);
	CHECK_EQ(1, s.cancelled);
	CHECK_EQ(0, semc_up(c2, "async", 1, 0, NULL));
out:
	semc_free(c);
	semc_free(c2);
}

/* A cut with a lease: the session and its hold survive. Without: lost. */
static void test_resume(void)
{
	struct relay r;
	struct events ev = { 0 }, ev2 = { 0 };
	struct semc *c = NULL, *c2 = NULL, *obs = open_client(D.unix_addr, 0);
	struct semc_grant g, g2;
	char addr[64];
	bool valid = false;

	TEST_START("session resume after a network cut");
	c = relay_client(&r, addr, sizeof addr, 10000);
	c2 = open_client(addr, 0);
	CHECK(c != NULL && c2 != NULL && obs != NULL, "connect through the relay");
	if (c == NULL || c2 == NULL || obs == NULL)
		goto out;
	hold_two(c, c2, on_event, &ev, &ev2, "resume/a", &g, "resume/b", &g2);
	relay_cut(&r);
	/* the next call notices, reconnects and resumes */
	CHECK_EQ(0, semc_ping(c, NULL));
	CHECK_EQ(1, ev.disconnected);
	CHECK_EQ(1, ev.resumed);
	CHECK_EQ(0, ev.lost);
	CHECK_EQ(0, semc_validate(obs, "resume/a", g.token, &valid));
	CHECK(valid, "the leased hold survived the cut");
	CHECK_EQ(0, semc_up(c, "resume/a", 0, g.permit_id, NULL));

	/* no lease: the hold goes with the connection, and the caller is told */
	PUMP_UNTIL(c2, ev2.lost > 0, 5000);
	CHECK_EQ(1, ev2.lost);
	CHECK_EQ(g2.permit_id, ev2.lost_permit);
	CHECK_EQ(SEMC_E_DISCONNECTED, ev2.last_lost_error);
	CHECK_EQ(0, semc_validate(obs, "resume/b", g2.token, &valid));
	CHECK(!valid, "the unleased hold was freed");
	CHECK_EQ(0, semc_ping(c2, NULL));
	CHECK_EQ(1, ev2.reconnected);

	/* a down waiting during the cut is resent with its id: one permit only */
	{
		struct semc_info *in = NULL;

		CHECK_EQ(0, semc_down(obs, "resume/c", 1, 1000, 0, &g2));
		CHECK(semc_down_async(c, "resume/c", 1, 5000, 0, NULL, NULL) > 0, "queued");
		PUMP_UNTIL(c, false, 200);
		relay_cut(&r);
		PUMP_UNTIL(c, ev.resumed >= 2, 5000);
		CHECK_EQ(2, ev.resumed);
		CHECK_EQ(0, semc_up(obs, "resume/c", 1, 0, NULL));
		PUMP_UNTIL(c, semc_pending(c) == 0, 5000);
		CHECK_EQ(0, semc_info(obs, "resume/c", &in));
		if (in != NULL) {
			CHECK_QUEUE(in, 1, 0);
		}
		semc_info_free(in);
	}
out:
	semc_free(c);
	semc_free(c2);
	semc_free(obs);
	relay_stop(&r);
}

/* A client with a 10 s lease through a new relay, and an observer on the
 * daemon's UNIX socket; false (and a failed check) without both. */
static bool relay_and_observer(struct relay *r, struct semc **c, struct semc **obs)
{
	char addr[64];

	*obs = open_client(D.unix_addr, 0);
	*c = relay_client(r, addr, sizeof addr, 10000);
	CHECK(*c != NULL && *obs != NULL, "connect through the relay");
	return *c != NULL && *obs != NULL;
}

/* An up by permit id that its caller gave up on (no reply in time: a
 * failover can take longer than the reply timeout) is sent again after the
 * reconnection: the permit is given back, not held until the session ends. */
static void test_up_given_up(void)
{
	struct relay r;
	struct semc *c, *obs;
	struct semc_grant g;
	bool valid = true;
	long long end;

	TEST_START("an up given up on is sent again after a reconnection");
	if (!relay_and_observer(&r, &c, &obs))
		goto out;
	CHECK_EQ(0, semc_down(c, "upghost/a", 1, 1000, 0, &g));
	relay_ctl(&r, 's');		/* nothing reaches the daemon */
	semc_set_timeout(c, 300);
	CHECK_EQ(SEMC_E_NO_REPLY, semc_up(c, "upghost/a", 1, g.permit_id, NULL));
	relay_cut(&r);			/* and the up never will on that connection */
	relay_ctl(&r, 'r');
	semc_set_timeout(c, 5000);
	CHECK_EQ(0, semc_ping(c, NULL));	/* reconnects, resumes, sends it again */
	end = t_now_ms() + 5000;
	while (t_now_ms() < end) {
		CHECK_EQ(0, semc_validate(obs, "upghost/a", g.token, &valid));
		if (!valid)
			break;
		semc_process(c);
		t_sleep_ms(20);
	}
	CHECK(!valid, "the permit was given back");
out:
	semc_free(c);
	semc_free(obs);
	relay_stop(&r);
}

/*
 * A node that does not lead (a leader just deposed) answers an up
 * UNAVAILABLE with the leader's address, without running it, and closes:
 * the library sends it again to the leader, as never sent, and the caller
 * sees it done. Told to the caller instead, the error left the permit held
 * by the live session, and a program that moved on leaked it (faults.sh
 * found two permits of a name held so, its clients timing out).
 */
static void test_up_redirected(void)
{
	struct relay r;
	struct semc *c, *obs;
	struct semc_grant g;
	bool valid = true;
	int i;

	TEST_START("an up refused by a node that does not lead goes to the leader");
	if (!relay_and_observer(&r, &c, &obs))
		goto out;
	for (i = 0; i < 2; i++) {	/* by permit id, then by count */
		CHECK_EQ(0, semc_down(c, "redirected/a", 1, 1000, 0, &g));
		relay_ctl(&r, 'n');
		CHECK_EQ(0, semc_up(c, "redirected/a", 1, i == 0 ? g.permit_id : 0, NULL));
		CHECK_EQ(i + 1, r.refused);
		CHECK_EQ(0, semc_validate(obs, "redirected/a", g.token, &valid));
		CHECK(!valid, "the permit was given back");
	}
out:
	semc_free(c);
	semc_free(obs);
	relay_stop(&r);
}

/* --- threads through repeated cuts ------------------------------------------ */

static struct semc *cut_handle;
static atomic_int cut_errors, cut_done, cut_count;

/* Down and up by permit id, over and over, while the relay is cut. */
static void *cut_worker(void *arg)
{
	struct semc_grant g;
	int i, r;

	/* 80 rounds, and on until the network was cut 3 times (a fast
	 * machine does 80 between two cuts): 4000 at most */
	for (i = 0; i < 4000 && (i < 80 || atomic_load(&cut_count) < 3); i++) {
		if ((r = semc_down(cut_handle, "cuts", 1, 10000, 0, &g)) != 0) {
			fprintf(stderr, "cut worker down: %d %s\n", r, semc_last_message());
			atomic_fetch_add(&cut_errors, 1);
			continue;
		}
		if ((r = semc_up(cut_handle, "cuts", 0, g.permit_id, NULL)) != 0) {
			fprintf(stderr, "cut worker up: %d %s\n", r, semc_last_message());
			atomic_fetch_add(&cut_errors, 1);
		}
	}
	atomic_fetch_add(&cut_done, 1);
	return arg;
}

/* Four threads share a leased session while the network is cut under them
 * again and again: every call completes, nothing is taken twice. */
static void test_cut_threads(void)
{
	struct relay r;
	struct events ev = { 0 };
	struct semc *obs = open_client(D.unix_addr, 0);
	struct semc_info *in = NULL;
	pthread_t th[4];
	char addr[64];
	int i, cuts = 0;

	TEST_START("threads on one session through repeated network cuts");
	cut_handle = relay_client(&r, addr, sizeof addr, 10000);
	CHECK(cut_handle != NULL && obs != NULL, "connect");
	if (cut_handle == NULL || obs == NULL)
		goto out;
	semc_set_event_callback(cut_handle, on_event, &ev);
	CHECK_EQ(0, semc_create(obs, "cuts", 2, SEMC_MODE_OWNED, false));
	for (i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, cut_worker, NULL);
	/* bounded: at most 40 cuts, 60 ms apart */
	while (atomic_load(&cut_done) < 4 && cuts < 40) {
		t_sleep_ms(60);
		relay_cut(&r);
		cuts++;
		atomic_store(&cut_count, cuts);
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(0, atomic_load(&cut_errors));
	CHECK(cuts >= 3, "cut %d times", cuts);
	CHECK(ev.resumed >= 1, "resumed %d times", ev.resumed);
	CHECK_EQ(0, ev.lost);
	CHECK_EQ(0, semc_pending(cut_handle));
	CHECK_EQ(0, semc_info(obs, "cuts", &in));
	if (in != NULL) {
		CHECK_EQ(2, in->available);
		CHECK_QUEUE(in, 0, 0);
	}
	semc_info_free(in);
	fprintf(stderr, "   %d cuts, %d resumes\n", cuts, ev.resumed);
out:
	semc_free(cut_handle);
	semc_free(obs);
	relay_stop(&r);
}

/* The daemon restarts: over a UNIX socket the close ended the session, so
 * the hold is reported lost at once, lease or not; the next call starts a
 * new session. (The lease running out while cut off: test_stall.) With a
 * data directory (SEMD_TEST_DURABLE) the daemon keeps the state: a session
 * with a lease waits for it to come back and resumes, its hold with it. */
static void test_restart(void)
{
	const char *durable = getenv("SEMD_TEST_DURABLE");
	struct events ev = { 0 };
	/* a 10 s lease: a restart under load stays well inside it, and a loss
	 * by the close is told from one by the lease */
	struct semc *c = open_client(D.unix_addr, 10000), *c2 = open_client(D.unix_addr, 0);
	struct semc_grant g;
	bool valid = false;
	long long t0;

	TEST_START(durable != NULL && *durable ? "holds kept across a daemon restart (data "
		   "directory)" : "holds lost to a daemon restart");
	CHECK(c != NULL && c2 != NULL, "connect");
	if (c == NULL || c2 == NULL)
		goto out;
	semc_set_event_callback(c, on_event, &ev);
	CHECK_EQ(0, semc_down(c, "restart/a", 1, 1000, 0, &g));
	t0 = t_now_ms();
	tdaemon_stop(&D, SIGKILL);
	if (durable != NULL && *durable) {
		PUMP_UNTIL(c, ev.disconnected > 0, 2000);
		PUMP_UNTIL(c, ev.lost > 0, 300);
		PUMP_UNTIL(c2, semc_fd(c2) < 0, 3000);
		CHECK_EQ(0, ev.lost);
		CHECK(tdaemon_start(&D, NULL) == 0, "restart semd");
		CHECK_EQ(0, semc_ping(c, NULL));
		CHECK(ev.resumed >= 1, "resumed the session");
		CHECK_EQ(0, ev.lost);
		CHECK_EQ(0, semc_validate(c2, "restart/a", g.token, &valid));
		CHECK(valid, "the hold lived through the restart");
		CHECK_EQ(0, semc_up(c, "restart/a", 1, g.permit_id, NULL));
		CHECK(t_now_ms() - t0 < 9000, "back after %lld ms (the lease is 10000)",
		      t_now_ms() - t0);
		goto out;
	}
	PUMP_UNTIL(c, ev.lost > 0, 5000);
	PUMP_UNTIL(c2, semc_fd(c2) < 0, 3000);
	CHECK_EQ(1, ev.lost);
	CHECK_EQ(SEMC_E_DISCONNECTED, ev.last_lost_error);
	CHECK(t_now_ms() - t0 < 5000, "lost after %lld ms (the lease is 10000)", t_now_ms() - t0);

	CHECK(tdaemon_start(&D, NULL) == 0, "restart semd");
	CHECK_EQ(0, semc_ping(c, NULL));
	CHECK(ev.reconnected >= 1, "reconnected with a new session");
	CHECK_EQ(SEMC_E_HOLD_LOST, semc_up(c, "restart/a", 0, ev.lost_permit, NULL));
	CHECK(strstr(semc_last_message(), "lost") != NULL, "message: %s", semc_last_message());
	CHECK_EQ(0, semc_ping(c2, NULL));

	/* no session to resume and no daemon: a call fails at once, saying why */
	tdaemon_stop(&D, SIGKILL);
	t0 = t_now_ms();
	PUMP_UNTIL(c2, semc_fd(c2) < 0, 3000);
	CHECK_EQ(SEMC_E_CONNECT, semc_ping(c2, NULL));
	CHECK(strstr(semc_last_message(), "s.sock") != NULL, "message: %s", semc_last_message());
	CHECK(t_now_ms() - t0 < 2500, "failed after %lld ms", t_now_ms() - t0);
	CHECK(tdaemon_start(&D, NULL) == 0, "restart semd");
	CHECK_EQ(0, semc_ping(c2, NULL));
out:
	semc_free(c);
	semc_free(c2);
}

/* --- a blocked thread reads for an event loop; late replies ---------------- */

static atomic_int pong_seen;
static struct semc *mixed;

/* An async ping came back. */
static void on_pong(struct semc *c, const struct semc_result *r, void *arg)
{
	if (r->error == 0)
		atomic_store(&pong_seen, 1);
}

/* A thread blocked in a long down. */
static void *blocked_down(void *arg)
{
	struct semc_grant g;
	int *rc = arg;

	*rc = semc_down(mixed, "mixed", 1, 3000, 0, &g);
	return NULL;
}

/* While one thread waits in a down (and holds the reader role), another
 * thread's async request completes; a late grant is given back. */
static void test_mixed(void)
{
	struct semc *obs = open_client(D.unix_addr, 0);
	struct semc_grant g;
	struct semc_info *in = NULL;
	pthread_t th;
	int rc = 1, i, r, held;
	long long end;

	TEST_START("blocking and async on one handle; late replies");
	mixed = open_client(D.unix_addr, 0);
	CHECK(mixed != NULL && obs != NULL, "connect");
	if (mixed == NULL || obs == NULL)
		goto out;
	CHECK_EQ(0, semc_down(obs, "mixed", 1, 1000, 0, &g));
	pthread_create(&th, NULL, blocked_down, &rc);
	t_sleep_ms(100);
	CHECK(semc_ping_async(mixed, on_pong, NULL) > 0, "async ping sent");
	end = t_now_ms() + 2000;
	while (!atomic_load(&pong_seen) && t_now_ms() < end) {
		semc_process(mixed);	/* returns at once: the blocked thread reads */
		t_sleep_ms(10);
	}
	CHECK(atomic_load(&pong_seen), "the pong was dispatched while another thread waited");
	CHECK_EQ(0, semc_up(obs, "mixed", 1, 0, NULL));
	pthread_join(th, NULL);
	CHECK_EQ(0, rc);
	CHECK_EQ(0, semc_up(mixed, "mixed", 1, 0, NULL));

	/*
	 * the daemon is stopped: the client gives up, then the reply comes
	 * late; a hold of another name stays the handle's through the
	 * give-back (its answer once dropped holds by a null name)
	 */
	CHECK_EQ(0, semc_down(mixed, "keep", 1, 1000, 0, &g));
	semc_set_timeout(mixed, 300);
	CHECK_EQ(0, tdaemon_sigstop(&D));
	CHECK_EQ(SEMC_E_NO_REPLY, semc_ping(mixed, NULL));
	CHECK_EQ(SEMC_E_NO_REPLY, semc_trydown(mixed, "late", 1, &g));
	kill(D.pid, SIGCONT);
	semc_set_timeout(mixed, 5000);
	CHECK_EQ(0, semc_ping(mixed, NULL));
	/* the late grant was given back: nobody holds "late" */
	held = 1;
	for (i = 0; i < 100 && held != 0; i++) {
		semc_process(mixed);
		r = semc_info(obs, "late", &in);
		held = r == SEMC_E_NOT_FOUND ? 0 : r == 0 ? (int)in->n_holders : -1;
		semc_info_free(in);
		in = NULL;
		if (held != 0)
			t_sleep_ms(20);
	}
	CHECK(held == 0, "a grant nobody waited for was given back (%d holders)", held);
	CHECK_EQ(0, semc_pending(mixed));
	CHECK_EQ(0, semc_info(obs, "keep", &in));
	CHECK(in != NULL && in->n_holders == 1, "the other hold is still held");
	semc_info_free(in);
	in = NULL;
	CHECK_EQ(0, semc_up(mixed, "keep", 1, 0, NULL));
out:
	semc_free(mixed);
	semc_free(obs);
}

/* semctl list fetches every page (the daemon's pages hold at most 1000). */
static void test_semctl_paging(void)
{
	struct semc *c = open_client(D.unix_addr, 0);
	char name[64], cmd[1024], out[256] = "";
	const char *top = getenv("top_builddir");
	FILE *p;
	int i, bad = 0;

	TEST_START("semctl list pages through 1205 names");
	CHECK(c != NULL, "connect");
	if (c == NULL)
		return;
	for (i = 0; i < 1205; i++) {
		snprintf(name, sizeof name, "many/%04d", i);
		if (semc_create(c, name, 1, SEMC_MODE_OWNED, false) != 0)
			bad++;
	}
	CHECK_EQ(0, bad);
	snprintf(cmd, sizeof cmd, "'%s/semctl' -s '%s' --json list many/ | python3 -c "
		 "'import json,sys; j=json.load(sys.stdin); n=[s[\"name\"] for s in j[\"semaphores\"]];"
		 " print(j[\"count\"], len(set(n)), n == sorted(n))'", top ? top : ".", D.unix_addr);
	if ((p = popen(cmd, "r")) != NULL) {
		if (fgets(out, sizeof out, p) == NULL)
			out[0] = '\0';
		pclose(p);
	}
	CHECK(strcmp(out, "1205 1205 True\n") == 0, "semctl --json list many/: '%s'", out);
	semc_free(c);
}

/* A blocking down in a thread of its own, for test_bindings(). */
struct blocked_down {
	struct semc *c;
	int r;
	atomic_bool done;
};

static void *blocked_down_main(void *arg)
{
	struct blocked_down *b = arg;
	struct semc_grant g;

	b->r = semc_down(b->c, "bind/x", 1, -1, 0, &g);
	atomic_store(&b->done, true);
	return NULL;
}

/* A callback that counts its outcomes by error. */
struct outcomes {
	int ok, cancelled, disconnected, other;
};

static void on_outcome(struct semc *c, const struct semc_result *r, void *arg)
{
	struct outcomes *o = arg;

	(void)c;
	if (r->error == 0)
		o->ok++;
	else if (r->error == SEMC_E_CANCELLED)
		o->cancelled++;
	else if (r->error == SEMC_E_DISCONNECTED)
		o->disconnected++;
	else
		o->other++;
}

/* Wait (at most ms) until name has n waiters, as semc_info() sees them. */
static bool waiters_become(struct semc *c, const char *name, size_t n, int ms)
{
	long long end = t_now_ms() + ms;
	struct semc_info *in;
	size_t got;

	for (;;) {
		if (semc_info(c, name, &in) != 0)
			return false;
		got = in->n_waiters;
		semc_info_free(in);
		if (got == n)
			return true;
		if (t_now_ms() >= end)
			return false;
		t_sleep_ms(10);
	}
}

/* The tokens of the grants a callback was given, in the order it ran. */
struct order {
	uint64_t tokens[8];
	int n, failed;
};

static void on_order(struct semc *c, const struct semc_result *r, void *arg)
{
	struct order *o = arg;

	(void)c;
	if (r->error != 0 || r->grant == NULL || o->n >= 8)
		o->failed++;
	else
		o->tokens[o->n++] = r->grant->token;
}

/*
 * Grants that arrive in one read reach their callbacks in the order the
 * daemon made them (FIFO up to the caller's code): four downs wait on a
 * name held whole, its holder gives the four back in one up, and the
 * daemon's four replies come in one write. The callbacks of one read ran
 * newest first (issue 34).
 */
static void test_async_fifo(void)
{
	struct semc *c = open_client(D.unix_addr, 0), *h = open_client(D.unix_addr, 0);
	struct semc_grant g;
	struct order o;
	int round, i;

	TEST_START("grants read together run their callbacks in FIFO order");
	CHECK(c != NULL && h != NULL, "connect");
	if (c == NULL || h == NULL)
		goto out;
	CHECK_EQ(0, semc_create(h, "fifo/4", 4, SEMC_MODE_OWNED, false));
	for (round = 0; round < 5; round++) {
		memset(&o, 0, sizeof o);
		CHECK_EQ(0, semc_down(h, "fifo/4", 4, 1000, 0, &g));
		for (i = 0; i < 4; i++)
			CHECK(semc_down_async(c, "fifo/4", 1, 10000, 0, on_order, &o) > 0,
			      "down %d queued", i);
		CHECK(waiters_become(h, "fifo/4", 4, 3000), "four wait");
		CHECK_EQ(0, semc_up(h, "fifo/4", 4, 0, NULL));
		PUMP_UNTIL(c, o.n + o.failed >= 4, 5000);
		CHECK_EQ(4, o.n);
		for (i = 1; i < o.n; i++)
			CHECK(o.tokens[i] > o.tokens[i - 1], "round %d: callback %d got token %"
			      PRIu64 " after %" PRIu64, round, i, o.tokens[i], o.tokens[i - 1]);
		CHECK_EQ(0, semc_up(c, "fifo/4", 4, 0, NULL));
	}
	CHECK_EQ(0, semc_delete(h, "fifo/4", true));
out:
	semc_free(c);
	semc_free(h);
}

/*
 * A blocking down that outlives its reply timeout leaves its request to
 * the library, which gives back a grant that still comes: a signal-mode
 * grant (no permit id) of n permits goes back as n, by count (it went back
 * as 1, and the other n - 1 were lost for good).
 */
static void *late_down_main(void *arg)
{
	struct blocked_down *b = arg;
	struct semc_grant g;

	b->r = semc_down(b->c, "late/sig", 3, 2000, 0, &g);
	atomic_store(&b->done, true);
	return NULL;
}

static void test_late_signal_grant(void)
{
	struct relay r;
	struct semc *c = NULL, *obs = open_client(D.unix_addr, 0);
	struct semc_info *in = NULL;
	struct semc_create_opts o = { .limit = 4, .mode = SEMC_MODE_SIGNAL, .initial_set = true };
	struct blocked_down b = { .c = NULL };
	char addr[64];
	long long end;
	pthread_t th;

	TEST_START("a late signal-mode grant of 3 is given back whole");
	relay_open(&r, addr, sizeof addr);
	c = open_client(addr, 0);
	b.c = c;
	CHECK(c != NULL && obs != NULL, "connect");
	if (c == NULL || obs == NULL)
		goto out;
	CHECK_EQ(0, semc_create_ex(obs, "late/sig", &o));
	semc_set_timeout(c, 300);
	/* the down waits (nothing free), then nothing moves on its connection,
	 * and the grant made meanwhile stays in the relay past the reply
	 * timeout */
	CHECK_EQ(0, pthread_create(&th, NULL, late_down_main, &b));
	CHECK(waiters_become(obs, "late/sig", 1, 3000), "the down waits");
	relay_ctl(&r, 's');
	CHECK_EQ(0, semc_up(obs, "late/sig", 3, 0, NULL));
	pthread_join(th, NULL);
	CHECK_EQ(SEMC_E_NO_REPLY, b.r);
	relay_ctl(&r, 'r');
	end = t_now_ms() + 5000;
	for (;;) {
		CHECK_EQ(0, semc_info(obs, "late/sig", &in));
		if (in == NULL || in->available == 3 || t_now_ms() >= end)
			break;
		semc_info_free(in);
		in = NULL;
		semc_process(c);
		t_sleep_ms(20);
	}
	CHECK(in != NULL && in->available == 3, "3 free again, %" PRId64 " are",
	      in != NULL ? in->available : -1);
	semc_info_free(in);
	CHECK_EQ(0, semc_delete(obs, "late/sig", true));
out:
	semc_free(c);
	semc_free(obs);
	relay_stop(&r);
}

/*
 * A detached lease longer than the daemon's max-lease (24 h here) is
 * refused before the down is sent: it neither waits its turn on a held name
 * nor takes a token (it was cut to max-lease, and the hold ended a day
 * before its holder expected). The handshake says the max-lease.
 */
static void test_max_lease(void)
{
	struct semc *c = open_client(D.unix_addr, 0), *h = open_client(D.tcp_addr, 0);
	struct semc_want w = { .name = "maxl/a", .n = 1 };
	struct semc_multi_grant *mg = NULL;
	struct semc_info *in = NULL;
	struct semc_grant g, g2;
	uint64_t token = 0;
	long long t0;

	TEST_START("a lease longer than max-lease is refused before it queues");
	CHECK(c != NULL && h != NULL, "connect");
	if (c == NULL || h == NULL)
		goto out;
	CHECK_EQ(86400000, semc_max_lease(c));
	CHECK_EQ(0, semc_create(h, "maxl/a", 1, SEMC_MODE_OWNED, false));
	CHECK_EQ(0, semc_down(h, "maxl/a", 1, 1000, 0, &g));
	CHECK_EQ(0, semc_info(c, "maxl/a", &in));
	if (in != NULL)
		token = in->last_token;
	semc_info_free(in);
	in = NULL;
	t0 = t_now_ms();
	CHECK_EQ(SEMC_E_INVALID, semc_down(c, "maxl/a", 1, 5000, 86400001, &g2));
	CHECK(strstr(semc_last_message(), "max-lease") != NULL, "says why: %s",
	      semc_last_message());
	CHECK(t_now_ms() - t0 < 2000, "at once, not after its turn");
	CHECK(semc_down_async(c, "maxl/a", 1, 5000, 90000000, on_down_keep, NULL) ==
	      SEMC_E_INVALID, "the async down too");
	CHECK_EQ(SEMC_E_INVALID, semc_down_multi(c, &w, 1, 5000, 86400001, &mg));
	CHECK_EQ(SEMC_E_INVALID, semc_renew(c, "maxl/a", 0, 86400001, NULL, NULL));
	CHECK_EQ(0, semc_info(c, "maxl/a", &in));
	if (in != NULL) {
		CHECK_EQ(token, in->last_token);
		CHECK_QUEUE(in, 1, 0);
	}
	semc_info_free(in);
	CHECK_EQ(0, semc_up(h, "maxl/a", 0, g.permit_id, NULL));
	CHECK_EQ(0, semc_down(c, "maxl/a", 1, 1000, 86400000, &g2));	/* as long as it grants */
	CHECK_EQ(0, semc_delete(h, "maxl/a", true));
out:
	semc_free(c);
	semc_free(h);
}

/* semc_cancel_async() and semc_shutdown(), for language bindings. */
static void test_bindings(void)
{
	struct semc *c = open_client(D.unix_addr, 0), *h = open_client(D.unix_addr, 0);
	struct semc *s = open_client(D.tcp_addr, 5000);
	struct outcomes down = { 0 }, cancel = { 0 }, late = { 0 };
	struct blocked_down b = { .c = s };
	struct semc_info *in = NULL;
	struct semc_grant g;
	pthread_t th;
	int64_t id, cid;

	TEST_START("semc_cancel_async, semc_shutdown");
	CHECK(c != NULL && h != NULL && s != NULL, "connect");
	if (c == NULL || h == NULL || s == NULL)
		goto out;
	CHECK_EQ(0, semc_create(h, "bind/x", 1, SEMC_MODE_OWNED, false));
	CHECK_EQ(0, semc_down(h, "bind/x", 1, 1000, 0, &g));

	/* the Cancel goes before a later request: info sees no waiter */
	id = semc_down_async(c, "bind/x", 1, -1, 0, on_outcome, &down);
	CHECK(id > 0, "queued");
	cid = semc_cancel_async(c, (uint64_t)id, on_outcome, &cancel);
	CHECK(cid > 0 && cid != id, "cancel id %lld", (long long)cid);
	CHECK_EQ(0, semc_info(c, "bind/x", &in));
	if (in != NULL)
		CHECK_QUEUE(in, 1, 0);
	semc_info_free(in);
	PUMP_UNTIL(c, down.cancelled + down.ok + down.other > 0 && cancel.ok > 0, 3000);
	CHECK_EQ(1, down.cancelled);
	CHECK_EQ(1, cancel.ok);
	CHECK_EQ(0, semc_pending(c));
	CHECK(semc_cancel_async(c, 0, NULL, NULL) > 0, "a cancel without a callback");
	PUMP_UNTIL(c, semc_pending(c) == 0, 1000);

	/* shutdown wakes a thread blocked in a down, fails what is pending,
	 * stops the keepalive thread; the handle is freed after */
	CHECK_EQ(0, pthread_create(&th, NULL, blocked_down_main, &b));
	CHECK(waiters_become(c, "bind/x", 1, 3000), "the blocked down waits");
	id = semc_down_async(s, "bind/x", 1, -1, 0, on_outcome, &late);
	CHECK(id > 0, "a second down queued");
	semc_shutdown(s);
	pthread_join(th, NULL);
	CHECK(atomic_load(&b.done), "the blocked down returned");
	CHECK_EQ(SEMC_E_DISCONNECTED, b.r);
	CHECK_EQ(1, late.disconnected);
	CHECK_EQ(0, semc_pending(s));
	CHECK_EQ(-1, semc_fd(s));
	CHECK_EQ(SEMC_E_DISCONNECTED, semc_ping(s, NULL));
	semc_shutdown(s);	/* again: nothing */
	semc_free(s);
	s = NULL;
	/* the daemon forgets its waiters once the session is gone (5 s lease:
	 * a TCP session outlives its connection that long) */
	CHECK(waiters_become(c, "bind/x", 0, 15000), "the waiters are gone");
	CHECK_EQ(0, semc_delete(h, "bind/x", true));
out:
	semc_free(c);
	semc_free(h);
	semc_free(s);
}

/* Start semd, run the tests, report. With --threads ADDR, run only the
 * threads and async tests against a daemon the caller started (tls.sh). */
int main(int argc, char **argv)
{
	watchdog_arm();
	if (argc == 3 && strcmp(argv[1], "--threads") == 0) {
		test_threads(argv[2]);
		test_async(argv[2]);
		return api_report();
	}
	if (api_daemon_start() != 0)
		return 1;
	test_errors();
	test_operations(D.unix_addr, true);
	test_operations(D.tcp_addr, false);
	test_threads(D.unix_addr);
	test_async(D.unix_addr);
	test_async_fifo();
	test_late_signal_grant();
	test_max_lease();
	test_mixed();
	test_semctl_paging();
	test_resume();
	test_up_given_up();
	test_up_redirected();
	test_cut_threads();
	test_bindings();
	test_restart();
	return api_report();
}
