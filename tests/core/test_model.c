/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/core/test_model.c - random sequences of asynchronous operations
 * checked step by step against a reference model: a counter and a FIFO
 * queue. After every step the semaphore must agree with the model on the
 * free count, the queue length, which waiters were granted, in which order,
 * and with which fencing tokens. Waiters may be parked (passed over in
 * their place) and unparked at any step.
 *
 * Usage: test_model [-s seed] [-n steps]   (the seed is printed; rerun a
 * failure with the same -s)
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <unistd.h>

#include "core/semaphore.h"
#include "tests/common/opts.h"
#include "tests/common/rng.h"
#include "tests/core/test.h"

#define SLOTS 48

enum slot_state { SLOT_FREE, SLOT_WAITING, SLOT_HELD };

struct slot {
	struct sema_waiter	w;
	int			id;
	enum slot_state		model;	/* what the model thinks */
	bool			parked;	/* the model's view */
	unsigned int		n;
};

static struct slot slots[SLOTS];

/* The reference model. */
static long m_count;
static int m_queue[SLOTS];
static int m_qlen;
static uint64_t m_token;
static long m_anon;		/* permits held from trydown */

/* Grants the model expects and the callbacks that actually ran. */
static int exp_ids[SLOTS], got_ids[SLOTS];
static uint64_t exp_tok[SLOTS], got_tok[SLOTS];
static int exp_len, got_len;

static unsigned long step;

/* Wake callback: log the grant. */
static void slot_wake(struct sema_waiter *w)
{
	struct slot *s = container_of(w, struct slot, w);

	if (got_len >= SLOTS) {
		fprintf(stderr, "step %lu: too many callbacks\n", step);
		exit(1);
	}
	got_ids[got_len] = s->id;
	got_tok[got_len] = w->token;
	got_len++;
}

/* Model: the queue position of the first unparked waiter, or m_qlen. */
static int model_first(void)
{
	int k;

	for (k = 0; k < m_qlen && slots[m_queue[k]].parked; k++)
		;
	return k;
}

/* Model: hand permits to unparked waiters in queue order while they fit. */
static void model_wake(void)
{
	struct slot *s;
	int k;

	while ((k = model_first()) < m_qlen) {
		s = &slots[m_queue[k]];
		if (m_count < (long)s->n)
			break;
		m_count -= (long)s->n;
		s->model = SLOT_HELD;
		exp_ids[exp_len] = s->id;
		exp_tok[exp_len] = ++m_token;
		exp_len++;
		memmove(m_queue + k, m_queue + k + 1,
		    (size_t)(m_qlen - k - 1) * sizeof(m_queue[0]));
		m_qlen--;
	}
}

/* Model: take slot i off the queue; true if it was the first unparked. */
static bool model_unqueue(int i)
{
	int k, first = model_first();

	for (k = 0; k < m_qlen; k++)
		if (m_queue[k] == i)
			break;
	T_TRUE(k < m_qlen);
	memmove(m_queue + k, m_queue + k + 1, (size_t)(m_qlen - k - 1) * sizeof(m_queue[0]));
	m_qlen--;
	return k == first;
}

/* Compare semaphore and model after a step. */
static void check(struct semaphore *sem, const char *op)
{
	int k;

	if (got_len != exp_len)
		TEST_FAIL_("step %lu (%s): %d grants, model expects %d", step, op, got_len, exp_len);
	for (k = 0; k < exp_len; k++) {
		if (got_ids[k] != exp_ids[k] || got_tok[k] != exp_tok[k])
			TEST_FAIL_("step %lu (%s): grant %d went to %d token %" PRIu64
			    ", model: %d token %" PRIu64, step, op, k, got_ids[k],
			    got_tok[k], exp_ids[k], exp_tok[k]);
		T_EQ(slots[got_ids[k]].w.state, SEMA_GRANTED);
	}
	if (sema_count(sem) != m_count)
		TEST_FAIL_("step %lu (%s): count %ld, model %ld", step, op, sema_count(sem), m_count);
	if (sema_waiters(sem) != (unsigned long)m_qlen)
		TEST_FAIL_("step %lu (%s): %lu waiters, model %d", step, op, sema_waiters(sem), m_qlen);
	T_U64_EQ(sem->token, m_token);
	k = model_first();
	if (k < m_qlen && (long)slots[m_queue[k]].n <= m_count)
		TEST_FAIL_("step %lu (%s): head needs %u, %ld free, yet waits",
		    step, op, slots[m_queue[k]].n, m_count);
	for (k = 0; k < m_qlen; k++)
		if (slots[m_queue[k]].w.parked != slots[m_queue[k]].parked)
			TEST_FAIL_("step %lu (%s): waiter %d parked %d, model %d", step,
			    op, m_queue[k], slots[m_queue[k]].w.parked,
			    slots[m_queue[k]].parked);
	got_len = exp_len = 0;
}

/* A random slot in state st, or -1. */
static int pick(enum slot_state st)
{
	int k, start = (int)rnd_below(SLOTS);

	for (k = 0; k < SLOTS; k++)
		if (slots[(start + k) % SLOTS].model == st)
			return (start + k) % SLOTS;
	return -1;
}

/* down n on a free slot. */
static void op_down(struct semaphore *sem)
{
	int i = pick(SLOT_FREE), r;
	unsigned int n = 1 + rnd_below(4);
	struct slot *s;

	if (i < 0)
		return;
	s = &slots[i];
	s->n = n;
	s->parked = false;
	r = sema_down_async(sem, &s->w, n, slot_wake);
	if (model_first() == m_qlen && m_count >= (long)n) {
		T_EQ(r, 0);
		m_count -= (long)n;
		T_U64_EQ(s->w.token, ++m_token);
		T_EQ(s->w.state, SEMA_GRANTED);
		s->model = SLOT_HELD;
	} else {
		T_EQ(r, 1);
		T_EQ(s->w.state, SEMA_WAITING);
		m_queue[m_qlen++] = i;
		s->model = SLOT_WAITING;
	}
	check(sem, "down");
}

/* trydown n. */
static void op_trydown(struct semaphore *sem)
{
	unsigned int n = 1 + rnd_below(3);
	uint64_t tok = 0;
	bool ok = sema_trydown_n(sem, n, &tok);

	if (model_first() == m_qlen && m_count >= (long)n) {
		T_TRUE(ok);
		m_count -= (long)n;
		T_U64_EQ(tok, ++m_token);
		m_anon += n;
	} else {
		T_FALSE(ok);
	}
	check(sem, "trydown");
}

/* up: a holder gives its permits back (or a free up when nobody holds). */
static void op_up(struct semaphore *sem)
{
	int i = pick(SLOT_HELD);
	unsigned int n;

	if (i >= 0 && rnd_below(3) != 0) {
		n = slots[i].n;
		slots[i].model = SLOT_FREE;
	} else if (m_anon > 0) {
		n = 1 + rnd_below((unsigned int)(m_anon < 3 ? m_anon : 3));
		m_anon -= n;
	} else {
		n = 1;
	}
	sema_up_n(sem, n);
	m_count += (long)n;
	model_wake();
	check(sem, "up");
}

/* cancel a waiting or held slot. */
static void op_cancel(struct semaphore *sem)
{
	int i = pick(rnd_below(2) ? SLOT_WAITING : SLOT_HELD);
	bool r;

	if (i < 0)
		return;
	r = sema_cancel(sem, &slots[i].w);
	if (slots[i].model == SLOT_WAITING) {
		T_TRUE(r);
		T_EQ(slots[i].w.state, SEMA_CANCELLED);
		slots[i].model = SLOT_FREE;
		if (model_unqueue(i))
			model_wake();
	} else {
		T_FALSE(r);	/* granted: still held, given back by op_up */
	}
	check(sem, "cancel");
}

/* adjust by -3..3, steering the count back into [-10, 20]. */
static void op_adjust(struct semaphore *sem)
{
	long d = (long)rnd_below(7) - 3;

	if (m_count > 20)
		d = -3;
	else if (m_count < -10)
		d = 3;
	sema_adjust(sem, d);
	m_count += d;
	if (d > 0)
		model_wake();
	check(sem, "adjust");
}

/* up_max n with a random bound. */
static void op_up_max(struct semaphore *sem)
{
	unsigned int n = 1 + rnd_below(3);
	long max = (long)rnd_below(6);
	long avail = m_count + (long)n;
	int k, r;

	for (k = 0; k < m_qlen; k++) {
		if (slots[m_queue[k]].parked)
			continue;
		if (avail < (long)slots[m_queue[k]].n)
			break;
		avail -= (long)slots[m_queue[k]].n;
	}
	r = sema_up_max(sem, n, max);
	if (avail > max) {
		T_EQ(r, -EOVERFLOW);
	} else {
		T_EQ(r, 0);
		m_count += (long)n;
		model_wake();
	}
	check(sem, "up_max");
}

/* park or unpark a waiting slot. */
static void op_park(struct semaphore *sem)
{
	int i = pick(SLOT_WAITING);

	if (i < 0)
		return;
	slots[i].parked = !slots[i].parked;
	sema_park(sem, &slots[i].w, slots[i].parked);
	model_wake();
	check(sem, "park");
}

int main(int argc, char **argv)
{
	struct semaphore sem;
	uint64_t steps = 200000;
	uint64_t seed = (uint64_t)t_now_ns() ^ (uint64_t)getpid();
	const struct t_opt opts[] = {
		{ 's', &seed, NULL },
		{ 'n', &steps, NULL },
		{ 0, NULL, NULL },
	};
	unsigned long counts[7] = { 0 };
	int c, k;

	t_watchdog(300);
	if (t_opts_parse(argc, argv, opts, "test_model [-s seed] [-n steps]") != 0)
		return 2;
	printf("test_model: seed %" PRIu64 ", %" PRIu64 " steps (rerun: -s %" PRIu64 ")\n",
	    seed, steps, seed);
	fflush(stdout);
	rng = seed ? seed : 1;
	TEST_START("random async operations agree with the counter+queue model");
	for (k = 0; k < SLOTS; k++)
		slots[k].id = k;
	m_count = (long)rnd_below(4);
	sema_init(&sem, m_count);
	for (step = 0; step < steps; step++) {
		c = (int)rnd_below(7);
		counts[c]++;
		switch (c) {
		case 0: op_down(&sem); break;
		case 1: op_trydown(&sem); break;
		case 2: op_up(&sem); break;
		case 3: op_cancel(&sem); break;
		case 4: op_adjust(&sem); break;
		case 5: op_park(&sem); break;
		default: op_up_max(&sem); break;
		}
	}
	printf("  down %lu trydown %lu up %lu cancel %lu adjust %lu park %lu "
	    "up_max %lu; %" PRIu64 " grants\n", counts[0], counts[1], counts[2],
	    counts[3], counts[4], counts[5], counts[6], m_token);
	printf("test_model: all passed\n");
	return 0;
}
