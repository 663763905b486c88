/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/cmds.c - the commands that make one call and print its
 * result: create, up, release, info, list, delete, renew, holds, validate,
 * stats, ping, cluster (the set-* commands: set.c).
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

#define INFO_MAX	10000	/* info lists at most this many holders and waiters */

/* create NAME --limit N [--mode owned|signal] [--initial N], or with --rate */
int cmd_create(struct cmd_args *a)
{
	struct semc *c;
	char rb[64];
	int r;

	struct semc_create_opts o = { 0 };

	if (!a->given[OPT_LIMIT] && !a->given[OPT_RATE])
		usage_forms("create: --limit N or --rate R/UNIT is required");
	if (a->given[OPT_BURST] && !a->given[OPT_RATE])
		usage_fail("create: --burst N needs --rate");
	if (a->given[OPT_RATE] && a->mode == SEMC_MODE_SIGNAL)
		usage_fail("create: a signal-mode semaphore cannot have a rate");
	if (a->given[OPT_INITIAL] && a->mode != SEMC_MODE_SIGNAL)
		usage_fail("create: --initial N needs --mode signal");
	if (a->given[OPT_INITIAL] && a->initial > a->limit)
		usage_fail("create: --initial %u is more than --limit %u", a->initial, a->limit);
	o.limit = a->given[OPT_LIMIT] ? a->limit : 0;
	o.mode = a->given[OPT_RATE] && !a->given[OPT_LIMIT] ? SEMC_MODE_RATE : a->mode;
	o.initial_set = a->given[OPT_INITIAL];
	o.initial = a->initial;
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	if (a->nweights > 0 && a->share == SEMC_SHARE_NONE)
		usage_fail("create: --weight needs --share");
	if (a->given[OPT_MAX_WAITERS] || a->share != SEMC_SHARE_NONE) {
		struct semc_queue qp = { .max_waiters = a->max_waiters, .share = a->share,
					 .weights = a->weights, .n_weights = a->nweights };

		r = semc_create_queue(c, a->argv[0], &o, a->given[OPT_RATE] ? &a->rate : NULL, &qp);
	} else {
		r = a->given[OPT_RATE] ? semc_create_rate(c, a->argv[0], &o, &a->rate) :
		    semc_create_ex(c, a->argv[0], &o);
	}
	if ((r = call_end(c, r, "create")) != 0)
		return r;
	if (a->given[OPT_RATE] && a->rate.burst == 0)
		a->rate.burst = a->rate.rate;	/* the daemon's default */
	if (g.json) {
		printf("{\"ok\":true,\"name\":");
		json_str(a->argv[0]);
		printf(",\"limit\":%u,\"mode\":\"%s\"", o.limit, mode_name(o.mode));
		if (a->given[OPT_INITIAL])
			printf(",\"initial\":%u", a->initial);
		if (a->given[OPT_RATE])
			printf(",\"rate\":%u,\"rate_period_ms\":%u,\"burst\":%u", a->rate.rate,
			       a->rate.period_ms, a->rate.burst);
		if (a->given[OPT_MAX_WAITERS])
			printf(",\"max_waiters\":%u", a->max_waiters);
		if (a->share != SEMC_SHARE_NONE)
			printf(",\"share\":\"%s\"", a->share == SEMC_SHARE_KEY ? "key" : "principal");
		printf("}\n");
	} else if (a->given[OPT_RATE] && a->given[OPT_LIMIT]) {
		printf("created %s (limit %u, rate %s, burst %u)\n", esc(a->argv[0]), a->limit,
		       rate_text(a->rate.rate, a->rate.period_ms, rb, sizeof rb), a->rate.burst);
	} else if (a->given[OPT_RATE]) {
		printf("created %s (rate %s, burst %u)\n", esc(a->argv[0]),
		       rate_text(a->rate.rate, a->rate.period_ms, rb, sizeof rb), a->rate.burst);
	} else if (a->given[OPT_INITIAL]) {
		printf("created %s (limit %u, %s, %u free)\n", esc(a->argv[0]), a->limit,
		       mode_name(a->mode), a->initial);
	} else {
		printf("created %s (limit %u, %s)\n", esc(a->argv[0]), a->limit, mode_name(a->mode));
	}
	return 0;
}

/* The pages of one info, fetched before anything is printed, and how
 * many of each page's holders and waiters are shown (up to max in all). */
struct info_page {
	struct semc_info *in;
	size_t nh, nw;
};

struct info_pages {
	struct info_page *p;
	size_t n;
	size_t holders, waiters;	/* fetched, at most max each */
	bool more_holders, more_waiters;
	uint64_t next_permit, next_waiter;	/* where to go on from */
};

/* Fetch pages of holders and waiters until max of each or the end. */
static int info_fetch(struct semc *c, const char *name, uint64_t max, struct info_pages *ip)
{
	struct info_page *np, *pp;
	struct semc_info *pg;
	uint64_t ap = 0, aw = 0, want;
	bool hdone = false, wdone = false;
	int r;

	memset(ip, 0, sizeof *ip);
	/* bounded: each page brings at least one entry, max is finite */
	while (ip->n < 100000) {
		want = max - (ip->holders < ip->waiters ? ip->holders : ip->waiters);
		if (hdone)
			want = max - ip->waiters;
		else if (wdone)
			want = max - ip->holders;
		if ((r = semc_info_page(c, name, (uint32_t)(want < 1000 ? want : 1000),
		    hdone ? UINT64_MAX : ap, wdone ? UINT64_MAX : aw, &pg)) != 0)
			return r;
		if ((np = realloc(ip->p, (ip->n + 1) * sizeof *ip->p)) == NULL) {
			semc_info_free(pg);
			return SEMC_E_NOMEM;
		}
		ip->p = np;
		pp = &ip->p[ip->n++];
		pp->in = pg;
		pp->nh = hdone ? 0 : pg->n_holders;
		pp->nw = wdone ? 0 : pg->n_waiters;
		/* a page may bring more than wanted of a list: show up to max */
		if (pp->nh > max - ip->holders) {
			pp->nh = max - ip->holders;
			ip->more_holders = true;
		}
		if (pp->nw > max - ip->waiters) {
			pp->nw = max - ip->waiters;
			ip->more_waiters = true;
		}
		ip->holders += pp->nh;
		ip->waiters += pp->nw;
		/* go on from the daemon's cursor, or after the last one shown */
		if (pp->nh > 0)
			ap = !ip->more_holders && pg->next_permit ? pg->next_permit :
			     pg->holders[pp->nh - 1].permit_id;
		if (pp->nw > 0)
			aw = !ip->more_waiters && pg->next_waiter ? pg->next_waiter :
			     pg->waiters[pp->nw - 1].seq;
		hdone = hdone || pg->next_permit == 0 || ip->more_holders || ip->holders >= max;
		wdone = wdone || pg->next_waiter == 0 || ip->more_waiters || ip->waiters >= max;
		ip->more_holders = ip->more_holders || (pg->next_permit != 0 && ip->holders >= max);
		ip->more_waiters = ip->more_waiters || (pg->next_waiter != 0 && ip->waiters >= max);
		if (hdone && wdone)
			break;
		if (pp->nh == 0 && pp->nw == 0)
			break;	/* a daemon that pages nothing more */
	}
	ip->next_permit = ip->more_holders ? ap : 0;
	ip->next_waiter = ip->more_waiters ? aw : 0;
	return 0;
}

/* Free fetched pages. */
static void info_pages_free(struct info_pages *ip)
{
	size_t k;

	for (k = 0; k < ip->n; k++)
		semc_info_free(ip->p[k].in);
	free(ip->p);
}

/* A holder's or waiter's client as JSON members (after others). */
static void json_client(const char *client_name, const char *host, uint32_t pid,
			const char *principal)
{
	printf(",\"client_name\":");
	json_str(client_name);
	printf(",\"host\":");
	json_str(host);
	printf(",\"pid\":%u,\"principal\":", pid);
	json_str(principal);
}

/* Print info's holders and waiters as JSON. */
static void info_json(const struct info_pages *ip, int64_t now)
{
	const struct semc_info *in = ip->p[0].in;
	size_t i, k, total = 0;

	printf("{\"ok\":true,\"name\":");
	json_str(in->name);
	printf(",\"limit\":%u,\"available\":%" PRId64 ",\"over_limit\":%" PRId64
	       ",\"mode\":\"%s\",\"auto_created\":%s,\"last_token\":%" PRIu64, in->limit,
	       in->available, in->available < 0 ? -in->available : 0, mode_name(in->mode),
	       in->auto_created ? "true" : "false", in->last_token);
	if (in->rate != 0)
		printf(",\"rate\":%u,\"rate_period_ms\":%u,\"burst\":%u,\"tokens\":%" PRIu64
		       ".%09" PRIu64 ",\"next_token_ms\":%" PRIu64, in->rate, in->rate_period_ms,
		       in->burst, in->tokens_nano / 1000000000u, in->tokens_nano % 1000000000u,
		       in->next_token_ms);
	if (in->max_waiters != 0)
		printf(",\"max_waiters\":%u", in->max_waiters);
	if (in->share != SEMC_SHARE_NONE) {
		printf(",\"share\":\"%s\",\"groups\":[",
		       in->share == SEMC_SHARE_KEY ? "key" : "principal");
		for (i = 0; i < in->n_groups; i++) {
			printf("%s{\"group\":", i ? "," : "");
			json_str(in->groups[i].group);
			printf(",\"weight\":%u,\"share\":%u,\"held\":%u,\"waiting\":%u}",
			       in->groups[i].weight, in->groups[i].share, in->groups[i].held,
			       in->groups[i].waiting);
		}
		printf("]");
	}
	printf(",\"holders\":[");
	for (k = 0; k < ip->n; k++) {
		for (i = 0; i < ip->p[k].nh; i++, total++) {
			const struct semc_holder *h = &ip->p[k].in->holders[i];

			printf("%s{\"permit_id\":%" PRIu64 ",\"token\":%" PRIu64 ",\"n\":%u",
			       total ? "," : "", h->permit_id, h->token, h->n);
			json_client(h->client_name, h->host, h->pid, h->principal);
			printf(",\"since_ms\":%" PRIu64 ",\"held_ms\":%" PRId64 ",\"detached\":%s,"
			       "\"expires_ms\":%" PRIu64 "}", h->since_ms, now - (int64_t)h->since_ms,
			       h->detached ? "true" : "false", h->expires_ms);
		}
	}
	printf("],\"holders_total\":%zu", in->holders_total);
	if (ip->next_permit != 0)
		printf(",\"next_permit\":%" PRIu64, ip->next_permit);
	printf(",\"waiters\":[");
	for (k = 0, total = 0; k < ip->n; k++) {
		for (i = 0; i < ip->p[k].nw; i++, total++) {
			const struct semc_waiter *w = &ip->p[k].in->waiters[i];

			printf("%s{\"position\":%zu,\"request_id\":%" PRIu64 ",\"seq\":%" PRIu64
			       ",\"n\":%u", total ? "," : "", total + 1, w->request_id, w->seq, w->n);
			json_client(w->client_name, w->host, w->pid, w->principal);
			printf(",\"since_ms\":%" PRIu64 ",\"waited_ms\":%" PRId64 ",\"deadline_ms\":%"
			       PRIu64 ",\"detached\":%s", w->since_ms, now - (int64_t)w->since_ms,
			       w->deadline_ms, w->detached ? "true" : "false");
			if (i < ip->p[k].in->n_waiter_classes) {
				const struct semc_waiter_class *wc = &ip->p[k].in->waiter_classes[i];

				printf(",\"priority\":%d,\"replace\":", (int)wc->priority);
				json_str(wc->replace);
			}
			printf("}");
		}
	}
	printf("],\"waiters_total\":%zu", in->waiters_total);
	if (ip->next_waiter != 0)
		printf(",\"next_waiter\":%" PRIu64, ip->next_waiter);
	printf("}\n");
}

/* Print info for people. */
static void info_text(const struct info_pages *ip, int64_t now)
{
	const struct semc_info *in = ip->p[0].in;
	char b1[64], b2[64], b3[64];
	size_t i, k, pos = 0;

	/* after a shrinking set-limit the holders may hold more than the limit */
	if (in->available < 0)
		snprintf(b1, sizeof b1, "%" PRId64 " over the limit", -in->available);
	else
		snprintf(b1, sizeof b1, "available %" PRId64, in->available);
	printf("%s: limit %u, %s, mode %s%s, last token %" PRIu64 "\n", esc(in->name),
	       in->limit, b1, mode_name(in->mode), in->auto_created ? " (auto-created)" : "",
	       in->last_token);
	if (in->rate != 0) {
		printf("rate: %s, burst %u, %" PRIu64 ".%03" PRIu64 " tokens now",
		       rate_text(in->rate, in->rate_period_ms, b1, sizeof b1), in->burst,
		       in->tokens_nano / 1000000000u, in->tokens_nano % 1000000000u / 1000000u);
		if (in->next_token_ms != 0)
			printf(", next in %s",
			       fmt_dur((int64_t)in->next_token_ms - now, b2, sizeof b2));
		else
			printf(" (full)");
		printf("\n");
	}
	if (in->max_waiters != 0)
		printf("queue: at most %u waiters\n", in->max_waiters);
	if (in->share != SEMC_SHARE_NONE) {
		printf("shares by %s:", in->share == SEMC_SHARE_KEY ? "key" : "principal");
		for (i = 0; i < in->n_groups; i++)
			printf(" %s (weight %u, share %u, %u held, %u waiting)%s",
			       esc(in->groups[i].group), in->groups[i].weight, in->groups[i].share,
			       in->groups[i].held, in->groups[i].waiting,
			       i + 1 < in->n_groups ? "," : "");
		printf("\n");
	}
	printf("holders: %zu", in->holders_total > ip->holders ? in->holders_total : ip->holders);
	if (in->holders_total > ip->holders)
		printf(" (%zu shown%s)", ip->holders, ip->more_holders ? "; --max N shows more" : "");
	printf("\n");
	if (ip->holders > 0)
		printf("  %-8s %-18s %-3s %-14s %-16s %-7s %-12s %-19s %-9s %s\n", "PERMIT", "TOKEN",
		       "N", "CLIENT", "HOST", "PID", "PRINCIPAL", "SINCE", "HELD", "EXPIRES");
	for (k = 0; k < ip->n; k++) {
		for (i = 0; i < ip->p[k].nh; i++) {
			const struct semc_holder *h = &ip->p[k].in->holders[i];

			printf("  %-8" PRIu64 " %-18" PRIu64 " %-3u %-14s %-16s %-7u %-12s %-19s %-9s %s\n",
			       h->permit_id, h->token, h->n, esc(h->client_name), esc(h->host), h->pid,
			       esc(h->principal), fmt_time(h->since_ms, b1, sizeof b1),
			       fmt_dur(now - (int64_t)h->since_ms, b2, sizeof b2),
			       h->expires_ms ? fmt_time(h->expires_ms, b3, sizeof b3) :
			       (h->detached ? "-" : "with its connection"));
		}
	}
	printf("waiters: %zu", in->waiters_total > ip->waiters ? in->waiters_total : ip->waiters);
	if (in->waiters_total > ip->waiters)
		printf(" (the first %zu shown%s)", ip->waiters,
		       ip->more_waiters ? "; --max N shows more" : "");
	printf("\n");
	if (ip->waiters > 0)
		printf("  %-3s %-8s %-3s %-14s %-16s %-7s %-12s %-19s %s\n", "#", "REQUEST", "N",
		       "CLIENT", "HOST", "PID", "PRINCIPAL", "SINCE", "WAITING");
	for (k = 0; k < ip->n; k++) {
		for (i = 0; i < ip->p[k].nw; i++) {
			const struct semc_waiter *w = &ip->p[k].in->waiters[i];

			const struct semc_waiter_class *wc = i < ip->p[k].in->n_waiter_classes ?
			    &ip->p[k].in->waiter_classes[i] : NULL;

			printf("  %-3zu %-8" PRIu64 " %-3u %-14s %-16s %-7u %-12s %-19s %s%s", ++pos,
			       w->request_id, w->n, esc(w->client_name), esc(w->host), w->pid,
			       esc(w->principal), fmt_time(w->since_ms, b1, sizeof b1),
			       fmt_dur(now - (int64_t)w->since_ms, b2, sizeof b2),
			       w->detached ? " (disconnected)" : "");
			if (wc != NULL && wc->priority != 0)
				printf(" priority %d", (int)wc->priority);
			if (wc != NULL && wc->replace != NULL && *wc->replace != '\0')
				printf(" replace %s", esc(wc->replace));
			printf("\n");
		}
	}
}

/* info NAME [--max N]: every page, up to INFO_MAX (or N) holders and waiters. */
int cmd_info(struct cmd_args *a)
{
	struct info_pages ip;
	struct semc *c;
	int r;

	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = info_fetch(c, a->argv[0], a->max ? a->max : INFO_MAX, &ip);
	semc_free(c);
	if (r == 0 && g.json)
		info_json(&ip, wall_ms());
	else if (r == 0)
		info_text(&ip, wall_ms());
	info_pages_free(&ip);
	return r != 0 ? fail(r, "info") : 0;
}

/* A listing fetched page by page (list, or holds), all of it before
 * anything is printed. */
struct pages {
	bool holds;	/* struct semc_holds pages, else struct semc_list */
	void **p;
	size_t n;
};

/* Free the pages of a listing. */
static void pages_free(struct pages *pp)
{
	size_t k;

	for (k = 0; k < pp->n; k++) {
		if (pp->holds)
			semc_holds_free(pp->p[k]);
		else
			semc_list_free(pp->p[k]);
	}
	free(pp->p);
	pp->p = NULL;
	pp->n = 0;
}

/* Fetch the page of up to want entries that follows last (NULL: the first
 * page, from --after): *page, how many entries it has, whether more follow. */
static int page_next(struct semc *c, const struct cmd_args *a, bool holds, const void *last,
		     uint32_t want, void **page, size_t *n, bool *more)
{
	const struct semc_holds *ph = last;
	const struct semc_list *pl = last;
	struct semc_holds *h = NULL;
	struct semc_list *l = NULL;
	int r;

	if (holds) {
		r = semc_holds(c, a->principal, ph ? ph->next_permit : 0, want, &h);
		*page = h;
		*n = h ? h->n : 0;
		*more = h && h->next_permit != 0;
	} else {
		r = semc_list(c, a->argc ? a->argv[0] : "", pl ? pl->next : a->after, want, &l);
		*page = l;
		*n = l ? l->n : 0;
		*more = l && l->next != NULL && *l->next != '\0';
	}
	return r;
}

/* Connect and fetch pages of up to 1000 until --max, the end or max_pages
 * (a bound); a failure is reported as what (its exit code). */
static int pages_fetch(const struct cmd_args *a, bool holds, size_t max_pages, const char *what,
		       struct pages *pp)
{
	struct semc *c;
	uint64_t got = 0, want;
	void **np, *page;
	bool more = true;
	size_t n;
	int r;

	memset(pp, 0, sizeof *pp);
	pp->holds = holds;
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	while (more && pp->n < max_pages && !(a->max && got >= a->max)) {
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
		if ((np = realloc(pp->p, (pp->n + 1) * sizeof *np)) == NULL) {
			r = SEMC_E_NOMEM;
			break;
		}
		pp->p = np;
		want = a->max && a->max - got < 1000 ? a->max - got : 1000;
		r = page_next(c, a, holds, pp->n ? pp->p[pp->n - 1] : NULL, (uint32_t)want, &page,
			      &n, &more);
		if (r != 0)
			break;
		pp->p[pp->n++] = page;
		got += n;
		more = more && n != 0;
	}
	semc_free(c);
	if (r != 0) {
		pages_free(pp);
		return fail(r, what);
	}
	return 0;
}

/* list [PREFIX] [--max N] [--after NAME]: the pages, fetched before anything is printed. */
int cmd_list(struct cmd_args *a)
{
	struct pages pp;
	const char *after;
	size_t i, k, total = 0;
	int r;

	if ((r = pages_fetch(a, false, 1000000, "list", &pp)) != 0)
		return r;
	/* Stopped by --max with names left: say where to go on from. */
	after = pp.n > 0 ? ((const struct semc_list *)pp.p[pp.n - 1])->next : NULL;
	if (after != NULL && *after == '\0')
		after = NULL;
	if (g.json)
		printf("{\"ok\":true,\"semaphores\":[");
	else
		printf("%-40s %8s %10s %-7s %8s %8s\n", "NAME", "LIMIT", "AVAILABLE", "MODE",
		       "HOLDERS", "WAITERS");
	for (k = 0; k < pp.n; k++) {
		const struct semc_list *l = pp.p[k];

		for (i = 0; i < l->n; i++, total++) {
			const struct semc_summary *s = &l->entries[i];

			if (g.json) {
				printf("%s{\"name\":", total ? "," : "");
				json_str(s->name);
				printf(",\"limit\":%u,\"available\":%" PRId64 ",\"mode\":\"%s\","
				       "\"holders\":%u,\"waiters\":%u}", s->limit, s->available,
				       mode_name(s->mode), s->holders, s->waiters);
			} else {
				char av[32];

				if (s->available < 0)
					snprintf(av, sizeof av, "%" PRId64 " over", -s->available);
				else
					snprintf(av, sizeof av, "%" PRId64, s->available);
				printf("%-40s %8u %10s %-7s %8u %8u\n", esc(s->name), s->limit, av,
				       mode_name(s->mode), s->holders, s->waiters);
			}
		}
	}
	if (g.json) {
		printf("],\"count\":%zu", total);
		if (after != NULL) {
			printf(",\"next\":");
			json_str(after);
		}
		printf("}\n");
	} else if (after != NULL) {
		fprintf(stderr, "semctl: list: more names follow; go on with --after %s\n",
			esc(after));
	}
	pages_free(&pp);
	return 0;
}

/* delete NAME [--force] */
int cmd_delete(struct cmd_args *a)
{
	struct semc *c;
	int r;

	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	if ((r = call_end(c, semc_delete(c, a->argv[0], a->force), "delete")) != 0)
		return r;
	if (g.json)
		json_ok(a->argv[0], NULL, 0);
	else
		printf("deleted %s\n", esc(a->argv[0]));
	return 0;
}

/* renew NAME [--lease DUR] [--holder PERMIT_ID] */
int cmd_renew(struct cmd_args *a)
{
	struct semc *c;
	uint64_t expires = 0;
	uint32_t renewed = 0;
	char b1[64];
	int r;

	if (a->lease_ms == 0)
		usage_fail("renew: --lease must be more than 0");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_renew(c, a->argv[0], a->given[OPT_HOLDER] ? a->holder : 0,
		       a->lease_ms > 0 ? (uint32_t)a->lease_ms : 0, &renewed, &expires);
	if ((r = call_end(c, r, "renew")) != 0)
		return r;
	if (g.json) {
		printf("{\"ok\":true,\"name\":");
		json_str(a->argv[0]);
		printf(",\"renewed\":%u,\"expires_ms\":%" PRIu64 "}\n", renewed, expires);
	} else {
		printf("renewed %u hold(s) of %s until %s\n", renewed, esc(a->argv[0]),
		       fmt_time(expires, b1, sizeof b1));
	}
	return 0;
}

/* holds [--principal P] [--max N]: every hold of a principal, all pages. */
int cmd_holds(struct cmd_args *a)
{
	struct pages pp;
	uint64_t now = (uint64_t)wall_ms();
	size_t k, i, total = 0;
	char b1[64], b2[64], b3[64];
	int r;

	if ((r = pages_fetch(a, true, 100000, "holds", &pp)) != 0)
		return r;
	if (g.json)
		printf("{\"ok\":true,\"holds\":[");
	else
		printf("%-32s %-8s %-18s %-3s %-12s %-19s %-9s %s\n", "NAME", "PERMIT", "TOKEN", "N",
		       "PRINCIPAL", "SINCE", "HELD", "EXPIRES");
	for (k = 0; k < pp.n; k++) {
		const struct semc_holds *hs = pp.p[k];

		for (i = 0; i < hs->n; i++, total++) {
			const struct semc_hold_entry *e = &hs->entries[i];
			const struct semc_holder *h = &e->holder;

			if (g.json) {
				printf("%s{\"name\":", total ? "," : "");
				json_str(e->name);
				printf(",\"permit_id\":%" PRIu64 ",\"token\":%" PRIu64 ",\"n\":%u,"
				       "\"principal\":", h->permit_id, h->token, h->n);
				json_str(h->principal);
				printf(",\"client_name\":");
				json_str(h->client_name);
				printf(",\"host\":");
				json_str(h->host);
				printf(",\"pid\":%u,\"since_ms\":%" PRIu64 ",\"detached\":%s,"
				       "\"expires_ms\":%" PRIu64 "}", h->pid, h->since_ms,
				       h->detached ? "true" : "false", h->expires_ms);
			} else {
				printf("%-32s %-8" PRIu64 " %-18" PRIu64 " %-3u %-12s %-19s %-9s %s\n",
				       esc(e->name), h->permit_id, h->token, h->n, esc(h->principal),
				       fmt_time(h->since_ms, b1, sizeof b1),
				       fmt_dur((int64_t)(now - h->since_ms), b2, sizeof b2),
				       h->expires_ms ? fmt_time(h->expires_ms, b3, sizeof b3) :
				       (h->detached ? "-" : "with its connection"));
			}
		}
	}
	if (g.json)
		printf("],\"count\":%zu,\"total\":%zu}\n", total,
		       pp.n > 0 ? ((const struct semc_holds *)pp.p[0])->total : 0);
	pages_free(&pp);
	return 0;
}

/*
 * validate NAME TOKEN: exit 0 if the token still holds a permit, else 6.
 * With --json an invalid token is a failure like any other: "ok":false,
 * "error":"invalid_token" and the exit code, with "valid":false.
 */
int cmd_validate(struct cmd_args *a)
{
	struct semc *c;
	uint64_t token;
	bool valid;
	int r;

	token = parse_u64(a->argv[1], "validate: TOKEN", 0);
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	if ((r = call_end(c, semc_validate(c, a->argv[0], token, &valid), "validate")) != 0)
		return r;
	if (!g.json) {
		printf("%s\n", valid ? "valid" : "invalid");
		return valid ? EX_OK_ : EX_ERROR_;
	}
	if (valid) {
		printf("{\"ok\":true,\"name\":");
	} else {
		printf("{\"ok\":false,\"error\":\"invalid_token\",\"code\":%d,\"message\":",
		       SEMC_E_NOT_HOLDER);
		json_str("the token holds no permit of the name");
		printf(",\"name\":");
	}
	json_str(a->argv[0]);
	printf(",\"token\":%" PRIu64 ",\"valid\":%s", token, valid ? "true" : "false");
	if (!valid)
		printf(",\"exit\":%d", EX_ERROR_);
	printf("}\n");
	return valid ? EX_OK_ : EX_ERROR_;
}

/* stats */
int cmd_stats(struct cmd_args *a)
{
	struct semc_stats *st;
	struct semc *c;
	size_t i;
	int r;

	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	if ((r = call_end(c, semc_stats(c, &st), "stats")) != 0)
		return r;
	if (g.json)
		printf("{\"ok\":true,\"counters\":{");
	for (i = 0; i < st->n; i++) {
		if (g.json) {
			printf("%s", i ? "," : "");
			json_str(st->counters[i].name);
			printf(":%" PRIu64, st->counters[i].value);
		} else {
			printf("%-32s %" PRIu64 "\n", esc(st->counters[i].name), st->counters[i].value);
		}
	}
	if (g.json)
		printf("}}\n");
	semc_stats_free(st);
	return 0;
}

/* ping */
int cmd_ping(struct cmd_args *a)
{
	struct semc_session s;
	struct semc *c;
	uint64_t rtt;
	int r;

	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = semc_ping(c, &rtt);
	if (r != 0) {
		semc_free(c);
		return fail(r, "ping");
	}
	semc_session(c, &s);
	if (g.json) {
		printf("{\"ok\":true,\"address\":");
		json_str(semc_address(c));
		printf(",\"server\":");
		json_str(s.server);
		printf(",\"principal\":");
		json_str(s.principal);
		printf(",\"rtt_us\":%" PRIu64 "}\n", rtt);
	} else {
		printf("pong from %s (%s) as %s in %" PRIu64 " us\n", esc(semc_address(c)),
		       esc(s.server), esc(s.principal), rtt);
	}
	semc_free(c);
	return 0;
}

/* cluster status: the cluster as the first node that answers sees it. */
static int cluster_status(void)
{
	struct semc_cluster *cl;
	struct semc *c = semc_new();
	size_t i;
	int r;

	if (c == NULL)
		return fail(SEMC_E_NOMEM, "cluster status");
	if (g.server != NULL && semc_set_address(c, g.server) != 0) {
		semc_free(c);
		usage_fail("-s: '%s' is not an address list", g.server);
	}
	semc_set_tls(c, g.tls_ca, g.tls_cert, g.tls_key);
	r = semc_cluster_status(c, &cl);
	if (r != 0) {
		semc_free(c);
		return fail(r, "cluster status");
	}
	if (g.json) {
		printf("{\"ok\":true,\"node_id\":%" PRIu64 ",\"state\":", cl->node_id);
		json_str(cl->state);
		printf(",\"term\":%" PRIu64 ",\"commit_index\":%" PRIu64
		       ",\"applied_index\":%" PRIu64 ",\"last_index\":%" PRIu64
		       ",\"leader_id\":%" PRIu64 ",\"leader\":", cl->term,
		       cl->commit_index, cl->applied_index, cl->last_index, cl->leader_id);
		json_str(cl->leader);
		printf(",\"nodes\":[");
		for (i = 0; i < cl->n_nodes; i++) {
			printf("%s{\"id\":%" PRIu64 ",\"address\":", i ? "," : "",
			       cl->nodes[i].id);
			json_str(cl->nodes[i].address);
			printf(",\"role\":");
			json_str(cl->nodes[i].role);
			printf(",\"match_index\":%" PRIu64 ",\"lag\":%" PRIu64 "}",
			       cl->nodes[i].match_index, cl->nodes[i].lag);
		}
		printf("]}\n");
	} else {
		printf("node %" PRIu64 " (%s): %s, term %" PRIu64 ", commit %" PRIu64
		       ", applied %" PRIu64 ", last %" PRIu64 "\n", cl->node_id,
		       esc(semc_address(c)), esc(cl->state), cl->term, cl->commit_index,
		       cl->applied_index, cl->last_index);
		if (cl->leader_id != 0)
			printf("leader: node %" PRIu64 "%s%s\n", cl->leader_id,
			       cl->leader[0] ? " at " : "", esc(cl->leader));
		else
			printf("leader: none known\n");
		printf("  %-6s %-24s %-8s %12s %8s\n", "NODE", "PEER ADDRESS", "ROLE",
		       "MATCH", "LAG");
		for (i = 0; i < cl->n_nodes; i++) {
			const struct semc_cluster_node *n = &cl->nodes[i];

			printf("  %-6" PRIu64 " %-24s %-8s", n->id, esc(n->address),
			       esc(n->role));
			if (strcmp(cl->state, "leader") == 0)
				printf(" %12" PRIu64 " %8" PRIu64 "\n", n->match_index, n->lag);
			else
				printf(" %12s %8s\n", "-", "-");
		}
	}
	semc_cluster_free(cl);
	semc_free(c);
	return 0;
}

/* cluster status | add ID HOST:PORT | remove ID | transfer [ID] */
int cmd_cluster(struct cmd_args *a)
{
	static const struct { const char *what; int min, max; } acts[] = {
		{ "status", 1, 1 }, { "add", 3, 3 }, { "remove", 2, 2 }, { "transfer", 1, 2 },
	};
	struct semc *c;
	uint64_t id = 0;
	const char *what = a->argv[0];
	char title[32];
	size_t i;
	int r;

	for (i = 0; i < sizeof acts / sizeof acts[0]; i++)
		if (strcmp(acts[i].what, what) == 0)
			break;
	if (i == sizeof acts / sizeof acts[0])
		usage_forms("cluster: unknown action '%s' (status, add, remove, transfer)", what);
	if (a->argc < acts[i].min)
		usage_forms("cluster %s: arguments are missing", what);
	if (a->argc > acts[i].max)
		usage_forms("cluster %s: unexpected argument '%s'", what, a->argv[acts[i].max]);
	if (strcmp(what, "status") == 0)
		return cluster_status();
	if (a->argc >= 2)
		id = parse_u64(a->argv[1], "cluster: ID", 1);
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	if (strcmp(what, "add") == 0)
		r = semc_cluster_add(c, id, a->argv[2]);
	else if (strcmp(what, "remove") == 0)
		r = semc_cluster_remove(c, id);
	else
		r = semc_cluster_transfer(c, id);
	snprintf(title, sizeof title, "cluster %s", what);
	if ((r = call_end(c, r, title)) != 0)
		return r;
	if (g.json)
		printf("{\"ok\":true,\"action\":\"%s\",\"node_id\":%" PRIu64 "}\n", what, id);
	else
		printf("cluster %s: done\n", what);
	return 0;
}

/* up NAME [-n N], or release NAME --holder PERMIT_ID (admin): permits given
 * back, of this client or (release) of anyone. */
static int give_back(struct cmd_args *a, bool release)
{
	const char *what = release ? "release" : "up";
	uint32_t released = 0;
	struct semc *c;
	int r;

	if (release && !a->given[OPT_HOLDER])
		usage_forms("release: --holder PERMIT_ID is required");
	if ((r = client_open(&c, 0, "semctl")) != 0)
		return r;
	r = release ? semc_release(c, a->argv[0], a->holder, &released) :
	    semc_up(c, a->argv[0], a->n, 0, &released);
	if ((r = call_end(c, r, what)) != 0)
		return r;
	if (g.json)
		json_ok(a->argv[0], "released", released);
	else if (release)
		printf("released permit %" PRIu64 " of %s (%u permit(s))\n", a->holder,
		       esc(a->argv[0]), released);
	else
		printf("released %u permit(s) of %s\n", released, esc(a->argv[0]));
	return 0;
}

/* semctl release NAME --holder PERMIT_ID: force-release anyone's permit. */
int cmd_release(struct cmd_args *a)
{
	return give_back(a, true);
}

/* semctl up NAME: give permits back. */
int cmd_up(struct cmd_args *a)
{
	return give_back(a, false);
}
