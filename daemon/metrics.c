/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/metrics.c - the Prometheus text endpoint (exposition format 0.0.4).
 *
 * Every scrape renders the figures afresh from the state: the counters are
 * the state's own (struct sm_counters), so `semctl stats` and this page never
 * disagree. Per-semaphore gauges walk the whole name table once per scrape
 * and keep the names that start with a metrics-names prefix: O(semaphores),
 * which is fine for a page fetched every few seconds; without prefixes the
 * walk is skipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <protobuf-c/protobuf-c.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/server.h"

#define METRICS_TIMEOUT_S	10	/* a scraper that stalls is cut off */
#define METRICS_MAX_HEADERS	8192

struct metrics {
	struct server		*srv;
	struct evhttp		*http;
	char			addr[INET6_ADDRSTRLEN + 10];
};

/* The per-semaphore families, filled in one walk of the table. */
struct metrics_sems {
	struct metrics		*m;
	struct evbuffer		*fam[4];	/* holders, waiters, available, limit */
	size_t			cur;		/* the metrics-names prefix walked */
};

static const char *const sem_families[4][2] = {
	{ "holders", "Hold records (clients holding permits) of the semaphore." },
	{ "waiters", "Downs queued on the semaphore." },
	{ "available", "Permits of the semaphore that a down could take now." },
	{ "limit", "The semaphore's limit." },
};

/* Write "# HELP" and "# TYPE" lines. */
static void metrics_head(struct evbuffer *b, const char *name,
    const char *type, const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
}

/* A family with one unlabelled sample. */
static void metrics_one(struct evbuffer *b, const char *name,
    const char *type, const char *help, uint64_t v)
{
	metrics_head(b, name, type, help);
	evbuffer_add_printf(b, "%s %" PRIu64 "\n", name, v);
}

/* Milliseconds as seconds with three decimals, exactly. */
static void metrics_ms(struct evbuffer *b, uint64_t ms)
{
	evbuffer_add_printf(b, "%" PRIu64 ".%03u", ms / 1000,
	    (unsigned int)(ms % 1000));
}

/* A histogram family: cumulative buckets, +Inf, _sum and _count. */
static void metrics_hist(struct evbuffer *b, const char *name,
    const char *help, const struct sm_hist *h)
{
	uint64_t cum = 0;
	unsigned int i;

	metrics_head(b, name, "histogram", help);
	for (i = 0; i < SM_HIST_BUCKETS - 1; i++) {
		cum += h->bucket[i];
		evbuffer_add_printf(b, "%s_bucket{le=\"", name);
		metrics_ms(b, (uint64_t)1 << i);
		evbuffer_add_printf(b, "\"} %" PRIu64 "\n", cum);
	}
	cum += h->bucket[SM_HIST_BUCKETS - 1];
	evbuffer_add_printf(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cum);
	evbuffer_add_printf(b, "%s_sum ", name);
	metrics_ms(b, h->sum_ms);
	evbuffer_add_printf(b, "\n%s_count %" PRIu64 "\n", name, h->count);
}

/* A label value, escaped: backslash, double quote and newline. */
static void metrics_label(struct evbuffer *b, const char *s, size_t len)
{
	size_t i, run = 0;

	for (i = 0; i < len; i++) {
		if (s[i] != '\\' && s[i] != '"' && s[i] != '\n')
			continue;
		evbuffer_add(b, s + run, i - run);
		evbuffer_add(b, s[i] == '\\' ? "\\\\" : s[i] == '"' ? "\\\"" :
		    "\\n", 2);
		run = i + 1;
	}
	evbuffer_add(b, s + run, len - run);
}

/* Is the name selected by one of the first n metrics-names prefixes? */
static bool metrics_selected(const struct semd_config *cfg, size_t n,
    const char *name, size_t len)
{
	size_t i, pl;

	for (i = 0; i < n && i < cfg->nmetrics_names; i++) {
		pl = strlen(cfg->metrics_names[i]);
		if (pl <= len && memcmp(name, cfg->metrics_names[i], pl) == 0)
			return true;
	}
	return false;
}

/*
 * sm_sem_each_prefix() callback for prefix number ms->cur: one sample per
 * family, unless an earlier prefix selected the name already.
 */
static void metrics_sem_cb(void *arg, const struct sm_sem_gauges *g)
{
	struct metrics_sems *ms = arg;
	long v[4];
	int i;

	if (metrics_selected(&ms->m->srv->cfg, ms->cur, g->name, g->len))
		return;
	v[0] = (long)g->holders;
	v[1] = (long)g->waiters;
	v[2] = g->available;
	v[3] = (long)g->limit;
	for (i = 0; i < 4; i++) {
		evbuffer_add_printf(ms->fam[i], "semd_semaphore_%s{name=\"",
		    sem_families[i][0]);
		metrics_label(ms->fam[i], g->name, g->len);
		evbuffer_add_printf(ms->fam[i], "\"} %ld\n", v[i]);
	}
}

/* The per-semaphore families; -ENOMEM if a buffer cannot be made. */
static int metrics_sems(struct metrics *m, struct evbuffer *b)
{
	struct metrics_sems ms = { m, { NULL, NULL, NULL, NULL }, 0 };
	char name[64];
	int i, r = 0;

	for (i = 0; i < 4; i++) {
		if ((ms.fam[i] = evbuffer_new()) == NULL) {
			r = -ENOMEM;
			goto out;
		}
	}
	/* Only the names under the prefixes are visited (ordered index). */
	server_lock(worker_self);
	for (ms.cur = 0; ms.cur < m->srv->cfg.nmetrics_names; ms.cur++)
		sm_sem_each_prefix(m->srv->sm, m->srv->cfg.metrics_names[ms.cur],
		    metrics_sem_cb, &ms);
	server_unlock(worker_self);
	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "semd_semaphore_%s", sem_families[i][0]);
		metrics_head(b, name, "gauge", sem_families[i][1]);
		evbuffer_add_buffer(b, ms.fam[i]);
	}
out:
	for (i = 0; i < 4; i++)
		if (ms.fam[i] != NULL)
			evbuffer_free(ms.fam[i]);
	return r;
}

/* Render the whole page into b. */
static int metrics_render(struct metrics *m, struct evbuffer *b)
{
	const ProtobufCEnumValue *ev;
	const char *op;
	struct sm_counters k;
	unsigned int i, j;
	uint64_t dropped;

	server_lock(worker_self);
	sm_get_counters(m->srv->sm, &k);
	dropped = server_dropped(m->srv);
	server_unlock(worker_self);
	metrics_head(b, "semd_requests_total", "counter",
	    "Replies sent, by the operation they answer and their code.");
	for (i = 0; i < SM_NOPS; i++) {
		/* Replies to no request (notices, protocol errors): "unknown". */
		op = i == 0 ? "unknown" : sm_op((int)i) ? sm_op((int)i)->name : NULL;
		for (j = 0; j < SM_NCODES; j++) {
			ev = protobuf_c_enum_descriptor_get_value(
			    &semd__code__descriptor, (int)j);
			if (k.replies[i][j] == 0 || op == NULL || ev == NULL)
				continue;
			evbuffer_add_printf(b,
			    "semd_requests_total{op=\"%s\",code=\"%s\"} %" PRIu64 "\n",
			    op, ev->name, k.replies[i][j]);
		}
	}
	metrics_one(b, "semd_grants_total", "counter",
	    "Downs granted, at once or after waiting.", k.grants);
	metrics_one(b, "semd_timeouts_total", "counter",
	    "Downs whose deadline passed before a grant.", k.timeouts);
	metrics_one(b, "semd_cancels_total", "counter",
	    "Waiting downs cancelled by a Cancel request.", k.cancels);
	metrics_one(b, "semd_cancels_disconnect_total", "counter",
	    "Waiting downs cancelled because their client went away.",
	    k.cancels_disconnect);
	metrics_one(b, "semd_leases_expired_total", "counter",
	    "Detached holds released when their lease ran out.",
	    k.leases_expired);
	metrics_one(b, "semd_sessions_expired_total", "counter",
	    "Lingering sessions freed when their lease ran out.",
	    k.sessions_expired);
	metrics_one(b, "semd_errors_total", "counter",
	    "Replies with a code other than OK.", k.errors);
	metrics_one(b, "semd_clients_dropped_total", "counter",
	    "Clients cut off (bad frames, limits, slow readers).",
	    dropped);
	metrics_one(b, "semd_holders", "gauge",
	    "Hold records, over all semaphores.", k.holders);
	metrics_one(b, "semd_waiters", "gauge",
	    "Queued downs, over all semaphores.", k.waiters);
	metrics_one(b, "semd_sessions", "gauge",
	    "Sessions, connected or lingering.", k.sessions);
	metrics_one(b, "semd_connections", "gauge",
	    "Client connections open.", k.clients);
	metrics_one(b, "semd_semaphores", "gauge",
	    "Named semaphores.", k.semaphores);
	metrics_one(b, "semd_memory_bytes", "gauge",
	    "Bytes the semaphore table and sessions use.", k.memory_bytes);
	metrics_hist(b, "semd_wait_seconds",
	    "Time from a down to its grant (0 for an immediate grant).", &k.wait);
	metrics_hist(b, "semd_hold_seconds",
	    "Time from a grant to the release of the hold.", &k.hold);
	return metrics_sems(m, b);
}

/* One HTTP request: GET /metrics, or 404. */
static void metrics_request_cb(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	struct evbuffer *b;

	if (path == NULL || strcmp(path, "/metrics") != 0) {
		evhttp_send_error(req, HTTP_NOTFOUND, "try /metrics");
		return;
	}
	b = evbuffer_new();
	if (b == NULL || metrics_render(m, b) != 0) {
		log_warn("out of memory rendering the metrics");
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		if (b != NULL)
			evbuffer_free(b);
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, HTTP_OK, "OK", b);
	evbuffer_free(b);
}

/* Split tcp:HOST:PORT / tcp:[ADDR6]:PORT into host (brackets off) and port. */
static int metrics_parse(const char *addr, char *host, size_t hostlen,
    uint16_t *port)
{
	const char *p, *colon;
	unsigned long v;
	size_t n;
	char *end;

	if (strncmp(addr, "tcp:", 4) != 0)
		return -EINVAL;
	p = addr + 4;
	colon = strrchr(p, ':');
	if (colon == NULL || colon == p)
		return -EINVAL;
	n = (size_t)(colon - p);
	if (p[0] == '[' && n >= 2 && p[n - 1] == ']') {
		p++;
		n -= 2;
	}
	if (n == 0 || n >= hostlen)
		return -EINVAL;
	memcpy(host, p, n);
	host[n] = '\0';
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno != 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* Bind and serve. */
int metrics_new(struct server *srv, const char *addr, struct metrics **out)
{
	struct evhttp_bound_socket *bs;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	struct metrics *m;
	char host[256], ip[INET6_ADDRSTRLEN];
	uint16_t port;
	int r;

	*out = NULL;
	if ((r = metrics_parse(addr, host, sizeof host, &port)) != 0) {
		log_err("metrics-listen %s: expected tcp:HOST:PORT or tcp:[ADDR6]:PORT",
		    addr);
		return r;
	}
	m = calloc(1, sizeof *m);
	if (m == NULL)
		return -ENOMEM;
	m->srv = srv;
	m->http = evhttp_new(srv->base);
	if (m->http == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_timeout(m->http, METRICS_TIMEOUT_S);
	evhttp_set_max_headers_size(m->http, METRICS_MAX_HEADERS);
	evhttp_set_max_body_size(m->http, 0);
	evhttp_set_gencb(m->http, metrics_request_cb, m);
	errno = 0;
	bs = evhttp_bind_socket_with_handle(m->http, host, port);
	if (bs == NULL) {
		r = errno != 0 ? -errno : -EADDRNOTAVAIL;
		log_err_errno(r, "metrics-listen %s: cannot bind", addr);
		goto fail;
	}
	memset(&ss, 0, sizeof ss);	/* clang 14's analyzer misses getsockname() filling it */
	if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss,
	    &sl) != 0) {
		r = -errno;
		log_err_errno(r, "metrics-listen %s: getsockname", addr);
		goto fail;
	}
	if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip,
		    sizeof ip);
		snprintf(m->addr, sizeof m->addr, "[%s]:%u", ip,
		    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	} else {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip,
		    sizeof ip);
		snprintf(m->addr, sizeof m->addr, "%s:%u", ip,
		    ntohs(((struct sockaddr_in *)&ss)->sin_port));
	}
	log_notice("metrics on http://%s/metrics", m->addr);
	*out = m;
	return 0;
fail:
	metrics_free(m);
	return r;
}

/* Close the endpoint (open scrapes are dropped). */
void metrics_free(struct metrics *m)
{
	if (m == NULL)
		return;
	if (m->http != NULL)
		evhttp_free(m->http);
	free(m);
}

/* HOST:PORT as bound. */
const char *metrics_addr(const struct metrics *m)
{
	return m->addr;
}
