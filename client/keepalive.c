/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/keepalive.c - the keepalive thread of a session with a lease, or
 * of any session in a cluster.
 *
 * Started by the first Hello that grants a lease or says that the daemon is
 * a cluster's (a guard: see client-int.h), unless the program said
 * semc_set_keepalive_thread(c, false)), it lives until semc_free(). Each
 * turn it takes the reader role if nobody has it (so replies, pongs and
 * HoldLost notices are read while the program's threads are busy), waits
 * at most until the library's next duty (semc_timeout_locked()), then runs
 * the duties: a Ping every third of the lease (or of the guard, while a
 * session without a lease holds or waits), the end of the client-side
 * lease, a reconnection while a session waits to be resumed (or requests
 * wait to be sent). Events and
 * callbacks it gathers are delivered from this thread.
 *
 * It blocks every signal, so that signals meant for the program reach the
 * program's own threads. A pipe wakes its poll when it has to stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client-int.h"

/* Empty the wake pipe. */
static void wake_drain(int fd)
{
	char buf[64];

	while (read(fd, buf, sizeof buf) > 0)
		;
}

/* The thread: turns of reading and duties until the handle closes or the
 * program turns the thread off. */
static void *keepalive_main(void *arg)
{
	struct semc *c = arg;
	struct semc_deliver d;
	bool queued;
	int64_t now;
	int wait;

	semc_deliver_init(&d);
	pthread_mutex_lock(&c->lock);
	while (!c->closing && c->ka_want) {
		now = semc_now_ms();
		queued = semc_duties_locked(c, now, &d);
		if (queued || d.events || d.done != NULL) {
			pthread_mutex_unlock(&c->lock);
			semc_deliver_run(c, &d);
			if (queued)
				semc_flush_try(c);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		if (semc_reconnect_due_locked(c, now)) {
			pthread_mutex_unlock(&c->lock);
			semc_conn_try(c, -1);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		wait = semc_timeout_locked(c, now);
		if (wait < 0 || wait > 1000)
			wait = 1000;	/* look again now and then anyway */
		if (c->conn != NULL && !c->reading &&
		    (c->granted_lease > 0 || c->guard_ms > 0)) {
			semc_reader_turn_locked(c, wait, c->ka_wake[0]);
		} else {
			semc_cond_wait_ms_locked(c, wait);
		}
		wake_drain(c->ka_wake[0]);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Start the thread (lock held). Signals are blocked in it. */
int semc_keepalive_start_locked(struct semc *c)
{
	sigset_t all, old;
	int r;

	if (c->ka_running)
		return 0;
	if (c->ka_wake[0] < 0 && pipe2(c->ka_wake, O_CLOEXEC | O_NONBLOCK) != 0)
		return semc_fail(SEMC_E_SYSTEM, "pipe: %s", strerror(errno));
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&c->ka_thread, NULL, keepalive_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		return semc_fail(SEMC_E_SYSTEM, "cannot start the keepalive thread: %s", strerror(r));
	c->ka_running = true;
	return 0;
}

/* Stop the thread and wait for it (lock not held). The caller has set
 * closing, or cleared ka_want. */
void semc_keepalive_stop(struct semc *c)
{
	bool running;

	pthread_mutex_lock(&c->lock);
	running = c->ka_running;
	c->ka_running = false;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (!running)
		return;
	if (write(c->ka_wake[1], "x", 1) < 0) {
		/* full: the thread has wake-ups to read anyway */
	}
	pthread_join(c->ka_thread, NULL);
	pthread_mutex_lock(&c->lock);
	close(c->ka_wake[0]);
	close(c->ka_wake[1]);
	c->ka_wake[0] = c->ka_wake[1] = -1;
	pthread_mutex_unlock(&c->lock);
}
