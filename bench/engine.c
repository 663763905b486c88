/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/engine.c - the closed loop of a worker: its connections, and what
 * each test does when a reply comes back (a run of workers: run.c).
 *
 * A connection runs `pipeline` chains. A chain is one operation in flight:
 * it sends a request, and the reply (matched by id, since replies may come
 * out of order) decides the next request of the same chain. A request id is
 * (sequence << 16 | chain), so the chain is found without a lookup and a
 * stale or foreign id is caught. Each worker reads every connection once per
 * wake-up, handles every whole frame, and writes once.
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
#include "bench/wire_http.h"

#define READ_CHUNK	(64u * 1024u)

/* Monotonic clock in nanoseconds. */
uint64_t bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Name of connection i's semaphore (one shared name for the contended tests). */
void bench_conn_name(const struct run *r, unsigned i, char *buf, size_t len)
{
	static const char *const tag[T_COUNT] = {
		[T_DOWN_UP] = "du", [T_TRYDOWN_UP] = "tdu", [T_CONTENDED] = "cont",
		[T_HANDOFF] = "hand", [T_CHURN] = "churn", [T_RATE] = "rate",
		[T_MULTI] = "m3", [T_DOWN3] = "d3", [T_INFO] = "info",
	};
	const char *t = tag[r->test] != NULL ? tag[r->test] : "x";

	if (r->test == T_CONTENDED || r->test == T_HANDOFF)
		snprintf(buf, len, "%s/%s", r->prefix, t);
	else
		snprintf(buf, len, "%s/%s/%u", r->prefix, t, i);
}

/* T_MULTI, T_DOWN3: name k of connection i's three. */
void bench_conn_name_k(const struct run *r, unsigned i, unsigned k, char *buf, size_t len)
{
	char base[96];

	bench_conn_name(r, i, base, sizeof(base));
	snprintf(buf, len, "%s/%c", base, 'a' + (int)k);
}

/* The names test's name number i, padded to 32 bytes. */
void bench_names_name(const struct run *r, uint64_t i, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/n/", r->prefix);
	int width = 32 - n;

	if (n < 0 || (size_t)n >= len)
		return;
	if (width < 1)
		width = 1;
	snprintf(buf + n, len - (size_t)n, "%0*llu", width, (unsigned long long)i);
}

/* Record the first failure of a worker and stop the run. */
void worker_fail(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	if (!w->failed) {
		va_start(ap, fmt);
		vsnprintf(w->err, sizeof(w->err), fmt, ap);
		va_end(ap);
		w->failed = 1;
	}
	atomic_store(&w->run->stop, 1);
}

/* Is t inside the measured window? */
static int in_window(const struct run *r, uint64_t t)
{
	return t >= r->t_meas && t < r->t_end;
}

/* One operation finished with latency lat. */
static void op_done(struct worker *w, uint64_t lat, uint64_t now)
{
	if (!in_window(w->run, now))
		return;
	w->t.ops++;
	hist_record(&w->t.lat, lat);
}

/*
 * Over HTTP: queue chain i's next request of kind step; its answer comes
 * in the order asked (hq). Returns 0, or -1.
 */
static int conn_send_http(struct conn *c, unsigned i, int step, uint64_t now)
{
	struct worker *w = c->w;
	struct run *r = w->run;
	struct chain *ch = &c->chains[i];
	int rc;

	switch (step) {
	case S_DOWN:
		rc = wire_http_put(&c->out, WIRE_HTTP_ACQUIRE, c->name, 0,
		    r->test == T_TRYDOWN_UP ? 0 : r->o->timeout_ms);
		break;
	case S_UP:
		rc = wire_http_put(&c->out, WIRE_HTTP_RELEASE, c->name, ch->permit, 0);
		break;
	case S_PING:
		rc = wire_http_put(&c->out, WIRE_HTTP_SERVER, NULL, 0, 0);
		break;
	case S_INFO:
		rc = wire_http_put(&c->out, WIRE_HTTP_INFO, c->name, 0, 0);
		break;
	default:
		worker_fail(w, "internal error: step %d has no HTTP request", step);
		return -1;
	}
	if (rc != 0) {
		worker_fail(w, "out of memory");
		return -1;
	}
	c->hq[(c->hq_head + c->hq_len++) % c->nchains] = i;
	ch->id = 1;
	ch->t_req = now;
	ch->step = step;
	w->outstanding++;
	return 0;
}

/* Queue chain i's next request of kind step. Returns 0, or -1 when idle. */
static int conn_send(struct conn *c, unsigned i, int step, uint64_t now)
{
	struct worker *w = c->w;
	struct run *r = w->run;
	struct chain *ch = &c->chains[i];
	uint64_t id = (++c->seq << 16) | i;
	char name[96], names[BENCH_MULTI][112];
	const char *np[BENCH_MULTI];
	unsigned k;
	int rc = 0;

	if (r->o->addr.is_http)
		return conn_send_http(c, i, step, now);
	switch (step) {
	case S_MULTI:
		for (k = 0; k < BENCH_MULTI; k++) {
			bench_conn_name_k(r, c->idx, k, names[k], sizeof(names[k]));
			np[k] = names[k];
		}
		rc = wire_put_down_multi(&c->out, id, np, BENCH_MULTI, r->o->timeout_ms);
		break;
	case S_DOWNK:
	case S_UPK:
		bench_conn_name_k(r, c->idx, ch->k, names[0], sizeof(names[0]));
		rc = step == S_DOWNK ? wire_put_down(&c->out, id, names[0], r->o->timeout_ms) :
		    wire_put_up(&c->out, id, names[0], 0);
		break;
	case S_PING:
		rc = wire_put_ping(&c->out, id, NULL, 0);
		break;
	case S_INFO:
		rc = wire_put_info(&c->out, id, c->name);
		break;
	case S_DOWN:
		rc = wire_put_down_in(&c->out, id, c->name,
		    r->test == T_TRYDOWN_UP ? 0 : r->o->timeout_ms, c->prio, c->group);
		break;
	case S_UP:
		rc = wire_put_up(&c->out, id, c->name, ch->permit);
		break;
	case S_CREATE:
	case S_DELETE:
		if (w->next >= w->end) {
			ch->id = 0;
			ch->step = S_IDLE;
			return -1;
		}
		bench_names_name(r, w->next++, name, sizeof(name));
		if (step == S_CREATE)
			rc = wire_put_create(&c->out, id, name, 1, 0);
		else
			rc = wire_put_delete(&c->out, id, name, 1);
		break;
	case S_ECHO1:
	case S_ECHO2:
		if ((rc = wbuf_reserve(&c->out, ECHO_SIZE)) == 0) {
			uint8_t *p = c->out.p + c->out.len;

			memset(p, 0, ECHO_SIZE);
			p[0] = step == S_ECHO1 ? 'D' : 'U';
			memcpy(p + 8, &id, sizeof(id));
			c->out.len += ECHO_SIZE;
		}
		break;
	default:
		worker_fail(w, "internal error: no request for step %d", step);
		return -1;
	}
	if (rc != 0) {
		worker_fail(w, "out of memory");
		return -1;
	}
	ch->id = id;
	ch->t_req = now;
	ch->step = step;
	w->outstanding++;
	return 0;
}

/* Chain i's op, begun at t0, is done: count it and begin the next with step. */
static void chain_again(struct conn *c, unsigned i, uint64_t t0, int step, uint64_t now)
{
	op_done(c->w, now - t0, now);
	c->chains[i].t_op = now;
	conn_send(c, i, step, now);
}

/* Count n grants on c (and in the window, when now is in it). */
static void grants_add(struct conn *c, uint64_t n, uint64_t now)
{
	c->w->t.grants_all += n;
	if (in_window(c->w->run, now))
		c->grants += n;
}

/*
 * The reply to chain i's request came with code (and, for a grant, its
 * permit id): take the next step.
 */
static void chain_next(struct conn *c, unsigned i, int code, uint64_t permit, uint64_t now)
{
	struct worker *w = c->w;
	struct run *r = w->run;
	struct chain *ch = &c->chains[i];
	int step = ch->step;
	uint64_t last;

	ch->id = 0;
	ch->step = S_IDLE;
	w->outstanding--;
	w->t.rts++;
	switch (step) {
	case S_PING:
	case S_INFO:
		chain_again(c, i, ch->t_req, step, now);
		return;
	case S_ECHO1:
		conn_send(c, i, S_ECHO2, now);
		return;
	case S_ECHO2:
		chain_again(c, i, ch->t_op, S_ECHO1, now);
		return;
	case S_MULTI:
	case S_DOWNK:
		grants_add(c, step == S_MULTI ? BENCH_MULTI : 1, now);
		if (step == S_DOWNK && ++ch->k < BENCH_MULTI) {
			conn_send(c, i, S_DOWNK, now);
			return;
		}
		ch->k = 0;
		conn_send(c, i, S_UPK, now);
		return;
	case S_UPK:
		if (++ch->k < BENCH_MULTI) {
			conn_send(c, i, S_UPK, now);
			return;
		}
		ch->k = 0;
		chain_again(c, i, ch->t_op, r->test == T_MULTI ? S_MULTI : S_DOWNK, now);
		return;
	case S_DOWN:
		if (code == SEMD__CODE__WOULD_BLOCK && r->test == T_TRYDOWN_UP) {
			if (in_window(r, now))
				w->t.refused++;
			conn_send(c, i, S_DOWN, now);
			return;
		}
		if (code == SEMD__CODE__TIMEOUT) {
			w->t.timeouts++;
			conn_send(c, i, S_DOWN, now);
			return;
		}
		if (code != SEMD__CODE__OK)
			goto bad;
		if (r->test == T_RATE) {
			/* nothing is held: the down is the op */
			grants_add(c, 1, now);
			chain_again(c, i, ch->t_op, S_DOWN, now);
			return;
		}
		ch->permit = permit;
		w->t.grants_all++;
		if (in_window(r, now)) {
			c->grants++;
			if (r->test == T_DOWN_UP || r->test == T_TRYDOWN_UP)
				hist_record(&w->t.acq, now - ch->t_req);
			if (r->test == T_CONTENDED)
				hist_record(&w->t.wait, now - ch->t_op);
		}
		if (r->test == T_HANDOFF) {
			/*
			 * A hand-off is a grant to a down that was already
			 * queued when the holder's up went out; a down that
			 * came after the up found the permit free.
			 */
			last = atomic_load_explicit(&r->last_up, memory_order_acquire);
			if (last != 0 && ch->t_req < last)
				op_done(w, now - last, now);
			else if (in_window(r, now))
				w->t.direct++;
			atomic_store_explicit(&r->last_up, now, memory_order_release);
		}
		conn_send(c, i, S_UP, now);
		return;
	case S_UP:
		if (r->test == T_HANDOFF) {
			ch->t_op = now;
			conn_send(c, i, S_DOWN, now);
			return;
		}
		if (r->test == T_CHURN) {
			op_done(w, now - ch->t_op, now);
			c->reconnect = 1;
			return;
		}
		chain_again(c, i, ch->t_op, S_DOWN, now);
		return;
	case S_CREATE:
	case S_DELETE:
		op_done(w, now - ch->t_req, now);
		conn_send(c, i, step, now);
		return;
	}
bad:
	worker_fail(w, "connection %u: unexpected reply %s to a request of step %d",
	    c->idx, wire_code_name(code), step);
}

/* Watch or stop watching c for writability. */
static void conn_want_out(struct conn *c, int on)
{
	struct epoll_event ev;

	if (c->want_out == on)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | (on ? EPOLLOUT : 0);
	ev.data.ptr = c;
	if (epoll_ctl(c->w->ep, EPOLL_CTL_MOD, c->fd, &ev) < 0)
		worker_fail(c->w, "epoll_ctl: %s", strerror(errno));
	c->want_out = on;
}

/* Write what is pending on c without blocking. */
void conn_flush(struct conn *c)
{
	ssize_t n;

	while (c->out.off < c->out.len) {
		n = wire_send(c->fd, c->ssl, c->out.p + c->out.off, c->out.len - c->out.off);
		if (n > 0) {
			c->out.off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			conn_want_out(c, 1);
			return;
		}
		worker_fail(c->w, "connection %u: write: %s", c->idx,
		    n < 0 ? strerror(errno) : "short write");
		return;
	}
	c->out.off = c->out.len = 0;
	conn_want_out(c, 0);
}

/* Write all of c's output, blocking (before the socket is non-blocking). */
static int conn_write_all(struct conn *c)
{
	return wbuf_send_all(&c->out, c->fd, c->ssl);
}

/* Say Hello on a fresh blocking connection and wait for the answer. */
static int conn_hello(struct conn *c)
{
	struct worker *w = c->w;
	const uint8_t *p;
	Semd__Reply *rep;
	size_t len;
	ssize_t n;
	int rc, code;

	if (wire_put_hello(&c->out, 1, "semd-benchmark") != 0 || conn_write_all(c) != 0)
		return -1;
	for (;;) {
		rc = wire_next_frame(&c->in, WIRE_REPLY_MAX, &p, &len);
		if (rc < 0)
			return -1;
		if (rc == 1)
			break;
		if (wbuf_reserve(&c->in, READ_CHUNK) != 0)
			return -1;
		n = wire_recv(c->fd, c->ssl, c->in.p + c->in.len, c->in.cap - c->in.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		c->in.len += (size_t)n;
	}
	rep = wire_reply_unpack(&w->arena, p, len);
	if (rep == NULL)
		return -1;
	code = rep->code;
	if (code != SEMD__CODE__OK || rep->id != 1)
		fprintf(stderr, "semd-benchmark: Hello refused: %s %s\n",
		    wire_code_name(code), rep->message);
	wire_reply_done(&w->arena, rep);
	wbuf_compact(&c->in);
	return code == SEMD__CODE__OK ? 0 : -1;
}

/* Connect c (and run the TLS handshake), blocking. */
static int conn_connect(struct conn *c, char *err, size_t errlen)
{
	const struct bench_opts *o = c->w->run->o;
	int fd;

	fd = wire_connect(&o->addr, 0);
	if (fd < 0) {
		snprintf(err, errlen, "connect %s: %s", o->addr.text, strerror(-fd));
		return -1;
	}
	c->fd = fd;
	c->ssl = NULL;
	c->in.off = c->in.len = 0;
	c->out.off = c->out.len = 0;
	c->want_out = 0;
	if (o->addr.is_tls) {
		c->ssl = wire_tls_handshake(o->tls_ctx, fd, o->addr.host, o->tls.insecure, err, errlen);
		if (c->ssl == NULL) {
			close(fd);
			c->fd = -1;
			return -1;
		}
	}
	return 0;
}

/* Close c's connection. */
void conn_close(struct conn *c)
{
	wire_close(&c->fd, &c->ssl);
}

/* Make c non-blocking and put it in the worker's epoll set. */
static int conn_watch(struct conn *c)
{
	struct epoll_event ev;

	if (fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) < 0)
		return -1;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = c;
	return epoll_ctl(c->w->ep, EPOLL_CTL_ADD, c->fd, &ev);
}

/* Connect c, say Hello (blocking), and put it in the worker's epoll set. */
int conn_open(struct conn *c, int hello)
{
	const struct bench_opts *o = c->w->run->o;
	char err[512];

	if (conn_connect(c, err, sizeof(err)) != 0) {
		fprintf(stderr, "semd-benchmark: %s\n", err);
		return -1;
	}
	if (hello && !o->addr.is_http && conn_hello(c) != 0) {
		fprintf(stderr, "semd-benchmark: Hello on %s failed\n", o->addr.text);
		goto fail;
	}
	if (conn_watch(c) != 0)
		goto fail;
	return 0;
fail:
	conn_close(c);
	return -1;
}

/* Churn: queue the new session's Hello and Down, to go in one write. */
static void conn_churn_hello(struct conn *c, uint64_t t_op)
{
	struct worker *w = c->w;

	c->hello_id = (++c->seq << 16) | BENCH_HELLO_CHAIN;
	if (wire_put_hello(&c->out, c->hello_id, "semd-benchmark") != 0) {
		worker_fail(w, "out of memory");
		return;
	}
	w->outstanding++;
	conn_send(c, 0, S_DOWN, t_op);
	c->chains[0].t_op = t_op;
}

/*
 * Churn over TLS: the next step of the handshake, in the closed loop like
 * any I/O (a blocking one would stall the thread's other connections for
 * the round trip). Once done it is counted (full or resumed) and the
 * Hello and Down follow.
 */
void conn_handshake(struct conn *c)
{
	const struct run *r = c->w->run;
	char err[512];
	uint64_t now;
	int want = 0, rc;

	err[0] = '\0';
	rc = wire_tls_step(c->ssl, r->o->addr.host, &want, err, sizeof(err));
	if (rc < 0) {
		worker_fail(c->w, "connection %u: %s", c->idx, err);
		return;
	}
	if (rc == 0) {
		conn_want_out(c, want);
		return;
	}
	c->handshaking = 0;
	conn_want_out(c, 0);
	now = bench_now();
	if (in_window(r, now)) {
		if (SSL_session_reused(c->ssl))
			c->w->t.hs_resumed++;
		else
			c->w->t.hs_full++;
	}
	conn_churn_hello(c, c->chains[0].t_op);
}

/* Churn: open a new session; over TLS its handshake comes first. */
static void conn_churn_start(struct conn *c, uint64_t t_op)
{
	const struct bench_opts *o = c->w->run->o;
	struct worker *w = c->w;
	char err[512];
	int fd;

	fd = wire_connect(&o->addr, 0);
	if (fd < 0) {
		worker_fail(w, "connect %s: %s", o->addr.text, strerror(-fd));
		return;
	}
	c->fd = fd;
	c->ssl = NULL;
	c->in.off = c->in.len = 0;
	c->out.off = c->out.len = 0;
	c->want_out = 0;
	if (conn_watch(c) != 0) {
		worker_fail(w, "epoll_ctl: %s", strerror(errno));
		return;
	}
	if (!o->addr.is_tls) {
		conn_churn_hello(c, t_op);
		return;
	}
	c->ssl = wire_tls_new(o->tls_ctx, fd, o->addr.host, o->tls.insecure,
	    o->tls_resume ? &c->sess : NULL, err, sizeof(err));
	if (c->ssl == NULL) {
		worker_fail(w, "%s", err);
		return;
	}
	c->handshaking = 1;
	c->chains[0].t_op = t_op;
	conn_handshake(c);
}

/* Churn: the op is over; close the session and start the next. */
static void conn_churn_again(struct conn *c)
{
	uint64_t now;

	c->reconnect = 0;
	conn_close(c);
	if (atomic_load(&c->w->run->stop))
		return;
	now = bench_now();
	conn_churn_start(c, now);
}

/* Handle one decoded reply on c. */
static void conn_reply(struct conn *c, const struct wire_reply_min *rep, uint64_t now)
{
	unsigned i;

	if (rep->id == 0) {
		worker_fail(c->w, "connection %u: notice from the daemon: %s %.*s",
		    c->idx, wire_code_name(rep->code), (int)rep->msglen, rep->msg);
		return;
	}
	if (rep->id == c->hello_id) {
		c->hello_id = 0;
		c->w->outstanding--;
		c->w->t.rts++;
		if (rep->code != SEMD__CODE__OK)
			worker_fail(c->w, "Hello refused: %s %.*s",
			    wire_code_name(rep->code), (int)rep->msglen, rep->msg);
		return;
	}
	i = (unsigned)(rep->id & 0xffffu);
	if (i >= c->nchains || c->chains[i].id != rep->id) {
		worker_fail(c->w, "connection %u: reply to unknown request id %llu",
		    c->idx, (unsigned long long)rep->id);
		return;
	}
	if (rep->code != SEMD__CODE__OK && rep->code != SEMD__CODE__WOULD_BLOCK &&
	    rep->code != SEMD__CODE__TIMEOUT) {
		worker_fail(c->w, "connection %u: %s %.*s", c->idx,
		    wire_code_name(rep->code), (int)rep->msglen, rep->msg);
		return;
	}
	chain_next(c, i, rep->code, rep->has_grant ? rep->permit : 0, now);
}

/* Over HTTP: every whole answer on c, to the chains in the order asked. */
static void conn_read_http(struct conn *c, uint64_t now)
{
	struct worker *w = c->w;
	char msg[256];
	uint64_t permit;
	unsigned i;
	int rc, status, code;

	while ((rc = wire_http_next(&c->in, &status, &code, &permit, msg,
	    sizeof(msg))) == 1) {
		if (c->hq_len == 0) {
			worker_fail(w, "connection %u: an answer to nothing asked", c->idx);
			return;
		}
		i = c->hq[c->hq_head];
		c->hq_head = (c->hq_head + 1) % c->nchains;
		c->hq_len--;
		if (status == 202 || (code != SEMD__CODE__OK &&
		    code != SEMD__CODE__WOULD_BLOCK && code != SEMD__CODE__TIMEOUT)) {
			worker_fail(w, "connection %u: %s", c->idx, status == 202 ?
			    "202: an acquire waits (HTTP runs want names nobody holds)" :
			    msg);
			return;
		}
		chain_next(c, i, code, permit, now);
		if (w->failed)
			return;
	}
	if (rc < 0)
		worker_fail(w, "connection %u: an answer that is no HTTP", c->idx);
	else
		wbuf_compact(&c->in);
}

/* Read what c has, handle every whole reply. */
void conn_read(struct conn *c)
{
	struct worker *w = c->w;
	struct wire_reply_min rep;
	const uint8_t *p;
	uint64_t now, id;
	size_t len;
	ssize_t n;
	unsigned i;
	int rc;

	/* TLS read-ahead may hold records that epoll knows nothing of: drain them */
	do {
		if (wbuf_reserve(&c->in, READ_CHUNK / 4) != 0) {
			worker_fail(w, "out of memory");
			return;
		}
		n = wire_recv(c->fd, c->ssl, c->in.p + c->in.len, c->in.cap - c->in.len);
		if (n == 0) {
			worker_fail(w, "connection %u: the server closed the connection", c->idx);
			return;
		}
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				worker_fail(w, "connection %u: read: %s", c->idx, strerror(errno));
				return;
			}
			break;
		}
		c->in.len += (size_t)n;
	} while (c->ssl != NULL && SSL_has_pending(c->ssl));
	if (c->in.len == c->in.off)
		return;
	now = bench_now();
	if (w->run->o->addr.is_http) {
		conn_read_http(c, now);
		return;
	}
	if (w->run->test == T_ECHO) {
		while (c->in.len - c->in.off >= ECHO_SIZE && !w->failed) {
			memcpy(&id, c->in.p + c->in.off + 8, sizeof(id));
			c->in.off += ECHO_SIZE;
			i = (unsigned)(id & 0xffffu);
			if (i >= c->nchains || c->chains[i].id != id) {
				worker_fail(w, "connection %u: echo reply out of place", c->idx);
				return;
			}
			chain_next(c, i, SEMD__CODE__OK, 0, now);
		}
		wbuf_compact(&c->in);
		return;
	}
	while ((rc = wire_next_frame(&c->in, WIRE_REPLY_MAX, &p, &len)) == 1) {
		if (wire_reply_peek(p, len, &rep) != 0) {
			worker_fail(w, "connection %u: undecodable reply (%zu bytes)", c->idx, len);
			return;
		}
		conn_reply(c, &rep, now);
		if (w->failed)
			return;
	}
	if (rc < 0) {
		worker_fail(w, "connection %u: reply frame over %u bytes", c->idx, WIRE_REPLY_MAX);
		return;
	}
	wbuf_compact(&c->in);
	if (c->reconnect)
		conn_churn_again(c);
}

/* Queue the first request of every chain of c. */
void conn_start(struct conn *c, uint64_t now)
{
	const struct run *r = c->w->run;
	unsigned i;

	if (r->test == T_CHURN) {
		conn_churn_start(c, now);
		return;
	}
	for (i = 0; i < c->nchains; i++) {
		c->chains[i].t_op = now;
		switch (r->test) {
		case T_PING:
			conn_send(c, i, S_PING, now);
			break;
		case T_INFO:
			conn_send(c, i, S_INFO, now);
			break;
		case T_ECHO:
			conn_send(c, i, S_ECHO1, now);
			break;
		case T_NAMES:
			conn_send(c, i, r->step, now);
			break;
		case T_MULTI:
			c->chains[i].k = 0;
			conn_send(c, i, S_MULTI, now);
			break;
		case T_DOWN3:
			c->chains[i].k = 0;
			conn_send(c, i, S_DOWNK, now);
			break;
		default:
			conn_send(c, i, S_DOWN, now);
			break;
		}
	}
}
