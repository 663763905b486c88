/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/engine/loop.c - the duty loop: the one place where the handle's
 * periodic work is done and where a lost connection is made again. Its
 * turns (semc_turn_locked()) are run by three kinds of threads: a call
 * waiting for its reply (call.c), an event loop in semc_process(), and the
 * keepalive thread of a session with a lease (or of any session in a
 * cluster: the guard, handle.h), which this file starts and stops. A turn
 * reconnects when that is due, reads for a while (taking the reader role
 * when nobody has it) or waits for whoever reads or connects,
 * then runs the session's duties (the end of the client-side lease, a
 * keepalive ping every third of it, a connection whose ping went unanswered
 * for a quarter of it given up) and delivers and sends what they gathered.
 *
 * The keepalive thread, started by the first connection whose session has
 * a lease or a cluster's guard (unless the program said
 * semc_set_keepalive_thread(c, false)),
 * lives until semc_free(): its turns keep holds alive, and report their
 * loss, while the program's threads do something else. It blocks every
 * signal, so that signals meant for the program reach the program's own
 * threads, and a pipe wakes its poll when it has to stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/engine/engine.h"

/* Whether a disconnected handle should connect again now: the back-off
 * allows, and there is a session to resume or a request to send (or the
 * turn is an event loop's, which needs a socket to poll). */
static bool reconnect_due_locked(const struct semc *c, int64_t now, const struct semc_turn *t)
{
	return c->conn == NULL && c->reconnect && c->ever_connected && !c->closing &&
	       !c->connecting && now >= c->next_retry &&
	       (t->eager || c->session != 0 || c->pending != NULL);
}

/* Milliseconds until the library has something to do (-1: nothing): the
 * session's next duty, or a reconnection. */
int semc_timeout_locked(struct semc *c, int64_t now)
{
	int64_t t;

	if (c->closing)
		return -1;
	t = semc_duty_next_locked(c);
	if (c->conn == NULL && c->reconnect && c->ever_connected && !c->connecting &&
	    (c->session != 0 || c->pending != NULL) && (t < 0 || c->next_retry < t))
		t = c->next_retry;
	if (t < 0)
		return -1;
	if (t <= now)
		return 0;
	return t - now > INT32_MAX ? INT32_MAX : (int)(t - now);
}

/* Wait on the handle's condition for at most ms (lock held). */
static void cond_wait_ms_locked(struct semc *c, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&c->cond, &c->lock, &ts);
}

/* Empty the wake pipe. */
static void wake_drain(int fd)
{
	char buf[64];

	while (read(fd, buf, sizeof buf) > 0)
		;
}

/* The keepalive thread's body (below). */
static void *keepalive_main(void *arg);

/* Start the thread (lock held). Signals are blocked in it. */
static int keepalive_start_locked(struct semc *c)
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

/* Start the keepalive thread if the session has a lease (or a cluster's
 * guard: handle.h), the program wants the thread and the handle is not
 * closing (lock held). */
static void background_start_locked(struct semc *c)
{
	if (c->conn != NULL && (c->granted_lease > 0 || c->guard_ms > 0) && c->ka_want &&
	    !c->ka_running && !c->closing)
		(void)keepalive_start_locked(c);
}

/* One attempt to connect again, given up at deadline (lock held on entry
 * and return, dropped meanwhile): its result. */
static int reconnect_locked(struct semc *c, int64_t deadline)
{
	int r;

	pthread_mutex_unlock(&c->lock);
	r = semc_conn_try(c, deadline);
	pthread_mutex_lock(&c->lock);
	if (r == 0)
		background_start_locked(c);
	return r;
}

/*
 * One turn of the duty loop at now (lock held on entry and return, dropped
 * meanwhile): connect again when that is due (a call's request fails at
 * once when that fails and there is no session to resume: no point waiting
 * for a server that is not there), read for up to t->wait_ms, bounded by
 * the next duty, or wait that long for whoever reads or connects, then the
 * session's duties, after the reading (an answer that came in time keeps
 * the session); a call whose request is answered leaves them to the next
 * turn, as it leaves the reader role. Returns the replies read, or
 * SEMC_E_DISCONNECTED while there is no connection.
 */
int semc_turn_locked(struct semc *c, const struct semc_turn *t, int64_t now)
{
	struct semc_req *r = t->req;
	struct semc_deliver d;
	int n = 0, wait, due, rc;
	bool queued = false, waited = false;

	semc_deliver_init(&d);
	if (reconnect_due_locked(c, now, t)) {
		rc = reconnect_locked(c, t->deadline);
		if (rc < 0 && r != NULL && !r->done && c->conn == NULL && c->session == 0)
			semc_req_complete_locked(c, r, NULL, rc, &d);
		now = semc_now_ms();
	}
	if (r != NULL && !r->done && c->conn == NULL && (!c->reconnect || c->closing))
		semc_req_complete_locked(c, r, NULL, SEMC_E_DISCONNECTED, &d);
	wait = t->wait_ms;
	if (wait > 0 && (due = semc_timeout_locked(c, now)) >= 0 && due < wait)
		wait = due;
	if (r != NULL && r->done) {
		/* answered (or failed): nothing to wait for */
	} else if (c->conn != NULL && !c->reading &&
		   (!t->background || c->granted_lease > 0 || c->guard_ms > 0)) {
		n = semc_reader_turn_locked(c, wait, t->wake_fd, t->background);
		waited = wait > 0;
	} else {
		if (c->conn == NULL)
			n = SEMC_E_DISCONNECTED;
		if (t->wait_ms > 0) {
			cond_wait_ms_locked(c, wait > 0 ? wait : 1);
			waited = true;
		}
	}
	if (r == NULL || !r->done)
		queued = semc_duties_locked(c, waited ? semc_now_ms() : now, &d);
	if (queued || d.events || d.done != NULL) {
		pthread_mutex_unlock(&c->lock);
		semc_deliver_run(c, &d);
		if (queued && t->background)
			semc_flush_try(c);
		else if (queued)
			semc_flush(c);
		pthread_mutex_lock(&c->lock);
	}
	return n;
}
/* The keepalive thread: turns of the duty loop until the handle closes or
 * the program turns the thread off. */
static void *keepalive_main(void *arg)
{
	struct semc *c = arg;
	struct semc_turn t = { .wait_ms = 1000, .deadline = -1, .wake_fd = c->ka_wake[0],
			       .background = true };

	pthread_mutex_lock(&c->lock);
	while (!c->closing && c->ka_want) {
		semc_turn_locked(c, &t, semc_now_ms());
		wake_drain(c->ka_wake[0]);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Connect the first time (semc_connect()); the keepalive thread starts when
 * the session has a lease or a cluster's guard. */
int semc_engine_connect(struct semc *c, int64_t deadline)
{
	int r = semc_connect_first(c, deadline);

	if (r == 0) {
		pthread_mutex_lock(&c->lock);
		background_start_locked(c);
		pthread_mutex_unlock(&c->lock);
	}
	return r;
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
