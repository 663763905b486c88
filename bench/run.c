/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/run.c - one run of a test: its connections opened and spread over
 * the workers, the workers started together on a barrier and stopped at the
 * end of the window (each a closed loop over its connections: engine.c),
 * and their tallies merged.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

/* A worker thread: the closed loop over its connections until the window ends. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;
	struct epoll_event evs[256];
	struct conn *c;
	uint64_t now;
	unsigned i;
	int n, k, ms;

	pthread_barrier_wait(&r->barrier);
	now = bench_now();
	for (i = 0; i < w->nconns && !w->failed; i++) {
		conn_start(w->conns[i], now);
		if (!w->failed && w->conns[i]->fd >= 0)
			conn_flush(w->conns[i]);
	}
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed) && !w->failed) {
		now = bench_now();
		if (now >= r->t_end)
			break;
		if (r->test == T_NAMES && w->outstanding == 0)
			break;
		ms = (int)((r->t_end - now) / 1000000u) + 1;
		if (ms > 100)
			ms = 100;
		n = epoll_wait(w->ep, evs, 256, ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			worker_fail(w, "epoll_wait: %s", strerror(errno));
			break;
		}
		for (k = 0; k < n && !w->failed; k++) {
			c = evs[k].data.ptr;
			if (c->handshaking) {
				conn_handshake(c);
				if (!w->failed && !c->handshaking)
					conn_flush(c);
				continue;
			}
			if (evs[k].events & EPOLLOUT)
				conn_flush(c);
			if (!w->failed && (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
				conn_read(c);
			if (!w->failed && c->fd >= 0)
				conn_flush(c);
		}
	}
	return NULL;
}

/* Free a worker's connections and buffers. */
static void worker_free(struct worker *w)
{
	unsigned i;

	for (i = 0; i < w->nconns; i++) {
		struct conn *c = w->conns[i];

		if (c == NULL)
			continue;
		conn_close(c);
		SSL_SESSION_free(c->sess);
		wbuf_free(&c->out);
		wbuf_free(&c->in);
		free(c->chains);
		free(c->hq);
		free(c);
	}
	free(w->conns);
	if (w->ep >= 0)
		close(w->ep);
	wire_arena_free(&w->arena);
}

/* Process CPU time in seconds. */
static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Set up the workers and connections of r. */
static int run_setup(struct run *r)
{
	const struct bench_opts *o = r->o;
	struct worker *w;
	struct conn *c;
	unsigned i, k;

	r->nworkers = o->threads < r->conns ? o->threads : r->conns;
	if (r->nworkers == 0)
		r->nworkers = 1;
	r->workers = calloc(r->nworkers, sizeof(*r->workers));
	if (r->workers == NULL)
		return -1;
	for (k = 0; k < r->nworkers; k++)
		r->workers[k].ep = -1;
	for (k = 0; k < r->nworkers; k++) {
		w = &r->workers[k];
		w->run = r;
		w->ep = epoll_create1(EPOLL_CLOEXEC);
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
		w->conns = calloc(r->conns / r->nworkers + 1, sizeof(*w->conns));
		if (w->ep < 0 || w->conns == NULL || wire_arena_init(&w->arena, 64 * 1024) != 0)
			return -1;
		hist_init(&w->t.lat);
		hist_init(&w->t.wait);
		hist_init(&w->t.acq);
		if (r->test == T_NAMES) {
			w->next = o->names * k / r->nworkers;
			w->end = o->names * (k + 1) / r->nworkers;
		}
	}
	for (i = 0; i < r->conns; i++) {
		w = &r->workers[i % r->nworkers];
		c = calloc(1, sizeof(*c));
		if (c == NULL)
			return -1;
		w->conns[w->nconns++] = c;
		c->w = w;
		c->fd = -1;
		c->idx = i;
		c->nchains = r->pipeline;
		c->chains = calloc(r->pipeline, sizeof(*c->chains));
		c->hq = calloc(r->pipeline, sizeof(*c->hq));
		if (c->chains == NULL || c->hq == NULL)
			return -1;
		bench_conn_name(r, i, c->name, sizeof(c->name));
		if (r->test == T_HANDOFF && o->groups > 0)
			snprintf(c->group, sizeof(c->group), "g%u", i % o->groups);
		if (r->test == T_HANDOFF && o->priority)
			c->prio = (int)(i % 16) - 8;
		if (r->test != T_CHURN && conn_open(c, r->test != T_ECHO) != 0)
			return -1;
	}
	return 0;
}

/* Add one worker's tally to the run's. */
static void tally_add(struct bench_tally *to, const struct bench_tally *from)
{
	hist_merge(&to->lat, &from->lat);
	hist_merge(&to->wait, &from->wait);
	hist_merge(&to->acq, &from->acq);
	to->ops += from->ops;
	to->rts += from->rts;
	to->refused += from->refused;
	to->timeouts += from->timeouts;
	to->direct += from->direct;
	to->grants_all += from->grants_all;
	to->hs_full += from->hs_full;
	to->hs_resumed += from->hs_resumed;
}

/* Merge the workers' results into r. */
static void run_merge(struct run *r)
{
	unsigned k, i;

	hist_init(&r->t.lat);
	hist_init(&r->t.wait);
	hist_init(&r->t.acq);
	r->grants_min = UINT64_MAX;
	r->grants_max = 0;
	for (k = 0; k < r->nworkers; k++) {
		struct worker *w = &r->workers[k];

		tally_add(&r->t, &w->t);
		for (i = 0; i < w->nconns; i++) {
			uint64_t g = w->conns[i]->grants;

			if (g < r->grants_min)
				r->grants_min = g;
			if (g > r->grants_max)
				r->grants_max = g;
		}
	}
	if (r->grants_min == UINT64_MAX)
		r->grants_min = 0;
}

/* Open the connections, run the window, merge the results. */
int bench_run(struct run *r)
{
	const struct bench_opts *o = r->o;
	uint64_t end;
	double cpu0;
	unsigned k;
	int rc = -1;

	atomic_store(&r->stop, 0);
	atomic_store(&r->last_up, 0);
	if (run_setup(r) != 0) {
		fprintf(stderr, "semd-benchmark: %s: could not open %u connections\n",
		    o->addr.text, r->conns);
		goto out;
	}
	if (pthread_barrier_init(&r->barrier, NULL, r->nworkers + 1) != 0)
		goto out;
	for (k = 0; k < r->nworkers; k++) {
		if (pthread_create(&r->workers[k].tid, NULL, worker_main, &r->workers[k]) != 0) {
			/* the others wait on the barrier, which can not be passed now */
			fprintf(stderr, "semd-benchmark: pthread_create failed\n");
			exit(1);
		}
	}
	cpu0 = cpu_seconds();
	r->t0 = bench_now();
	if (r->test == T_NAMES) {
		/* runs until every name is done, within a bound */
		r->t_meas = r->t0;
		r->t_end = r->t0 + BENCH_NAMES_CAP_S * 1000000000ull;
	} else {
		r->t_meas = r->t0 + (uint64_t)(o->warmup * 1e9);
		r->t_end = r->t_meas + (uint64_t)(o->duration * 1e9);
	}
	pthread_barrier_wait(&r->barrier);
	for (k = 0; k < r->nworkers; k++)
		pthread_join(r->workers[k].tid, NULL);
	r->t_stop = bench_now();
	r->cpu_s = cpu_seconds() - cpu0;
	pthread_barrier_destroy(&r->barrier);
	end = r->t_stop < r->t_end ? r->t_stop : r->t_end;
	r->elapsed_s = end > r->t_meas ? (double)(end - r->t_meas) / 1e9 : 0.0;
	run_merge(r);
	rc = 0;
	for (k = 0; k < r->nworkers; k++) {
		if (r->workers[k].failed) {
			fprintf(stderr, "semd-benchmark: %s\n", r->workers[k].err);
			rc = -1;
		}
	}
out:
	if (r->workers != NULL) {
		for (k = 0; k < r->nworkers; k++)
			worker_free(&r->workers[k]);
		free(r->workers);
		r->workers = NULL;
	}
	return rc;
}
