/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_front.c - the HTTP front door (doc/http.md): listeners
 * on libevent's evhttp, served by the server's first loop; connections and
 * what evhttp does not do for them (a deadline for a request once begun, a
 * cap on connections that makes room by closing the longest idle one, a
 * watch on the socket of a request being answered, so that a client that
 * leaves is noticed at once); who a request is (the transport's identity
 * or a bearer token); the Origin check, CORS, the per-principal rate;
 * routing; answers and problems (RFC 9457).
 *
 * Each connection's bufferevent is made here (evhttp's bevcb) and watched:
 * a callback on its input buffer sees every byte that arrives (the request
 * deadline starts there), and a reference of ours keeps it until we have
 * seen evhttp drop it, which evhttp tells only once a request came.
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "daemon/access.h"
#include "daemon/config.h"
#include "daemon/feed.h"
#include "daemon/http/http-int.h"
#include "daemon/http/http.h"
#include "daemon/http/http_ui.h"
#include "daemon/listen.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/tlsconf.h"
#include "security/peer.h"
#include "security/tls.h"

struct http_front *http_the_front;
static struct http_config *http_defaults;

#define HTTP_KEEP_PRIN_MS	60000	/* an unused principal's entry goes */

/* The routes, under /v1/ (state: a follower redirects them). */
static void http_route_openapi(struct hreq *r);

static const struct http_route http_routes[] = {
	{ EVHTTP_REQ_GET, "openapi.json", http_route_openapi, false },
	{ EVHTTP_REQ_GET, "server", http_route_server, false },
	{ EVHTTP_REQ_GET, "semaphores", http_route_list, true },
	{ EVHTTP_REQ_PUT, "semaphores/*", http_route_create, true },
	{ EVHTTP_REQ_GET, "semaphores/*", http_route_info, true },
	{ EVHTTP_REQ_DELETE, "semaphores/*", http_route_delete, true },
	{ EVHTTP_REQ_PUT, "semaphores/*/limit", http_route_set_limit, true },
	{ EVHTTP_REQ_PUT, "semaphores/*/rate", http_route_set_rate, true },
	{ EVHTTP_REQ_PUT, "semaphores/*/queue", http_route_set_queue, true },
	{ EVHTTP_REQ_POST, "semaphores/*/permits", http_route_acquire, true },
	{ EVHTTP_REQ_GET, "semaphores/*/permits/*", http_route_permit, true },
	{ EVHTTP_REQ_DELETE, "semaphores/*/permits/*", http_route_release, true },
	{ EVHTTP_REQ_POST, "semaphores/*/permits/*/renew", http_route_renew, true },
	{ EVHTTP_REQ_DELETE, "semaphores/*/waiters/*", http_route_cancel_queued,
	    true },
	{ EVHTTP_REQ_POST, "semaphores/*/up", http_route_up, true },
	{ EVHTTP_REQ_GET, "semaphores/*/tokens/*", http_route_validate, true },
	{ EVHTTP_REQ_POST, "permits", http_route_acquire_many, true },
	{ EVHTTP_REQ_GET, "waiters/*", http_route_waiter_get, true },
	{ EVHTTP_REQ_DELETE, "waiters/*", http_route_waiter_delete, true },
	{ EVHTTP_REQ_POST, "waiters/*/renew", http_route_waiter_renew, true },
	{ EVHTTP_REQ_GET, "holds", http_route_holds, true },
	{ EVHTTP_REQ_GET, "watch", http_route_watch, true },
	{ EVHTTP_REQ_GET, "stats", http_route_stats, true },
	{ EVHTTP_REQ_GET, "cluster", http_route_cluster, false },
	{ EVHTTP_REQ_POST, "cluster/members", http_route_member_add, true },
	{ EVHTTP_REQ_DELETE, "cluster/members/*", http_route_member_remove, true },
	{ EVHTTP_REQ_POST, "cluster/leader", http_route_transfer, true },
	{ EVHTTP_REQ_GET, "backup", http_route_backup, true },
};
#define HTTP_NROUTES	(sizeof http_routes / sizeof http_routes[0])
/* evhttp takes every method it knows; a route's own are checked here (405). */
#define HTTP_METHODS	(EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | \
			    EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | \
			    EVHTTP_REQ_HEAD | EVHTTP_REQ_PATCH | \
			    EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT)

/* --- small things --------------------------------------------------------- */

/* The loops' monotonic clock, ms. */
uint64_t http_now(void)
{
	return server_now();
}

/* Arm ev to fire in ms milliseconds. */
void http_arm(struct event *ev, uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evtimer_add(ev, &tv);
}

/* Memory for r's work, or NULL with r answered. */
void *http_alloc(struct hreq *r, size_t n)
{
	void *p = calloc(1, n);

	if (p == NULL)
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
	return p;
}

/* The wall clock, unix ms. */
uint64_t http_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The settings in force (read on the first loop, where reloads happen). */
static const struct http_config *http_cfg(const struct http_front *f)
{
	return f->srv->cfg.http != NULL ? f->srv->cfg.http : http_defaults;
}

/* The reason phrase of a status. */
static const char *http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 307: return "Temporary Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 413: return "Content Too Large";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Status";
	}
}

/* --- principals ----------------------------------------------------------- */

struct prin_key {
	const char	*principal;
	const char	*groups;
	size_t		groups_len;
};

/* Does a principal's entry match this identity (name and groups)? */
static bool http_prin_eq(const struct hnode *n, const void *key)
{
	const struct hprin *p = container_of(n, struct hprin, node);
	const struct prin_key *k = key;

	return strcmp(p->subj.principal, k->principal) == 0 &&
	    p->subj.groups_len == k->groups_len &&
	    (k->groups_len == 0 || memcmp(p->subj.groups, k->groups,
	    k->groups_len) == 0);
}

/* The entry of identity s (one more reference), made on first use. */
struct hprin *http_prin_get(struct http_front *f, const struct acl_subject *s)
{
	struct prin_key k = { s->principal, s->groups, s->groups_len };
	uint64_t h = hmap_siphash(f->hash_key, s->principal, s->principal_len);
	struct hnode *n = hmap_find(&f->prins, h, http_prin_eq, &k);
	struct hprin *p;

	if (n != NULL) {
		p = container_of(n, struct hprin, node);
		p->refs++;
		return p;
	}
	if ((p = calloc(1, sizeof *p)) == NULL)
		return NULL;
	if (access_subject_copy(&p->subj, s) != 0) {
		acl_subject_clear(&p->subj);
		free(p);
		return NULL;
	}
	p->refs = 1;
	p->used_ms = p->refill_ms = http_now();
	p->tokens_milli = UINT64_MAX;	/* full */
	hmap_insert(&f->prins, &p->node, h);
	list_add_tail(&p->entry, &f->prin_list);
	return p;
}

/* Drop a reference (the entry stays a while: its rate bucket). */
void http_prin_put(struct http_front *f, struct hprin *p)
{
	(void)f;
	if (p != NULL && p->refs > 0) {
		p->refs--;
		p->used_ms = http_now();
	}
}

/* Free the entries nobody refers to for a while (all: every unused one). */
static void http_prin_sweep(struct http_front *f, bool all)
{
	struct list_head *pos, *tmp;
	struct hprin *p;
	uint64_t now = http_now();

	list_for_each_safe(pos, tmp, &f->prin_list) {
		p = list_entry(pos, struct hprin, entry);
		if (p->refs > 0 || p->nidem > 0 ||
		    (!all && now - p->used_ms < HTTP_KEEP_PRIN_MS))
			continue;
		hmap_remove(&f->prins, &p->node);
		list_del_init(&p->entry);
		acl_subject_clear(&p->subj);
		free(p);
	}
}

/*
 * May p make one more request (http-rate a second each principal, a
 * burst of as many)? 0, or the ms until it may.
 */
static uint64_t http_rate_take(struct http_front *f, struct hprin *p)
{
	uint32_t rate = http_cfg(f)->rate;
	uint64_t now = http_now(), cap, add;

	if (rate == 0)
		return 0;
	cap = (uint64_t)rate * 1000;
	add = (now - p->refill_ms) * rate;	/* milli-requests */
	p->refill_ms = now;
	p->tokens_milli = p->tokens_milli > cap || add >= cap - p->tokens_milli ?
	    cap : p->tokens_milli + add;
	if (p->tokens_milli >= 1000) {
		p->tokens_milli -= 1000;
		return 0;
	}
	return (1000 - p->tokens_milli + rate - 1) / rate;
}

/* --- answers -------------------------------------------------------------- */

/* A response header. */
void http_header(struct hreq *r, const char *name, const char *value)
{
	if (r->req != NULL)
		evhttp_add_header(evhttp_request_get_output_headers(r->req), name,
		    value);
}

/* A request header, or NULL. */
const char *http_in_header(const struct hreq *r, const char *name)
{
	return r->req != NULL ? evhttp_find_header(
	    evhttp_request_get_input_headers(r->req), name) : NULL;
}

/* A query parameter, or NULL. */
const char *http_query(struct hreq *r, const char *name)
{
	return r->query_ok ? evhttp_find_header(&r->query, name) : NULL;
}

/* The CORS headers of an answer to an allowed origin. */
static void http_cors_headers(struct hreq *r)
{
	if (r->origin[0] == '\0')
		return;
	http_header(r, "Access-Control-Allow-Origin", r->origin);
	http_header(r, "Vary", "Origin");
	http_header(r, "Access-Control-Expose-Headers",
	    "Location, Preference-Applied, Retry-After");
}

/* The request is no longer ours: stop watching its socket. */
static void http_req_done(struct hreq *r)
{
	struct hconn *hc = r->hc;

	r->answered = true;
	r->req = NULL;
	if (r->timer != NULL)
		evtimer_del(r->timer);
	if (hc != NULL) {
		if (hc->watch != NULL)
			event_del(hc->watch);
		hc->cur = NULL;
		r->hc = NULL;
	}
}

/*
 * The Date header's value, made once a second (libevent formats it anew
 * for each answer that has none: a tenth of a small answer's work).
 */
static const char *http_date(void)
{
	static const char days[][4] = { "Sun", "Mon", "Tue", "Wed", "Thu",
	    "Fri", "Sat" };
	static const char months[][4] = { "Jan", "Feb", "Mar", "Apr", "May",
	    "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	static char date[40];
	static time_t made = -1;
	time_t now = time(NULL);
	struct tm tm;

	if (now != made && gmtime_r(&now, &tm) != NULL) {
		snprintf(date, sizeof date, "%s, %02d %s %04d %02d:%02d:%02d GMT",
		    days[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12],
		    tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
		made = now;
	}
	return date;
}

/* Write an evbuffer as r's answer. */
static void http_send(struct hreq *r, int status, struct evbuffer *b)
{
	if (r->req == NULL || r->answered)
		return;
	http_cors_headers(r);
	http_header(r, "Date", http_date());
	/* What a GET reads is the state of now (other answers are not kept). */
	if (evhttp_request_get_command(r->req) & (EVHTTP_REQ_GET | EVHTTP_REQ_HEAD))
		http_header(r, "Cache-Control", "no-store");
	evhttp_send_reply(r->req, status, http_reason(status), b);
	http_req_done(r);
}

/* jansson's writer into an evbuffer. */
static int http_dump_cb(const char *buf, size_t len, void *arg)
{
	return evbuffer_add(arg, buf, len);
}

/* Answer with a JSON body (taken), of type (NULL: application/json). */
static void http_reply_typed(struct hreq *r, int status, json_t *body,
    const char *type)
{
	struct evbuffer *out;
	char quick[4096];	/* most answers: written here, added at once */
	size_t n = 0;
	int rc = -1;

	if (r->req == NULL || r->answered) {
		json_decref(body);
		return;
	}
	out = evhttp_request_get_output_buffer(r->req);
	if (body != NULL && (n = json_dumpb(body, quick, sizeof quick - 1,
	    JSON_COMPACT)) > 0 && n < sizeof quick - 1) {
		quick[n++] = '\n';
		rc = evbuffer_add(out, quick, n);
	} else if (body != NULL && n > 0) {
		if (json_dump_callback(body, http_dump_cb, out, JSON_COMPACT) == 0)
			rc = evbuffer_add(out, "\n", 1);
	}
	json_decref(body);
	if (rc != 0) {
		evbuffer_drain(out, evbuffer_get_length(out));
		http_header(r, "Content-Type", "text/plain");
		evhttp_send_error(r->req, 500, "out of memory");
		http_req_done(r);
		return;
	}
	http_header(r, "Content-Type", type != NULL ? type : "application/json");
	http_send(r, status, NULL);
}

void http_reply_json(struct hreq *r, int status, json_t *body)
{
	http_reply_typed(r, status, body, NULL);
}

/* Answer with JSON text already written, json[0..len). */
void http_reply_text(struct hreq *r, int status, const char *json, size_t len)
{
	struct evbuffer *out;

	if (r->req == NULL || r->answered)
		return;
	out = evhttp_request_get_output_buffer(r->req);
	if (evbuffer_add(out, json, len) != 0 || evbuffer_add(out, "\n", 1) != 0) {
		evbuffer_drain(out, evbuffer_get_length(out));
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	http_header(r, "Content-Type", "application/json");
	http_send(r, status, NULL);
}

/* Answer with no body (a header name: value, when not NULL). */
void http_reply_empty(struct hreq *r, int status, const char *hname,
    const char *hvalue)
{
	if (r->req == NULL || r->answered)
		return;
	if (hname != NULL)
		http_header(r, hname, hvalue);
	http_send(r, status, NULL);
}

/* A problem with an HTTP status of its own (not the code's). */
static void http_problem_status(struct hreq *r, int code, int status,
    const char *detail, json_t *more)
{
	const char *uri = r->req != NULL ? evhttp_request_get_uri(r->req) : NULL;
	char inst[512];
	json_t *p;

	snprintf(inst, sizeof inst, "%s", uri != NULL ? uri : "");
	inst[strcspn(inst, "?")] = '\0';
	p = hj_problem(code, status, detail, inst);
	if (p != NULL && more != NULL)
		json_object_update(p, more);
	json_decref(more);
	if (status == 503)
		http_header(r, "Retry-After", "1");
	http_reply_typed(r, status, p, "application/problem+json");
}

/* Answer r with a problem of code, with an HTTP status of its own. */
void http_problem_at(struct hreq *r, int code, int status, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	http_problem_status(r, code, status, detail, NULL);
}

/* Answer r with a problem of code (its status) and detail. */
void http_problem(struct hreq *r, int code, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	http_problem_status(r, code, hj_status(code), detail, NULL);
}

/*
 * The leader elsewhere (a follower was asked): 307 to the same URI on the
 * leader when its URL is known (http-nodes), else 503 naming it. True.
 */
bool http_redirect(struct hreq *r, uint64_t leader_id, const char *leader)
{
	const char *base = http_config_node_url(http_cfg(r->f), leader_id);
	const char *uri = r->req != NULL ? evhttp_request_get_uri(r->req) : "";
	char loc[2048];
	json_t *more;

	char detail[64];

	if (leader_id != 0 && base != NULL &&
	    (size_t)snprintf(loc, sizeof loc, "%s%s", base, uri) < sizeof loc) {
		http_header(r, "Location", loc);
		snprintf(detail, sizeof detail, "not the leader: node %llu is",
		    (unsigned long long)leader_id);
		http_problem_status(r, SEMD__CODE__UNAVAILABLE, 307, detail, NULL);
		return true;
	}
	more = json_pack("{s:I}", "leader_id", (json_int_t)leader_id);
	if (more != NULL && leader != NULL && *leader != '\0')
		json_object_set_new(more, "leader", json_string(leader));
	http_problem_status(r, SEMD__CODE__UNAVAILABLE, 503, leader_id != 0 ?
	    "not the leader, and no URL of the leader is known (http-nodes)" :
	    "not the leader, and no leader is known yet", more);
	return true;
}

/* Answer r with the failure a reply says (a redirect is followed). */
void http_problem_reply(struct hreq *r, const Semd__Reply *rep)
{
	if (rep->code == SEMD__CODE__UNAVAILABLE &&
	    rep->body_case == SEMD__REPLY__BODY_REDIRECT) {
		http_redirect(r, rep->redirect->leader_id, rep->redirect->leader);
		return;
	}
	if (rep->code == SEMD__CODE__COMPACTED && rep->oldest_revision != 0) {
		json_t *more = json_object();

		json_object_set_new(more, "oldest_revision",
		    hj_id(rep->oldest_revision));
		http_problem_status(r, rep->code, hj_status(rep->code),
		    rep->message, more);
		return;
	}
	http_problem_status(r, rep->code, hj_status(rep->code),
	    rep->message != NULL ? rep->message : "", NULL);
}

/* The gate went away before answering (the state closed it, or a stop). */
void http_problem_gone(struct hreq *r, const struct gate *g)
{
	if (g != NULL && g->redirected)
		http_redirect(r, g->leader_id, g->leader);
	else
		http_problem(r, SEMD__CODE__UNAVAILABLE, "the request was not "
		    "answered (semd is stopping, or lost the leadership)");
}

/* Stream the answer: 200 with type, then chunks. False: the client is gone. */
bool http_stream_start(struct hreq *r, const char *type)
{
	if (r->req == NULL || r->answered)
		return false;
	http_cors_headers(r);
	http_header(r, "Content-Type", type);
	http_header(r, "Cache-Control", "no-store");
	evhttp_send_reply_start(r->req, 200, "OK");
	return true;
}

/* One chunk of a streamed answer. */
bool http_stream_chunk(struct hreq *r, const char *p, size_t len)
{
	struct evbuffer *b;

	if (r->req == NULL || r->answered || (b = evbuffer_new()) == NULL)
		return false;
	if (evbuffer_add(b, p, len) == 0)
		evhttp_send_reply_chunk(r->req, b);
	evbuffer_free(b);
	return true;
}

/* End a streamed answer. */
void http_stream_end(struct hreq *r)
{
	if (r->req == NULL || r->answered)
		return;
	evhttp_send_reply_end(r->req);
	http_req_done(r);
}

/* Cut r's connection off (its answer cannot be finished); r is told not. */
void http_cut(struct hreq *r)
{
	struct evhttp_connection *evcon;

	if (r->req == NULL || (evcon = evhttp_request_get_connection(r->req)) ==
	    NULL)
		return;
	r->gone = NULL;
	r->req = NULL;
	http_req_done(r);
	evhttp_connection_free(evcon);
}

/* Bytes r's connection has not sent yet. */
size_t http_backlog(const struct hreq *r)
{
	struct evhttp_connection *evcon;

	if (r->req == NULL ||
	    (evcon = evhttp_request_get_connection(r->req)) == NULL)
		return 0;
	return evbuffer_get_length(bufferevent_get_output(
	    evhttp_connection_get_bufferevent(evcon)));
}

/* --- requests ------------------------------------------------------------- */

static bool http_conn_eq(const struct hnode *n, const void *key);

/* One more reference to r. */
void http_req_hold(struct hreq *r)
{
	r->refs++;
}

/* Drop a reference; the last frees r (answered or not: its client left). */
void http_req_put(struct hreq *r)
{
	size_t i;

	if (r == NULL || --r->refs > 0)
		return;
	if (r->req != NULL && !r->answered)
		http_problem(r, SEMD__CODE__INTERNAL, "no answer was made");
	if (r->timer != NULL)
		event_free(r->timer);
	for (i = 0; i < sizeof r->args / sizeof r->args[0]; i++)
		free(r->args[i]);
	json_decref(r->body);
	if (r->query_ok)
		evhttp_clear_headers(&r->query);
	http_prin_put(r->f, r->who);
	free(r);
}

/* The client of the request being answered left (its socket closed). */
static void http_watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *hc = arg;
	struct hreq *r = hc->cur;
	struct evhttp_connection *evcon = hc->evcon;
	char peek;
	ssize_t n;

	(void)what;
	if (!(what & EV_CLOSED)) {
		/* Without EV_CLOSED: readable is a close only if it reads EOF. */
		n = recv(fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) {
			event_del(hc->watch);	/* pipelined: not a close */
			return;
		}
	}
	log_debug("http %s: left while its request was answered", hc->peer);
	if (r != NULL) {
		r->req = NULL;		/* evhttp frees it with the connection */
		http_req_done(r);
		if (r->gone != NULL)
			r->gone(r);
	}
	if (evcon != NULL)
		evhttp_connection_free(evcon);	/* frees hc too */
}

/* Watch r's socket while r waits: gone(r) when the client leaves. */
void http_req_watch(struct hreq *r, void (*gone)(struct hreq *r))
{
	struct hconn *hc = r->hc;
	short what = EV_CLOSED;

	r->gone = gone;
	if (hc == NULL || hc->fd < 0)
		return;
	if (hc->watch == NULL) {
		if (!(event_base_get_features(r->f->base) & EV_FEATURE_EARLY_CLOSE))
			what = EV_READ;
		hc->watch = event_new(r->f->base, hc->fd, what, http_watch_cb, hc);
	}
	if (hc->watch != NULL)
		event_add(hc->watch, NULL);
}

/* The wait of Prefer: wait=N, ms (at most http-max-wait); 0 without it. */
uint64_t http_prefer_wait(struct hreq *r, bool *given)
{
	const char *p = http_in_header(r, "Prefer");
	uint64_t max = http_cfg(r->f)->max_wait_ms, v = 0;
	const char *w;

	*given = false;
	if (p == NULL || (w = strstr(p, "wait=")) == NULL ||
	    (w != p && w[-1] != ' ' && w[-1] != ',' && w[-1] != ';'))
		return 0;
	for (w += 5; *w >= '0' && *w <= '9' && v < 1000000; w++)
		v = v * 10 + (uint64_t)(*w - '0');
	*given = true;
	v *= 1000;
	return v > max ? max : v;
}

/* The /v1/openapi.json route: the document. */
static void http_route_openapi(struct hreq *r)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL || evbuffer_add_reference(b, (const char *)http_openapi_json,
	    http_openapi_json_len, NULL, NULL) != 0) {
		if (b != NULL)
			evbuffer_free(b);
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	http_header(r, "Content-Type", "application/json");
	http_send(r, 200, b);
	evbuffer_free(b);
}

/*
 * Match a path (after /v1/, split into n segments, decoded) against the
 * routes: the route, or NULL with *allow listing the methods of the path
 * (0: no such path).
 */
static const struct http_route *http_match(int method, char **seg, size_t n,
    int *allow)
{
	const struct http_route *best = NULL;
	const char *p, *e;
	size_t i, k;

	*allow = 0;
	for (i = 0; i < HTTP_NROUTES; i++) {
		p = http_routes[i].pattern;
		for (k = 0; k < n && *p != '\0'; k++) {
			e = p + strcspn(p, "/");
			if (!(e - p == 1 && *p == '*') &&
			    (strlen(seg[k]) != (size_t)(e - p) ||
			    memcmp(seg[k], p, (size_t)(e - p)) != 0))
				break;
			p = *e == '/' ? e + 1 : e;
		}
		if (k < n || *p != '\0')
			continue;
		*allow |= http_routes[i].method;
		if (http_routes[i].method == method)
			best = &http_routes[i];
	}
	return best;
}

/* The Allow header of a path's methods. */
static void http_allow(char *buf, size_t len, int allow)
{
	static const struct { int m; const char *name; } ms[] = {
		{ EVHTTP_REQ_GET, "GET" }, { EVHTTP_REQ_POST, "POST" },
		{ EVHTTP_REQ_PUT, "PUT" }, { EVHTTP_REQ_DELETE, "DELETE" },
	};
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof ms / sizeof ms[0]; i++)
		if (allow & ms[i].m)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
			    off > 0 ? ", " : "", ms[i].name);
	snprintf(buf + off, len - off, "%sOPTIONS", off > 0 ? ", " : "");
}

/*
 * Split uri's path under /v1/ into decoded segments (at most 6). The
 * count, or -1 when it is no path of ours or a segment decodes to a NUL.
 */
static int http_split(const char *uri, char **seg, size_t max, const char **query)
{
	const char *p, *e;
	size_t n = 0, len;
	char *d, tmp[1024];

	*query = strchr(uri, '?');
	if (strncmp(uri, "/v1/", 4) != 0)
		return -1;
	for (p = uri + 4; *p != '\0' && *p != '?'; p = *e == '/' ? e + 1 : e) {
		e = p + strcspn(p, "/?");
		len = (size_t)(e - p);
		if (n == max || len >= sizeof tmp)
			goto fail;
		memcpy(tmp, p, len);
		tmp[len] = '\0';
		if ((d = evhttp_uridecode(tmp, 0, &len)) == NULL)
			goto fail;
		if (strlen(d) != len || len == 0) {
			free(d);
			goto fail;
		}
		seg[n++] = d;
	}
	return (int)n;
fail:
	while (n > 0)
		free(seg[--n]);
	return -1;
}

/*
 * Is the request's Origin (a browser's) allowed: one of http-cors-origin,
 * or this daemon's own (its host is the Host header)? No Origin: not a
 * browser, allowed. The origin to answer with goes into r->origin.
 */
static bool http_origin_ok(struct hreq *r)
{
	const char *o = http_in_header(r, "Origin"), *host, *oh;

	if (o == NULL)
		return true;
	if (http_config_cors(http_cfg(r->f), o)) {
		snprintf(r->origin, sizeof r->origin, "%s", o);
		return true;
	}
	host = http_in_header(r, "Host");
	oh = strstr(o, "://");
	return host != NULL && oh != NULL && strcmp(oh + 3, host) == 0;
}

/* A preflight (OPTIONS): the methods and headers a browser may use. */
static void http_options(struct hreq *r, int allow)
{
	char methods[128];

	http_allow(methods, sizeof methods, allow);
	http_header(r, "Allow", methods);
	if (r->origin[0] != '\0') {
		http_header(r, "Access-Control-Allow-Methods", methods);
		http_header(r, "Access-Control-Allow-Headers", "Authorization, "
		    "Content-Type, Prefer, Idempotency-Key, Last-Event-ID");
		http_header(r, "Access-Control-Max-Age", "600");
	}
	http_reply_empty(r, 204, NULL, NULL);
}

/* Who r is: a bearer token's principal, or its connection's. False: 401. */
static bool http_identify(struct hreq *r)
{
	const char *a = http_in_header(r, "Authorization");
	const struct http_token *t;
	struct acl_subject s;
	int rc = 0;

	if (a == NULL || strncasecmp(a, "Bearer ", 7) != 0) {
		r->who = r->hc->who;
		r->who->refs++;
		return a == NULL;
	}
	for (a += 7; *a == ' '; a++)
		;
	if ((t = http_config_token(http_cfg(r->f), a, strlen(a))) == NULL)
		return false;
	acl_subject_init(&s);
	if (t->is_uid)
		rc = acl_subject_set_uid(&s, t->uid, t->user[0] != '\0' ?
		    t->user : NULL);
	else
		rc = acl_subject_set_cn(&s, t->principal + 3,
		    strlen(t->principal + 3));
	if (rc == 0)
		r->who = http_prin_get(r->f, &s);
	acl_subject_clear(&s);
	return r->who != NULL;
}

/*
 * The connection's identity, on its first request: a UNIX peer's uid
 * (its user and groups too when the rules name some), a TLS peer's
 * certificate name, or anonymous.
 */
static void http_conn_identify(struct hconn *hc)
{
	struct acl_subject s;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	SSL *ssl;

	acl_subject_init(&s);
	hc->identified = true;
	if (hc->l->is_unix && hc->fd >= 0 &&
	    peer_cred(hc->fd, &uid, &gid, &pid) == 0) {
		hc->pid = (uint32_t)pid;
		if (SRV_LIVE(hc->f->srv, acl_names) ? peer_subject(hc->fd, &s) != 0 :
		    acl_subject_set_uid(&s, uid, NULL) != 0)
			acl_subject_clear(&s);
	} else if (hc->l->tls &&
	    (ssl = bufferevent_openssl_get_ssl(hc->bev)) != NULL) {
		if (tls_peer_subject(ssl, &s) != 0)
			acl_subject_clear(&s);
	}
	hc->who = http_prin_get(hc->f, &s);
	acl_subject_clear(&s);
}

/* The response is written (or its connection failed): idle again. */
static void http_complete_cb(struct evhttp_request *req, void *arg)
{
	struct hconn *hc = arg;

	(void)req;
	hc->busy = false;
	if (hc->cur != NULL) {
		hc->cur->req = NULL;
		http_req_done(hc->cur);
	}
	list_del_init(&hc->entry);
	list_add_tail(&hc->entry, &hc->f->conns);	/* the idle order */
}

/* evhttp closes the connection. */
static void http_evcon_close_cb(struct evhttp_connection *evcon, void *arg)
{
	struct hconn *hc = arg;
	struct hreq *r = hc->cur;

	(void)evcon;
	hc->gone = true;
	event_active(hc->reap, EV_TIMEOUT, 0);	/* once evhttp let go of it */
	if (r != NULL) {
		/*
		 * A request evhttp let go of (its client left before the
		 * answer: evhttp keeps no pointer to it) is ours to free.
		 */
		if (r->req != NULL && evhttp_request_get_connection(r->req) == NULL)
			evhttp_request_free(r->req);
		r->req = NULL;
		http_req_done(r);
		if (r->gone != NULL)
			r->gone(r);
	}
}

/* The {...} segments of the path (taken out of seg) into r->args. */
static void http_take_args(struct hreq *r, const char *p, char **seg, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n && *p != '\0'; i++) {
		if (p[0] == '*' && k < sizeof r->args / sizeof r->args[0]) {
			r->args[k++] = seg[i];
			seg[i] = NULL;
		}
		p += strcspn(p, "/");
		if (*p == '/')
			p++;
	}
}

/* Our record of the connection whose bufferevent is bev, or NULL. */
static struct hconn *http_conn_find(struct http_front *f,
    const struct bufferevent *bev)
{
	uintptr_t key = (uintptr_t)bev;
	struct hnode *n = hmap_find(&f->conn_map, hmap_siphash(f->hash_key,
	    &key, sizeof key), http_conn_eq, bev);

	return n != NULL ? container_of(n, struct hconn, cnode) : NULL;
}

/* A request arrived, whole: who, may it, where it goes. */
static void http_request_cb(struct evhttp_request *req, void *arg)
{
	struct http_listener *l = arg;
	struct http_front *f = l->f;
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
	struct hconn *hc = NULL;
	const struct http_route *route;
	struct evbuffer *in;
	const char *query, *uri = evhttp_request_get_uri(req);
	char *seg[6], err[256], allow[128];
	struct hreq *r;
	int n, method = evhttp_request_get_command(req), allowm;
	uint64_t wait;
	size_t len;

	/* Our record of the connection, by its bufferevent. */
	hc = http_conn_find(f, bev);
	if (hc == NULL || f->stopping || (r = calloc(1, sizeof *r)) == NULL) {
		evhttp_send_error(req, 503, "Service Unavailable");
		return;
	}
	evtimer_del(hc->deadline);
	hc->busy = true;
	if (hc->evcon == NULL) {
		hc->evcon = evcon;
		evhttp_connection_set_closecb(evcon, http_evcon_close_cb, hc);
		hc->fd = bufferevent_getfd(bev);
	}
	if (!hc->identified)
		http_conn_identify(hc);
	evhttp_request_set_on_complete_cb(req, http_complete_cb, hc);
	r->f = f;
	r->req = req;
	r->hc = hc;
	r->refs = 1;
	hc->cur = r;
	if (hc->who == NULL) {
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	if (!http_origin_ok(r)) {
		http_problem(r, SEMD__CODE__PERMISSION_DENIED, "origin %s is not "
		    "allowed (http-cors-origin)", http_in_header(r, "Origin"));
		goto out;
	}
	if (http_ui_path(uri)) {	/* the web console's files: http_ui.c */
		http_ui_answer(req, http_cfg(f));
		http_req_done(r);
		goto out;
	}
	if ((n = http_split(uri, seg, sizeof seg / sizeof seg[0], &query)) < 0) {
		http_problem(r, SEMD__CODE__NOT_FOUND, "no such resource "
		    "(the API is under /v1/, a name one segment, percent-encoded)");
		goto out;
	}
	route = http_match(method, seg, (size_t)n, &allowm);
	if (route == NULL && method == EVHTTP_REQ_OPTIONS && allowm != 0) {
		http_options(r, allowm);
	} else if (route == NULL && allowm != 0) {
		http_allow(allow, sizeof allow, allowm);
		http_header(r, "Allow", allow);
		http_problem_status(r, SEMD__CODE__INVALID_ARGUMENT, 405,
		    "this resource does not take that method", NULL);
	} else if (route == NULL) {
		http_problem(r, SEMD__CODE__NOT_FOUND, "no such resource");
	} else if (!http_identify(r)) {
		http_header(r, "WWW-Authenticate", "Bearer realm=\"semd\"");
		http_problem_status(r, SEMD__CODE__PERMISSION_DENIED, 401,
		    "the bearer token matches no http-token line", NULL);
	} else if ((wait = http_rate_take(f, r->who)) > 0) {
		snprintf(allow, sizeof allow, "%llu",
		    (unsigned long long)(wait + 999) / 1000);
		http_header(r, "Retry-After", allow);
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "%s is over "
		    "http-rate %u requests a second", r->who->subj.principal,
		    http_cfg(f)->rate);
	} else {
		r->route = route;
		http_take_args(r, route->pattern, seg, (size_t)n);
		if (query != NULL && evhttp_parse_query_str(query + 1, &r->query) == 0)
			r->query_ok = true;
		else if (query != NULL)
			http_problem(r, SEMD__CODE__INVALID_ARGUMENT,
			    "the query string is malformed");
		in = evhttp_request_get_input_buffer(req);
		len = evbuffer_get_length(in);
		if (!r->answered && (method == EVHTTP_REQ_POST ||
		    method == EVHTTP_REQ_PUT)) {
			r->body = http_json_load((const char *)evbuffer_pullup(in,
			    (ev_ssize_t)len), len, err, sizeof err);
			if (r->body == NULL)
				http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "%s", err);
		} else if (!r->answered && len > 0) {
			http_problem(r, SEMD__CODE__INVALID_ARGUMENT,
			    "this method takes no body");
		}
		if (!r->answered)
			route->fn(r);
	}
	while (n > 0)
		free(seg[--n]);
out:
	http_req_put(r);
}

/* --- connections ---------------------------------------------------------- */

/* A request was begun and not finished in time: cut the client off. */
static void http_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *hc = arg;
	int s = bufferevent_getfd(hc->bev);

	(void)fd;
	(void)what;
	if (hc->busy || hc->gone)
		return;
	log_info("http %s: no whole request within http-request-timeout, closing",
	    hc->peer);
	if (s >= 0)
		shutdown(s, SHUT_RDWR);		/* evhttp sees EOF and frees it */
}

/*
 * Bytes arrived on a connection (its input buffer grew): the first of a
 * request starts its deadline.
 */
static void http_in_added(struct evbuffer *b,
    const struct evbuffer_cb_info *info, void *arg)
{
	struct hconn *hc = arg;

	(void)b;
	if (info->n_added > 0 && !hc->nodelay) {
		/* Its first bytes: answers go out without Nagle's wait. */
		int fd = bufferevent_getfd(hc->bev), one = 1;

		hc->nodelay = true;
		if (fd >= 0 && !hc->l->is_unix)
			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	}
	if (info->n_added == 0 || hc->busy || evtimer_pending(hc->deadline, NULL))
		return;
	http_arm(hc->deadline, http_cfg(hc->f)->request_timeout_ms);
}

/*
 * Free our record of a connection evhttp is done with, and let go of our
 * reference to its bufferevent (the last one: its socket closes).
 */
static void http_conn_reap(struct hconn *hc)
{
	struct hreq *r = hc->cur;

	if (r != NULL) {
		r->req = NULL;
		http_req_done(r);
		if (r->gone != NULL)
			r->gone(r);
	}
	if (hc->in_cb != NULL)
		evbuffer_remove_cb_entry(bufferevent_get_input(hc->bev), hc->in_cb);
	list_del_init(&hc->entry);
	hmap_remove(&hc->f->conn_map, &hc->cnode);
	hc->f->nconns--;
	if (hc->deadline != NULL)
		event_free(hc->deadline);
	if (hc->watch != NULL)
		event_free(hc->watch);
	if (hc->reap != NULL)
		event_free(hc->reap);
	http_prin_put(hc->f, hc->who);
	bufferevent_decref(hc->bev);
	free(hc);
}

/* The reap event: evhttp closed the connection in the callback before. */
static void http_reap_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	http_conn_reap(arg);
}

/*
 * Has evhttp freed this connection's bufferevent (which our reference
 * keeps)? It takes its callbacks away when it does; while it serves it,
 * its read callback is always set.
 */
static bool http_conn_dropped(const struct hconn *hc)
{
	bufferevent_data_cb rcb = NULL;

	bufferevent_getcb(hc->bev, &rcb, NULL, NULL, NULL);
	return rcb == NULL;
}

/* The second's sweep: reap the connections evhttp dropped before a request. */
static void http_conn_sweep(struct http_front *f, bool all)
{
	struct list_head *pos, *tmp;
	struct hconn *hc;

	list_for_each_safe(pos, tmp, &f->conns) {
		hc = list_entry(pos, struct hconn, entry);
		if (all || (hc->evcon == NULL && http_conn_dropped(hc)))
			http_conn_reap(hc);
	}
}

/* At http-max-connections: close the connection idle the longest. */
static bool http_make_room(struct http_front *f)
{
	struct list_head *pos;
	struct hconn *hc;
	int fd;

	list_for_each(pos, &f->conns) {
		hc = list_entry(pos, struct hconn, entry);
		if (hc->evcon == NULL && http_conn_dropped(hc)) {
			http_conn_reap(hc);	/* gone already: its room is free */
			return true;
		}
		if (hc->busy || hc->gone ||
		    (fd = bufferevent_getfd(hc->bev)) < 0)
			continue;
		log_info("http: http-max-connections %u reached: closing %s, "
		    "idle the longest", http_cfg(f)->max_connections, hc->peer);
		hc->gone = true;
		shutdown(fd, SHUT_RDWR);
		return true;
	}
	return false;
}

/* Is this the record of that bufferevent? */
static bool http_conn_eq(const struct hnode *n, const void *key)
{
	return container_of(n, struct hconn, cnode)->bev == key;
}

/*
 * A new connection (evhttp asks for its bufferevent before it sets the
 * socket in): a socket's, or a TLS one's. We keep a reference to it, so
 * that its memory and its socket stay ours until we have seen evhttp drop
 * it (its close callback, or, before its first request, the sweep).
 */
static struct bufferevent *http_bevcb(struct event_base *base, void *arg)
{
	struct http_listener *l = arg;
	struct http_front *f = l->f;
	struct bufferevent *bev = NULL;
	struct hconn *hc;
	uintptr_t key;
	SSL *ssl;

	if (f->nconns >= http_cfg(f)->max_connections && !http_make_room(f))
		log_warn("http: http-max-connections %u reached, every "
		    "connection busy", http_cfg(f)->max_connections);
	if ((hc = calloc(1, sizeof *hc)) == NULL)
		return NULL;
	hc->f = f;
	hc->l = l;
	hc->fd = -1;
	snprintf(hc->peer, sizeof hc->peer, "%s", l->addr);
	if (l->tls) {
		if (f->srv->tls != NULL &&
		    (ssl = tls_server_ssl_new(f->srv->tls)) != NULL &&
		    (bev = bufferevent_openssl_socket_new(base, -1, ssl,
		    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE)) == NULL)
			SSL_free(ssl);
	} else {
		bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	}
	hc->deadline = evtimer_new(base, http_deadline_cb, hc);
	hc->reap = event_new(base, -1, 0, http_reap_cb, hc);
	if (bev == NULL || hc->deadline == NULL || hc->reap == NULL ||
	    (hc->in_cb = evbuffer_add_cb(bufferevent_get_input(bev),
	    http_in_added, hc)) == NULL) {
		if (bev != NULL)
			bufferevent_free(bev);
		if (hc->deadline != NULL)
			event_free(hc->deadline);
		if (hc->reap != NULL)
			event_free(hc->reap);
		free(hc);
		return NULL;
	}
	hc->bev = bev;
	bufferevent_incref(bev);
	key = (uintptr_t)bev;
	hmap_insert(&f->conn_map, &hc->cnode, hmap_siphash(f->hash_key, &key,
	    sizeof key));
	list_add_tail(&hc->entry, &f->conns);
	f->nconns++;
	/* The first request (and a TLS handshake) within the deadline. */
	http_arm(hc->deadline, http_cfg(f)->request_timeout_ms);
	return bev;
}

/* --- listeners ------------------------------------------------------------ */

/* Is spec an HTTP listener? */
bool http_listener_kind(const char *spec)
{
	return strncmp(spec, "http:", 5) == 0 || strncmp(spec, "https:", 6) == 0 ||
	    strncmp(spec, "http+unix:", 10) == 0;
}

/* Check an HTTP listener address. */
int http_listener_check(const char *spec, char *err, size_t errlen)
{
	const char *rest, *port;

	if (strncmp(spec, "http+unix:", 10) == 0) {
		if (spec[10] == '\0' || strlen(spec + 10) >= 108) {
			snprintf(err, errlen, "listen %s: want http+unix:PATH "
			    "(a path shorter than 108 bytes)", spec);
			return -EINVAL;
		}
		return 0;
	}
	rest = spec + (spec[4] == 's' ? 6 : 5);
	port = strrchr(rest, ':');
	if (port == NULL || port == rest || port[1] == '\0' ||
	    strspn(port + 1, "0123456789") != strlen(port + 1) ||
	    atol(port + 1) > 65535) {
		snprintf(err, errlen, "listen %s: want http:HOST:PORT, "
		    "https:HOST:PORT (or [ADDR6]:PORT) or http+unix:PATH", spec);
		return -EINVAL;
	}
	return 0;
}

/* The front door, made with the first listener. */
static struct http_front *http_front_new(struct server *srv)
{
	struct http_front *f;

	if (http_the_front != NULL)
		return http_the_front;
	if (http_defaults == NULL && (http_defaults = http_config_default()) == NULL)
		return NULL;
	if ((f = calloc(1, sizeof *f)) == NULL)
		return NULL;
	f->srv = srv;
	f->w = &srv->workers[0];
	f->base = srv->workers[0].base;
	INIT_LIST_HEAD(&f->listeners);
	INIT_LIST_HEAD(&f->conns);
	INIT_LIST_HEAD(&f->prin_list);
	INIT_LIST_HEAD(&f->gate_lru);
	INIT_LIST_HEAD(&f->waiter_list);
	INIT_LIST_HEAD(&f->idem_list);
	INIT_LIST_HEAD(&f->watches);
	INIT_LIST_HEAD(&f->all_gates);
	if (getrandom(f->hash_key, sizeof f->hash_key, 0) !=
	    (ssize_t)sizeof f->hash_key ||
	    hmap_init(&f->prins, 16) != 0 || hmap_init(&f->gates, 64) != 0 ||
	    hmap_init(&f->conn_map, 64) != 0 ||
	    hmap_init(&f->waiters, 64) != 0 || hmap_init(&f->idem, 64) != 0) {
		free(f);
		return NULL;
	}
	http_the_front = f;
	return f;
}

/* The second's work: settings, idle gates, leases, principals. */
static void http_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http_front *f = arg;
	const struct http_config *hc = http_cfg(f);
	struct list_head *pos;
	struct timeval tv;

	(void)fd;
	(void)what;
	if (hc->serial != f->cfg_serial) {
		f->cfg_serial = hc->serial;
		tv.tv_sec = hc->idle_timeout_ms / 1000;
		tv.tv_usec = (suseconds_t)(hc->idle_timeout_ms % 1000) * 1000;
		list_for_each(pos, &f->listeners) {
			struct http_listener *l = list_entry(pos,
			    struct http_listener, entry);

			evhttp_set_max_headers_size(l->evh, hc->max_header);
			evhttp_set_max_body_size(l->evh, hc->max_body);
			evhttp_set_timeout_tv(l->evh, &tv);
		}
	}
	gate_sweep(f, false);
	http_acquire_sweep(f, false);
	http_conn_sweep(f, false);
	http_prin_sweep(f, false);
}

/* Open an HTTP listener on the first loop. */
int http_listen(struct server *srv, const char *spec)
{
	struct http_front *f = http_front_new(srv);
	struct http_listener *l;
	struct timeval tv = { 1, 0 };
	char tcp[300], *name;
	bool is_unix;
	int fd;

	if (f == NULL)
		return -ENOMEM;
	if (strncmp(spec, "http+unix:", 10) == 0) {
		fd = listener_bind_unix(srv, spec + 10, srv->cfg.unix_mode);
	} else {
		snprintf(tcp, sizeof tcp, "tcp:%s", spec + (spec[4] == 's' ? 6 : 5));
		fd = listener_bind_tcp(tcp);
	}
	if (fd < 0)
		return fd;
	if (spec[4] == 's' && srv->tls == NULL &&
	    (srv->tls = tlsconf_server(&srv->cfg)) == NULL) {
		close(fd);
		return -EINVAL;
	}
	if ((l = calloc(1, sizeof *l)) == NULL ||
	    (l->evh = evhttp_new(f->base)) == NULL ||
	    (name = listener_name(fd, &is_unix)) == NULL) {
		if (l != NULL && l->evh != NULL)
			evhttp_free(l->evh);
		free(l);
		close(fd);
		return -ENOMEM;
	}
	l->f = f;
	l->tls = spec[4] == 's';
	l->is_unix = is_unix;
	if (is_unix) {
		l->unlink_path = strdup(spec + 10);
		l->addr = malloc(strlen(name) + 6);
		if (l->addr != NULL)
			sprintf(l->addr, "http+%s", name);
	} else {
		l->addr = malloc(strlen(name) + 3);
		if (l->addr != NULL)
			sprintf(l->addr, "%s:%s", l->tls ? "https" : "http",
			    strchr(name, ':') + 1);
	}
	free(name);
	evhttp_set_allowed_methods(l->evh, HTTP_METHODS);
	evhttp_set_bevcb(l->evh, http_bevcb, l);
	evhttp_set_gencb(l->evh, http_request_cb, l);
	evhttp_set_default_content_type(l->evh, "application/json");
	/* A body too big is read and dropped, so that the 413 is heard. */
	evhttp_set_flags(l->evh, EVHTTP_SERVER_LINGERING_CLOSE);
	if (l->addr == NULL ||
	    (l->bound = evhttp_accept_socket_with_handle(l->evh, fd)) == NULL) {
		evhttp_free(l->evh);
		free(l->addr);
		free(l->unlink_path);
		free(l);
		close(fd);
		return -ENOMEM;
	}
	list_add_tail(&l->entry, &f->listeners);
	f->cfg_serial = 0;		/* the settings at the next tick */
	if (f->tick == NULL) {
		f->tick = event_new(f->base, -1, EV_PERSIST, http_tick_cb, f);
		if (f->tick == NULL)
			return -ENOMEM;
		event_add(f->tick, &tv);
	}
	http_tick_cb(-1, 0, f);
	log_notice("listening on %s", l->addr);
	return 0;
}

/* Every HTTP listener's address. */
void http_listeners_each(void (*fn)(void *arg, const char *addr), void *arg)
{
	struct list_head *pos;

	if (http_the_front == NULL)
		return;
	list_for_each(pos, &http_the_front->listeners)
		fn(arg, list_entry(pos, struct http_listener, entry)->addr);
}

/* A stop: no more connections, streams end, waiting requests are told. */
void http_unlisten(struct server *srv)
{
	struct http_front *f = http_the_front;
	struct list_head *pos;
	struct http_listener *l;

	(void)srv;
	if (f == NULL || f->stopping)
		return;
	f->stopping = true;
	list_for_each(pos, &f->listeners) {
		l = list_entry(pos, struct http_listener, entry);
		if (l->bound != NULL)
			evhttp_del_accept_socket(l->evh, l->bound);
		l->bound = NULL;
		if (l->unlink_path != NULL)
			unlink(l->unlink_path);
	}
	http_watch_stop_all(f);
}

/* After the loops: free it all. */
void http_free(void)
{
	struct http_front *f = http_the_front;
	struct http_listener *l;
	struct list_head *pos, *tmp;

	if (f == NULL)
		return;
	f->stopping = true;
	http_watch_stop_all(f);
	list_for_each_safe(pos, tmp, &f->listeners) {
		l = list_entry(pos, struct http_listener, entry);
		list_del_init(&l->entry);
		evhttp_free(l->evh);	/* its connections too (not our refs) */
		if (l->unlink_path != NULL)
			unlink(l->unlink_path);
		free(l->unlink_path);
		free(l->addr);
		free(l);
	}
	http_acquire_sweep(f, true);
	gate_free_all(f);
	http_conn_sweep(f, true);
	http_prin_sweep(f, true);
	if (f->tick != NULL)
		event_free(f->tick);
	hmap_destroy(&f->prins);
	hmap_destroy(&f->conn_map);
	hmap_destroy(&f->gates);
	hmap_destroy(&f->waiters);
	hmap_destroy(&f->idem);
	free(f);
	http_the_front = NULL;
	http_config_put(http_defaults);
	http_defaults = NULL;
}
