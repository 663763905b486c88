/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/core/rec.h - asynchronous waiters that log their grants, for the
 * semaphore tests (test_sema.c, test_sema_threads.c): each records its id
 * and fencing token when woken, and T_LOG() checks the order of the grants.
 */
#ifndef SEMD_TESTS_CORE_REC_H
#define SEMD_TESTS_CORE_REC_H

#include "core/semaphore.h"
#include "tests/core/test.h"

/* --- asynchronous waiters that log their grants ------------------------- */

#define LOG_MAX 64

struct rec {
	struct sema_waiter	w;
	int			id;
	int			woken;
};

static int log_ids[LOG_MAX];
static uint64_t log_tokens[LOG_MAX];
static int log_len;

/* Wake callback: record who was granted, in order, with its token. */
static inline void rec_wake(struct sema_waiter *w)
{
	struct rec *r = container_of(w, struct rec, w);

	if (w->state != SEMA_GRANTED) {
		fprintf(stderr, "wake callback on a waiter not granted\n");
		exit(1);
	}
	r->woken++;
	if (log_len < LOG_MAX) {
		log_ids[log_len] = r->id;
		log_tokens[log_len] = w->token;
	}
	log_len++;
}

/* Queue r (id) for n permits; expect it to queue. */
static inline void rec_queue(struct semaphore *s, struct rec *r, int id, unsigned int n)
{
	r->id = id;
	r->woken = 0;
	T_EQ(sema_down_async(s, &r->w, n, rec_wake), 1);
	T_EQ(r->w.state, SEMA_WAITING);
}

/* The log holds want[0..n-1]: those waiters were granted, in that order. */
static inline void log_is(const char *file, int line, const int *want, int n)
{
	int i;

	for (i = 0; i < n && i < log_len && log_ids[i] == want[i]; i++)
		;
	if (i == n && log_len == n)
		return;
	fprintf(stderr, "%s:%d: FAIL in \"%s\": granted", file, line, test_current_);
	for (i = 0; i < log_len && i < LOG_MAX; i++)
		fprintf(stderr, " %d", log_ids[i]);
	fprintf(stderr, ", want");
	for (i = 0; i < n; i++)
		fprintf(stderr, " %d", want[i]);
	fprintf(stderr, "\n");
	exit(1);
}
#define T_LOG(...) log_is(__FILE__, __LINE__, (const int[]){ __VA_ARGS__ },	\
	(int)(sizeof((const int[]){ __VA_ARGS__ }) / sizeof(int)))

/* s new at 0, the log emptied, then r[i] queued (id i) for need[i] permits. */
static inline void rec_line_up(struct semaphore *s, struct rec *r, const unsigned int *need, int n)
{
	int i;

	sema_init(s, 0);
	log_len = 0;
	for (i = 0; i < n; i++)
		rec_queue(s, &r[i], i, need[i]);
}

#endif
