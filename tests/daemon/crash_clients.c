/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/crash_clients.c - kill -9 semd --data-dir during a stream of
 * grants from many clients, restart it on the same directory, again and
 * again, and check from the clients' own records what the log promises:
 *
 *  - never more permits held than a name's limit at any moment, by the
 *    clients' own clock: a hold begins when its grant is received and ends
 *    when its client sends the up (or is told the hold is lost);
 *  - fencing tokens: one name never gives a token twice, and a grant whose
 *    down was sent after another grant was received carries a higher token
 *    (so every token after a restart is above every token acknowledged
 *    before it);
 *  - every grant acknowledged before a kill is still held after the
 *    restart (its token validates) unless its client released it: checked
 *    by each client before it gives a hold back that lived through a kill,
 *    and by a checker right after each restart;
 *  - every create acknowledged before a kill is there after the restart;
 *  - no hold is lost and no request fails but by its own deadline: the
 *    sessions (UNIX and TCP, with a lease) resume across every restart.
 *
 * The program is the controller: it starts semd itself (so it knows when
 * each kill and each restart happened), half the clients over the UNIX
 * socket and half over TCP (the same port after every restart), with a mix
 * of session-bound holds, detached holds (a lease of their own) and one or
 * two permits at a time on a few names of limit 3, most holds short and
 * some long enough to straddle a restart.
 *
 * Usage: crash_clients -S SEMD -d DIR [-r rounds] [-c clients] [-s seed]
 *                   [-- extra semd arguments]
 * DIR (existing, empty) gets the data directory, the socket, the ready
 * file and semd.log. Exit 0 when every check held, 1 otherwise. Bounded:
 * the whole run stops at a deadline (-T, default 90 s) and every call has
 * a timeout.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/semclient.h"
#include "tests/client/spawn.h"

#define MAX_CLIENTS	64
#define MAX_ROUNDS	32
#define MAX_NAMES	8
#define NAME_LIMIT	3
#define LEASE_MS	10000		/* session leases: far above a restart */
#define DETACHED_LEASE_MS 30000
#define DOWN_TIMEOUT_MS	3000
#define CALL_TIMEOUT_MS	15000		/* a reply, a restart included */
#define READY_WAIT_MS	15000
#define MAX_CREATES	4096		/* per client */

static const char *semd_path, *dir;
static char **semd_extra;
static int nextra;
static int nclients = 16, nrounds = 5, nnames = 4;
static unsigned int seed;
static int deadline_s = 90;

static pid_t semd_pid;
static int tcp_port;			/* 0 until the first start chose it */
static char unix_addr[320], tcp_addr[320];

static atomic_bool stop;
static atomic_int kills;		/* kills so far (a round's number) */
static uint64_t t_kill[MAX_ROUNDS + 1], t_ready[MAX_ROUNDS + 1];
static uint64_t t_start, t_deadline;

static int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

/* Note a failed check. */
static void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&fail_lock);
	failures++;
	if (failures <= 40) {
		fprintf(stderr, "FAIL: ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, "\n");
	}
	pthread_mutex_unlock(&fail_lock);
}

/* Monotonic nanoseconds. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* xorshift32, one state per thread. */
static unsigned int rnd(unsigned int *s)
{
	unsigned int x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

static const char *sem_name(int i)
{
	static const char *const names[MAX_NAMES] = {
		"crash/s0", "crash/s1", "crash/s2", "crash/s3",
		"crash/s4", "crash/s5", "crash/s6", "crash/s7",
	};

	return names[i];
}

/* --- the clients' records --------------------------------------------------- */

enum { END_OPEN, END_UP, END_LOST };

struct grant {
	uint64_t	token;
	uint64_t	permit;
	uint64_t	t_send;		/* the down was sent */
	uint64_t	t_ack;		/* its grant was received */
	uint64_t	t_end;		/* the up was sent, or the loss heard */
	int		kills_at_ack;
	uint16_t	name;
	uint8_t		n;
	uint8_t		end;		/* END_* */
	bool		detached;
};

struct create {
	uint64_t	t_ack;
	char		name[40];
};

struct client {
	int		id;
	struct semc	*c;
	pthread_t	thread;
	unsigned int	rng;
	bool		tcp;
	pthread_mutex_t	lock;		/* grants and creates, for the checker */
	struct grant	*grants;
	size_t		ngrants, cap;
	struct create	*creates;
	size_t		ncreates;
	/* counts */
	unsigned long	timeouts, errors, lost, validated, up_errors;
};

static struct client clients[MAX_CLIENTS];

/* The library says a session-bound hold is gone. */
static void client_event(struct semc *c, const struct semc_event *ev, void *arg)
{
	struct client *cl = arg;
	size_t i;

	(void)c;
	if (ev->type != SEMC_EV_HOLD_LOST)
		return;
	pthread_mutex_lock(&cl->lock);
	cl->lost++;
	for (i = cl->ngrants; i-- > 0;) {
		struct grant *g = &cl->grants[i];

		if (g->permit == ev->permit_id && g->end == END_OPEN) {
			g->end = END_LOST;
			g->t_end = now_ns();
			break;
		}
	}
	pthread_mutex_unlock(&cl->lock);
	fail("client %d: hold %s permit %" PRIu64 " token %" PRIu64
	    " lost: %s (%s)", cl->id, ev->name ? ev->name : "?", ev->permit_id,
	    ev->token, semc_strerror(ev->error), ev->message ? ev->message : "");
}

/* A handle on the daemon, over UNIX or TCP, with a session lease. */
static struct semc *client_open(bool tcp, uint32_t lease_ms,
    semc_event_fn fn, void *arg)
{
	struct semc *c = semc_new();
	int r;

	if (c == NULL)
		return NULL;
	semc_set_address(c, tcp ? tcp_addr : unix_addr);
	semc_set_client_name(c, "crash_clients");
	semc_set_lease(c, lease_ms);
	semc_set_timeout(c, CALL_TIMEOUT_MS);
	if (fn != NULL)
		semc_set_event_callback(c, fn, arg);
	if ((r = semc_connect(c, CALL_TIMEOUT_MS)) != 0) {
		fprintf(stderr, "connect %s: %s: %s\n", tcp ? tcp_addr : unix_addr,
		    semc_strerror(r), semc_last_message());
		semc_free(c);
		return NULL;
	}
	return c;
}

/* Record a grant; its index. */
static size_t grant_add(struct client *cl, const struct grant *g)
{
	size_t i;

	pthread_mutex_lock(&cl->lock);
	if (cl->ngrants == cl->cap) {
		size_t cap = cl->cap ? cl->cap * 2 : 1024;
		struct grant *p = realloc(cl->grants, cap * sizeof *p);

		if (p == NULL) {
			pthread_mutex_unlock(&cl->lock);
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		cl->grants = p;
		cl->cap = cap;
	}
	i = cl->ngrants++;
	cl->grants[i] = *g;
	pthread_mutex_unlock(&cl->lock);
	return i;
}

/* One down, a hold, and the up. */
static void client_cycle(struct client *cl)
{
	struct grant g = { 0 };
	struct semc_grant sg;
	unsigned int hold_ms;
	uint32_t released;
	bool valid, open;
	size_t i;
	int r;

	g.name = (uint16_t)(rnd(&cl->rng) % (unsigned int)nnames);
	g.n = (uint8_t)(rnd(&cl->rng) % 3 == 0 ? 2 : 1);
	g.detached = rnd(&cl->rng) % 4 == 0;
	g.t_send = now_ns();
	r = semc_down(cl->c, sem_name(g.name), g.n, DOWN_TIMEOUT_MS,
	    g.detached ? DETACHED_LEASE_MS : 0, &sg);
	g.t_ack = now_ns();
	g.kills_at_ack = atomic_load(&kills);
	if (r == SEMC_E_TIMEOUT) {
		cl->timeouts++;
		return;
	}
	if (r != 0) {
		cl->errors++;
		fail("client %d: down %s: %s: %s", cl->id, sem_name(g.name),
		    semc_strerror(r), semc_last_message());
		return;
	}
	g.token = sg.token;
	g.permit = sg.permit_id;
	i = grant_add(cl, &g);

	/* Most holds are short; some straddle a kill and a restart. */
	hold_ms = rnd(&cl->rng) % 64 == 0 ? 200 + rnd(&cl->rng) % 1300 :
	    rnd(&cl->rng) % 4;
	sleep_ms(hold_ms);

	/* A hold that lived through a kill must still be there. */
	if (atomic_load(&kills) != g.kills_at_ack) {
		r = semc_validate(cl->c, sem_name(g.name), g.token, &valid);
		pthread_mutex_lock(&cl->lock);
		open = cl->grants[i].end == END_OPEN;
		pthread_mutex_unlock(&cl->lock);
		if (r != 0)
			fail("client %d: validate %s token %" PRIu64 ": %s: %s",
			    cl->id, sem_name(g.name), g.token, semc_strerror(r),
			    semc_last_message());
		else if (open && !valid)
			fail("client %d: %s token %" PRIu64 " (granted before kill "
			    "%d) is not held after the restart", cl->id,
			    sem_name(g.name), g.token, g.kills_at_ack + 1);
		else if (open)
			cl->validated++;
	}

	pthread_mutex_lock(&cl->lock);
	open = cl->grants[i].end == END_OPEN;
	if (open) {
		cl->grants[i].end = END_UP;
		cl->grants[i].t_end = now_ns();
	}
	pthread_mutex_unlock(&cl->lock);
	r = semc_up(cl->c, sem_name(g.name), g.n, g.permit, &released);
	if (r != 0 && open) {
		cl->up_errors++;
		fail("client %d: up %s permit %" PRIu64 ": %s: %s", cl->id,
		    sem_name(g.name), g.permit, semc_strerror(r),
		    semc_last_message());
	}
}

/* Create a name of one's own. */
static void client_create(struct client *cl)
{
	struct create cr;
	int r;

	if (cl->ncreates == MAX_CREATES)
		return;
	snprintf(cr.name, sizeof cr.name, "crash/c/%02d/%05zu", cl->id,
	    cl->ncreates);
	r = semc_create(cl->c, cr.name, 2, SEMC_MODE_OWNED, false);
	cr.t_ack = now_ns();
	if (r != 0) {
		cl->errors++;
		fail("client %d: create %s: %s: %s", cl->id, cr.name,
		    semc_strerror(r), semc_last_message());
		return;
	}
	pthread_mutex_lock(&cl->lock);
	cl->creates[cl->ncreates++] = cr;
	pthread_mutex_unlock(&cl->lock);
}

static void *client_main(void *arg)
{
	struct client *cl = arg;

	while (!atomic_load(&stop) && now_ns() < t_deadline) {
		if (rnd(&cl->rng) % 16 == 0)
			client_create(cl);
		else
			client_cycle(cl);
	}
	return NULL;
}

/* --- the daemon ----------------------------------------------------------- */

/* Start semd on the data directory; the TCP port of the first start after. */
static int semd_start(void)
{
	char sock[300], ready[300], data[300], log[300], listen_tcp[64];
	const char *argv[48];
	uint64_t until;
	int i, j;

	snprintf(sock, sizeof sock, "unix:%s/s.sock", dir);
	snprintf(ready, sizeof ready, "%s/ready", dir);
	snprintf(data, sizeof data, "%s/data", dir);
	snprintf(log, sizeof log, "%s/semd.log", dir);
	snprintf(listen_tcp, sizeof listen_tcp, "tcp:127.0.0.1:%d", tcp_port);
	unlink(ready);
	i = t_semd_args(argv, semd_path, sock, listen_tcp, ready);
	argv[i++] = "--data-dir";
	argv[i++] = data;
	for (j = 0; j < nextra && i < 46; j++)
		argv[i++] = semd_extra[j];
	argv[i] = NULL;
	semd_pid = t_spawn(semd_path, argv, log);
	if (semd_pid < 0)
		return -1;
	until = now_ns() + (uint64_t)READY_WAIT_MS * 1000000;
	for (;;) {
		struct stat st;
		int status;

		if (stat(ready, &st) == 0 && st.st_size > 0)
			break;
		if (waitpid(semd_pid, &status, WNOHANG) == semd_pid) {
			fprintf(stderr, "semd exited at start (status %d); see %s\n",
			    status, log);
			semd_pid = 0;
			return -1;
		}
		if (now_ns() > until) {
			fprintf(stderr, "semd did not become ready; see %s\n", log);
			return -1;
		}
		sleep_ms(5);
	}
	if (t_ready_read(ready, unix_addr, sizeof unix_addr, tcp_addr, sizeof tcp_addr) != 0)
		return -1;
	if (tcp_port == 0 && strrchr(tcp_addr, ':') != NULL)
		tcp_port = atoi(strrchr(tcp_addr, ':') + 1);
	return unix_addr[0] && tcp_port > 0 ? 0 : -1;
}

/* Stop semd with sig and reap it. */
static void semd_stop(int sig)
{
	if (semd_pid <= 0)
		return;
	kill(semd_pid, sig);
	waitpid(semd_pid, NULL, 0);
	semd_pid = 0;
}

/* --- checks after a restart ------------------------------------------------ */

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every create acknowledged before `before` is there. Returns how many. */
static unsigned long check_creates(struct semc *chk, uint64_t before,
    const char *when)
{
	struct semc_list *l = NULL;
	char **have = NULL, after[64] = "", *key;
	size_t nhave = 0, cap = 0, i, k;
	unsigned long checked = 0;
	int pages = 0, r;

	/* Every crash/c/ name, page by page (bounded). */
	do {
		r = semc_list(chk, "crash/c/", after, 1000, &l);
		if (r != 0) {
			fail("%s: list: %s: %s", when, semc_strerror(r),
			    semc_last_message());
			goto out;
		}
		for (i = 0; i < l->n; i++) {
			if (nhave == cap) {
				char **p;

				cap = cap ? cap * 2 : 1024;
				p = realloc(have, cap * sizeof *p);
				if (p == NULL)
					goto out;
				have = p;
			}
			have[nhave++] = strdup(l->entries[i].name);
		}
		snprintf(after, sizeof after, "%s", l->next ? l->next : "");
		semc_list_free(l);
		l = NULL;
	} while (after[0] != '\0' && ++pages < 1000);
	qsort(have, nhave, sizeof *have, str_cmp);
	for (k = 0; k < (size_t)nclients; k++) {
		struct client *cl = &clients[k];

		pthread_mutex_lock(&cl->lock);
		for (i = 0; i < cl->ncreates; i++) {
			if (cl->creates[i].t_ack >= before)
				continue;
			key = cl->creates[i].name;
			checked++;
			if (bsearch(&key, have, nhave, sizeof *have, str_cmp) == NULL)
				fail("%s: %s, created (acknowledged) before, is gone",
				    when, key);
		}
		pthread_mutex_unlock(&cl->lock);
	}
out:
	for (i = 0; i < nhave; i++)
		free(have[i]);
	free(have);
	return checked;
}

/*
 * Right after restart k: every hold acknowledged before the kill whose up
 * its client has not sent validates. A hold whose up goes out while the
 * validation runs proves nothing either way and is not counted.
 */
static unsigned long check_holds(struct semc *chk, int k)
{
	unsigned long checked = 0;
	size_t i, j;
	int r;

	for (j = 0; j < (size_t)nclients; j++) {
		struct client *cl = &clients[j];
		struct grant g;

		for (i = 0;; i++) {
			bool valid, open;

			pthread_mutex_lock(&cl->lock);
			if (i >= cl->ngrants) {
				pthread_mutex_unlock(&cl->lock);
				break;
			}
			g = cl->grants[i];
			pthread_mutex_unlock(&cl->lock);
			if (g.end != END_OPEN || g.t_ack >= t_kill[k])
				continue;
			r = semc_validate(chk, sem_name(g.name), g.token, &valid);
			pthread_mutex_lock(&cl->lock);
			open = cl->grants[i].end == END_OPEN;
			pthread_mutex_unlock(&cl->lock);
			if (r != 0) {
				fail("after restart %d: validate: %s: %s", k,
				    semc_strerror(r), semc_last_message());
			} else if (open) {
				checked++;
				if (!valid)
					fail("after restart %d: client %zu's hold of %s "
					    "(token %" PRIu64 ", granted before the kill) "
					    "is gone", k, j, sem_name(g.name), g.token);
			}
		}
	}
	return checked;
}

/* --- checks at the end ------------------------------------------------------ */

struct ev {
	uint64_t	t;
	int		delta;
};

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->delta - y->delta;	/* ends first at a tie */
}

static int grant_ack_cmp(const void *a, const void *b)
{
	const struct grant *x = *(const struct grant *const *)a;
	const struct grant *y = *(const struct grant *const *)b;

	return (x->t_ack > y->t_ack) - (x->t_ack < y->t_ack);
}

static int grant_token_cmp(const void *a, const void *b)
{
	const struct grant *x = *(const struct grant *const *)a;
	const struct grant *y = *(const struct grant *const *)b;

	return (x->token > y->token) - (x->token < y->token);
}

/*
 * One name's grants: the permits held at once never exceed the limit; no
 * token twice; causally later grants have higher tokens; after each
 * restart, every new token is above every one acknowledged before it.
 */
static void check_name(int name, struct grant **v, size_t n,
    unsigned long *restart_pairs)
{
	struct ev *evs = calloc(2 * n + 1, sizeof *evs);
	uint64_t *pmax = calloc(n + 1, sizeof *pmax);
	size_t i, ne = 0, lo, hi;
	int held = 0, most = 0, k;
	uint64_t sum;

	if (evs == NULL || pmax == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (i = 0; i < n; i++) {
		evs[ne++] = (struct ev){ v[i]->t_ack, v[i]->n };
		evs[ne++] = (struct ev){ v[i]->end == END_OPEN ? UINT64_MAX :
		    v[i]->t_end, -(int)v[i]->n };
	}
	qsort(evs, ne, sizeof *evs, ev_cmp);
	for (i = 0; i < ne; i++) {
		held += evs[i].delta;
		if (held > most)
			most = held;
		if (held > NAME_LIMIT)
			fail("%s: %d permits held at once at t=%.6f s (limit %d)",
			    sem_name(name), held,
			    (double)(evs[i].t - t_start) / 1e9, NAME_LIMIT);
	}
	for (i = 0, sum = 0; i < n; i++)
		sum += v[i]->t_ack - v[i]->t_send;
	printf("# %s: %zu grants, at most %d of %d permits held at once, "
	    "%.1f ms from down to grant on average\n", sem_name(name), n, most,
	    NAME_LIMIT, n ? (double)sum / (double)n / 1e6 : 0.0);

	qsort(v, n, sizeof *v, grant_token_cmp);
	for (i = 1; i < n; i++)
		if (v[i]->token == v[i - 1]->token)
			fail("%s: token %" PRIu64 " granted twice", sem_name(name),
			    v[i]->token);

	/* Causality: pmax[i] = the highest token of the first i acks. */
	qsort(v, n, sizeof *v, grant_ack_cmp);
	for (i = 0; i < n; i++)
		pmax[i + 1] = pmax[i] > v[i]->token ? pmax[i] : v[i]->token;
	for (i = 0; i < n; i++) {
		/* How many grants were received before this down was sent. */
		lo = 0;
		hi = n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (v[mid]->t_ack < v[i]->t_send)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (pmax[lo] >= v[i]->token)
			fail("%s: token %" PRIu64 " is not above %" PRIu64 ", received "
			    "before its down was sent", sem_name(name), v[i]->token,
			    pmax[lo]);
	}
	/* The same, restart by restart, for the report. */
	for (k = 1; k <= atomic_load(&kills); k++) {
		uint64_t before = 0, after = UINT64_MAX;

		for (i = 0; i < n; i++) {
			if (v[i]->t_ack < t_kill[k] && v[i]->token > before)
				before = v[i]->token;
			if (v[i]->t_send > t_ready[k] && v[i]->token < after)
				after = v[i]->token;
		}
		if (before != 0 && after != UINT64_MAX) {
			(*restart_pairs)++;
			if (after <= before)
				fail("%s: after restart %d a token %" PRIu64 " is not "
				    "above %" PRIu64 ", acknowledged before the kill",
				    sem_name(name), k, after, before);
		}
	}
	free(evs);
	free(pmax);
}

static void usage(void)
{
	fprintf(stderr, "usage: crash_clients -S SEMD -d DIR [-r rounds] [-c clients] "
	    "[-n names] [-s seed] [-T seconds] [-- semd args]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long grants = 0, timeouts = 0, errors = 0, lost = 0, validated = 0;
	unsigned long creates = 0, checked_creates = 0, checked_holds = 0;
	unsigned long restart_pairs = 0, before_round = 0, in_flight = 0;
	unsigned int rng;
	struct semc *chk;
	struct grant **v;
	size_t total, i, j, nv;
	int opt, k, r, name;

	seed = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	while ((opt = getopt(argc, argv, "S:d:r:c:n:s:T:")) != -1) {
		switch (opt) {
		case 'S': semd_path = optarg; break;
		case 'd': dir = optarg; break;
		case 'r': nrounds = atoi(optarg); break;
		case 'c': nclients = atoi(optarg); break;
		case 'n': nnames = atoi(optarg); break;
		case 's': seed = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'T': deadline_s = atoi(optarg); break;
		default: usage();
		}
	}
	if (semd_path == NULL || dir == NULL || nrounds < 1 ||
	    nrounds > MAX_ROUNDS || nclients < 2 || nclients > MAX_CLIENTS ||
	    nnames < 1 || nnames > MAX_NAMES || deadline_s < 10)
		usage();
	semd_extra = argv + optind;
	nextra = argc - optind;
	if (seed == 0)
		seed = 1;
	rng = seed;
	printf("# crash_clients: seed %u (-s %u replays the choices, not the "
	    "timing), %d clients, %d names of limit %d, %d kills\n", seed, seed,
	    nclients, nnames, NAME_LIMIT, nrounds);
	signal(SIGPIPE, SIG_IGN);
	t_start = now_ns();
	t_deadline = t_start + (uint64_t)deadline_s * 1000000000u;

	if (semd_start() != 0)
		return 1;
	chk = client_open(false, 0, NULL, NULL);
	if (chk == NULL)
		return 1;
	for (name = 0; name < nnames; name++) {
		r = semc_create(chk, sem_name(name), NAME_LIMIT, SEMC_MODE_OWNED,
		    false);
		if (r != 0) {
			fprintf(stderr, "create %s: %s\n", sem_name(name),
			    semc_last_message());
			return 1;
		}
	}
	semc_free(chk);

	for (i = 0; i < (size_t)nclients; i++) {
		struct client *cl = &clients[i];

		cl->id = (int)i;
		cl->tcp = i % 2 == 1;
		cl->rng = seed * 2654435761u + (unsigned int)i * 40503u + 1;
		pthread_mutex_init(&cl->lock, NULL);
		cl->creates = calloc(MAX_CREATES, sizeof *cl->creates);
		cl->c = client_open(cl->tcp, LEASE_MS, client_event, cl);
		if (cl->creates == NULL || cl->c == NULL)
			return 1;
	}
	for (i = 0; i < (size_t)nclients; i++)
		pthread_create(&clients[i].thread, NULL, client_main, &clients[i]);

	for (k = 1; k <= nrounds; k++) {
		unsigned long acked = 0;
		uint64_t t0;

		/* The stream runs a while, then semd dies mid-flight. */
		sleep_ms(300 + rnd(&rng) % 900);
		if (now_ns() > t_deadline) {
			fail("the deadline (%d s) came before kill %d", deadline_s, k);
			break;
		}
		t_kill[k] = now_ns();
		atomic_store(&kills, k);
		semd_stop(SIGKILL);
		for (i = 0; i < (size_t)nclients; i++) {
			pthread_mutex_lock(&clients[i].lock);
			acked += clients[i].ngrants;
			pthread_mutex_unlock(&clients[i].lock);
		}
		sleep_ms(rnd(&rng) % 150);
		t0 = now_ns();
		if (semd_start() != 0) {
			fail("restart %d failed", k);
			break;
		}
		t_ready[k] = now_ns();
		chk = client_open(false, 0, NULL, NULL);
		if (chk == NULL) {
			fail("restart %d: cannot connect", k);
			break;
		}
		checked_holds += check_holds(chk, k);
		checked_creates += check_creates(chk, t_kill[k], "after a restart");
		semc_free(chk);
		printf("# kill %d: %lu grants acknowledged before it, restart took "
		    "%.0f ms\n", k, acked - before_round,
		    (double)(t_ready[k] - t0) / 1e6);
		before_round = acked;
	}
	/* Downs sent before a kill and answered after its restart. */
	for (k = 1; k <= atomic_load(&kills); k++) {
		unsigned long across = 0;

		for (i = 0; i < (size_t)nclients; i++)
			for (j = 0; j < clients[i].ngrants; j++)
				if (clients[i].grants[j].t_send < t_kill[k] &&
				    clients[i].grants[j].t_ack > t_ready[k])
					across++;
		in_flight += across;
	}
	/* Let the stream run on the last restart a little, then stop it. */
	sleep_ms(300);
	atomic_store(&stop, true);
	for (i = 0; i < (size_t)nclients; i++)
		pthread_join(clients[i].thread, NULL);

	/* The final state: every create there. */
	chk = client_open(false, 0, NULL, NULL);
	if (chk != NULL) {
		checked_creates += check_creates(chk, UINT64_MAX, "at the end");
		semc_free(chk);
	} else {
		fail("cannot connect at the end");
	}

	total = 0;
	for (i = 0; i < (size_t)nclients; i++) {
		struct client *cl = &clients[i];

		total += cl->ngrants;
		timeouts += cl->timeouts;
		errors += cl->errors + cl->up_errors;
		lost += cl->lost;
		validated += cl->validated;
		creates += cl->ncreates;
	}
	grants = total;
	v = calloc(total + 1, sizeof *v);
	if (v == NULL)
		return 1;
	for (name = 0; name < nnames; name++) {
		nv = 0;
		for (i = 0; i < (size_t)nclients; i++)
			for (j = 0; j < clients[i].ngrants; j++)
				if (clients[i].grants[j].name == name)
					v[nv++] = &clients[i].grants[j];
		check_name(name, v, nv, &restart_pairs);
	}
	free(v);

	printf("# %d kills; %lu grants (%lu of them sent before a kill and "
	    "granted after the restart; %lu downs timed out), %lu creates; "
	    "holds validated after a kill: %lu by their clients, %lu by the "
	    "checker; creates checked: %lu; restart token comparisons: %lu; "
	    "holds lost: %lu; failed calls: %lu\n", atomic_load(&kills), grants,
	    in_flight, timeouts, creates, validated, checked_holds, checked_creates,
	    restart_pairs, lost, errors);
	/* The checks must have had something to check. */
	if (atomic_load(&kills) != nrounds)
		fail("%d of %d kills done", atomic_load(&kills), nrounds);
	if (grants < 50UL * (unsigned long)nrounds)
		fail("only %lu grants: the stream hardly ran", grants);
	if (validated + checked_holds == 0)
		fail("no hold lived through a kill: nothing was validated");
	if (checked_creates == 0)
		fail("no create was checked");
	if (restart_pairs == 0)
		fail("no token was compared across a restart");

	for (i = 0; i < (size_t)nclients; i++) {
		semc_free(clients[i].c);
		free(clients[i].grants);
		free(clients[i].creates);
		pthread_mutex_destroy(&clients[i].lock);
	}
	semd_stop(SIGTERM);
	printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
