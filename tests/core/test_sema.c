/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/core/test_sema.c - unit tests of the semaphore's asynchronous operations: trydown,
 * queued waiters and their callbacks, n permits, gated and parked waiters,
 * cancels, up to a maximum, adjusting the count. The blocking operations and
 * the races are test_sema_threads.c's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include "core/semaphore.h"
#include "tests/core/rec.h"
#include "tests/core/test.h"

/* --- tests ------------------------------------------------------------------ */

/* Trylock takes free permits, returns true on success, never blocks. */
static void test_trylock(void)
{
	struct semaphore s;
	uint64_t tok = 0;

	TEST_START("trylock returns true when it takes a permit (kernel's inverse)");
	sema_init(&s, 2);
	T_EQ(sema_count(&s), 2);
	T_EQ(sema_waiters(&s), 0);
	T_TRUE(sema_down_trylock(&s));
	T_TRUE(sema_down_trylock(&s));
	T_FALSE(sema_down_trylock(&s));
	T_EQ(sema_count(&s), 0);
	sema_up(&s);
	T_EQ(sema_count(&s), 1);
	T_TRUE(sema_trydown_n(&s, 1, &tok));
	T_U64_EQ(tok, 3);	/* the third grant */
	sema_up_n(&s, 3);
	T_FALSE(sema_trydown_n(&s, 4, &tok));
	T_TRUE(sema_trydown_n(&s, 3, &tok));
	T_U64_EQ(tok, 4);
	T_FALSE(sema_trydown_n(&s, 0, NULL));
	T_EQ(sema_down_n(&s, 0, 0), -EINVAL);
	sema_up_n(&s, 0);
	T_EQ(sema_count(&s), 0);
}

/* An async down with permits free is granted at once, no callback. */
static void test_async_immediate(void)
{
	struct semaphore s;
	struct rec r = { .id = 1 };

	TEST_START("async down with free permits is granted at once without a callback");
	sema_init(&s, 3);
	log_len = 0;
	T_EQ(sema_down_async(&s, &r.w, 2, rec_wake), 0);
	T_EQ(r.w.state, SEMA_GRANTED);
	T_U64_EQ(r.w.token, 1);
	T_EQ(r.woken, 0);
	T_EQ(sema_count(&s), 1);
	T_FALSE(sema_cancel(&s, &r.w));	/* granted: the caller owns it */
	T_EQ(sema_down_async(&s, &r.w, 0, rec_wake), -EINVAL);
	T_EQ(sema_down_async(&s, &r.w, 1, NULL), -EINVAL);
	sema_up_n(&s, 2);
	T_EQ(sema_count(&s), 3);
	T_EQ(log_len, 0);
}

/* Waiters are granted strictly in arrival order, count stays 0. */
static void test_async_fifo(void)
{
	struct semaphore s;
	struct rec r[5];
	int i;

	TEST_START("up hands permits to waiters in FIFO order, count stays 0");
	sema_init(&s, 0);
	log_len = 0;
	for (i = 0; i < 5; i++)
		rec_queue(&s, &r[i], i, 1);
	T_EQ(sema_waiters(&s), 5);
	for (i = 0; i < 5; i++) {
		sema_up(&s);
		T_EQ(log_len, i + 1);
		T_EQ(log_ids[i], i);
		T_U64_EQ(log_tokens[i], (uint64_t)i + 1);
		T_EQ(r[i].w.state, SEMA_GRANTED);
		T_EQ(sema_count(&s), 0);
	}
	T_EQ(sema_waiters(&s), 0);
}

/* A head needing 3 blocks later waiters needing 1 (no barging). */
static void line_nperm_head_blocks(struct semaphore *s, struct rec *r)
{
	sema_up(s);
	sema_up(s);
	T_EQ(log_len, 0);
	T_EQ(sema_count(s), 2);
	T_FALSE(sema_down_trylock(s));		/* trylock does not barge either */
	T_FALSE(sema_trydown_n(s, 1, NULL));
	sema_up(s);
	T_LOG(0);
	T_EQ(sema_count(s), 0);
	sema_up_n(s, 2);
	T_LOG(0, 1, 2);
	T_EQ(sema_count(s), 0);
}

/* One up_n serves several waiters in order, with consecutive tokens. */
static void line_nperm_handoff(struct semaphore *s, struct rec *r)
{
	sema_up_n(s, 5);
	T_LOG(0, 1, 2);
	T_U64_EQ(log_tokens[0], 1);
	T_U64_EQ(log_tokens[1], 2);
	T_U64_EQ(log_tokens[2], 3);
	T_EQ(sema_count(s), 0);
	T_EQ(sema_waiters(s), 1);
	sema_up_n(s, 3);
	T_EQ(log_len, 3);
	T_EQ(sema_count(s), 3);
	sema_up(s);
	T_LOG(0, 1, 2, 3);
	T_U64_EQ(r[3].w.token, 4);
	T_EQ(sema_count(s), 0);
	T_EQ(sema_waiters(s), 0);
}

/* A parked waiter keeps its place, blocks nobody, is served when unparked. */
static void line_park(struct semaphore *s, struct rec *r)
{
	sema_park(s, &r[0].w, true);
	T_TRUE(r[0].w.parked);
	sema_up(s);
	T_LOG(1);
	T_FALSE(sema_down_trylock(s));		/* r[2] queues, not parked */
	T_EQ(sema_count(s), 0);
	TEST_START("unparked, a waiter is served in its old place before later ones");
	sema_park(s, &r[0].w, false);
	sema_up(s);
	T_EQ(log_len, 1);		/* r[0] needs 2 and blocks r[2] again */
	T_EQ(sema_count(s), 1);
	sema_up(s);
	T_LOG(1, 0);
	T_EQ(sema_count(s), 0);
	sema_up(s);
	T_LOG(1, 0, 2);
	TEST_START("unparking a waiter whose permits are free grants it at once");
	log_len = 0;
	rec_queue(s, &r[0], 0, 1);
	rec_queue(s, &r[1], 1, 2);
	sema_park(s, &r[0].w, true);
	sema_up(s);			/* r[1] needs 2: nobody served */
	T_EQ(log_len, 0);
	T_EQ(sema_count(s), 1);
	sema_park(s, &r[0].w, false);
	T_LOG(0);
	T_EQ(sema_count(s), 0);
	TEST_START("only parked waiters queued: a trydown takes free permits");
	sema_park(s, &r[1].w, true);
	sema_up(s);
	T_TRUE(sema_down_trylock(s));
	T_EQ(sema_up_max(s, 2, 2), 0);	/* the parked one takes nothing */
	T_EQ(sema_count(s), 2);
	TEST_START("cancelling a parked waiter changes nothing for the others");
	T_TRUE(sema_cancel(s, &r[1].w));
	T_EQ(sema_waiters(s), 0);
	T_EQ(sema_count(s), 2);
	T_EQ(log_len, 1);
}

/* Callback of gated waiters: count offers (and grants once ungated). */
static int offers, gate_grants;
static struct sema_waiter *offered;

static void gate_wake(struct sema_waiter *w)
{
	if (w->state == SEMA_GRANTED && !w->gated) {
		gate_grants++;
		return;
	}
	if (w->state != SEMA_WAITING) {
		fprintf(stderr, "offer callback on a gated waiter not waiting\n");
		exit(1);
	}
	offers++;
	offered = w;
}

/*
 * A gated waiter blocks those behind it, is offered (not granted) when it is
 * first in line with its permits free, and is granted only by sema_grant().
 */
static void test_gated(void)
{
	struct semaphore s;
	struct sema_waiter g, g2;
	struct rec r[3];

	TEST_START("a gated waiter queues, blocks those behind, is offered when it fits");
	sema_init(&s, 0);
	log_len = 0;
	offers = 0;
	T_EQ(sema_enqueue(&s, &g, 2, gate_wake, SEMA_Q_GATED), 0);
	T_TRUE(g.gated);
	rec_queue(&s, &r[0], 0, 1);
	sema_up(&s);
	T_EQ(offers, 0);		/* 1 free, it needs 2 */
	T_EQ(log_len, 0);		/* and r[0] stays behind it */
	T_FALSE(sema_fits(&s, &g));
	T_FALSE(sema_grant(&s, &g));
	sema_up(&s);
	T_EQ(offers, 1);
	T_TRUE(offered == &g);
	T_EQ(g.state, SEMA_WAITING);
	T_EQ(log_len, 0);		/* r[0] is not served past it */
	T_EQ(sema_count(&s), 2);
	T_TRUE(sema_fits(&s, &g));
	T_FALSE(sema_fits(&s, &r[0].w));
	T_EQ(sema_up_max(&s, 1, 2), -EOVERFLOW);	/* nobody is served: 3 > 2 */
	T_FALSE(sema_down_trylock(&s));		/* no barging past the queue */
	TEST_START("sema_grant takes its permits and serves those behind it");
	T_TRUE(sema_grant(&s, &g));
	T_EQ(g.state, SEMA_GRANTED);
	T_U64_EQ(g.token, 1);
	T_EQ(log_len, 0);
	T_EQ(sema_count(&s), 0);
	sema_up(&s);
	T_LOG(0);
	T_U64_EQ(log_tokens[0], 2);
	T_FALSE(sema_grant(&s, &g));		/* granted already */
	TEST_START("sema_grant refuses a gated waiter that is not first in line");
	sema_init(&s, 0);
	log_len = 0;
	offers = 0;
	rec_queue(&s, &r[1], 1, 1);
	T_EQ(sema_enqueue(&s, &g, 1, gate_wake, SEMA_Q_GATED), 0);
	sema_up(&s);
	T_EQ(log_len, 1);
	T_EQ(offers, 0);			/* r[1] took it */
	sema_up(&s);
	T_EQ(offers, 1);
	rec_queue(&s, &r[2], 2, 1);
	T_TRUE(sema_fits(&s, &g));
	TEST_START("ungated, a waiter that fits is granted at once");
	gate_grants = 0;
	sema_gate(&s, &g, false);
	T_EQ(g.state, SEMA_GRANTED);
	T_EQ(gate_grants, 1);
	T_EQ(sema_count(&s), 0);
	T_EQ(sema_waiters(&s), 1);
	TEST_START("gating a queued waiter stops the core's grants to it");
	T_TRUE(sema_cancel(&s, &r[2].w));
	T_EQ(sema_enqueue(&s, &g2, 1, gate_wake, 0), 0);
	sema_gate(&s, &g2, true);
	sema_up(&s);
	T_EQ(gate_grants, 1);
	T_EQ(offers, 2);
	T_TRUE(offered == &g2);
	T_TRUE(sema_cancel(&s, &g2));
	T_EQ(sema_count(&s), 1);
	TEST_START("a parked gated waiter is passed over and never offered");
	T_EQ(sema_enqueue(&s, &g, 1, gate_wake, SEMA_Q_GATED | SEMA_Q_PARKED), 0);
	sema_up(&s);
	T_EQ(offers, 2);
	T_FALSE(sema_fits(&s, &g));
	T_TRUE(sema_down_trylock(&s));
	T_TRUE(sema_cancel(&s, &g));
}

/*
 * An owner that orders its queue itself: a waiter queued before another,
 * moved to the tail, and permits taken past a queue.
 */
static void test_ordered(void)
{
	struct semaphore s;
	struct sema_waiter g, h;
	struct rec r[2];
	uint64_t token = 0;

	TEST_START("sema_enqueue_before queues in front, grants nobody");
	sema_init(&s, 0);
	log_len = 0;
	gate_grants = 0;
	rec_queue(&s, &r[0], 0, 1);
	T_EQ(sema_enqueue_before(&s, &g, 1, gate_wake, 0, &r[0].w), 0);
	T_EQ(sema_enqueue_before(&s, &h, 1, gate_wake, 0, NULL), 0);	/* the tail */
	T_EQ(sema_waiters(&s), 3);
	sema_up(&s);
	T_EQ(g.state, SEMA_GRANTED);		/* before r[0] */
	T_EQ(log_len, 0);
	T_EQ(sema_enqueue_before(&s, &g, 1, gate_wake, 0, &g), -EINVAL);	/* not queued */
	TEST_START("sema_requeue_tail moves a waiter behind the others");
	sema_requeue_tail(&s, &r[0].w);		/* h, r[0] */
	sema_up(&s);
	T_EQ(h.state, SEMA_GRANTED);
	T_EQ(log_len, 0);
	sema_up(&s);
	T_LOG(0);
	TEST_START("sema_take_n takes free permits whoever waits");
	rec_queue(&s, &r[1], 1, 3);
	sema_up_n(&s, 2);			/* r[1] wants 3: 2 free */
	T_TRUE(sema_take_n(&s, 2, &token));
	T_U64_EQ(token, s.token);
	T_EQ(sema_count(&s), 0);
	T_FALSE(sema_take_n(&s, 1, NULL));
	T_FALSE(sema_take_n(&s, 0, NULL));
	T_TRUE(sema_cancel(&s, &r[1].w));
}

/* Cancel: queued -> true; head cancel lets others go; granted -> false. */
static void line_cancel(struct semaphore *s, struct rec *r)
{
	T_TRUE(sema_cancel(s, &r[2].w));
	T_EQ(r[2].w.state, SEMA_CANCELLED);
	T_TRUE(sema_cancel(s, &r[2].w));	/* again: no-op */
	T_EQ(sema_waiters(s), 3);

	TEST_START("cancelling the head lets the next ones proceed before cancel returns");
	sema_up(s);
	T_EQ(log_len, 0);
	T_TRUE(sema_cancel(s, &r[0].w));
	T_LOG(1);
	T_EQ(sema_count(s), 0);
	T_EQ(sema_waiters(s), 1);

	TEST_START("cancelling a granted waiter returns false, the caller owns the permits");
	T_FALSE(sema_cancel(s, &r[1].w));
	T_EQ(r[1].w.state, SEMA_GRANTED);
	sema_up(s);			/* r[1] gives its permit back: goes to r[3] */
	T_LOG(1, 3);
	T_FALSE(sema_cancel(s, &r[3].w));
	sema_up(s);
	T_EQ(sema_count(s), 1);
	T_EQ(sema_waiters(s), 0);
	T_EQ(r[0].woken + r[2].woken, 0);
}

/*
 * The cases that start from async waiters lined up on a semaphore at 0:
 * r[i] queued (id i) for need[i] permits, the log empty; run goes on.
 */
static const struct line_case {
	const char	*name;
	unsigned int	need[4];
	int		n;
	void		(*run)(struct semaphore *s, struct rec *r);
} line_cases[] = {
	{ "head waiter needing 3 blocks later ones needing 1", { 3, 1, 1 }, 3,
	    line_nperm_head_blocks },
	{ "n-permit hand-off across several waiters", { 2, 2, 1, 4 }, 4,
	    line_nperm_handoff },
	{ "cancel takes a queued waiter off without permits", { 3, 1, 1, 1 }, 4,
	    line_cancel },
	{ "a parked head is passed over and blocks nobody behind it", { 2, 1, 1 }, 3,
	    line_park },
};

/* Run each of line_cases on its own line of waiters. */
static void test_line_cases(void)
{
	const struct line_case *c;
	struct semaphore s;
	struct rec r[4];

	for (c = line_cases; c < line_cases + sizeof(line_cases) / sizeof(line_cases[0]); c++) {
		TEST_START(c->name);
		rec_line_up(&s, r, c->need, c->n);
		c->run(&s, r);
	}
}

static struct semaphore reenter_sem;
static int reenter_freed;

/* Callback that gives its permit straight back and frees its waiter. */
static void reenter_wake(struct sema_waiter *w)
{
	struct rec *r = container_of(w, struct rec, w);

	log_ids[log_len++ % LOG_MAX] = r->id;
	sema_up_n(&reenter_sem, w->n);
	free(r);
	reenter_freed++;
}

/* Callbacks run with the lock dropped: they may re-enter and free. */
static void test_callback_reenter_free(void)
{
	struct rec *r;
	int i;

	TEST_START("a wake callback may call up and free its waiter");
	sema_init(&reenter_sem, 0);
	log_len = 0;
	reenter_freed = 0;
	for (i = 0; i < 4; i++) {
		r = calloc(1, sizeof(*r));
		T_TRUE(r != NULL);
		r->id = i;
		T_EQ(sema_down_async(&reenter_sem, &r->w, 1, reenter_wake), 1);
	}
	sema_up(&reenter_sem);
	T_EQ(reenter_freed, 4);
	for (i = 0; i < 4; i++)
		T_EQ(log_ids[i], i);
	T_EQ(sema_count(&reenter_sem), 1);
	T_EQ(sema_waiters(&reenter_sem), 0);
}

/* up_max refuses to leave more than max free permits. */
static void test_up_max(void)
{
	struct semaphore s;
	struct rec r;

	TEST_START("up_max bounds the free count");
	sema_init(&s, 0);
	log_len = 0;
	T_EQ(sema_up_max(&s, 1, 1), 0);
	T_EQ(sema_count(&s), 1);
	T_EQ(sema_up_max(&s, 1, 1), -EOVERFLOW);
	T_EQ(sema_count(&s), 1);
	T_EQ(sema_up_max(&s, 0, 1), 0);
	T_EQ(sema_up_max(&s, 2, 3), 0);
	T_EQ(sema_count(&s), 3);

	TEST_START("up_max counts the permits that waiters take");
	sema_init(&s, 0);
	rec_queue(&s, &r, 7, 2);
	T_EQ(sema_up_max(&s, 4, 1), -EOVERFLOW);	/* 4 - 2 = 2 left > 1 */
	T_EQ(log_len, 0);
	T_EQ(sema_count(&s), 0);
	T_EQ(sema_up_max(&s, 3, 1), 0);			/* 3 - 2 = 1 left */
	T_LOG(7);
	T_EQ(sema_count(&s), 1);
	T_EQ(sema_waiters(&s), 0);
}

/* adjust changes the limit live: shrink below zero, grow hands off. */
static void test_adjust(void)
{
	struct semaphore s;
	struct rec r[2];

	TEST_START("adjust shrinks below zero and grows with hand-off");
	sema_init(&s, 1);
	log_len = 0;
	sema_adjust(&s, -3);
	T_EQ(sema_count(&s), -2);
	T_FALSE(sema_down_trylock(&s));
	sema_up(&s);
	T_EQ(sema_count(&s), -1);
	rec_queue(&s, &r[0], 0, 1);
	rec_queue(&s, &r[1], 1, 1);
	sema_up(&s);
	T_EQ(sema_count(&s), 0);
	T_EQ(log_len, 0);
	sema_adjust(&s, 1);
	T_LOG(0);
	T_EQ(sema_count(&s), 0);
	sema_adjust(&s, 0);
	T_EQ(log_len, 1);
	sema_adjust(&s, 5);
	T_LOG(0, 1);
	T_EQ(sema_count(&s), 4);
	T_EQ(sema_waiters(&s), 0);

	TEST_START("the count saturates instead of overflowing");
	sema_init(&s, LONG_MAX - 1);
	sema_up_n(&s, 5);
	T_EQ(sema_count(&s), LONG_MAX);
	sema_adjust(&s, LONG_MAX);
	T_EQ(sema_count(&s), LONG_MAX);
	T_EQ(sema_up_max(&s, 1, LONG_MAX), -EOVERFLOW);
	sema_init(&s, -5);
	sema_adjust(&s, LONG_MIN);
	T_EQ(sema_count(&s), LONG_MIN);
}

/* The _owned forms: what the locked ones do, FIFO hand-off and tokens. */
static void test_owned(void)
{
	struct semaphore s;
	struct rec r[3];
	uint64_t token = 0;

	TEST_START("sema_take_n_owned and sema_up_n_owned: the same as with the lock");
	sema_init(&s, 3);
	log_len = 0;
	T_TRUE(sema_take_n_owned(&s, 2, &token));
	T_U64_EQ(token, s.token);
	T_EQ(sema_count(&s), 1);
	T_FALSE(sema_take_n_owned(&s, 2, NULL));	/* 1 free */
	T_FALSE(sema_take_n_owned(&s, 0, NULL));
	rec_queue(&s, &r[0], 0, 2);
	rec_queue(&s, &r[1], 1, 1);
	rec_queue(&s, &r[2], 2, 1);
	sema_up_n_owned(&s, 0);				/* nothing */
	T_EQ(log_len, 0);
	sema_up_n_owned(&s, 1);		/* 2 free: the head, then r[1] waits */
	T_LOG(0);
	T_U64_EQ(r[0].w.token, token + 1);
	sema_up_n_owned(&s, 3);		/* FIFO: r[1], r[2], one left */
	T_LOG(0, 1, 2);
	T_EQ(sema_count(&s), 1);
	T_EQ(sema_waiters(&s), 0);
	T_TRUE(sema_take_n_owned(&s, 1, &token));
	T_U64_EQ(token, r[2].w.token + 1);
}

int main(void)
{
	t_watchdog(300);
	test_trylock();
	test_async_immediate();
	test_async_fifo();
	test_line_cases();
	test_gated();
	test_ordered();
	test_callback_reenter_free();
	test_up_max();
	test_adjust();
	test_owned();
	printf("test_sema: all passed\n");
	return 0;
}

