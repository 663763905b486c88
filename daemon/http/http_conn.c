/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_conn.c - HTTP/1.1 on a connection of the connection
 * layer (conn.h's conn_proto): the loops that serve the binary protocol's
 * clients serve these too, over the same transports (UNIX, TCP, TLS), with
 * the same one write a loop turn and the same max-output.
 *
 * What arrives is read where it lies (the loop's read buffer): a request
 * whose head and body came whole in one read is read and run without a
 * copy of its body; only what is not whole yet is kept. Requests are read
 * one after another (pipelined ones too, at most HCONN_PIPELINE under way)
 * and queued; each is run as soon as it is whole, and answered in the
 * order they came: an answer made before its turn (the one before it
 * still waits: a long-poll) is kept with its request until then. A request
 * run on another loop (http_home()) has its answer brought back through
 * this loop's job queue (http_front.c).
 *
 * Deadlines: a request must be whole within http-request-timeout of its
 * first byte (a new connection's first request from its accept), and a
 * connection with nothing under way is closed after http-idle-timeout. The
 * loop's connections are on two lists in the order those clocks started,
 * so the tick (http_front.c) looks at the expired ones only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "daemon/conn.h"
#include "daemon/http/http-int.h"
#include "daemon/http/http_parse.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "security/peer.h"

/* Requests of one connection under way at once (read no more beyond). */
#define HCONN_PIPELINE	16
/* A body refused for its size is read and dropped up to this, keeping the
 * connection; a bigger one ends it. */
#define HCONN_DISCARD_MAX	(1u << 20)
/* Input kept beyond a head (requests behind a full pipeline). */
#define HCONN_IN_SLACK	(256u << 10)

struct hconn {
	struct conn		*c;
	struct hworker		*hw;
	struct hprin		*who;		/* the transport's identity */
	struct list_head	idle_entry;	/* hw->idle */
	struct list_head	partial_entry;	/* hw->partial */
	uint64_t		since_ms;	/* idle since, or a request begun */
	uint32_t		pid;		/* a UNIX peer's */
	char			host[64];	/* a TCP peer's address */
	/* input kept: a head not whole yet, or requests behind the pipeline */
	char			*in;
	size_t			ilen, icap;
	/* the request whose body is coming */
	struct hreq		*body_req;
	char			*body;
	size_t			blen, bcap;
	uint64_t		body_left;	/* Content-Length: bytes to come */
	bool			chunked;
	struct hp_chunked	chs;
	uint64_t		discard;	/* bytes of a refused body to drop */
	/* requests in the order they came */
	struct list_head	queue;		/* struct hreq */
	size_t			nqueue;
	bool			fresh;		/* a request began since the place */
	bool			no_more;	/* read no more: closes after the queue */
	bool			paused;		/* the pipeline is full */
	struct event		*kick;		/* run kept input (after a pause) */
};

static void hconn_advance(struct hconn *hc);
static void hconn_run_kept(struct hconn *hc);

/* --- requests' owners ------------------------------------------------------ */

/* Drop one owner of r (its connection, its route, a job); the last frees it. */
void hreq_owner_put(struct hreq *r)
{
	if (atomic_fetch_sub_explicit(&r->owners, 1, memory_order_acq_rel) != 1)
		return;
	json_decref(r->body);
	free(r->query);		/* one block with its strings */
	free(r->hdrs);
	free(r->out);
	http_prin_put(r->f, r->who);
	free(r);
}

/* --- where a connection stands ----------------------------------------------- */

/* Is a request of hc begun and not whole (its deadline runs)? */
static bool hconn_partial(const struct hconn *hc)
{
	return hc->ilen > 0 || hc->body_req != NULL || hc->discard > 0;
}

/*
 * Put hc on its loop's lists as it stands: a request begun (its deadline
 * from its first byte), or nothing under way (idle since now), or neither.
 */
static void hconn_place(struct hconn *hc)
{
	struct hworker *hw = hc->hw;
	bool partial = hconn_partial(hc) && !hc->paused;
	bool idle = !partial && hc->nqueue == 0 && !hc->no_more;
	uint64_t now;

	if (hc->c == NULL)
		return;
	if (partial && (hc->fresh || list_empty(&hc->partial_entry))) {
		list_del_init(&hc->partial_entry);
		hc->since_ms = server_now();
		list_add_tail(&hc->partial_entry, &hw->partial);
	} else if (!partial) {
		list_del_init(&hc->partial_entry);
	}
	hc->fresh = false;
	if (idle && list_empty(&hc->idle_entry)) {
		now = server_now();
		hc->since_ms = now;
		list_add_tail(&hc->idle_entry, &hw->idle);
	} else if (!idle) {
		list_del_init(&hc->idle_entry);
	}
}

/* --- answers in turn ------------------------------------------------------- */

/* Is r's answer written straight to its connection (r's turn, on its loop)? */
static bool hreq_direct(const struct hreq *r)
{
	return r->rw == r->cw && http_here() == r->cw && r->hc != NULL &&
	    r->olen == 0 && list_first_entry(&r->hc->queue, struct hreq,
	    qentry) == r;
}

/*
 * Room for n more bytes of r's answer: on its connection when it is its
 * turn, else kept with r. NULL: no memory, or its client is gone.
 */
uint8_t *hconn_room(struct hreq *r, size_t n)
{
	uint8_t *p;
	size_t cap;

	if (hreq_direct(r))
		return conn_out_room(r->hc->c, n);
	if (atomic_load_explicit(&r->left, memory_order_relaxed) ||
	    (r->rw == r->cw && r->hc == NULL))
		return NULL;
	if (r->ocap - r->olen < n) {
		/* kept past max-output: a stream nobody reads in turn */
		if (r->olen + n > SRV_LIVE(r->f->srv, max_output) && r->olen > 0)
			return NULL;
		cap = r->ocap ? r->ocap : 256;
		while (cap - r->olen < n)
			cap *= 2;
		if ((p = realloc(r->out, cap)) == NULL)
			return NULL;
		r->out = p;
		r->ocap = cap;
	}
	return r->out + r->olen;
}

/* n bytes written at hconn_room(). */
void hconn_done(struct hreq *r, size_t n)
{
	if (hreq_direct(r))
		conn_out_done(r->hc->c, n);
	else
		r->olen += n;
}

/* "HTTP/1.1 100 Continue": the client may send the body it holds back. */
static void hconn_continue(struct hconn *hc, struct hreq *r)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	uint8_t *p;

	r->want_continue = false;
	if ((p = conn_out_room(hc->c, sizeof cont - 1)) == NULL)
		return;
	memcpy(p, cont, sizeof cont - 1);
	conn_out_done(hc->c, sizeof cont - 1);
}

/*
 * Write the answers whose turn it is: the first request's kept bytes, and
 * while it is answered whole, the next one's. Then what the connection
 * does next: close after its last answer, read again.
 */
static void hconn_advance(struct hconn *hc)
{
	struct conn *c = hc->c;
	struct hreq *r;
	uint8_t *p;
	bool mine;

	while (c != NULL && !list_empty(&hc->queue)) {
		r = list_first_entry(&hc->queue, struct hreq, qentry);
		/* an answer from another loop is read once its job came; the
		 * analyzer takes a request freed by an earlier turn for the one
		 * first in line (each is unlinked before it is let go):
		 * NOLINTNEXTLINE(clang-analyzer-unix.Malloc) */
		mine = r->rw == r->cw || r->arrived;
		if (mine && r->olen > 0) {
			if ((p = conn_out_room(c, r->olen)) == NULL)
				return;
			memcpy(p, r->out, r->olen);
			conn_out_done(c, r->olen);
			r->olen = 0;
		}
		if (!mine || !r->final) {
			if (r->want_continue && !r->dispatched)
				hconn_continue(hc, r);
			break;
		}
		list_del_init(&r->qentry);
		hc->nqueue--;
		r->hc = NULL;
		if (r->close)
			hc->no_more = true;
		hreq_owner_put(r);
	}
	if (c == NULL || c->closing || c->dead)
		return;
	if (hc->no_more && hc->nqueue == 0) {
		conn_close_later(c);
		return;
	}
	if (hc->paused && hc->nqueue < HCONN_PIPELINE / 2) {
		hc->paused = false;
		conn_read_pause(c, false);
		if (hc->ilen > 0 && hc->kick != NULL)
			event_active(hc->kick, EV_TIMEOUT, 0);
	}
	hconn_place(hc);
}

/* r's answer is whole (or its stream ended): out in its turn. */
void hconn_final(struct hreq *r)
{
	r->final = true;
	if (r->rw != r->cw)
		http_post_answered(r);
	else if (r->hc != NULL)
		hconn_advance(r->hc);
}

/* The answer of r, run on another loop, came back (r's connection's loop). */
void hconn_answered(struct hreq *r)
{
	r->arrived = true;
	if (r->hc != NULL)
		hconn_advance(r->hc);
}

/* Bytes of r's connection not written yet (0: r is not on it now). */
size_t hconn_backlog(const struct hreq *r)
{
	return r->rw == r->cw && r->hc != NULL ? conn_out_pending(r->hc->c) : 0;
}

/* Cut r's connection off (a stream that cannot go on). */
void hconn_cut(struct hreq *r)
{
	if (r->rw == r->cw && r->hc != NULL)
		conn_cut(r->hc->c);
}

/* --- reading requests -------------------------------------------------------- */

/*
 * A request of hc from its head h (p: its bytes): its fields copied, NUL-
 * ended, into one block with it, its segments' room too. Not queued yet.
 */
static struct hreq *hreq_new(struct hconn *hc, const char *p,
    const struct hp_head *h)
{
	size_t tlen = h->target_len, extra, i;
	struct hreq *r;
	char *d;

	/* the target twice (as sent, and its decoded segments), the fields */
	extra = h->nfields * sizeof(struct hfield) + 2 * (tlen + 1) + h->head_len +
	    h->nfields * 2 + 16;
	if ((r = malloc(sizeof *r + extra)) == NULL)
		return NULL;
	memset(r, 0, sizeof *r);
	r->f = hc->hw->f;
	r->hc = hc;
	r->cw = r->rw = hc->hw;
	INIT_LIST_HEAD(&r->qentry);
	atomic_init(&r->owners, 1);
	atomic_init(&r->left, false);
	atomic_init(&r->refs, 0);
	r->method = h->method;
	r->minor = h->minor;
	r->close = h->close;
	r->pid = hc->pid;
	memcpy(r->host, hc->host, sizeof r->host);
	r->who = hc->who;
	http_prin_hold(r->who);
	r->fields = (struct hfield *)(void *)r->data;
	r->nfields = h->nfields;
	d = r->data + h->nfields * sizeof(struct hfield);
	memcpy(d, h->target, tlen);
	d[tlen] = '\0';
	r->target = d;
	d += tlen + 1;
	r->segs = d;		/* the decoded path's room */
	d += tlen + 1;
	for (i = 0; i < h->nfields; i++) {
		memcpy(d, h->fields[i].name, h->fields[i].name_len);
		d[h->fields[i].name_len] = '\0';
		r->fields[i].name = d;
		d += h->fields[i].name_len + 1;
		memcpy(d, h->fields[i].value, h->fields[i].value_len);
		d[h->fields[i].value_len] = '\0';
		r->fields[i].value = d;
		d += h->fields[i].value_len + 1;
	}
	(void)p;
	return r;
}

/* Queue r on hc (answered in this order). */
static void hconn_queue(struct hconn *hc, struct hreq *r)
{
	list_add_tail(&r->qentry, &hc->queue);
	hc->nqueue++;
	if (r->close)
		hc->no_more = true;
}

/*
 * A request that is no HTTP at all, or asks what is refused before any
 * route (status): answered in its turn, then the connection ends.
 */
static void hconn_refuse(struct hconn *hc, int status, const char *why)
{
	struct hp_head h;
	struct hreq *r;

	memset(&h, 0, offsetof(struct hp_head, fields));
	h.method = HTTP_GET;
	h.minor = 1;
	h.close = true;
	h.target = "/";
	h.target_len = 1;
	h.head_len = 0;
	hc->no_more = true;
	if ((r = hreq_new(hc, NULL, &h)) == NULL) {
		conn_cut(hc->c);
		return;
	}
	hconn_queue(hc, r);
	log_debug("http %s: %d: %s", hc->c->peer, status, why);
	http_problem_at(r, status == 501 ? SEMD__CODE__INVALID_ARGUMENT :
	    SEMD__CODE__PROTOCOL_ERROR, status, "%s", why);
}

/* Run r (its head and body read; body: NULL for none). */
static void hconn_dispatch(struct hreq *r, const char *body, size_t blen)
{
	r->dispatched = true;
	atomic_fetch_add_explicit(&r->owners, 1, memory_order_relaxed);
	atomic_store_explicit(&r->refs, 1, memory_order_relaxed);
	http_request_run(r, body, blen);
}

/* The body of hc->body_req from p[0..len): the bytes taken, -1 if refused. */
static ssize_t hconn_body(struct hconn *hc, const char *p, size_t len)
{
	struct hreq *r = hc->body_req;
	uint32_t max = http_here()->cfg->max_body;
	ssize_t n;
	bool done = false;

	if (hc->chunked) {
		n = hp_chunked_feed(&hc->chs, p, len, hc->body, &hc->blen, max,
		    &done);
		if (n < 0) {
			hc->body_req = NULL;
			r->close = true;
			hc->no_more = true;
			http_problem_at(r, SEMD__CODE__INVALID_ARGUMENT, (int)-n,
			    n == -413 ? "the body is over http-max-body (%u bytes)" :
			    "the chunked body is malformed", max);
			return -1;
		}
	} else {
		n = (ssize_t)(len < hc->body_left ? len : hc->body_left);
		memcpy(hc->body + hc->blen, p, (size_t)n);
		hc->blen += (size_t)n;
		hc->body_left -= (uint64_t)n;
		done = hc->body_left == 0;
	}
	if (done) {
		hc->body_req = NULL;
		hc->fresh = true;
		hconn_dispatch(r, hc->body, hc->blen);
		hc->blen = 0;
		if (hc->bcap > 65536) {
			free(hc->body);
			hc->body = NULL;
			hc->bcap = 0;
		}
	}
	return n;
}

/*
 * A request r whose head came, of h: its body, whole in p[0..len) or to
 * come. The bytes taken, or -1 (r refused, nothing more read).
 */
static ssize_t hconn_begin_body(struct hconn *hc, struct hreq *r,
    const struct hp_head *h, const char *p, size_t len)
{
	uint32_t max = http_here()->cfg->max_body;
	size_t need;
	char *b;

	if (!h->chunked && h->content_length > max) {
		if (h->content_length <= (uint64_t)max + HCONN_DISCARD_MAX &&
		    !h->expect_continue) {
			hc->discard = h->content_length;	/* keep the connection */
		} else {
			r->close = true;
			hc->no_more = true;
		}
		http_problem_at(r, SEMD__CODE__INVALID_ARGUMENT, 413,
		    "the body is over http-max-body (%u bytes)", max);
		return 0;
	}
	if (!h->chunked && h->content_length <= len) {
		hconn_dispatch(r, p, (size_t)h->content_length);	/* in place */
		return (ssize_t)h->content_length;
	}
	need = h->chunked ? max : (size_t)h->content_length;
	if (hc->bcap < need) {
		if ((b = realloc(hc->body, need)) == NULL) {
			r->close = true;
			hc->no_more = true;
			http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
			return -1;
		}
		hc->body = b;
		hc->bcap = need;
	}
	hc->blen = 0;
	hc->body_req = r;
	hc->chunked = h->chunked;
	hc->body_left = h->content_length;
	if (h->chunked)
		hp_chunked_init(&hc->chs);
	if (h->expect_continue) {
		r->want_continue = true;
		if (list_first_entry(&hc->queue, struct hreq, qentry) == r)
			hconn_continue(hc, r);
	}
	return 0;
}

/*
 * Read requests from p[0..len): each whole one is queued and run. Returns
 * the bytes taken; the rest is a request not whole yet (or input behind a
 * full pipeline).
 */
static size_t hconn_run(struct hconn *hc, const char *p, size_t len)
{
	struct conn *c = hc->c;
	const struct http_config *cfg = http_here()->cfg;
	struct hp_head h;
	struct hreq *r;
	size_t off = 0, n;
	ssize_t b;
	int hl;

	while (off < len && !hc->no_more && !c->closing && !c->dead) {
		if (hc->discard > 0) {
			n = len - off < hc->discard ? len - off : (size_t)hc->discard;
			hc->discard -= n;
			off += n;
			hc->fresh = hc->discard == 0;
			continue;
		}
		if (hc->body_req != NULL) {
			if ((b = hconn_body(hc, p + off, len - off)) < 0)
				break;
			off += (size_t)b;
			continue;
		}
		if (hc->nqueue >= HCONN_PIPELINE) {
			hc->paused = true;
			conn_read_pause(c, true);
			break;
		}
		hl = hp_parse_head(p + off, len - off, cfg->max_header, &h);
		if (hl == 0)
			break;
		if (hl < 0) {
			hconn_refuse(hc, -hl, hl == -431 ?
			    "the request's head is over http-max-header" :
			    hl == -501 ? "a method or transfer coding not known" :
			    hl == -505 ? "not HTTP/1.x" : hl == -417 ?
			    "an expectation other than 100-continue" :
			    "not an HTTP/1.1 request");
			break;
		}
		if ((r = hreq_new(hc, p + off, &h)) == NULL) {
			hconn_refuse(hc, 503, "out of memory");
			break;
		}
		off += (size_t)hl;
		hc->fresh = true;
		hconn_queue(hc, r);
		if (h.chunked || h.content_length > 0) {
			if ((b = hconn_begin_body(hc, r, &h, p + off,
			    len - off)) < 0)
				break;
			off += (size_t)b;
			continue;
		}
		hconn_dispatch(r, NULL, 0);
	}
	return off;
}

/* Keep p[0..n) behind what is kept (false: too much, or no memory). */
static bool hconn_keep(struct hconn *hc, const char *p, size_t n)
{
	size_t cap;
	char *b;

	if (n == 0)
		return true;
	if (hc->ilen + n > http_here()->cfg->max_header + HCONN_IN_SLACK)
		return false;
	if (hc->icap - hc->ilen < n) {
		cap = hc->icap ? hc->icap : 1024;
		while (cap - hc->ilen < n)
			cap *= 2;
		if ((b = realloc(hc->in, cap)) == NULL)
			return false;
		hc->in = b;
		hc->icap = cap;
	}
	memcpy(hc->in + hc->ilen, p, n);
	hc->ilen += n;
	return true;
}

/* Run what is kept; keep what is left of it. */
static void hconn_run_kept(struct hconn *hc)
{
	size_t off = hconn_run(hc, hc->in, hc->ilen);

	memmove(hc->in, hc->in + off, hc->ilen - off);
	hc->ilen -= off;
	if (hc->ilen == 0 && hc->icap > 16384) {
		free(hc->in);
		hc->in = NULL;
		hc->icap = 0;
	}
}

/* The connection's bytes (conn_proto input). */
static void hconn_input(struct conn *c, const uint8_t *buf, size_t n)
{
	struct hconn *hc = c->proto_data;
	size_t off;

	if (hc == NULL || hc->no_more)
		return;		/* what comes after a last request is dropped */
	if (hc->ilen == 0) {
		off = hconn_run(hc, (const char *)buf, n);
		if (!hc->no_more && !hconn_keep(hc, (const char *)buf + off,
		    n - off)) {
			log_info("http %s: too much input kept, closing", c->peer);
			conn_cut(c);
			return;
		}
	} else if (!hconn_keep(hc, (const char *)buf, n)) {
		log_info("http %s: too much input kept, closing", c->peer);
		conn_cut(c);
		return;
	} else {
		hconn_run_kept(hc);
	}
	if (hc->no_more)
		hc->ilen = 0;
	if (!c->closing && !c->dead)
		hconn_place(hc);
}

/* After a pause: run what was kept (the kick event). */
static void hconn_kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *hc = arg;
	struct worker *w = hc->c->w;
	bool was = w->in_read;

	(void)fd;
	(void)what;
	if (hc->c->closing || hc->c->dead || hc->paused)
		return;
	w->in_read = true;
	hconn_run_kept(hc);
	hconn_place(hc);
	w->in_read = was;
}

/* --- a connection's life ------------------------------------------------------ */

/*
 * The connection of hw idle the longest: with nothing under way, or a
 * request begun but none in hand (a new connection's first, a slow one's).
 * NULL: every one has a request in hand.
 */
static struct hconn *hconn_idlest(struct hworker *hw)
{
	struct hconn *a = NULL, *b = NULL;
	struct list_head *pos;

	if (!list_empty(&hw->idle))
		a = list_first_entry(&hw->idle, struct hconn, idle_entry);
	list_for_each(pos, &hw->partial) {
		b = list_entry(pos, struct hconn, partial_entry);
		if (b->nqueue == 0)
			break;
		b = NULL;
	}
	if (a == NULL || (b != NULL && b->since_ms < a->since_ms))
		return b;
	return a;
}

/* A new connection (conn_proto start): who it is, its loop's count. */
static int hconn_start(struct conn *c, struct acl_subject *who,
    const struct sockaddr *sa)
{
	struct hworker *hw = http_here();
	struct http_front *f = hw->f;
	struct hconn *hc, *old;
	size_t n;
	uid_t uid = 0;
	gid_t gid = 0;
	pid_t pid = 0;

	if ((hc = calloc(1, sizeof *hc)) == NULL)
		return -ENOMEM;
	hc->c = c;
	hc->hw = hw;
	INIT_LIST_HEAD(&hc->idle_entry);
	INIT_LIST_HEAD(&hc->partial_entry);
	INIT_LIST_HEAD(&hc->queue);
	if ((hc->who = http_prin_get(f, who)) == NULL ||
	    (hc->kick = event_new(hw->base, -1, 0, hconn_kick_cb, hc)) == NULL) {
		http_prin_put(f, hc->who);
		free(hc);
		return -ENOMEM;
	}
	if (c->local && peer_cred(c->fd, &uid, &gid, &pid) == 0)
		hc->pid = (uint32_t)pid;
	else if (sa != NULL && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
		    hc->host, sizeof hc->host);
	else if (sa != NULL && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		    hc->host, sizeof hc->host);
	c->proto_data = hc;
	hw->nconns++;
	n = atomic_fetch_add_explicit(&f->nconns, 1, memory_order_relaxed) + 1;
	if (n > hw->cfg->max_connections) {
		/* Room: the connection of this loop idle the longest goes. */
		if ((old = hconn_idlest(hw)) != NULL) {
			log_info("http: http-max-connections %u reached: closing "
			    "%s, idle the longest", hw->cfg->max_connections,
			    old->c->peer);
			list_del_init(&old->idle_entry);
			list_del_init(&old->partial_entry);
			old->no_more = true;
			conn_close_later(old->c);
		} else {
			log_warn("http: http-max-connections %u reached, every "
			    "connection busy: refusing %s",
			    hw->cfg->max_connections, c->peer);
			c->proto_data = NULL;
			hw->nconns--;
			atomic_fetch_sub_explicit(&f->nconns, 1,
			    memory_order_relaxed);
			event_free(hc->kick);
			http_prin_put(f, hc->who);
			free(hc);
			return -EMFILE;
		}
	}
	/* Its first request within http-request-timeout, as any other. */
	list_add_tail(&hc->partial_entry, &hw->partial);
	hc->since_ms = server_now();
	return 0;
}

/* A stop (conn_proto stop): what is under way is answered, then it closes. */
static void hconn_stop(struct conn *c)
{
	struct hconn *hc = c->proto_data;
	struct hreq *r;

	if (hc == NULL) {
		conn_close_later(c);
		return;
	}
	r = hc->body_req;
	hc->no_more = true;
	hc->ilen = 0;
	if (r != NULL) {
		hc->body_req = NULL;
		r->close = true;
		http_problem(r, SEMD__CODE__UNAVAILABLE, "semd is stopping");
	}
	conn_read_pause(c, true);
	hconn_advance(hc);
}

/* Its client left, or it closed (conn_proto close): its requests are let go. */
static void hconn_close(struct conn *c)
{
	struct hconn *hc = c->proto_data;
	struct list_head *pos, *tmp;
	struct hworker *hw;
	struct hreq *r;

	if (hc == NULL)
		return;
	hw = hc->hw;
	c->proto_data = NULL;
	hc->c = NULL;
	/* each unlinked alone (the queue is emptied after): r may be freed */
	list_for_each_safe(pos, tmp, &hc->queue) {
		r = list_entry(pos, struct hreq, qentry);
		INIT_LIST_HEAD(&r->qentry);
		r->hc = NULL;
		atomic_store_explicit(&r->left, true, memory_order_release);
		if (r->dispatched && r->rw != r->cw)
			http_post_gone(r);
		else if (r->dispatched && !r->final && r->gone != NULL)
			r->gone(r);
		hreq_owner_put(r);
	}
	INIT_LIST_HEAD(&hc->queue);
	list_del_init(&hc->idle_entry);
	list_del_init(&hc->partial_entry);
	hw->nconns--;
	atomic_fetch_sub_explicit(&hw->f->nconns, 1, memory_order_relaxed);
	event_free(hc->kick);
	http_prin_put(hw->f, hc->who);
	free(hc->in);
	free(hc->body);
	free(hc);
}

const struct conn_proto http_conn_proto = {
	.start = hconn_start,
	.input = hconn_input,
	.stop = hconn_stop,
	.close = hconn_close,
};

/*
 * The loop's deadlines: a request not whole within http-request-timeout
 * (408, or cut off when answers are under way before it), a connection
 * with nothing under way for http-idle-timeout (closed). Both lists are in
 * the order their clocks started: only the expired are looked at.
 */
void hconn_tick(struct hworker *hw, uint64_t now)
{
	static const char timeout[] = "HTTP/1.1 408 Request Timeout\r\n"
	    "Connection: close\r\nContent-Length: 0\r\n\r\n";
	const struct http_config *cfg = hw->cfg;
	struct hconn *hc;
	uint8_t *p;

	while (!list_empty(&hw->partial)) {
		hc = list_first_entry(&hw->partial, struct hconn, partial_entry);
		if (now - hc->since_ms < cfg->request_timeout_ms)
			break;
		list_del_init(&hc->partial_entry);
		log_info("http %s: no whole request within http-request-timeout, "
		    "closing", hc->c->peer);
		hc->no_more = true;
		hc->body_req = NULL;
		if (hc->nqueue == 0 && (hc->ilen > 0 || hc->discard > 0) &&
		    (p = conn_out_room(hc->c, sizeof timeout - 1)) != NULL) {
			memcpy(p, timeout, sizeof timeout - 1);
			conn_out_done(hc->c, sizeof timeout - 1);
			conn_close_later(hc->c);
		} else if (hc->nqueue == 0) {
			conn_close_later(hc->c);
		} else {
			conn_cut(hc->c);
		}
	}
	while (!list_empty(&hw->idle)) {
		hc = list_first_entry(&hw->idle, struct hconn, idle_entry);
		if (now - hc->since_ms < cfg->idle_timeout_ms)
			break;
		list_del_init(&hc->idle_entry);
		log_debug("http %s: idle for http-idle-timeout, closing",
		    hc->c->peer);
		hc->no_more = true;
		conn_close_later(hc->c);
	}
}
