/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/cluster/cluster_load.c - clients that take and give back permits on
 * a few names of a semd cluster while faults are made, and the check of
 * what they saw.
 *
 *   cluster_load -s ADDRS -d SECONDS [-t THREADS] [-n NAMES] [-l LIMIT]
 *                [-L LEASE_MS] [-q QUIET_END_S] [-f DONE_FILE]
 *                [-w START_FILE] [-p PREFIX] [-o RECORDS] [-H HOLD_MS] [-P]
 *
 * Each thread has its own handle (a session with a lease, the address
 * list, the library's failover) and repeats: down on a random name (2 s
 * timeout), hold 1-10 ms (-H: HOLD_MS, or until the hold is reported
 * lost), up by permit id. It records every grant (name,
 * token, when the grant arrived) and the end of every hold: when the up
 * was sent, or when the library reported the hold lost (SEMC_EV_HOLD_LOST,
 * which the client-side lease raises before the daemon can re-grant).
 * Times are CLOCK_MONOTONIC, one clock for every thread.
 *
 * The check, at the end (exit 1 on a violation, with what and where):
 *  - never more holders of a name than its limit at any moment, by the
 *    clients' own intervals [grant arrived, hold ended];
 *  - tokens of a name unique, and a down sent after another hold of that
 *    name ended gets a greater token (fencing across failovers);
 *  - no acknowledged grant lost silently: an up that finds the permit gone
 *    must follow a lost-hold report for it;
 *  - every down answered: none waits past its timeout plus the library's
 *    reply timeout;
 *  - the clients carry on (unless QUIET_END_S is 0): grants in the last
 *    QUIET_END_S seconds, when the
 *    faults are over (with -f: the run ends LEASE + 10 s + QUIET_END_S
 *    after DONE_FILE appears, so a slow machine does not eat the quiet end).
 *
 * With -w it also prints the grants that arrived between START_FILE and
 * DONE_FILE appearing (the faults), and their rate: "fault window: N
 * grants in S s (R/s)". -p names the names PREFIX/0.. (default cl). -o
 * writes every hold and every event of the library to RECORDS (see
 * records_write()); a name with more holders than its limit is reported
 * with the holds that overlap.
 *
 * -P: the queue features of 0.3.0 on: the even names are created with fair
 * shares by group (g0, g1, g2 of weights 1, 2, 3), and a thread's downs on
 * them carry its group (thread i: g<i mod 3>); the downs on the odd names
 * carry a priority (-8..7, at random). The same checks; a down refused as
 * invalid is one more violation (say a name left by a run without -P: use
 * another prefix).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/semclient.h"

#define MAX_THREADS	64
#define MAX_NAMES	16
#define MAX_HOLDS	200000
#define DOWN_TIMEOUT_MS	2000
#define LOST_RING	16

struct hold {
	int		name;
	int		worker;
	uint64_t	session;	/* the session the grant came on */
	uint64_t	token;
	uint64_t	permit;
	int64_t		sent_us;	/* the down was sent */
	int64_t		start_us;	/* the grant arrived */
	int64_t		end_us;		/* up sent, or the loss reported */
	bool		lost;		/* reported lost (HOLD_LOST) */
	bool		silent;		/* the up found it gone, unreported */
};

struct worker {
	pthread_t	thread;
	int		idx;
	struct semc	*c;
	uint64_t	seed;
	/* The latest lost-hold reports (permit, when), a ring: one may come
	 * before its down returns (from the keepalive thread). */
	pthread_mutex_t	lost_lock;
	uint64_t	lost_permit[LOST_RING];
	int64_t		lost_at[LOST_RING];
	unsigned	lost_next;
	unsigned long	downs, grants, timeouts, errors, no_reply, refused;
	int64_t		slowest_down_us;
	int64_t		last_grant_us;
};

static const char *addrs;
static int nthreads = 8, nnames = 3, limit = 2, lease_ms = 8000;
static int seconds = 30, quiet_end = 3, hold_ms;
static struct worker workers[MAX_THREADS];
static struct hold holds[MAX_HOLDS];
static _Atomic size_t nholds;
static _Atomic int64_t t_end;
static const char *done_file;	/* -f: the faults are over once it exists */
static const char *start_file;	/* -w: the faults begin once it exists */
static const char *prefix = "cl";
static bool policies;		/* -P: shares, groups and priorities */
static const char *const groups[] = { "g0", "g1", "g2" };
#define NGROUPS		(int)(sizeof groups / sizeof groups[0])
static _Atomic int64_t t_faults, t_faults_end;	/* 0: not seen */
/*
 * For the report when a check fails: timeouts per name in 5 s slots from
 * the start (a name whose permits are stuck shows as a run of them), and
 * the first errors as the library told them.
 */
#define SLOT_S		5
#define MAX_SLOTS	64
static _Atomic unsigned tmo_slots[MAX_NAMES][MAX_SLOTS];
static _Atomic int64_t t_start;
static _Atomic int nerr_told;
/* -o: every hold and every event of the library, written at the end. */
#define MAX_EVENTS	100000
struct evrec {
	int		worker;
	int		type;		/* SEMC_EV_* */
	uint64_t	permit;
	int64_t		at_us;
};
static struct evrec evs[MAX_EVENTS];
static _Atomic size_t nevs;
static const char *record_file;

/* Monotonic microseconds. */
static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* The library's events: a lost hold ends the hold now. Every event is
 * recorded (-o). */
static void on_event(struct semc *c, const struct semc_event *ev, void *arg)
{
	struct worker *w = arg;
	size_t k = atomic_fetch_add(&nevs, 1);

	(void)c;
	if (k < MAX_EVENTS)
		evs[k] = (struct evrec){ w->idx, (int)ev->type, ev->permit_id, now_us() };
	if (ev->type != SEMC_EV_HOLD_LOST || ev->permit_id == 0)
		return;
	pthread_mutex_lock(&w->lost_lock);
	w->lost_permit[w->lost_next % LOST_RING] = ev->permit_id;
	w->lost_at[w->lost_next++ % LOST_RING] = now_us();
	pthread_mutex_unlock(&w->lost_lock);
}

/* When the library reported permit lost (0: it did not, lately). */
static int64_t lost_when(struct worker *w, uint64_t permit)
{
	int64_t at = 0;

	pthread_mutex_lock(&w->lost_lock);
	for (unsigned k = 0; k < LOST_RING; k++)
		if (w->lost_permit[k] == permit)
			at = w->lost_at[k];
	pthread_mutex_unlock(&w->lost_lock);
	return at;
}

/* The handle's session id now (0: none). */
static uint64_t session_of(struct semc *c)
{
	struct semc_session s;

	(void)semc_session(c, &s);
	return s.session;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct semc_down_opts o = { 0 };
	struct semc_down_policy pol = { 0 };
	struct semc_grant g;
	char name[32];
	struct hold *h;
	int64_t t0, t1, lost_at;
	uint32_t rel;
	size_t k;
	int n, r;

	while (now_us() < atomic_load(&t_end)) {
		n = (int)(rnd(&w->seed) % (uint64_t)nnames);
		snprintf(name, sizeof name, "%s/%d", prefix, n);
		w->downs++;
		t0 = now_us();
		if (policies) {
			o.n = 1;
			o.timeout_ms = DOWN_TIMEOUT_MS;
			pol.group = n % 2 == 0 ? groups[w->idx % NGROUPS] : NULL;
			pol.priority = n % 2 == 0 ? 0 : SEMC_PRIO_MIN +
			    (int)(rnd(&w->seed) % (SEMC_PRIO_MAX - SEMC_PRIO_MIN + 1));
			r = semc_down_policy(w->c, name, &o, &pol, &g);
		} else {
			r = semc_down(w->c, name, 1, DOWN_TIMEOUT_MS, 0, &g);
		}
		t1 = now_us();
		if (t1 - t0 > w->slowest_down_us)
			w->slowest_down_us = t1 - t0;
		if (r == SEMC_E_TIMEOUT) {
			int64_t slot = (t1 - atomic_load(&t_start)) / (SLOT_S * 1000000);

			if (slot >= 0 && slot < MAX_SLOTS)
				atomic_fetch_add(&tmo_slots[n][slot], 1);
			w->timeouts++;
			continue;
		}
		if (r == SEMC_E_NO_REPLY)
			w->no_reply++;
		if (r != 0) {
			if (atomic_fetch_add(&nerr_told, 1) < 20)
				fprintf(stderr, "worker %d, %.1f s: down %s: %s (%s)\n",
				    w->idx, (double)(t1 - atomic_load(&t_start)) / 1e6,
				    name, semc_strerror(r), semc_last_message());
			w->errors++;
			w->refused += r == SEMC_E_INVALID;
			usleep(20000);
			continue;
		}
		w->grants++;
		w->last_grant_us = t1;
		k = atomic_fetch_add(&nholds, 1);
		if (k >= MAX_HOLDS) {
			fprintf(stderr, "too many holds recorded\n");
			exit(2);
		}
		h = &holds[k];
		h->name = n;
		h->worker = w->idx;
		h->session = session_of(w->c);
		h->token = g.token;
		h->permit = g.permit_id;
		h->sent_us = t0;
		h->start_us = t1;
		if (hold_ms == 0) {
			usleep((useconds_t)(1000 + rnd(&w->seed) % 9000));
		} else {
			/* -H: held that long, unless reported lost before */
			int64_t until = now_us() + (int64_t)hold_ms * 1000;

			while (now_us() < until && lost_when(w, g.permit_id) == 0)
				usleep(5000);
		}
		h->end_us = now_us();
		r = semc_up(w->c, name, 0, g.permit_id, &rel);
		if ((lost_at = lost_when(w, g.permit_id)) != 0) {
			/* reported lost while held: the hold ended then */
			h->lost = true;
			if (lost_at < h->end_us)
				h->end_us = lost_at;
		} else if (r == SEMC_E_NOT_HOLDER) {
			h->silent = true;
		} else if (r != 0) {
			w->errors++;	/* unknown outcome (a failover): not a loss */
		}
	}
	return NULL;
}

/* Create name n (with -P, an even one with fair shares by group). */
static int create_name(struct semc *c, const char *name, int n)
{
	struct semc_create_opts o = { 0 };
	struct semc_weight wt[NGROUPS];
	struct semc_queue q = { 0 };

	o.limit = (uint32_t)limit;
	o.mode = SEMC_MODE_OWNED;
	o.if_not_exists = true;
	if (!policies || n % 2 != 0)
		return semc_create_ex(c, name, &o);
	for (int k = 0; k < NGROUPS; k++) {
		wt[k].group = groups[k];
		wt[k].weight = (uint32_t)k + 1;
	}
	q.share = SEMC_SHARE_KEY;
	q.weights = wt;
	q.n_weights = NGROUPS;
	return semc_create_queue(c, name, &o, NULL, &q);
}

/*
 * -o FILE: every hold and every event, times in monotonic microseconds
 * (the first line: the start's, and the wall clock's then, for lining
 * them up with other logs).
 */
static void records_write(const char *path, size_t total, int64_t wall0)
{
	size_t k, ne = atomic_load(&nevs);
	FILE *f = fopen(path, "w");

	if (f == NULL) {
		perror(path);
		return;
	}
	fprintf(f, "start %" PRId64 " wall %" PRId64 "\n", atomic_load(&t_start), wall0);
	for (k = 0; k < total; k++) {
		const struct hold *h = &holds[k];

		fprintf(f, "hold %d %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64
		    " %" PRId64 " %" PRId64 " %d %d\n", h->worker, h->name, h->token,
		    h->permit, h->session, h->sent_us, h->start_us, h->end_us,
		    h->lost, h->silent);
	}
	for (k = 0; k < ne && k < MAX_EVENTS; k++)
		fprintf(f, "event %d %d %" PRIu64 " %" PRId64 "\n", evs[k].worker,
		    evs[k].type, evs[k].permit, evs[k].at_us);
	fclose(f);
}

/* Holds by start time, for the checks. */
static int by_start(const void *a, const void *b)
{
	const struct hold *x = a, *y = b;

	return (x->start_us > y->start_us) - (x->start_us < y->start_us);
}

/* One hold, for a report: who, what, and its times from the start in ms. */
static void hold_print(const char *what, const struct hold *h)
{
	int64_t t0 = atomic_load(&t_start);

	fprintf(stderr, "  %s worker %d session %" PRIu64 " token %" PRIu64
	    " permit %" PRIu64 ": down sent %.3f, grant %.3f, end %.3f s%s\n",
	    what, h->worker, h->session, h->token, h->permit,
	    (double)(h->sent_us - t0) / 1e6, (double)(h->start_us - t0) / 1e6,
	    (double)(h->end_us - t0) / 1e6, h->lost ? " (reported lost)" : "");
}

/* Check one name's holds (sorted by start). Returns violations found. */
static int check_name(int n, struct hold *v, size_t cnt)
{
	size_t *act;
	size_t i, j, active = 0, maxact = 0;
	int bad = 0;

	act = calloc(cnt + 1, sizeof *act);
	if (act == NULL)
		return 1;
	for (i = 0; i < cnt; i++) {
		/* Holds still active when this one starts. */
		for (j = 0; j < active;) {
			if (v[act[j]].end_us <= v[i].start_us)
				act[j] = act[--active];
			else
				j++;
		}
		act[active++] = i;
		if (active > maxact)
			maxact = active;
		if (active > (size_t)limit) {
			fprintf(stderr, "%s/%d: %zu holders at t=%" PRId64 " us "
			    "(limit %d): token %" PRIu64 "\n", prefix, n, active,
			    v[i].start_us, limit, v[i].token);
			for (j = 0; j < active; j++)
				hold_print(act[j] == i ? "new " : "held", &v[act[j]]);
			bad++;
		}
	}
	/*
	 * Tokens: unique; a down sent after a hold ended gets a greater one.
	 * (Not "a grant that arrives after": a down whose answer was lost in
	 * a failover may have been granted to its session before that hold
	 * ended, and be heard of after, when the library asks again.)
	 */
	for (i = 0; i < cnt; i++) {
		for (j = i + 1; j < cnt && j < i + 200; j++) {
			if (v[i].token == v[j].token) {
				fprintf(stderr, "%s/%d: token %" PRIu64 " granted twice\n",
				    prefix, n, v[i].token);
				bad++;
			}
			if (v[j].sent_us > v[i].end_us && v[j].token < v[i].token) {
				fprintf(stderr, "%s/%d: token %" PRIu64 " granted to a "
				    "down sent after %" PRIu64 " ended\n", prefix, n, v[j].token,
				    v[i].token);
				bad++;
			}
		}
	}
	printf("%s/%d: %zu holds, at most %zu at once (limit %d)\n", prefix, n, cnt,
	    maxact, limit);
	free(act);
	return bad;
}

int main(int argc, char **argv)
{
	struct semc *c;
	size_t i, k, total, start;
	unsigned long grants = 0, downs = 0, timeouts = 0, errors = 0, noreply = 0;
	unsigned long lost = 0, silent = 0, refused = 0;
	int64_t slowest = 0, wall0;
	struct timespec ts;
	int opt, bad = 0, n, late = 0;
	char name[32];

	while ((opt = getopt(argc, argv, "s:d:t:n:l:L:q:f:w:p:o:H:P")) != -1) {
		switch (opt) {
		case 's': addrs = optarg; break;
		case 'd': seconds = atoi(optarg); break;
		case 't': nthreads = atoi(optarg); break;
		case 'n': nnames = atoi(optarg); break;
		case 'l': limit = atoi(optarg); break;
		case 'L': lease_ms = atoi(optarg); break;
		case 'q': quiet_end = atoi(optarg); break;
		case 'f': done_file = optarg; break;
		case 'w': start_file = optarg; break;
		case 'p': prefix = optarg; break;
		case 'o': record_file = optarg; break;
		case 'H': hold_ms = atoi(optarg); break;
		case 'P': policies = true; break;
		default: return 2;
		}
	}
	if (addrs == NULL || nthreads < 1 || nthreads > MAX_THREADS ||
	    nnames < 1 || nnames > MAX_NAMES || limit < 1 ||
	    strlen(prefix) > 16 || (start_file != NULL && done_file == NULL) ||
	    hold_ms < 0) {
		fprintf(stderr, "usage: cluster_load -s ADDRS -d SECONDS [-t N] [-n N] [-l N] "
		    "[-L MS] [-q S] [-f FILE] [-w FILE] [-p PREFIX] [-o FILE] [-H MS] [-P]\n");
		return 2;
	}
	/* The names, with their limit (through whichever node leads). */
	c = semc_new();
	if (c == NULL || semc_set_address(c, addrs) != 0 || semc_connect(c, 10000) != 0) {
		fprintf(stderr, "cannot connect: %s\n", semc_last_message());
		return 2;
	}
	for (n = 0; n < nnames; n++) {
		snprintf(name, sizeof name, "%s/%d", prefix, n);
		if (create_name(c, name, n) != 0) {
			fprintf(stderr, "create %s: %s\n", name, semc_last_message());
			return 2;
		}
	}
	semc_free(c);
	clock_gettime(CLOCK_REALTIME, &ts);
	wall0 = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	t_start = now_us();
	t_end = t_start + (int64_t)seconds * 1000000;
	for (i = 0; i < (size_t)nthreads; i++) {
		struct worker *w = &workers[i];

		w->idx = (int)i;
		pthread_mutex_init(&w->lost_lock, NULL);
		w->seed = 0x9e3779b97f4a7c15ULL * (i + 1);
		w->c = semc_new();
		if (w->c == NULL || semc_set_address(w->c, addrs) != 0)
			return 2;
		semc_set_lease(w->c, (uint32_t)lease_ms);
		semc_set_timeout(w->c, 5000);
		semc_set_event_callback(w->c, on_event, w);
		if (semc_connect(w->c, 10000) != 0) {
			fprintf(stderr, "worker %zu: cannot connect: %s\n", i,
			    semc_last_message());
			return 2;
		}
		pthread_create(&w->thread, NULL, work, w);
	}
	/*
	 * With -f the run ends a lease plus the daemon's restart grace (10 s)
	 * plus QUIET_END_S after the test says the faults are over: a permit
	 * whose holder's session died with a node is kept that long (no holder
	 * loses its permit to a failover), and the clients must carry on by
	 * then. -d seconds at the most.
	 */
	while (done_file != NULL && now_us() < atomic_load(&t_end)) {
		if (start_file != NULL && atomic_load(&t_faults) == 0 &&
		    access(start_file, F_OK) == 0)
			atomic_store(&t_faults, now_us());
		if (access(done_file, F_OK) == 0) {
			atomic_store(&t_faults_end, now_us());
			int64_t e = now_us() + (int64_t)lease_ms * 1000 +
			    (int64_t)(10 + quiet_end) * 1000000;

			if (e < atomic_load(&t_end))
				atomic_store(&t_end, e);
			break;
		}
		usleep(50000);
	}
	for (i = 0; i < (size_t)nthreads; i++) {
		struct worker *w = &workers[i];

		pthread_join(w->thread, NULL);
		semc_free(w->c);
		grants += w->grants;
		downs += w->downs;
		timeouts += w->timeouts;
		errors += w->errors;
		refused += w->refused;
		noreply += w->no_reply;
		if (w->slowest_down_us > slowest)
			slowest = w->slowest_down_us;
		if (quiet_end > 0 &&
		    w->last_grant_us < t_end - (int64_t)quiet_end * 1000000) {
			fprintf(stderr, "worker %zu: no grant in the last %d s\n", i,
			    quiet_end);
			late++;
		}
	}
	total = atomic_load(&nholds);
	for (k = 0; k < total; k++) {
		lost += holds[k].lost;
		if (holds[k].silent) {
			fprintf(stderr, "%s/%d: permit %" PRIu64 " (token %" PRIu64
			    ") gone at its up without a lost-hold report\n",
			    prefix, holds[k].name, holds[k].permit, holds[k].token);
			silent++;
		}
	}
	/* Per name, by start time. */
	qsort(holds, total, sizeof holds[0], by_start);
	if (record_file != NULL)
		records_write(record_file, total, wall0);
	for (n = 0; n < nnames; n++) {
		struct hold *v = calloc(total + 1, sizeof *v);
		size_t cnt = 0;

		if (v == NULL)
			return 2;
		for (k = 0, start = 0; k < total; k++)
			if (holds[k].name == n)
				v[cnt++] = holds[k];
		(void)start;
		bad += check_name(n, v, cnt);
		free(v);
	}
	if (start_file != NULL) {
		int64_t a = atomic_load(&t_faults), b = atomic_load(&t_faults_end);
		unsigned long in = 0;

		if (a == 0 || b <= a) {
			fprintf(stderr, "the fault window was not seen\n");
			bad++;
		} else {
			for (k = 0; k < total; k++)
				in += holds[k].start_us >= a && holds[k].start_us < b;
			printf("fault window: %lu grants in %.1f s (%.1f/s)\n", in,
			    (double)(b - a) / 1e6, (double)in * 1e6 / (double)(b - a));
		}
	}
	printf("%d threads, %d s: %lu downs, %lu grants, %lu timeouts, %lu "
	    "errors (%lu no reply), %lu holds reported lost, slowest down %.0f ms\n",
	    nthreads, seconds, downs, grants, timeouts, errors, noreply, lost,
	    (double)slowest / 1000);
	if (slowest > (int64_t)(DOWN_TIMEOUT_MS + 5000 + 1000) * 1000) {
		fprintf(stderr, "a down went unanswered past its timeout\n");
		bad++;
	}
	bad += (int)silent + late + (int)refused;
	if (refused > 0)
		fprintf(stderr, "%lu downs refused as invalid\n", refused);
	if (grants == 0)
		bad++;
	if (bad || timeouts > 0) {
		int64_t slots = (atomic_load(&t_end) - t_start) / (SLOT_S * 1000000) + 1;

		if (slots > MAX_SLOTS)
			slots = MAX_SLOTS;
		for (n = 0; n < nnames; n++) {
			fprintf(stderr, "%s/%d timeouts per %d s:", prefix, n, SLOT_S);
			for (k = 0; k < (size_t)slots; k++)
				fprintf(stderr, " %u", atomic_load(&tmo_slots[n][k]));
			fprintf(stderr, "\n");
		}
	}
	printf("%s\n", bad ? "VIOLATIONS" : "all checks passed");
	return bad ? 1 : 0;
}
