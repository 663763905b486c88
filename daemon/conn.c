/*
 * daemon/conn.c - one client connection: frames in, replies out.
 *
 * The read callback drains every complete frame in the input buffer (a batch
 * of pipelined requests costs one read and one write), decodes each into a
 * Request and hands it to the state machine. Replies, including grants to
 * this client caused by another one, are packed straight into the output
 * buffer by conn_reply(). Nothing here may free a connection from inside the
 * state machine: closes are deferred to the kill event.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "daemon/log.h"
#include "daemon/server.h"
#include "proto/frame.h"
#include "proto/semd.pb-c.h"

static void conn_kill_cb(evutil_socket_t fd, short what, void *arg);

/* Arm the handshake or idle timer. */
static void conn_arm_timer(struct conn *c)
{
	struct timeval tv;
	uint32_t ms;

	ms = c->hello ? c->srv->cfg.idle_timeout_ms : c->srv->cfg.handshake_timeout_ms;
	if (ms == 0) {
		evtimer_del(c->timer);
		return;
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(c->timer, &tv);
}

/* Handshake or idle time ran out. */
static void conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	uint64_t idle;

	if (c->closing) {
		log_info("%s: replies not read within 5 s of closing, dropped",
		    c->peer);
		conn_free(c);
		return;
	}
	if (!c->hello) {
		log_info("%s: no hello within %u ms, closing", c->peer,
		    c->srv->cfg.handshake_timeout_ms);
		sm_protocol_error(c->srv->sm, c->client,
		    "no hello within the handshake timeout");
		conn_close_later(c);
		return;
	}
	idle = server_now() - c->last_input_ms;
	if (idle < c->srv->cfg.idle_timeout_ms) {
		struct timeval tv;
		uint64_t left = c->srv->cfg.idle_timeout_ms - idle;

		tv.tv_sec = (time_t)(left / 1000);
		tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
		evtimer_add(c->timer, &tv);
		return;
	}
	log_info("%s: idle for %" PRIu64 " ms, closing", c->peer, idle);
	conn_close_later(c);
}

/* Pack one reply as a frame into the output buffer. */
void conn_reply(void *ctx, void *conn, const Semd__Reply *r)
{
	struct conn *c = conn;
	struct evbuffer *out;
	struct evbuffer_iovec v;
	size_t len, queued;

	if (c->dead)
		return;
	/* Abnormal events get a log line: limits hit, internal errors. */
	if (r->code == SEMD__CODE__RESOURCE_EXHAUSTED || r->code == SEMD__CODE__INTERNAL)
		log_notice("%s: request %" PRIu64 ": %s", c->peer, r->id, r->message);
	out = bufferevent_get_output(c->bev);
	len = semd__reply__get_packed_size(r);
	if (evbuffer_reserve_space(out, (ev_ssize_t)(FRAME_HDR + len), &v, 1) < 1) {
		log_warn("%s: out of memory for a reply, dropping the client",
		    c->peer);
		goto drop;
	}
	frame_put_header(v.iov_base, (uint32_t)len);
	semd__reply__pack(r, (uint8_t *)v.iov_base + FRAME_HDR);
	v.iov_len = FRAME_HDR + len;
	evbuffer_commit_space(out, &v, 1);
	queued = evbuffer_get_length(out);
	if (queued > c->srv->cfg.max_output) {
		log_warn("%s: does not read its replies (%zu bytes queued, max-output %u), dropped",
		    c->peer, queued, c->srv->cfg.max_output);
		goto drop;
	}
	return;
drop:
	c->dead = true;
	c->srv->dropped++;
	event_active(c->kill, EV_TIMEOUT, 0);
}

/* Decode and run every whole frame in the input buffer. */
static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct server *srv = c->srv;
	struct evbuffer *in = bufferevent_get_input(bev);
	Semd__Request *req;
	uint8_t hdr[FRAME_HDR], *data;
	size_t plen, avail;
	char why[128];
	int r;

	c->last_input_ms = server_now();
	while (!c->closing && !c->dead) {
		avail = evbuffer_get_length(in);
		if (avail < FRAME_HDR)
			break;
		evbuffer_copyout(in, hdr, FRAME_HDR);
		r = frame_peek(hdr, FRAME_HDR, srv->cfg.max_frame, &plen);
		if (r == -EMSGSIZE) {
			snprintf(why, sizeof why,
			    "frame of %u bytes is over max-frame %u",
			    (unsigned)hdr[0] << 24 | (unsigned)hdr[1] << 16 |
			    (unsigned)hdr[2] << 8 | hdr[3], srv->cfg.max_frame);
			log_notice("%s: %s, closing", c->peer, why);
			sm_protocol_error(srv->sm, c->client, why);
			conn_close_later(c);
			break;
		}
		/* frame_peek on the header alone says "need more": read plen. */
		plen = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 |
		    (size_t)hdr[2] << 8 | hdr[3];
		if (avail < FRAME_HDR + plen)
			break;
		data = evbuffer_pullup(in, (ev_ssize_t)(FRAME_HDR + plen));
		if (data == NULL) {
			log_warn("%s: out of memory reading a frame", c->peer);
			conn_close_later(c);
			break;
		}
		req = semd__request__unpack(NULL, plen, data + FRAME_HDR);
		evbuffer_drain(in, FRAME_HDR + plen);
		if (req == NULL) {
			log_notice("%s: undecodable request of %zu bytes, closing",
			    c->peer, plen);
			sm_protocol_error(srv->sm, c->client,
			    "undecodable request (not a semd.Request)");
			conn_close_later(c);
			break;
		}
		if (req->op_case == SEMD__REQUEST__OP_RELEASE)
			log_notice("%s: force-release of permit %" PRIu64 " of %s",
			    c->peer, req->release->permit_id,
			    sm_name_valid(req->release->name,
			    strlen(req->release->name)) ?
			    req->release->name : "(an invalid name)");
		r = sm_request(srv->sm, c->client, req, server_now());
		semd__request__free_unpacked(req, NULL);
		if (!c->hello && sm_client_session(c->client) != 0) {
			c->hello = true;
			conn_arm_timer(c);
		}
		if (r == SM_CLOSE) {
			log_info("%s: protocol error, closing", c->peer);
			conn_close_later(c);
		}
	}
	server_arm(srv);
}

/* Output drained: finish a pending close. */
static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->closing)
		conn_free(c);
}

/* EOF or error on the socket: the client is gone. */
static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	if (what & BEV_EVENT_ERROR)
		log_debug("%s: %s", c->peer,
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	else
		log_debug("%s: closed by peer", c->peer);
	conn_free(c);
}

/* Deferred close (from inside the state machine, or after a drop). */
static void conn_kill_cb(evutil_socket_t fd, short what, void *arg)
{
	conn_free(arg);
}

/* Close once the replies queued so far are written. */
void conn_close_later(struct conn *c)
{
	struct timeval tv = { 5, 0 };

	if (c->closing)
		return;
	c->closing = true;
	bufferevent_disable(c->bev, EV_READ);
	evtimer_add(c->timer, &tv);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		event_active(c->kill, EV_TIMEOUT, 0);
}

/* Socket options for a TCP client: no Nagle, keepalive probes. */
static void conn_tune_tcp(struct conn *c, int fd)
{
	int one = 1, idle = (int)c->srv->cfg.keepalive_s, intvl, cnt = 3;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		log_debug("%s: TCP_NODELAY: %s", c->peer, strerror(errno));
	if (idle == 0)
		return;
	intvl = idle / 3 > 0 ? idle / 3 : 1;
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt) != 0)
		log_debug("%s: keepalive: %s", c->peer, strerror(errno));
}

/* Who is at the other end: uid:N over UNIX sockets, anonymous over TCP. */
static void conn_principal(struct conn *c, int fd, struct sockaddr *sa,
    bool is_unix, char *principal, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	struct ucred cred;
	socklen_t clen = sizeof cred;

	if (is_unix) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
			snprintf(principal, len, "uid:%u", (unsigned)cred.uid);
			snprintf(c->peer, sizeof c->peer, "unix pid %d uid %u",
			    (int)cred.pid, (unsigned)cred.uid);
			return;
		}
		snprintf(principal, len, "anonymous");
		snprintf(c->peer, sizeof c->peer, "unix peer");
		return;
	}
	snprintf(principal, len, "anonymous");
	if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
		snprintf(c->peer, sizeof c->peer, "[%s]:%u", host,
		    ntohs(s6->sin6_port));
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
		snprintf(c->peer, sizeof c->peer, "%s:%u", host,
		    ntohs(s4->sin_port));
	}
}

/* A new client socket from a listener. */
void conn_accept(struct server *srv, int fd, struct sockaddr *sa, int salen,
    bool is_unix)
{
	uint8_t secret[SM_SECRET_LEN];
	char principal[64];
	struct conn *c;

	if (srv->stopping) {
		close(fd);
		return;
	}
	if (srv->nconns >= srv->cfg.max_connections) {
		log_warn("max-connections %u reached, refusing a client",
		    srv->cfg.max_connections);
		close(fd);
		return;
	}
	if (getrandom(secret, sizeof secret, 0) != (ssize_t)sizeof secret) {
		log_warn_errno(errno, "getrandom");
		close(fd);
		return;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL)
		goto fail;
	c->srv = srv;
	if (!is_unix)
		conn_tune_tcp(c, fd);
	conn_principal(c, fd, sa, is_unix, principal, sizeof principal);
	c->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		free(c);
		goto fail;
	}
	c->timer = evtimer_new(srv->base, conn_timer_cb, c);
	c->kill = event_new(srv->base, -1, 0, conn_kill_cb, c);
	c->client = sm_client_open(srv->sm, c, principal, secret, server_now());
	if (c->timer == NULL || c->kill == NULL || c->client == NULL) {
		if (c->timer)
			event_free(c->timer);
		if (c->kill)
			event_free(c->kill);
		sm_client_close(srv->sm, c->client, server_now());
		bufferevent_free(c->bev);
		free(c);
		log_warn("out of memory accepting a client");
		return;
	}
	c->last_input_ms = server_now();
	/* Never buffer more than one whole frame of input. */
	bufferevent_setwatermark(c->bev, EV_READ, 0,
	    srv->cfg.max_frame + FRAME_HDR + 4096);
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	list_add_tail(&c->entry, &srv->conns);
	srv->nconns++;
	conn_arm_timer(c);
	log_debug("%s: connected as %s", c->peer, principal);
	return;
fail:
	log_warn("out of memory accepting a client");
	close(fd);
}

/* Close and free a connection; its session lets go (or lingers). */
void conn_free(struct conn *c)
{
	struct server *srv;

	if (c == NULL)
		return;
	srv = c->srv;
	list_del_init(&c->entry);
	srv->nconns--;
	c->dead = true;
	sm_client_close(srv->sm, c->client, server_now());
	event_free(c->timer);
	event_free(c->kill);
	bufferevent_free(c->bev);
	free(c);
	server_arm(srv);
	if (srv->stopping && srv->nconns == 0)
		event_base_loopexit(srv->base, NULL);
}
