/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_front.c - the HTTP front door (doc/http.md): its
 * listeners, whose connections the connection layer deals to every loop
 * (http_conn.c reads and answers them); each loop's part (struct hworker:
 * its settings, its tick, its job queue); who a request is (the transport's
 * identity or a bearer token); the Origin check, CORS, the per-principal
 * rate; routing; answers and problems (RFC 9457), written straight into
 * the connection's output.
 *
 * A request runs on its connection's loop, but for what needs the first
 * loop's tables (waiters, idempotency keys): http_home() sends it there
 * through that loop's job queue, and its answer, made there, comes back
 * through the queue of its connection's loop.
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/listener.h>

#include "daemon/access.h"
#include "daemon/config.h"
#include "daemon/conn.h"
#include "daemon/feed.h"
#include "daemon/http/http-int.h"
#include "daemon/http/http.h"
#include "daemon/http/http_parse.h"
#include "daemon/http/http_ui.h"
#include "daemon/listen.h"
#include "daemon/logging.h"
#include "daemon/server.h"
#include "daemon/tlsconf.h"

struct http_front *http_the_front;

#define HTTP_KEEP_PRIN_MS	60000	/* an unused principal's entry goes */
#define HTTP_TICK_MS		250	/* the loops' deadlines are looked at */
#define HTTP_SEGS		6	/* path segments under /v1/ */

/* The routes, under /v1/ (state: a follower redirects them). */
static void http_route_openapi(struct hreq *r);

static const struct http_route http_routes[] = {
	{ HTTP_GET, "openapi.json", http_route_openapi, false },
	{ HTTP_GET, "server", http_route_server, false },
	{ HTTP_GET, "semaphores", http_route_list, true },
	{ HTTP_PUT, "semaphores/*", http_route_create, true },
	{ HTTP_GET, "semaphores/*", http_route_info, true },
	{ HTTP_DELETE, "semaphores/*", http_route_delete, true },
	{ HTTP_PUT, "semaphores/*/limit", http_route_set_limit, true },
	{ HTTP_PUT, "semaphores/*/rate", http_route_set_rate, true },
	{ HTTP_PUT, "semaphores/*/queue", http_route_set_queue, true },
	{ HTTP_POST, "semaphores/*/permits", http_route_acquire, true },
	{ HTTP_GET, "semaphores/*/permits/*", http_route_permit, true },
	{ HTTP_DELETE, "semaphores/*/permits/*", http_route_release, true },
	{ HTTP_POST, "semaphores/*/permits/*/renew", http_route_renew, true },
	{ HTTP_DELETE, "semaphores/*/waiters/*", http_route_cancel_queued,
	    true },
	{ HTTP_POST, "semaphores/*/up", http_route_up, true },
	{ HTTP_GET, "semaphores/*/tokens/*", http_route_validate, true },
	{ HTTP_POST, "permits", http_route_acquire_many, true },
	{ HTTP_GET, "waiters/*", http_route_waiter_get, true },
	{ HTTP_DELETE, "waiters/*", http_route_waiter_delete, true },
	{ HTTP_POST, "waiters/*/renew", http_route_waiter_renew, true },
	{ HTTP_GET, "holds", http_route_holds, true },
	{ HTTP_GET, "sessions", http_route_sessions, true },
	{ HTTP_GET, "watch", http_route_watch, true },
	{ HTTP_GET, "stats", http_route_stats, true },
	{ HTTP_GET, "cluster", http_route_cluster, false },
	{ HTTP_POST, "cluster/members", http_route_member_add, true },
	{ HTTP_DELETE, "cluster/members/*", http_route_member_remove, true },
	{ HTTP_POST, "cluster/leader", http_route_transfer, true },
	{ HTTP_GET, "backup", http_route_backup, true },
};
#define HTTP_NROUTES	(sizeof http_routes / sizeof http_routes[0])

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

/* The loop's part this thread runs. */
struct hworker *http_here(void)
{
	return &http_the_front->hw[worker_self->idx];
}

/* The settings r is served with (its route's loop's copy). */
const struct http_config *http_settings(const struct hreq *r)
{
	return r->rw->cfg;
}

/* The server's max-lease (its route's loop's copy). */
uint32_t http_max_lease(const struct hreq *r)
{
	return r->rw->max_lease_ms;
}

/* The status line of an answer, its reason phrase with it. */
static const char *http_status_line(int status, size_t *len)
{
	static const struct { int status; const char *line; } lines[] = {
		{ 200, "HTTP/1.1 200 OK\r\n" },
		{ 201, "HTTP/1.1 201 Created\r\n" },
		{ 202, "HTTP/1.1 202 Accepted\r\n" },
		{ 204, "HTTP/1.1 204 No Content\r\n" },
		{ 301, "HTTP/1.1 301 Moved Permanently\r\n" },
		{ 304, "HTTP/1.1 304 Not Modified\r\n" },
		{ 307, "HTTP/1.1 307 Temporary Redirect\r\n" },
		{ 400, "HTTP/1.1 400 Bad Request\r\n" },
		{ 401, "HTTP/1.1 401 Unauthorized\r\n" },
		{ 403, "HTTP/1.1 403 Forbidden\r\n" },
		{ 404, "HTTP/1.1 404 Not Found\r\n" },
		{ 405, "HTTP/1.1 405 Method Not Allowed\r\n" },
		{ 408, "HTTP/1.1 408 Request Timeout\r\n" },
		{ 409, "HTTP/1.1 409 Conflict\r\n" },
		{ 410, "HTTP/1.1 410 Gone\r\n" },
		{ 413, "HTTP/1.1 413 Content Too Large\r\n" },
		{ 417, "HTTP/1.1 417 Expectation Failed\r\n" },
		{ 422, "HTTP/1.1 422 Unprocessable Content\r\n" },
		{ 429, "HTTP/1.1 429 Too Many Requests\r\n" },
		{ 431, "HTTP/1.1 431 Request Header Fields Too Large\r\n" },
		{ 500, "HTTP/1.1 500 Internal Server Error\r\n" },
		{ 501, "HTTP/1.1 501 Not Implemented\r\n" },
		{ 503, "HTTP/1.1 503 Service Unavailable\r\n" },
		{ 505, "HTTP/1.1 505 HTTP Version Not Supported\r\n" },
	};
	size_t i;

	for (i = 0; i < sizeof lines / sizeof lines[0]; i++)
		if (lines[i].status == status) {
			*len = strlen(lines[i].line);
			return lines[i].line;
		}
	*len = strlen("HTTP/1.1 500 Internal Server Error\r\n");
	return "HTTP/1.1 500 Internal Server Error\r\n";
}

/*
 * The Date field of an answer ("Date: ...\r\n"), made once a second per
 * thread (formatting it for each answer is a tenth of a small answer).
 */
static const char *http_date(void)
{
	static const char days[][4] = { "Sun", "Mon", "Tue", "Wed", "Thu",
	    "Fri", "Sat" };
	static const char months[][4] = { "Jan", "Feb", "Mar", "Apr", "May",
	    "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	static _Thread_local char date[48];
	static _Thread_local time_t made = -1;
	time_t now = time(NULL);
	struct tm tm;

	if (now != made && gmtime_r(&now, &tm) != NULL) {
		snprintf(date, sizeof date, "Date: %s, %02d %s %04d %02d:%02d:%02d "
		    "GMT\r\n", days[tm.tm_wday % 7], tm.tm_mday,
		    months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour,
		    tm.tm_min, tm.tm_sec);
		made = now;
	}
	return date;
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
	struct hnode *n;
	struct hprin *p;

	pthread_mutex_lock(&f->plock);
	if ((n = hmap_find(&f->prins, h, http_prin_eq, &k)) != NULL) {
		p = container_of(n, struct hprin, node);
		p->refs++;
		pthread_mutex_unlock(&f->plock);
		return p;
	}
	if ((p = calloc(1, sizeof *p)) == NULL)
		goto out;
	if (access_subject_copy(&p->subj, s) != 0) {
		acl_subject_clear(&p->subj);
		free(p);
		p = NULL;
		goto out;
	}
	p->refs = 1;
	p->used_ms = p->refill_ms = http_now();
	p->tokens_milli = UINT64_MAX;	/* full */
	hmap_insert(&f->prins, &p->node, h);
	list_add_tail(&p->entry, &f->prin_list);
out:
	pthread_mutex_unlock(&f->plock);
	return p;
}

/* One more reference to p. */
void http_prin_hold(struct hprin *p)
{
	struct http_front *f = http_the_front;

	pthread_mutex_lock(&f->plock);
	p->refs++;
	pthread_mutex_unlock(&f->plock);
}

/* Drop a reference (the entry stays a while: its rate bucket). */
void http_prin_put(struct http_front *f, struct hprin *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&f->plock);
	if (p->refs > 0) {
		p->refs--;
		p->used_ms = http_now();
	}
	pthread_mutex_unlock(&f->plock);
}

/* Free the entries nobody refers to for a while (all: every unused one). */
static void http_prin_sweep(struct http_front *f, bool all)
{
	struct list_head *pos, *tmp;
	struct hprin *p;
	uint64_t now = http_now();

	pthread_mutex_lock(&f->plock);
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
	pthread_mutex_unlock(&f->plock);
}

/*
 * May p make one more request (http-rate a second each principal, a
 * burst of as many)? 0, or the ms until it may.
 */
static uint64_t http_rate_take(const struct http_config *hc, struct hprin *p)
{
	struct http_front *f = http_the_front;
	uint32_t rate = hc->rate;
	uint64_t now, cap, add, wait = 0;

	if (rate == 0)
		return 0;
	now = http_now();
	cap = (uint64_t)rate * 1000;
	pthread_mutex_lock(&f->plock);
	add = (now - p->refill_ms) * rate;	/* milli-requests */
	p->refill_ms = now;
	p->tokens_milli = p->tokens_milli > cap || add >= cap - p->tokens_milli ?
	    cap : p->tokens_milli + add;
	if (p->tokens_milli >= 1000)
		p->tokens_milli -= 1000;
	else
		wait = (1000 - p->tokens_milli + rate - 1) / rate;
	pthread_mutex_unlock(&f->plock);
	return wait;
}

/* --- what was asked ------------------------------------------------------- */

/* r's method. */
int http_method(const struct hreq *r)
{
	return r->method;
}

/* r's target as it was sent. */
const char *http_uri(const struct hreq *r)
{
	return r->target != NULL ? r->target : "";
}

/* Is r's client still there, its answer not made yet? */
bool http_live(const struct hreq *r)
{
	return !r->answered &&
	    !atomic_load_explicit(&r->left, memory_order_acquire);
}

/* The address of r's TCP or TLS peer. */
const char *http_peer_host(const struct hreq *r)
{
	return r->host;
}

/* The process id of r's UNIX peer. */
uint32_t http_peer_pid(const struct hreq *r)
{
	return r->pid;
}

/* The loop that runs r's route. */
struct event_base *http_loop(const struct hreq *r)
{
	return r->rw->base;
}

/* A request header, or NULL. */
const char *http_in_header(const struct hreq *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nfields; i++)
		if (strcasecmp(r->fields[i].name, name) == 0)
			return r->fields[i].value;
	return NULL;
}

/* A query parameter, or NULL. */
const char *http_query(struct hreq *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nquery; i++)
		if (strcmp(r->query[i].name, name) == 0)
			return r->query[i].value;
	return NULL;
}

/*
 * Read r's query (after '?' in its target) into r->query, decoded ('+' a
 * space): false when it is malformed (a broken escape, an escaped NUL).
 */
static bool http_parse_query(struct hreq *r, const char *q)
{
	size_t len = strlen(q), n = 1, i, k, vlen;
	const char *p, *amp, *eq;
	char *d;
	ssize_t dl;

	for (i = 0; i < len; i++)
		n += q[i] == '&';
	r->query = malloc(n * sizeof *r->query + 2 * (len + n) + 2);
	if (r->query == NULL)
		return false;
	d = (char *)(r->query + n);
	for (p = q, k = 0; *p != '\0'; p = *amp != '\0' ? amp + 1 : amp) {
		amp = p + strcspn(p, "&");
		if (amp == p)
			continue;
		eq = memchr(p, '=', (size_t)(amp - p));
		if ((dl = hp_unescape(d, p, (size_t)((eq != NULL ? eq : amp) - p),
		    true)) < 0)
			return false;
		r->query[k].name = d;
		d += dl + 1;
		vlen = eq != NULL ? (size_t)(amp - eq - 1) : 0;
		if ((dl = hp_unescape(d, eq != NULL ? eq + 1 : "", vlen,
		    true)) < 0)
			return false;
		r->query[k].value = d;
		d += dl + 1;
		k++;
	}
	r->nquery = k;
	return true;
}

/* --- answers -------------------------------------------------------------- */

/* Append s[0..n) at *p (s may be NULL when n is 0). */
static void http_put(uint8_t **p, const char *s, size_t n)
{
	if (n == 0)
		return;
	memcpy(*p, s, n);
	*p += n;
}

/* A response header to add to r's answer (a value with a line break is not). */
void http_header(struct hreq *r, const char *name, const char *value)
{
	size_t nl, vl, need, cap;
	uint8_t *p;
	char *h;

	if (value == NULL || r->answered || strpbrk(value, "\r\n") != NULL)
		return;
	nl = strlen(name);
	vl = strlen(value);
	need = nl + vl + 4;
	if (r->hcap - r->hlen < need) {
		cap = r->hcap ? r->hcap : 256;
		while (cap - r->hlen < need)
			cap *= 2;
		if ((h = realloc(r->hdrs, cap)) == NULL)
			return;
		r->hdrs = h;
		r->hcap = cap;
	}
	p = (uint8_t *)r->hdrs + r->hlen;
	http_put(&p, name, nl);
	http_put(&p, ": ", 2);
	http_put(&p, value, vl);
	http_put(&p, "\r\n", 2);
	r->hlen += need;
	if (strcasecmp(name, "Cache-Control") == 0)
		r->cache_set = true;
}

/* Write n in decimal at p; the digits written. */
static size_t http_put_u64(char *p, uint64_t n)
{
	char tmp[24];
	size_t i = 0, k;

	do
		tmp[i++] = (char)('0' + n % 10);
	while ((n /= 10) != 0);
	for (k = 0; k < i; k++)
		p[k] = tmp[i - 1 - k];
	return i;
}


/* The CORS fields of an answer to an allowed origin, into buf; their length. */
static size_t http_cors_fields(const struct hreq *r, char *buf, size_t len)
{
	int n;

	if (r->origin[0] == '\0')
		return 0;
	n = snprintf(buf, len, "Access-Control-Allow-Origin: %s\r\nVary: Origin\r\n"
	    "Access-Control-Expose-Headers: Location, Preference-Applied, "
	    "Retry-After\r\n", r->origin);
	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

/*
 * Answer r: the status line, the fields (Date, the type, the length or a
 * chunked coding for a stream, Cache-Control, CORS, the route's, how the
 * connection goes on) and the body (none to HEAD, 204 and 304), written in
 * one piece where it goes (http_conn.c: the connection, or kept for its
 * turn). stream: the body follows in chunks (http_stream_*).
 */
static void http_answer(struct hreq *r, int status, const char *type,
    const void *body, size_t blen, bool stream)
{
	char cors[512], clen[24];
	const char *line, *date = http_date();
	size_t llen, tlen = type != NULL ? strlen(type) : 0, dlen = strlen(date);
	size_t corslen = http_cors_fields(r, cors, sizeof cors), nlen = 0, total;
	bool cache = (r->method & (HTTP_GET | HTTP_HEAD)) && !r->cache_set;
	bool nobody = r->method == HTTP_HEAD || status == 204 || status == 304;
	bool chunked = stream && r->minor >= 1 && r->method != HTTP_HEAD;
	uint8_t *p;

	if (r->answered)
		return;
	r->answered = true;
	if (stream && r->minor == 0)
		r->close = true;	/* HTTP/1.0: the stream ends with the connection */
	line = http_status_line(status, &llen);
	if (!stream && status != 204 && status != 304)
		nlen = http_put_u64(clen, blen);
	total = llen + dlen + (tlen > 0 ? 16 + tlen : 0) +
	    (nlen > 0 ? 18 + nlen : 0) + (chunked ? 28 : 0) +
	    (cache ? 25 : 0) + corslen + r->hlen +
	    (r->close ? 19 : r->minor == 0 ? 24 : 0) + 2 + (nobody ? 0 : blen);
	if ((p = hconn_room(r, total)) == NULL) {
		r->final = true;
		hconn_final(r);
		return;
	}
	http_put(&p, line, llen);
	http_put(&p, date, dlen);
	if (tlen > 0) {
		http_put(&p, "Content-Type: ", 14);
		http_put(&p, type, tlen);
		http_put(&p, "\r\n", 2);
	}
	if (nlen > 0) {
		http_put(&p, "Content-Length: ", 16);
		http_put(&p, clen, nlen);
		http_put(&p, "\r\n", 2);
	}
	if (chunked)
		http_put(&p, "Transfer-Encoding: chunked\r\n", 28);
	if (cache)
		http_put(&p, "Cache-Control: no-store\r\n", 25);
	http_put(&p, cors, corslen);
	if (r->hlen > 0)
		http_put(&p, r->hdrs, r->hlen);
	if (r->close)
		http_put(&p, "Connection: close\r\n", 19);
	else if (r->minor == 0)
		http_put(&p, "Connection: keep-alive\r\n", 24);
	http_put(&p, "\r\n", 2);
	if (!nobody && blen > 0)
		http_put(&p, body, blen);
	hconn_done(r, total);
	if (stream && r->method != HTTP_HEAD) {
		r->streaming = true;
		return;
	}
	hconn_final(r);
}

/* Answer with a JSON body (taken), of type (NULL: application/json). */
static void http_reply_typed(struct hreq *r, int status, json_t *body,
    const char *type)
{
	char quick[4096], *big = NULL;
	size_t n = 0;

	if (r->answered) {
		json_decref(body);
		return;
	}
	/* most answers: written here at once; a big one sized first */
	if (body != NULL && (n = json_dumpb(body, quick, sizeof quick - 1,
	    JSON_COMPACT)) > sizeof quick - 1) {
		if ((big = malloc(n + 1)) == NULL ||
		    json_dumpb(body, big, n, JSON_COMPACT) != n)
			n = 0;
	}
	json_decref(body);
	if (body != NULL && n == 0) {
		free(big);
		http_answer(r, 500, "text/plain", "out of memory\n", 14, false);
		return;
	}
	if (big != NULL)
		big[n++] = '\n';
	else if (body != NULL)
		quick[n++] = '\n';
	http_answer(r, status, body != NULL ? (type != NULL ? type :
	    "application/json") : NULL, big != NULL ? big : quick, n, false);
	free(big);
}

/* Answer with a JSON body (taken). */
void http_reply_json(struct hreq *r, int status, json_t *body)
{
	http_reply_typed(r, status, body, NULL);
}

/* Answer with JSON text already written, json[0..len). */
void http_reply_text(struct hreq *r, int status, const char *json, size_t len)
{
	char quick[4096];

	if (len < sizeof quick) {
		memcpy(quick, json, len);
		quick[len] = '\n';
		http_answer(r, status, "application/json", quick, len + 1, false);
		return;
	}
	http_answer(r, status, "application/json", json, len, false);
}

/* Answer with bytes that live as long as the process; to HEAD, their length. */
void http_reply_static(struct hreq *r, int status, const char *type,
    const void *data, size_t len)
{
	http_answer(r, status, type, data, len, false);
}

/* Answer with a line of plain text (NULL: no body). */
void http_reply_plain(struct hreq *r, int status, const char *text)
{
	char buf[512];
	int n;

	if (text == NULL) {
		http_answer(r, status, NULL, NULL, 0, false);
		return;
	}
	n = snprintf(buf, sizeof buf, "%s\n", text);
	http_answer(r, status, "text/plain; charset=utf-8", buf,
	    n > 0 && (size_t)n < sizeof buf ? (size_t)n : 0, false);
}

/* Answer with no body (a header name: value, when not NULL). */
void http_reply_empty(struct hreq *r, int status, const char *hname,
    const char *hvalue)
{
	if (hname != NULL)
		http_header(r, hname, hvalue);
	http_answer(r, status, NULL, NULL, 0, false);
}

/* A problem with an HTTP status of its own (not the code's). */
static void http_problem_status(struct hreq *r, int code, int status,
    const char *detail, json_t *more)
{
	char inst[512];
	json_t *p;

	snprintf(inst, sizeof inst, "%s", http_uri(r));
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
 * leader when its URL is known (http-nodes), else 503 naming it. A node
 * that leads but does not serve yet (its first entry not applied) is
 * named as the leader by its own log: 503 with Retry-After, never a
 * redirect to itself. True.
 */
bool http_redirect(struct hreq *r, uint64_t leader_id, const char *leader)
{
	const char *base = http_config_node_url(http_settings(r), leader_id);
	char loc[2048], detail[64];
	json_t *more;

	if (leader_id != 0 && leader_id == r->f->srv->cfg.node_id) {
		more = json_pack("{s:I}", "leader_id", (json_int_t)leader_id);
		http_problem_status(r, SEMD__CODE__UNAVAILABLE, 503, "this node "
		    "was elected and does not serve yet: try again", more);
		return true;
	}
	if (leader_id != 0 && base != NULL &&
	    (size_t)snprintf(loc, sizeof loc, "%s%s", base, http_uri(r)) <
	    sizeof loc) {
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

/*
 * Stream the answer: 200 with type, then chunks. False: the client is
 * gone (to HEAD: the head alone, and the stream is over at once).
 */
bool http_stream_start(struct hreq *r, const char *type)
{
	if (!http_live(r) || r->rw != r->cw)
		return false;
	http_header(r, "Cache-Control", "no-store");
	http_answer(r, 200, type, NULL, 0, true);
	return r->streaming;
}

/* One chunk of a streamed answer ("%x\r\n" p "\r\n"; raw to HTTP/1.0). */
bool http_stream_chunk(struct hreq *r, const char *p, size_t len)
{
	char head[24];
	size_t hl = 0, i;
	uint8_t *o;

	if (!r->streaming || r->final ||
	    atomic_load_explicit(&r->left, memory_order_relaxed))
		return false;
	if (len == 0)
		return true;
	if (r->minor >= 1) {
		for (i = len; i != 0; i >>= 4)
			hl++;
		for (i = 0; i < hl; i++)
			head[hl - 1 - i] = "0123456789abcdef"[(len >> (4 * i)) & 15];
		head[hl++] = '\r';
		head[hl++] = '\n';
	}
	if ((o = hconn_room(r, hl + len + (r->minor >= 1 ? 2 : 0))) == NULL)
		return false;
	memcpy(o, head, hl);
	memcpy(o + hl, p, len);
	if (r->minor >= 1) {
		o[hl + len] = '\r';
		o[hl + len + 1] = '\n';
	}
	hconn_done(r, hl + len + (r->minor >= 1 ? 2 : 0));
	return true;
}

/* End a streamed answer (the last chunk). */
void http_stream_end(struct hreq *r)
{
	uint8_t *o;

	if (!r->streaming || r->final)
		return;
	if (r->minor >= 1 && (o = hconn_room(r, 5)) != NULL) {
		http_put(&o, "0\r\n\r\n", 5);
		hconn_done(r, 5);
	}
	hconn_final(r);
}

/* Cut r's connection off (its answer cannot be finished); r is told not. */
void http_cut(struct hreq *r)
{
	r->gone = NULL;
	hconn_cut(r);
}

/* Bytes r's connection has not sent yet. */
size_t http_backlog(const struct hreq *r)
{
	return hconn_backlog(r);
}

/* --- requests ------------------------------------------------------------- */

/* One more reference to r (its route's). */
void http_req_hold(struct hreq *r)
{
	atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

/*
 * Drop a route's reference; with the last, the route lets go of r: an
 * answer never made is a 500, a stream left open ends.
 */
void http_req_put(struct hreq *r)
{
	if (r == NULL || atomic_fetch_sub_explicit(&r->refs, 1,
	    memory_order_acq_rel) != 1)
		return;
	if (!r->answered && !atomic_load_explicit(&r->left, memory_order_acquire))
		http_problem(r, SEMD__CODE__INTERNAL, "no answer was made");
	else if (r->streaming)
		http_stream_end(r);
	hreq_owner_put(r);
}

/* Its client's leaving calls gone(r) (it reads on while r waits). */
void http_req_watch(struct hreq *r, void (*gone)(struct hreq *r))
{
	r->gone = gone;
}

/* The wait of Prefer: wait=N, ms (at most http-max-wait); 0 without it. */
uint64_t http_prefer_wait(struct hreq *r, bool *given)
{
	const char *p = http_in_header(r, "Prefer");
	uint64_t max = http_settings(r)->max_wait_ms, v = 0;
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

/* --- jobs between the loops ----------------------------------------------- */

enum hjob_kind { HJOB_RUN, HJOB_ANSWERED, HJOB_GONE };

/* Work for a loop from another: r, what to do, and for a run its route. */
struct hjob {
	struct list_head	entry;
	enum hjob_kind		kind;
	struct hreq		*r;
	http_handler_fn		fn;
};

/* Give hw a job (it holds one owner of r until it is done). */
static void http_post(struct hworker *hw, enum hjob_kind kind, struct hreq *r,
    http_handler_fn fn)
{
	struct hjob *j = malloc(sizeof *j);
	uint64_t one = 1;
	ssize_t n;

	if (j == NULL) {
		/* Never lose an answer or a leaving: wait for memory. */
		log_err("out of memory passing an HTTP request between loops");
		abort();
	}
	atomic_fetch_add_explicit(&r->owners, 1, memory_order_relaxed);
	j->kind = kind;
	j->r = r;
	j->fn = fn;
	pthread_mutex_lock(&hw->jlock);
	list_add_tail(&j->entry, &hw->jobs);
	pthread_mutex_unlock(&hw->jlock);
	do
		n = write(hw->jfd, &one, sizeof one);
	while (n < 0 && errno == EINTR);
}

/* r's answer, made on the first loop, goes to its connection's loop. */
void http_post_answered(struct hreq *r)
{
	http_post(r->cw, HJOB_ANSWERED, r, NULL);
}

/* r's client left: the first loop, which runs its route, is told. */
void http_post_gone(struct hreq *r)
{
	http_post(r->rw, HJOB_GONE, r, NULL);
}

/* Run fn(r) on the first loop (true), or here, the first loop (false). */
bool http_home(struct hreq *r, http_handler_fn fn)
{
	struct hworker *home = &r->f->hw[0];

	if (http_here() == home)
		return false;
	r->rw = home;
	http_req_hold(r);
	http_post(home, HJOB_RUN, r, fn);
	return true;
}

/* Do one job. */
static void http_job(struct hjob *j)
{
	struct hreq *r = j->r;

	switch (j->kind) {
	case HJOB_RUN:
		j->fn(r);
		http_req_put(r);
		break;
	case HJOB_ANSWERED:
		hconn_answered(r);
		break;
	case HJOB_GONE:
		if (!r->final && r->gone != NULL)
			r->gone(r);
		break;
	}
	hreq_owner_put(r);
	free(j);
}

/*
 * Take hw's jobs; do them (run false: after the loops, a route is not run,
 * only let go of).
 */
static void http_jobs_do(struct hworker *hw, bool run)
{
	struct list_head jobs;
	struct hjob *j;

	INIT_LIST_HEAD(&jobs);
	pthread_mutex_lock(&hw->jlock);
	if (!list_empty(&hw->jobs)) {	/* all of them move to jobs */
		jobs.next = hw->jobs.next;
		jobs.prev = hw->jobs.prev;
		jobs.next->prev = &jobs;
		jobs.prev->next = &jobs;
		INIT_LIST_HEAD(&hw->jobs);
	}
	pthread_mutex_unlock(&hw->jlock);
	while (!list_empty(&jobs)) {
		j = list_first_entry(&jobs, struct hjob, entry);
		list_del_init(&j->entry);
		if (!run && j->kind == HJOB_RUN) {
			http_req_put(j->r);
			hreq_owner_put(j->r);
			free(j);
			continue;
		}
		http_job(j);
	}
}

/* The loop's job queue has work: do all of it (its answers go out at once). */
static void http_jobs_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hworker *hw = arg;
	uint64_t v;
	ssize_t n;

	(void)what;
	n = read(fd, &v, sizeof v);
	(void)n;
	http_jobs_do(hw, true);
}

/* --- routing -------------------------------------------------------------- */

/* The /v1/openapi.json route: the document. */
static void http_route_openapi(struct hreq *r)
{
	http_reply_static(r, 200, "application/json", http_openapi_json,
	    http_openapi_json_len);
}

/* The routes' patterns cut into segments once ("*": any), for matching. */
static struct {
	size_t		n;
	const char	*seg[HTTP_SEGS];
	size_t		len[HTTP_SEGS];
} http_route_segs[HTTP_NROUTES];

/* Cut the patterns of the routes (once, before the loops run). */
static void http_routes_cut(void)
{
	const char *p, *e;
	size_t i, n;

	for (i = 0; i < HTTP_NROUTES; i++) {
		for (p = http_routes[i].pattern, n = 0; *p != '\0' &&
		    n < HTTP_SEGS; n++) {
			e = p + strcspn(p, "/");
			http_route_segs[i].seg[n] = p;
			http_route_segs[i].len[n] = (size_t)(e - p);
			p = *e == '/' ? e + 1 : e;
		}
		http_route_segs[i].n = n;
	}
}

/*
 * Match a path (after /v1/, n segments decoded, their lengths len) against
 * the routes: the route, or NULL with *allow listing the methods of the
 * path (0: no such path).
 */
static const struct http_route *http_match(int method, char **seg,
    const size_t *len, size_t n, int *allow)
{
	const struct http_route *best = NULL;
	size_t i, k;

	*allow = 0;
	for (i = 0; i < HTTP_NROUTES; i++) {
		if (http_route_segs[i].n != n)
			continue;
		for (k = 0; k < n; k++) {
			if (http_route_segs[i].len[k] == 1 &&
			    http_route_segs[i].seg[k][0] == '*')
				continue;
			if (http_route_segs[i].len[k] != len[k] ||
			    memcmp(http_route_segs[i].seg[k], seg[k], len[k]) != 0)
				break;
		}
		if (k < n)
			continue;
		*allow |= http_routes[i].method;
		if (http_routes[i].method == method)
			best = &http_routes[i];
	}
	return best;
}

/* The Allow header of a path's methods (HEAD where GET is). */
static void http_allow(char *buf, size_t len, int allow)
{
	static const struct { int m; const char *name; } ms[] = {
		{ HTTP_GET, "GET, HEAD" }, { HTTP_POST, "POST" },
		{ HTTP_PUT, "PUT" }, { HTTP_DELETE, "DELETE" },
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
 * Split r's path under /v1/ into decoded segments (at most HTTP_SEGS),
 * written into r->segs, their lengths into slen. The count, or -1 when it is no path of ours or a
 * segment is empty or decodes to a NUL.
 */
static int http_split(struct hreq *r, char **seg, size_t *slen)
{
	const char *p = r->target, *e;
	char *d = r->segs;
	size_t n = 0;
	ssize_t len;

	if (strncmp(p, "/v1/", 4) != 0)
		return -1;
	for (p += 4; *p != '\0' && *p != '?'; p = *e == '/' ? e + 1 : e) {
		for (e = p; *e != '\0' && *e != '/' && *e != '?'; e++)
			;
		if (n == HTTP_SEGS || e == p ||
		    (len = hp_unescape(d, p, (size_t)(e - p), false)) <= 0)
			return -1;
		seg[n] = d;
		slen[n++] = (size_t)len;
		d += len + 1;
	}
	return (int)n;
}

/* The {...} segments of the path into r->args. */
static void http_take_args(struct hreq *r, const char *p, char **seg, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n && *p != '\0'; i++) {
		if (p[0] == '*' && k < sizeof r->args / sizeof r->args[0])
			r->args[k++] = seg[i];
		p += strcspn(p, "/");
		if (*p == '/')
			p++;
	}
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
	if (http_config_cors(http_settings(r), o)) {
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

/*
 * Who r is: a bearer token's principal, or its connection's (r->who as it
 * came). False: 401.
 */
static bool http_identify(struct hreq *r)
{
	const char *a = http_in_header(r, "Authorization");
	const struct http_token *t;
	struct acl_subject s;
	struct hprin *p = NULL;
	int rc = 0;

	if (a == NULL || strncasecmp(a, "Bearer ", 7) != 0)
		return a == NULL;
	for (a += 7; *a == ' '; a++)
		;
	if ((t = http_config_token(http_settings(r), a, strlen(a))) == NULL)
		return false;
	acl_subject_init(&s);
	if (t->is_uid)
		rc = acl_subject_set_uid(&s, t->uid, t->user[0] != '\0' ?
		    t->user : NULL);
	else
		rc = acl_subject_set_cn(&s, t->principal + 3,
		    strlen(t->principal + 3));
	if (rc == 0)
		p = http_prin_get(r->f, &s);
	acl_subject_clear(&s);
	if (p == NULL)
		return false;
	http_prin_put(r->f, r->who);
	r->who = p;
	return true;
}

/*
 * A request read whole (http_conn.c), on its connection's loop: whose,
 * may it, where it goes; body[0..blen) its body (NULL: none). Its route
 * answers it, now or later.
 */
void http_request_run(struct hreq *r, const char *body, size_t blen)
{
	struct http_front *f = r->f;
	const struct http_route *route;
	const char *query;
	char *seg[HTTP_SEGS], err[256], allow[128];
	size_t slen[HTTP_SEGS];
	int n, allowm, method = r->method == HTTP_HEAD ? HTTP_GET : r->method;
	uint64_t wait;

	if (atomic_load_explicit(&f->stopping, memory_order_relaxed)) {
		r->close = true;
		http_problem(r, SEMD__CODE__UNAVAILABLE, "semd is stopping");
		goto out;
	}
	if (!http_origin_ok(r)) {
		http_problem(r, SEMD__CODE__PERMISSION_DENIED, "origin %s is not "
		    "allowed (http-cors-origin)", http_in_header(r, "Origin"));
		goto out;
	}
	if (http_ui_path(r->target)) {	/* the web console's files: http_ui.c */
		http_ui_answer(r, http_settings(r));
		goto out;
	}
	if ((n = http_split(r, seg, slen)) < 0) {
		http_problem(r, SEMD__CODE__NOT_FOUND, "no such resource "
		    "(the API is under /v1/, a name one segment, percent-encoded)");
		goto out;
	}
	route = http_match(method, seg, slen, (size_t)n, &allowm);
	if (route == NULL && method == HTTP_OPTIONS && allowm != 0) {
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
	} else if ((wait = http_rate_take(http_settings(r), r->who)) > 0) {
		snprintf(allow, sizeof allow, "%llu",
		    (unsigned long long)(wait + 999) / 1000);
		http_header(r, "Retry-After", allow);
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "%s is over "
		    "http-rate %u requests a second", r->who->subj.principal,
		    http_settings(r)->rate);
	} else {
		r->route = route;
		http_take_args(r, route->pattern, seg, (size_t)n);
		query = strchr(r->target, '?');
		if (query != NULL && http_parse_query(r, query + 1))
			r->query_ok = true;
		else if (query != NULL)
			http_problem(r, SEMD__CODE__INVALID_ARGUMENT,
			    "the query string is malformed");
		if (!r->answered && (method == HTTP_POST || method == HTTP_PUT)) {
			r->body = http_json_load(body != NULL ? body : "", blen,
			    err, sizeof err);
			if (r->body == NULL)
				http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "%s", err);
		} else if (!r->answered && blen > 0) {
			http_problem(r, SEMD__CODE__INVALID_ARGUMENT,
			    "this method takes no body");
		}
		if (!r->answered)
			route->fn(r);
	}
out:
	http_req_put(r);
}

/* --- the loops' parts ----------------------------------------------------- */

/*
 * The settings in force for hw's loop: a reload (on the first loop, under
 * the state lock) replaces srv->cfg; each loop takes a reference of its
 * own at its tick, under the same lock.
 */
static void http_hw_settings(struct hworker *hw)
{
	struct http_front *f = hw->f;
	struct http_config *now, *old = hw->cfg;

	server_lock(hw->w);
	now = f->srv->cfg.http != NULL ? f->srv->cfg.http : f->defaults;
	if (now != old)
		hw->cfg = http_config_get(now);
	hw->max_lease_ms = f->srv->cfg.max_lease_ms;
	server_unlock(hw->w);
	if (now != old)
		http_config_put(old);
}

/* A loop's tick: deadlines; each second, settings, idle gates, leases. */
static void http_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hworker *hw = arg;
	uint64_t now = http_now();

	(void)fd;
	(void)what;
	hconn_tick(hw, now);
	if (++hw->ticks % (1000 / HTTP_TICK_MS) != 0)
		return;
	http_hw_settings(hw);
	gate_sweep(hw, false);
	if (hw->idx == 0) {
		http_acquire_sweep(hw->f, false);
		http_prin_sweep(hw->f, false);
	}
}

/* Make the part of worker i (before its thread runs). */
static int http_hw_init(struct http_front *f, unsigned int i)
{
	struct hworker *hw = &f->hw[i];
	struct timeval tv = { 0, HTTP_TICK_MS * 1000 };

	hw->f = f;
	hw->w = &f->srv->workers[i];
	hw->base = hw->w->base;
	hw->idx = i;
	hw->jfd = -1;
	INIT_LIST_HEAD(&hw->idle);
	INIT_LIST_HEAD(&hw->partial);
	INIT_LIST_HEAD(&hw->gate_lru);
	INIT_LIST_HEAD(&hw->all_gates);
	INIT_LIST_HEAD(&hw->jobs);
	pthread_mutex_init(&hw->jlock, NULL);
	hw->ready = true;
	hw->cfg = http_config_get(f->srv->cfg.http != NULL ? f->srv->cfg.http :
	    f->defaults);
	hw->max_lease_ms = f->srv->cfg.max_lease_ms;
	if (hmap_init(&hw->gates, 64) != 0 ||
	    (hw->jfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
	    (hw->jev = event_new(hw->base, hw->jfd, EV_READ | EV_PERSIST,
	    http_jobs_cb, hw)) == NULL || event_add(hw->jev, NULL) != 0 ||
	    (hw->tick = event_new(hw->base, -1, EV_PERSIST, http_tick_cb,
	    hw)) == NULL || event_add(hw->tick, &tv) != 0)
		return -ENOMEM;
	return 0;
}

/* Free the part of a loop (the loops have ended). */
static void http_hw_free(struct hworker *hw)
{
	if (!hw->ready)
		return;
	http_jobs_do(hw, false);
	if (hw->tick != NULL)
		event_free(hw->tick);
	if (hw->jev != NULL)
		event_free(hw->jev);
	if (hw->jfd >= 0)
		close(hw->jfd);
	hmap_destroy(&hw->gates);
	pthread_mutex_destroy(&hw->jlock);
	http_config_put(hw->cfg);
	hw->ready = false;
}

/* The front door, made with the first listener (before the loops run). */
static struct http_front *http_front_new(struct server *srv)
{
	struct http_front *f;
	unsigned int i;

	if (http_the_front != NULL)
		return http_the_front;
	if ((f = calloc(1, sizeof *f)) == NULL)
		return NULL;
	f->srv = srv;
	INIT_LIST_HEAD(&f->listeners);
	INIT_LIST_HEAD(&f->prin_list);
	INIT_LIST_HEAD(&f->waiter_list);
	INIT_LIST_HEAD(&f->idem_list);
	pthread_mutex_init(&f->plock, NULL);
	atomic_init(&f->nconns, 0);
	atomic_init(&f->stopping, false);
	f->nhw = srv->nworkers;
	http_routes_cut();
	if ((f->defaults = http_config_default()) == NULL ||
	    (f->hw = calloc(f->nhw, sizeof *f->hw)) == NULL ||
	    getrandom(f->hash_key, sizeof f->hash_key, 0) !=
	    (ssize_t)sizeof f->hash_key ||
	    hmap_init(&f->prins, 16) != 0 || hmap_init(&f->waiters, 64) != 0 ||
	    hmap_init(&f->idem, 64) != 0)
		goto fail;
	http_the_front = f;
	for (i = 0; i < f->nhw; i++)
		if (http_hw_init(f, i) != 0)
			goto fail;
	return f;
fail:
	http_the_front = f;
	http_free();
	return NULL;
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

/* A client arrived: dealt to the next loop, as a binary client is. */
static void http_accept_cb(struct evconnlistener *evl, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct http_listener *l = arg;
	struct server *srv = l->f->srv;

	(void)evl;
	if (atomic_load_explicit(&l->f->stopping, memory_order_relaxed) ||
	    (l->tls && srv->tls == NULL)) {
		close(fd);
		return;
	}
	conn_accept_proto(srv, fd, sa, salen, l->is_unix, l->tls,
	    &http_conn_proto);
}

/* Accept again after a pause (EMFILE). */
static void http_accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http_listener *l = arg;

	(void)fd;
	(void)what;
	if (l->evl != NULL && !atomic_load(&l->f->stopping))
		evconnlistener_enable(l->evl);
}

/* accept() failed: on EMFILE/ENFILE pause a second instead of spinning. */
static void http_accept_error_cb(struct evconnlistener *evl, void *arg)
{
	struct http_listener *l = arg;
	struct timeval tv = { 1, 0 };
	int err = EVUTIL_SOCKET_ERROR();

	log_warn("accept on %s: %s%s", l->addr, strerror(err),
	    err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM ?
	    "; pausing accepts for 1 s" : "");
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		evconnlistener_disable(evl);
		event_base_once(l->f->hw[0].base, -1, EV_TIMEOUT,
		    http_accept_resume_cb, l, &tv);
	}
}

/* Open an HTTP listener on the first loop; its clients go to every loop. */
int http_listen(struct server *srv, const char *spec)
{
	struct http_front *f = http_front_new(srv);
	struct http_listener *l;
	char tcp[300], *name = NULL;
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
	    (name = listener_name(fd, &is_unix)) == NULL)
		goto fail;
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
	name = NULL;
	if (l->addr == NULL || (l->evl = evconnlistener_new(f->hw[0].base,
	    http_accept_cb, l, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
	    0, fd)) == NULL)
		goto fail;
	evconnlistener_set_error_cb(l->evl, http_accept_error_cb);
	list_add_tail(&l->entry, &f->listeners);
	log_notice("listening on %s", l->addr);
	return 0;
fail:
	if (l != NULL) {
		if (l->unlink_path != NULL)
			unlink(l->unlink_path);
		free(l->addr);
		free(l->unlink_path);
	}
	free(l);
	free(name);
	close(fd);
	return -ENOMEM;
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

/*
 * A stop (on the first loop): no more connections or requests; each loop
 * answers what it has under way as its gates close, then closes them.
 */
void http_unlisten(struct server *srv)
{
	struct http_front *f = http_the_front;
	struct list_head *pos;
	struct http_listener *l;

	(void)srv;
	if (f == NULL || atomic_load(&f->stopping))
		return;
	atomic_store(&f->stopping, true);
	list_for_each(pos, &f->listeners) {
		l = list_entry(pos, struct http_listener, entry);
		if (l->evl != NULL)
			evconnlistener_free(l->evl);
		l->evl = NULL;
		if (l->unlink_path != NULL)
			unlink(l->unlink_path);
	}
}

/*
 * After the loops ended: free it all, each loop's connections and gates
 * first (as that loop: their frees take its lock and count).
 */
void http_free(void)
{
	struct http_front *f = http_the_front;
	struct worker *self = worker_self;
	struct http_listener *l;
	struct list_head *pos, *tmp;
	struct conn *c;
	unsigned int i;

	if (f == NULL)
		return;
	atomic_store(&f->stopping, true);
	for (i = 0; f->hw != NULL && i < f->nhw; i++) {
		if (!f->hw[i].ready)
			continue;
		worker_self = f->hw[i].w;
		list_for_each_safe(pos, tmp, &f->hw[i].w->conns) {
			c = list_entry(pos, struct conn, entry);
			if (c->proto == &http_conn_proto)
				conn_free(c);
		}
	}
	for (i = 0; f->hw != NULL && i < f->nhw; i++) {
		if (!f->hw[i].ready)
			continue;
		worker_self = f->hw[i].w;
		/* leavings of requests that crossed loops, not heard yet */
		http_jobs_do(&f->hw[i], false);
		if (i == 0)
			http_acquire_sweep(f, true);
		gate_free_all(&f->hw[i]);
	}
	for (i = 0; f->hw != NULL && i < f->nhw; i++) {
		worker_self = f->hw[i].w;
		http_hw_free(&f->hw[i]);
	}
	worker_self = self;
	list_for_each_safe(pos, tmp, &f->listeners) {
		l = list_entry(pos, struct http_listener, entry);
		list_del_init(&l->entry);
		if (l->evl != NULL)
			evconnlistener_free(l->evl);
		if (l->unlink_path != NULL)
			unlink(l->unlink_path);
		free(l->unlink_path);
		free(l->addr);
		free(l);
	}
	http_prin_sweep(f, true);
	hmap_destroy(&f->prins);
	hmap_destroy(&f->waiters);
	hmap_destroy(&f->idem);
	pthread_mutex_destroy(&f->plock);
	http_config_put(f->defaults);
	free(f->hw);
	free(f);
	http_the_front = NULL;
}
