/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/run.c - the commands that wait: down and trydown (one name
 * or several, with the progress line), run (a command under a hold, its
 * child supervised and the session kept). watch is watch.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli/semctl.h"

#define RUN_LEASE_MS	10000	/* run's default session lease */
#define RUN_LEASE_MIN	200	/* shorter leases leave no room for a ping */
#define RUN_GRACE_MS	2000	/* default: SIGTERM, then SIGKILL after this */
#define DOWN_LEASE_MS	10000	/* the session lease of a down that waits */

/* --- acquiring: one name or several, with the progress line ---------------- */

#define ACQ_MAX		16	/* names of one down (the daemon's most) */
#define ACQ_NO_REPLY_MS	10000	/* past the deadline, how long for an answer */

/* What down and run acquire, and what they got. */
struct acq {
	size_t k;
	const char *names[ACQ_MAX];
	uint32_t ns[ACQ_MAX];
	uint32_t create_limit;
	struct semc_down_policy policy;	/* --replace KEY, --priority P */
	bool policy_set;
	int64_t timeout_ms;
	uint32_t lease_ms;
	int64_t progress_ms;	/* --progress: a log line this often (0: none) */
	int conflict_exit;	/* the exit of a timeout or would block (-E) */
	const char *cmd;	/* down, trydown, run: for the log lines */
	/* the outcome */
	bool done;
	int error;
	int signal;		/* the signal that interrupted the wait, or 0 */
	char message[512];
	uint64_t permit_id[ACQ_MAX];
	uint64_t token[ACQ_MAX];
	uint32_t n[ACQ_MAX];
	uint64_t waited_us;
};

/* The policy of a down or run: --replace KEY (one name), --priority P. */
static void acq_policy(struct acq *q, const struct cmd_args *a)
{
	q->policy.replace = a->replace;
	q->policy.priority = a->priority;
	q->policy.group = a->group;
	q->policy_set = a->replace != NULL || a->priority != 0 || a->group != NULL;
	if ((a->replace != NULL || a->group != NULL) && q->k > 1)
		usage_fail("%s: --%s KEY takes one NAME", a->cmd->name,
			   a->replace != NULL ? "replace" : "group");
}

/*
 * The names of down, trydown and run: each NAME or NAME:N, N permits of
 * NAME (1 to COUNT_MAX), whether one name or several; a name of its own
 * that ends in :DIGITS is written with its count, NAME:DIGITS:1. -n N
 * gives the count of a single NAME.
 */
static void acq_names(struct acq *q, char **names, int count, const struct cmd_args *a)
{
	const char *cmd = a->cmd->name;
	unsigned long long v;
	char *colon, *end;
	int i;

	memset(q, 0, sizeof *q);
	if (count < 1)
		usage_forms("%s: a semaphore name is required", cmd);
	if (count > ACQ_MAX)
		usage_fail("%s: at most %d names at once", cmd, ACQ_MAX);
	if (count > 1 && a->given[OPT_N])
		usage_fail("%s: with several names, give each its count as NAME:N", cmd);
	for (i = 0; i < count; i++) {
		q->names[i] = names[i];
		q->ns[i] = a->n;
		colon = strrchr(names[i], ':');
		if (colon == NULL || colon[1] < '0' || colon[1] > '9' ||
		    strspn(colon + 1, "0123456789") != strlen(colon + 1))
			continue;
		if (a->given[OPT_N])
			usage_fail("%s: '%s': give the count once, as -n N or as NAME:N", cmd,
				   names[i]);
		errno = 0;
		v = strtoull(colon + 1, &end, 10);
		if (errno != 0 || v < 1 || v > COUNT_MAX)
			usage_fail("%s: '%s': the count %s is out of range (1 to %u; a name "
				   "that ends in :DIGITS is written NAME:DIGITS:1)", cmd, names[i],
				   colon + 1, COUNT_MAX);
		if (colon == names[i])
			usage_fail("%s: '%s': no name before the count", cmd, names[i]);
		*colon = '\0';		/* argv is ours */
		q->ns[i] = (uint32_t)v;
	}
	q->k = (size_t)count;
	q->cmd = cmd;
	q->progress_ms = a->progress_ms;
	q->conflict_exit = a->conflict_exit;
}

/* Completion of the asynchronous down: keep the outcome. */
static void acq_done(struct semc *c, const struct semc_result *res, void *arg)
{
	struct acq *q = arg;
	size_t i;

	(void)c;
	q->done = true;
	q->error = res->error;
	snprintf(q->message, sizeof q->message, "%s", res->message);
	if (res->error != 0)
		return;
	if (res->grant != NULL && q->k == 1) {
		q->permit_id[0] = res->grant->permit_id;
		q->token[0] = res->grant->token;
		q->n[0] = res->grant->n;
		q->waited_us = res->grant->waited_us;
	} else if (res->multi != NULL && res->multi->n == q->k) {
		for (i = 0; i < q->k; i++) {
			q->permit_id[i] = res->multi->grants[i].permit_id;
			q->token[i] = res->multi->grants[i].token;
			q->n[i] = res->multi->grants[i].n;
		}
		q->waited_us = res->multi->waited_us;
	} else {
		q->error = SEMC_E_PROTOCOL;
		snprintf(q->message, sizeof q->message, "the answer is not a grant");
	}
}

/* "1st", "2nd", "3rd", "4th", "11th", "21st"... */
static const char *ordinal(uint32_t n, char *buf, size_t len)
{
	const char *suffix = "th";

	if (n % 100 < 11 || n % 100 > 13)
		suffix = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
	snprintf(buf, len, "%u%s", n, suffix);
	return buf;
}

/* Append to line (of size cap, *len used) what fmt says, cut at the end. */
static void line_add(char *line, size_t cap, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void line_add(char *line, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len + 1 >= cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

#define PROGRESS_HOLDERS	3	/* holders named a name in a log line */

/*
 * Who holds name, for a log line: " by uid:1000 (semctl run@ci-7 pid 42,
 * for 3m10s), ... and 4 more" after "4/4 held". Nothing when the name may not be
 * inspected (or is gone). The durations are the daemon's since against
 * this host's clock: as right as the two clocks agree.
 */
static void acq_holders(struct semc *c, const char *name, char *line, size_t cap,
			size_t *len)
{
	struct semc_info *pg;
	char b[32];
	size_t i;

	if (semc_info_page(c, name, PROGRESS_HOLDERS, 0, UINT64_MAX, &pg) != 0)
		return;
	for (i = 0; i < pg->n_holders; i++) {
		const struct semc_holder *h = &pg->holders[i];

		line_add(line, cap, len, "%s%s (%s@%s pid %u, for %s)", i ? ", " : " by ",
			 esc(h->principal), esc(h->client_name), esc(h->host), h->pid,
			 fmt_dur(wall_ms() - (int64_t)h->since_ms, b, sizeof b));
	}
	if (pg->holders_total > pg->n_holders)
		line_add(line, cap, len, " and %zu more", pg->holders_total - pg->n_holders);
	semc_info_free(pg);
}

/*
 * Where a down stands: "waiting for deploy: 3rd of 7 in line, 4/4 held,
 * 12 s", drawn in place on a terminal; as a log line (--progress)
 * "semctl: down: waited 12.0s for deploy: 3rd of 7 in line, 4/4 held by
 * uid:1000 (semctl run@ci-7 pid 42, for 3m10s), ... and 2 more".
 */
static void acq_progress(struct semc *c, const struct acq *q, int64_t id, int64_t elapsed_ms,
			 bool log)
{
	struct semc_where *w;
	char line[2048], b1[32], b2[32];
	size_t i, len = 0;

	if (semc_where(c, (uint64_t)id, &w) != 0)
		return;		/* granted meanwhile, or gone: nothing to say */
	if (log)
		line_add(line, sizeof line, &len, "semctl: %s: waited %s for ", q->cmd,
			 fmt_dur(elapsed_ms, b1, sizeof b1));
	else
		line_add(line, sizeof line, &len, "waiting for ");
	for (i = 0; i < w->n; i++) {
		const struct semc_place *p = &w->places[i];

		line_add(line, sizeof line, &len, "%s%s: %s of %u in line", i ? "; " : "",
			 esc(p->name), p->position ? ordinal(p->position, b1, sizeof b1) :
			 "past the 100000th", p->waiters);
		if (p->limit != 0)
			line_add(line, sizeof line, &len, ", %" PRIu64 "/%u held", p->held,
				 p->limit);
		if (p->tokens_nano != 0 || p->next_token_ms != 0)
			line_add(line, sizeof line, &len, ", %" PRIu64 ".%02" PRIu64
				 " of %u tokens", p->tokens_nano / 1000000000u,
				 p->tokens_nano % 1000000000u / 10000000u, p->n);
		if (p->next_token_ms != 0)
			line_add(line, sizeof line, &len, ", next in %s",
				 fmt_dur((int64_t)p->next_token_ms - wall_ms(), b2, sizeof b2));
		if (log && p->limit != 0)
			acq_holders(c, p->name, line, sizeof line, &len);
	}
	if (!log)
		line_add(line, sizeof line, &len, ", %" PRId64 " s", elapsed_ms / 1000);
	semc_where_free(w);
	if (log)
		fprintf(stderr, "%s\n", line);
	else
		fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
}

/* --- signals: a wait interrupted, a command's signals forwarded ------------ */

/* Signals reach the loops (acquire()'s, run's) through this pipe, two bytes
 * each: the signal and whether the kernel sent it (a terminal's ^C, ^\,
 * hang-up). */
static int sig_pipe[2] = { -1, -1 };

/* Signal handler: pass the signal and its origin to the loop. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	unsigned char b[2] = { (unsigned char)sig, si != NULL && si->si_code == SI_KERNEL };
	int e = errno;

	(void)uc;
	if (write(sig_pipe[1], b, sizeof b) < 0) {
		/* the pipe is full: the loop has signals to read anyway */
	}
	errno = e;
}

/* Catch SIGINT, SIGTERM, SIGHUP, SIGQUIT (and with chld SIGCHLD) into
 * sig_pipe: 0, or -1 (errno set). */
static int signals_catch(bool chld)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD };
	struct sigaction sa = { 0 };
	size_t i;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		if (sigs[i] != SIGCHLD || chld)
			sigaction(sigs[i], &sa, NULL);
	return 0;
}

/* The first signal waiting in sig_pipe that ends a wait (not SIGCHLD), or 0. */
static int signal_pending(void)
{
	unsigned char b[64];
	ssize_t n, i;
	int sig = 0;

	while (sig_pipe[0] >= 0 && (n = read(sig_pipe[0], b, sizeof b)) > 0)
		for (i = 0; i + 1 < n; i += 2)
			if (sig == 0 && b[i] != SIGCHLD)
				sig = b[i];
	return sig;
}

/*
 * A wait interrupted by signal sig: the down is cancelled and, if it was
 * granted meanwhile, given back, so that nothing is held; q says so.
 * Bounded: the cancel and each up wait at most 2 s for their answer, the
 * down's own answer 2 s more.
 */
static void acq_interrupt(struct semc *c, struct acq *q, int64_t id, int sig)
{
	int64_t end;
	size_t i;
	int r = 0;

	semc_set_timeout(c, 2000);
	if (!q->done)
		semc_cancel(c, (uint64_t)id);	/* NOT_FOUND: answered meanwhile */
	end = mono_ms() + 2000;
	while (!q->done && mono_ms() < end) {
		struct pollfd p = { .fd = semc_fd(c), .events = POLLIN };

		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			break;
		semc_process(c);
	}
	for (i = 0; q->done && q->error == 0 && i < q->k; i++)
		if (semc_up(c, q->names[i], 0, q->permit_id[i], NULL) != 0)
			r = -1;
	q->done = true;
	q->signal = sig;
	q->error = SEMC_E_CANCELLED;
	snprintf(q->message, sizeof q->message, "interrupted by %s while waiting; %s",
		 sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ?
		 "SIGHUP" : sig == SIGQUIT ? "SIGQUIT" : "a signal",
		 r != 0 ? "granted meanwhile, and not given back: it is held until its lease "
		 "ends or an up" : "nothing is held");
}

/*
 * Take q's names: an asynchronous down (or multi-name down) and a poll loop
 * that does the library's duties; on a terminal (and without --quiet), a
 * line on stderr says where the down stands, redrawn every second. Returns
 * 0 or the error (the message in q->message). A signal caught into
 * sig_pipe ends the wait with nothing held (acq_interrupt()). Bounded: the
 * daemon answers by the deadline (timeout_ms, then ACQ_NO_REPLY_MS more),
 * or never when the down waits for ever, and a signal ends it.
 */
static int acquire(struct semc *c, struct acq *q)
{
	struct semc_down_opts o = { 0 };
	struct semc_want wants[ACQ_MAX];
	int64_t id, start = mono_ms(), now, next_show, wait, deadline = -1;
	/* a log line every --progress, else on a terminal a line redrawn */
	bool log = q->progress_ms > 0 && q->timeout_ms != 0;
	bool progress = log || (!g.quiet && !g.json && q->timeout_ms != 0 &&
				isatty(STDERR_FILENO));
	int64_t every = log ? q->progress_ms : 1000;
	bool shown = false;
	size_t i;
	int sig = 0;

	if (q->k == 1) {
		o.n = q->ns[0];
		o.timeout_ms = q->timeout_ms;
		o.lease_ms = q->lease_ms;
		o.create_limit = q->create_limit;
		id = q->policy_set ?
		     semc_down_policy_async(c, q->names[0], &o, &q->policy, acq_done, q) :
		     semc_down_ex_async(c, q->names[0], &o, acq_done, q);
	} else {
		for (i = 0; i < q->k; i++) {
			wants[i].name = q->names[i];
			wants[i].n = q->ns[i];
			wants[i].create_limit = q->create_limit;
		}
		id = q->policy_set ?
		     semc_down_multi_policy_async(c, wants, q->k, q->timeout_ms, q->lease_ms,
						  &q->policy, acq_done, q) :
		     semc_down_multi_async(c, wants, q->k, q->timeout_ms, q->lease_ms, acq_done, q);
	}
	if (id < 0) {
		snprintf(q->message, sizeof q->message, "%s", semc_last_message());
		return (int)id;
	}
	if (q->timeout_ms >= 0)
		deadline = start + q->timeout_ms + ACQ_NO_REPLY_MS;
	next_show = start + every;
	while (!q->done) {
		struct pollfd p[2] = { { .fd = sig_pipe[0], .events = POLLIN },
				       { .fd = semc_fd(c), .events = POLLIN } };

		now = mono_ms();
		if (deadline >= 0 && now >= deadline) {
			q->error = SEMC_E_NO_REPLY;
			snprintf(q->message, sizeof q->message, "no reply from %s in time",
				 semc_address(c));
			break;
		}
		wait = semc_timeout(c);
		if (wait < 0 || wait > 1000)
			wait = 1000;
		if (progress && next_show - now < wait)
			wait = next_show > now ? next_show - now : 0;
		if (deadline >= 0 && deadline - now < wait)
			wait = deadline - now;
		if (p[1].fd < 0 && wait > 100)
			wait = 100;		/* disconnected: retry soon */
		if (poll(p, 2, (int)wait) < 0 && errno != EINTR)
			break;
		semc_process(c);
		if ((sig = signal_pending()) != 0)
			break;
		now = mono_ms();
		if (!q->done && progress && now >= next_show) {
			acq_progress(c, q, id, now - start, log);
			shown = !log;
			next_show = now + every;
		}
	}
	if (shown) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	if (sig != 0)
		acq_interrupt(c, q, id, sig);
	if (!q->done && q->error == 0) {
		q->error = SEMC_E_SYSTEM;
		snprintf(q->message, sizeof q->message, "poll: %s", strerror(errno));
	}
	return q->error;
}

/* Report a failed acquire (as fail() does, with q's message); an
 * interrupted one exits 128 + the signal, its object saying which. */
static int acq_fail(const struct acq *q, int err, const char *what)
{
	char more[32];

	if (q->signal != 0) {
		snprintf(more, sizeof more, ",\"signal\":%d", q->signal);
		return fail_json(EX_SIGNAL_ + q->signal, "interrupted", err, what, q->message,
				 more);
	}
	/* not got (-E): told apart from the other failures, as flock -E does */
	if (err == SEMC_E_TIMEOUT || err == SEMC_E_WOULD_BLOCK)
		return fail_json(q->conflict_exit, err_name(err), err, what,
				 q->message[0] ? q->message : semc_strerror(err), NULL);
	return fail_msg(err, what, q->message[0] ? q->message : semc_strerror(err));
}

/* The grants of q as a JSON array's members. */
static void acq_json_grants(const struct acq *q)
{
	size_t i;

	printf("\"grants\":[");
	for (i = 0; i < q->k; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_str(q->names[i]);
		printf(",\"token\":%" PRIu64 ",\"permit_id\":%" PRIu64 ",\"n\":%u}",
		       q->token[i], q->permit_id[i], q->n[i]);
	}
	printf("]");
}

/* Print what down got: the token (one name per line), or JSON. */
static void acq_print(const struct acq *q, int64_t lease_ms)
{
	size_t i;

	if (!g.json) {
		for (i = 0; i < q->k; i++)
			printf("%" PRIu64 "\n", q->token[i]);
		return;
	}
	printf("{\"ok\":true,\"name\":");
	json_str(q->names[0]);
	printf(",\"token\":%" PRIu64 ",\"permit_id\":%" PRIu64 ",\"n\":%u,\"waited_us\":%" PRIu64,
	       q->token[0], q->permit_id[0], q->n[0], q->waited_us);
	if (lease_ms >= 0)
		printf(",\"lease_ms\":%" PRId64, lease_ms);
	if (q->k > 1) {
		printf(",");
		acq_json_grants(q);
	}
	printf("}\n");
}

/*
 * A down given --lease: the lease the daemon granted, from the first hold's
 * since and expiry (both the daemon's clock), if semctl may inspect the
 * name; -1 when it cannot tell.
 */
static int64_t acq_granted_lease(struct semc *c, const struct acq *q)
{
	struct semc_info *pg;
	int64_t lease = -1;

	if (semc_info_page(c, q->names[0], 1, q->permit_id[0] - 1, UINT64_MAX, &pg) != 0)
		return -1;
	if (pg->n_holders >= 1 && pg->holders[0].permit_id == q->permit_id[0] &&
	    pg->holders[0].expires_ms > pg->holders[0].since_ms)
		lease = (int64_t)(pg->holders[0].expires_ms - pg->holders[0].since_ms);
	semc_info_free(pg);
	return lease;
}

/* The failure of a --lease longer than the daemon's max-lease (max ms),
 * saying what became of the down. */
static int acq_lease_fail(const struct cmd_args *a, int64_t max, const char *what)
{
	char msg[256], more[64], b1[32], b2[32];

	snprintf(msg, sizeof msg, "--lease %s is more than this semd's max-lease (%s): %s",
		 a->lease_arg != NULL ? a->lease_arg : fmt_exact(a->lease_ms, b1, sizeof b1),
		 fmt_exact(max, b2, sizeof b2), what);
	snprintf(more, sizeof more, ",\"max_lease_ms\":%" PRId64, max);
	return fail_json(EX_ERROR_, "invalid_argument", SEMC_E_INVALID, a->cmd->name, msg, more);
}

/*
 * --lease longer than the daemon's max-lease: refused, as a hold that ends
 * long before the caller was told would be. The handshake says the
 * max-lease, and the down is refused before it is sent; a daemon older
 * than 0.4 does not, nor does one whose max-lease was lowered by a reload
 * since: then the lease granted is compared after the grant (with 1 s to
 * spare: the daemon's wall clock may be stepped between the two times it
 * gives), the permits are given back at once and nothing is held.
 */
static int acq_lease_check(struct semc *c, const struct acq *q, const struct cmd_args *a)
{
	int64_t got = acq_granted_lease(c, q);
	size_t i;
	int r = 0;

	if (got < 0 || got + 1000 >= a->lease_ms)
		return 0;
	for (i = 0; i < q->k; i++)
		if (semc_up(c, q->names[i], 0, q->permit_id[i], NULL) != 0)
			r = -1;
	return acq_lease_fail(a, got, r == 0 ? "given back, nothing is held" :
			      "granted, and not given back");
}

/* down, trydown: detached holds owned by our principal. */
static int down(struct cmd_args *a, bool try)
{
	const char *what = a->cmd->name;
	struct acq q;
	struct semc *c;
	uint32_t max;
	int r;

	if (a->lease_ms == 0)
		usage_fail("down: --lease must be more than 0 (the hold outlives semctl)");
	acq_names(&q, a->argv, a->argc, a);
	q.timeout_ms = try ? 0 : a->timeout_ms;
	q.create_limit = a->given[OPT_LIMIT] ? a->limit : 0;
	acq_policy(&q, a);
	/*
	 * A down that waits does so in a session with a lease, as run's does:
	 * across a restart of a durable daemon or a failover it is resumed,
	 * and its down, sent again, finds its waiter in its place with its
	 * deadline. While the session is away that waiter is passed over (a
	 * grant would reach nobody), so a semctl that dies leaves no hold. A
	 * signal ends the wait with nothing held.
	 */
	if (signals_catch(false) != 0)
		return fail_json(EX_ERROR_, "system", SEMC_E_SYSTEM, what, strerror(errno), NULL);
	if ((r = client_open(&c, try ? 0 : DOWN_LEASE_MS, "semctl")) != 0)
		return r;
	/* No --lease: ask for the longest, the daemon's max-lease (an older
	 * daemon that does not say cuts UINT32_MAX to it); a longer one is
	 * refused before the down waits or takes a token. */
	max = semc_max_lease(c);
	if (a->lease_ms > 0 && max > 0 && a->lease_ms > (int64_t)max) {
		semc_free(c);
		return acq_lease_fail(a, max, "refused, nothing was asked");
	}
	q.lease_ms = a->lease_ms > 0 ? (uint32_t)a->lease_ms : max > 0 ? max : UINT32_MAX;
	r = acquire(c, &q);
	if (r == 0 && a->lease_ms > 0 && (r = acq_lease_check(c, &q, a)) != 0) {
		semc_free(c);
		return r;
	}
	semc_free(c);
	if (r != 0)
		return acq_fail(&q, r, what);
	acq_print(&q, a->lease_ms);
	return 0;
}

/* semctl down NAME...: take permits, waiting. */
int cmd_down(struct cmd_args *a)
{
	return down(a, false);
}

/* semctl trydown NAME...: take permits only if that is possible now. */
int cmd_trydown(struct cmd_args *a)
{
	return down(a, true);
}

/* --- run ---------------------------------------------------------------- */

struct run_state {
	const struct acq *q;	/* the holds: one a name */
	int lost;		/* 0, or why a hold is lost or in jeopardy */
	char why[300];
};

/* Connection events during run: a lost hold ends the command. */
static void run_on_event(struct semc *c, const struct semc_event *ev, void *arg)
{
	struct run_state *rs = arg;

	size_t i;

	(void)c;
	if (ev->type != SEMC_EV_HOLD_LOST || rs->lost || rs->q == NULL)
		return;
	for (i = 0; i < rs->q->k; i++) {
		if (ev->permit_id == rs->q->permit_id[i]) {
			rs->lost = ev->error ? ev->error : SEMC_E_HOLD_LOST;
			snprintf(rs->why, sizeof rs->why, "the hold was lost%s%s: %s",
				 rs->q->k > 1 ? " on " : "", rs->q->k > 1 ? esc(rs->q->names[i]) : "",
				 ev->message);
			return;
		}
	}
}

/* Start the command with SEMD_TOKEN, SEMD_NAME and SEMD_PERMIT_ID (of the
 * first name), SEMD_TOKENS (a NAME=TOKEN line a name) and SEMD_SESSION (the
 * session it runs under, for the deadlock detection: semclient(3)) in its
 * environment. */
static pid_t run_spawn(char **cmd, const struct acq *q, struct semc *c)
{
	struct semc_session ss;
	char session[48] = "";
	uint64_t link = semc_session_link(c);

	pid_t pid, parent = getpid();
	char buf[32], *all;
	size_t i, len = 1, off = 0;

	if (semc_session(c, &ss) == 0 && link != 0)
		snprintf(session, sizeof session, "%" PRIu64 ":%016" PRIx64,
			 ss.session, link);
	fflush(NULL);
	pid = fork();
	if (pid != 0)
		return pid;
#ifdef __linux__
	/* if semctl dies, the permit goes: the command must not run on */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(128 + SIGTERM);
#endif
	(void)parent;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	close(sig_pipe[0]);
	close(sig_pipe[1]);
	snprintf(buf, sizeof buf, "%" PRIu64, q->token[0]);
	setenv("SEMD_TOKEN", buf, 1);
	setenv("SEMD_NAME", q->names[0], 1);
	snprintf(buf, sizeof buf, "%" PRIu64, q->permit_id[0]);
	setenv("SEMD_PERMIT_ID", buf, 1);
	for (i = 0; i < q->k; i++)
		len += strlen(q->names[i]) + 23;
	if ((all = malloc(len)) != NULL) {
		all[0] = '\0';
		for (i = 0; i < q->k; i++)
			off += (size_t)snprintf(all + off, len - off, "%s=%" PRIu64 "\n",
						q->names[i], q->token[i]);
		setenv("SEMD_TOKENS", all, 1);
	}
	if (session[0] != '\0')
		setenv("SEMD_SESSION", session, 1);
	else
		unsetenv("SEMD_SESSION");
	if (g.sess_dir_set)
		unsetenv("SEMD_TLS_SESSION_DIR");
	execvp(cmd[0], cmd);
	fprintf(stderr, "semctl: run: cannot execute %s: %s\n", cmd[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* The longest grace a live session allows: SIGTERM goes at the lease's
 * client-side end minus the grace, and a session that gets its pongs (a
 * ping every third of the lease, answered within max(50 ms, lease / 10))
 * must never come that close. window is the client-side lease (the lease
 * less the drift bound and the margin), lease the granted one. */
static int64_t run_grace_max(int64_t window, int64_t lease)
{
	int64_t rtt = lease / 10 > 50 ? lease / 10 : 50;
	int64_t most = window - lease / 3 - rtt;

	return most > 0 ? most : 0;
}

/* Print run's outcome as JSON. */
static void run_json(const struct acq *q, const struct run_state *rs, int status, int code)
{
	if (rs->lost) {
		printf("{\"ok\":false,\"error\":");
		json_str(err_name(rs->lost));
		printf(",\"code\":%d,\"message\":", rs->lost);
		json_str(rs->why);
		printf(",\"name\":");
	} else {
		printf("{\"ok\":true,\"name\":");
	}
	json_str(q->names[0]);
	printf(",\"token\":%" PRIu64 ",\"permit_id\":%" PRIu64, q->token[0], q->permit_id[0]);
	if (q->k > 1) {
		printf(",");
		acq_json_grants(q);
	}
	if (WIFSIGNALED(status))
		printf(",\"status\":null,\"signal\":%d", WTERMSIG(status));
	else
		printf(",\"status\":%d,\"signal\":null", WEXITSTATUS(status));
	printf(",\"exit\":%d}\n", code);
}

/* A system call of run failed. */
static int run_sys_fail(const char *what)
{
	char m[256];

	snprintf(m, sizeof m, "%s: %s", what, strerror(errno));
	fprintf(stderr, "semctl: run: %s\n", m);
	if (g.json) {
		printf("{\"ok\":false,\"error\":\"system\",\"code\":%d,\"message\":", SEMC_E_SYSTEM);
		json_str(m);
		printf(",\"exit\":%d}\n", EX_ERROR_);
	}
	return EX_ERROR_;
}

/*
 * run NAME [-n N] [--timeout DUR] [--lease DUR] [--grace DUR] [--limit N] -- CMD
 *
 * One thread, one poll loop: the library's keepalive duties run in
 * semc_process() (its thread is off), signals come through sig_pipe. With
 * a lease, the child must be dead before the daemon can give the permit to
 * anyone else: SIGTERM when the client-side lease has `grace` left, SIGKILL
 * (and reap) when it ends - whichever comes first, that or a HoldLost from
 * the daemon (SIGTERM at once, SIGKILL `grace` later).
 */
int cmd_run(struct cmd_args *a)
{
	struct run_state rs = { 0 };
	struct semc_session ss;
	struct acq q;
	struct semc *c;
	int64_t now, left, lease_ms, grace_ms, window, gmax, kill_at = -1;
	int r, status = 0, i, code, nnames;
	bool exited = false, termed = false;
	size_t k;
	pid_t pid;

	/* The command is what follows "--" (without one, all but the first
	 * argument); the names come before it. */
	nnames = a->nafter >= 0 ? a->argc - a->nafter : 1;
	if (nnames < 1)
		usage_forms("run: a semaphore name is required before --");
	if (a->argc - nnames < 1)
		usage_forms("run: the command to run is missing after --");
	acq_names(&q, a->argv, nnames, a);
	q.timeout_ms = a->timeout_ms;
	q.create_limit = a->given[OPT_LIMIT] ? a->limit : 0;
	acq_policy(&q, a);
	lease_ms = a->lease_ms >= 0 ? a->lease_ms : RUN_LEASE_MS;
	if (lease_ms > 0 && lease_ms < RUN_LEASE_MIN)
		usage_fail("--lease: %" PRId64 "ms is out of range (0: no lease, or %dms to "
			   "49d17h)", lease_ms, RUN_LEASE_MIN);
	grace_ms = a->grace_ms >= 0 ? a->grace_ms : RUN_GRACE_MS;
	/* a signal while it waits ends run with nothing held; once the
	 * command runs, signals are forwarded to it */
	if (signals_catch(true) != 0)
		return run_sys_fail("pipe");
	if ((r = client_open(&c, (uint32_t)lease_ms, "semctl run")) != 0)
		return r;
	semc_session(c, &ss);
	/* right after the handshake, what is left is the whole client-side lease */
	window = semc_lease_left(c);
	if (ss.lease_ms > 0 && window >= 0) {
		gmax = run_grace_max(window, ss.lease_ms);
		if (grace_ms > gmax) {
			if (a->grace_ms >= 0)
				fprintf(stderr, "semctl: run: --grace %" PRId64 "ms does not fit in "
					"a %ums lease; using %" PRId64 "ms\n", grace_ms, ss.lease_ms, gmax);
			grace_ms = gmax;
		}
	}
	semc_set_event_callback(c, run_on_event, &rs);
	r = acquire(c, &q);
	if (r != 0) {
		semc_free(c);
		return acq_fail(&q, r, "run");
	}
	rs.q = &q;
	pid = run_spawn(a->argv + nnames, &q, c);
	if (pid < 0) {
		semc_free(c);
		return run_sys_fail("fork");
	}
	/* bounded by the child's life: it ends by itself or is killed */
	while (!exited) {
		struct pollfd p[2] = { { .fd = sig_pipe[0], .events = POLLIN },
				       { .fd = semc_fd(c), .events = POLLIN } };
		unsigned char sigs[64];
		int64_t wait;
		ssize_t n;

		now = mono_ms();
		left = semc_lease_left(c);
		if (!rs.lost && left >= 0 && left <= grace_ms) {
			/* no answer for most of the lease: the child must be dead
			 * before the lease ends, with its grace before that */
			rs.lost = SEMC_E_HOLD_LOST;
			snprintf(rs.why, sizeof rs.why, "the server did not answer for most of "
				 "the session's lease");
			kill_at = now + left;
		}
		if (rs.lost && !termed) {
			fprintf(stderr, "semctl: run: %s: %s; terminating the command\n",
				esc(q.names[0]), esc(rs.why));
			kill(pid, SIGTERM);
			termed = true;
			if (kill_at < 0)
				kill_at = now + grace_ms;
		}
		if (termed && rs.lost == SEMC_E_HOLD_LOST && left < 0 && kill_at > now)
			kill_at = now;	/* the client-side lease is over */
		if (termed && now >= kill_at) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		wait = semc_timeout(c);
		if (termed && (wait < 0 || kill_at - now < wait))
			wait = kill_at - now;
		if (!termed && left >= 0 && (wait < 0 || left - grace_ms < wait))
			wait = left - grace_ms;
		if (p[1].fd < 0 && (wait < 0 || wait > 100))
			wait = 100;	/* disconnected: retry soon */
		if (wait > 60000 || wait < 0)
			wait = 60000;
		if (poll(p, p[1].fd >= 0 ? 2 : 1, (int)wait) < 0 && errno != EINTR)
			break;
		while ((n = read(sig_pipe[0], sigs, sizeof sigs)) > 0) {
			/* a signal the terminal sent reached the child too (it is
			 * in our foreground process group): forward only others */
			for (i = 0; i + 1 < n; i += 2)
				if (sigs[i] != SIGCHLD && !sigs[i + 1])
					kill(pid, sigs[i]);
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			exited = true;
			break;
		}
		semc_process(c);
	}
	if (!exited && !termed) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	if (!rs.lost) {
		semc_set_timeout(c, 2000);	/* best effort: the session ends anyway */
		for (k = 0; k < q.k; k++)
			semc_up(c, q.names[k], 0, q.permit_id[k], NULL);
	}
	semc_free(c);
	if (rs.lost)
		code = EX_LOST_;
	else if (WIFSIGNALED(status))
		code = 128 + WTERMSIG(status);
	else
		code = WEXITSTATUS(status);
	if (g.json)
		run_json(&q, &rs, status, code);
	return code;
}
