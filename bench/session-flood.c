/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/session-flood.c - many idle sessions with a lease, as
 * libsemclient's keepalive keeps them: one connection each (a connection
 * carries one session), a Hello with the lease, then a Ping every third of
 * the lease and nothing else, for bench/session-flood.sh, which measures
 * what they cost the daemon (log entries, disk bytes, CPU).
 *
 *   session-flood -s ADDR [-n SESSIONS] [-L LEASE_MS] [-d SECONDS]
 *
 * The sessions are opened as fast as semd answers (at most 512 Hellos
 * unanswered), each pinged a third of its lease after its Hello was
 * answered and every third of the lease from then on, for SECONDS after
 * the last one is up. It prints "up N S" when the N sessions are up after S seconds
 * (on stdout, flushed: the script starts measuring then), and at the end
 * "done sessions N pings P pongs Q errors E expired X late L ms rtt R ms"
 * (L: the most a Ping went out after it was due, a starved client's own
 * delay; R: the slowest Pong, a starved daemon's). One thread, epoll.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench/wire.h"

#define INFLIGHT_MAX	512		/* Hellos unanswered at once */
#define RBUF		4096

struct sess {
	int		fd;
	bool		up;		/* its Hello answered OK */
	uint64_t	next_id;
	uint64_t	ping_us;	/* when its last Ping went */
	size_t		rlen;
	uint8_t		*rbuf;
};

static struct sess *ss;
static unsigned long n_up, pings, pongs, errors, expired;

/*
 * The pings' schedule: sessions in the order they came up, each with the
 * time its next Ping is due (a third of the lease after its last), so that
 * the ones first up are kept alive while the rest are still opening.
 */
static struct due {
	uint64_t	at_us;
	uint32_t	idx;
} *ring;
static size_t ring_head, ring_len, ring_cap;
static uint64_t period_us, late_max_us;	/* the latest a Ping went */
static uint64_t rtt_max_us;			/* the slowest Pong */

static void ring_push(uint32_t idx, uint64_t at_us)
{
	ring[(ring_head + ring_len++) % ring_cap] = (struct due){ at_us, idx };
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t now_ms(void)
{
	return now_us() / 1000;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("session-flood: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Send one request on s (a frame; the socket's buffer takes it whole). */
static void send_req(struct sess *s, Semd__Request *rq)
{
	uint8_t buf[256];
	size_t len = semd__request__get_packed_size(rq);
	ssize_t w;

	if (len + FRAME_HDR > sizeof buf)
		die("request too big");
	frame_put_header(buf, (uint32_t)len);
	semd__request__pack(rq, buf + FRAME_HDR);
	w = write(s->fd, buf, len + FRAME_HDR);
	if (w != (ssize_t)(len + FRAME_HDR))
		errors++;
}

static void send_hello(struct sess *s, uint32_t lease)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Hello h = SEMD__HELLO__INIT;

	h.version = 1;
	h.client_name = (char *)"session-flood";
	h.lease_ms = lease;
	rq.id = s->next_id++;
	rq.op_case = SEMD__REQUEST__OP_HELLO;
	rq.hello = &h;
	send_req(s, &rq);
}

static void send_ping(struct sess *s)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Ping p = SEMD__PING__INIT;

	rq.id = s->next_id++;
	rq.op_case = SEMD__REQUEST__OP_PING;
	rq.ping = &p;
	send_req(s, &rq);
	s->ping_us = now_us();
	pings++;
}

/* Read what s has; count the replies. False: it is closed. */
static bool read_sess(struct sess *s, unsigned long *hellos)
{
	size_t plen, off;
	ssize_t r;
	Semd__Reply *rep;

	for (;;) {
		r = read(s->fd, s->rbuf + s->rlen, RBUF - s->rlen);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		if (r <= 0)
			return false;
		s->rlen += (size_t)r;
		off = 0;
		while (frame_peek(s->rbuf + off, s->rlen - off, RBUF - FRAME_HDR,
		    &plen) == 1) {
			rep = semd__reply__unpack(NULL, plen, s->rbuf + off + FRAME_HDR);
			off += FRAME_HDR + plen;
			if (rep == NULL) {
				errors++;
				continue;
			}
			if (rep->code == SEMD__CODE__SESSION_EXPIRED)
				expired++;
			else if (rep->code != SEMD__CODE__OK)
				errors++;
			else if (rep->body_case == SEMD__REPLY__BODY_PONG) {
				pongs++;
				if (now_us() - s->ping_us > rtt_max_us)
					rtt_max_us = now_us() - s->ping_us;
			}
			else if (rep->body_case == SEMD__REPLY__BODY_HELLO && !s->up) {
				s->up = true;
				n_up++;
				(*hellos)++;
				ring_push((uint32_t)(s - ss), now_us() + period_us);
			}
			semd__reply__free_unpacked(rep, NULL);
		}
		memmove(s->rbuf, s->rbuf + off, s->rlen - off);
		s->rlen -= off;
		if (s->rlen == RBUF)
			die("a reply bigger than %d bytes", RBUF);
	}
}

/* Wait up to ms for replies; count the Hellos answered. */
static unsigned long poll_replies(int ep, int ms)
{
	struct epoll_event ev[256];
	unsigned long hellos = 0;
	int n, i;

	n = epoll_wait(ep, ev, 256, ms);
	for (i = 0; i < n; i++) {
		struct sess *s = ev[i].data.ptr;

		if (!read_sess(s, &hellos)) {
			epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
			close(s->fd);
			s->fd = -1;
			if (s->up)
				n_up--;
			s->up = false;
			errors++;
		}
	}
	return hellos;
}

/* Send the Pings that are due; the time until the next one, ms (-1: none). */
static int ping_due(void)
{
	uint64_t t = now_us();
	struct due d;

	while (ring_len > 0 && ring[ring_head].at_us <= t) {
		d = ring[ring_head];
		ring_head = (ring_head + 1) % ring_cap;
		ring_len--;
		if (ss[d.idx].fd < 0 || !ss[d.idx].up)
			continue;
		if (t - d.at_us > late_max_us)
			late_max_us = t - d.at_us;
		send_ping(&ss[d.idx]);
		ring_push(d.idx, d.at_us + period_us);
	}
	if (ring_len == 0)
		return -1;
	return (int)((ring[ring_head].at_us - t) / 1000);
}

int main(int argc, char **argv)
{
	unsigned long n = 1000, lease = 10000, secs = 60, opened = 0, answered = 0;
	const char *addr = NULL;
	struct wire_addr a;
	struct rlimit rl;
	uint64_t t0, end;
	char err[256];
	int ep, c, fd, wait;

	while ((c = getopt(argc, argv, "s:n:L:d:")) != -1) {
		switch (c) {
		case 's': addr = optarg; break;
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'L': lease = strtoul(optarg, NULL, 10); break;
		case 'd': secs = strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: session-flood -s ADDR [-n SESSIONS] "
			    "[-L LEASE_MS] [-d SECONDS]\n");
			return 2;
		}
	}
	/* A connection semd closed: an error counted, not the end of us. */
	signal(SIGPIPE, SIG_IGN);
	if (addr == NULL || n == 0 || lease < 30)
		die("-s ADDR is needed; -n at least 1, -L at least 30");
	if (wire_addr_parse(addr, &a, err, sizeof err) != 0)
		die("%s", err);
	if (a.is_tls)
		die("tls: is not supported here");
	/* One descriptor a session, and a few more. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n + 16) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < n + 16)
			die("%lu sessions need %lu descriptors; the limit is %llu",
			    n, n + 16, (unsigned long long)rl.rlim_cur);
	}
	if ((ss = calloc(n, sizeof *ss)) == NULL || (ring = calloc(n, sizeof *ring)) == NULL ||
	    (ep = epoll_create1(0)) < 0)
		die("out of memory");
	ring_cap = n;
	period_us = lease * 1000 / 3;
	t0 = now_ms();
	/* Open them all, at most INFLIGHT_MAX Hellos unanswered. */
	while (answered < n) {
		while (opened < n && opened - answered < INFLIGHT_MAX) {
			struct sess *s = &ss[opened];
			struct epoll_event ev = { .events = EPOLLIN };

			if ((fd = wire_connect(&a, 1)) < 0)
				die("connect %s (session %lu): %s", addr, opened,
				    strerror(-fd));
			s->fd = fd;
			s->next_id = 1;
			if ((s->rbuf = malloc(RBUF)) == NULL)
				die("out of memory");
			ev.data.ptr = s;
			if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
				die("epoll: %s", strerror(errno));
			send_hello(s, (uint32_t)lease);
			opened++;
		}
		wait = ping_due();
		answered += poll_replies(ep, wait < 0 || wait > 100 ? 100 : wait);
		if (now_ms() - t0 > 300000)
			die("only %lu of %lu sessions up after 300 s", answered, n);
	}
	printf("up %lu %.1f\n", n_up, (double)(now_ms() - t0) / 1000);
	fflush(stdout);
	/* Then only Pings, for secs. */
	end = now_us() + secs * 1000000;
	while (now_us() < end) {
		wait = ping_due();
		poll_replies(ep, wait < 0 || wait > 100 ? 100 : wait);
	}
	/* The last answers. */
	poll_replies(ep, 200);
	printf("done sessions %lu pings %lu pongs %lu errors %lu expired %lu "
	    "late %llu ms rtt %llu ms\n", n_up, pings, pongs, errors, expired,
	    (unsigned long long)(late_max_us / 1000),
	    (unsigned long long)(rtt_max_us / 1000));
	return 0;
}
