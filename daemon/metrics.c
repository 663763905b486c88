/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/metrics.c - the Prometheus text endpoint (exposition format 0.0.4),
 * and the health checks beside it (/healthz, /readyz: health.c decides).
 *
 * Every scrape renders the figures afresh from the state: the counters are
 * the state's own (struct sm_counters), so `semctl stats` and this page never
 * disagree. Per-semaphore gauges walk only the names under the metrics-names
 * prefixes (the ordered index); without prefixes there is no walk.
 *
 * The HTTP side is a deliberately small HTTP/1.x server of its own, so that
 * every resource a scraper can hold is bounded: at most
 * metrics-max-connections scrapers at once, and
 * metrics-per-source-max-connections of them from one address, one request
 * each (the answer says Connection: close), at most METRICS_MAX_HEADERS
 * bytes of request, metrics-timeout for the whole of it from the accept to
 * the last byte of the answer (a deadline, not an idle timer a byte now
 * and then would reset), and so at most one page of output per scraper.
 *
 * Probes must answer while scrapers misbehave (a liveness probe that times
 * out restarts semd): when every slot, or every slot of the new client's
 * address, is taken, the connection that has been sending its request the
 * longest is closed to make room. A probe or an honest scraper sends its
 * request at once and is answered in the same turn, so it always finds a
 * slot; a client that trickles its request holds one only until someone
 * needs it. (A slot reserved for probes, or a probe-only listener, would
 * be one more slot the same slow clients hold: nothing tells a probe from
 * a scraper before its request line has come.) Only when every slot is
 * writing a page is a new connection refused. accept() failing for lack of
 * descriptors pauses the endpoint for a second instead of spinning, as the
 * client listeners do.
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <protobuf-c/protobuf-c.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "core/list.h"
#include "daemon/feed.h"
#include "daemon/health.h"
#include "daemon/listen.h"
#include "daemon/logging.h"
#include "daemon/metrics.h"
#include "daemon/server.h"

#define METRICS_MAX_HEADERS	8192

struct metrics {
	struct server		*srv;
	struct evconnlistener	*evl;
	struct event		*resume;	/* accepting again after EMFILE */
	char			*addr;		/* HOST:PORT, [ADDR6]:PORT, unix:PATH */
	char			*unlink_path;	/* our UNIX socket file */
	struct list_head	conns;		/* in the order they came */
	size_t			nconns;
	uint64_t		refused;	/* no slot: all writing pages */
	uint64_t		evicted;	/* closed to make room */
	uint64_t		last_log_ms;
	unsigned long long	btime;		/* boot time (/proc/stat), once read */
};

/* One scraper's connection: a request in, one page out, closed. */
struct metrics_conn {
	struct metrics		*m;
	struct bufferevent	*bev;
	struct event		*deadline;	/* metrics-timeout from the accept */
	struct list_head	entry;
	bool			answered;	/* its request came: writing */
	struct sockaddr_storage	src;		/* its address */
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

/* A family of one sample from the state's counters (struct sm_counters). */
struct metrics_counter {
	const char	*name;
	const char	*type;
	const char	*help;
	size_t		off;		/* in struct sm_counters, or: */
};
#define METRICS_DROPPED	SIZE_MAX	/* the clients the loops cut off */
#define METRICS_K(f)	offsetof(struct sm_counters, f)

static const struct metrics_counter metrics_counters[] = {
	{ "semd_grants_total", "counter",
	    "Downs granted, at once or after waiting.", METRICS_K(grants) },
	{ "semd_timeouts_total", "counter",
	    "Downs whose deadline passed before a grant.", METRICS_K(timeouts) },
	{ "semd_cancels_total", "counter",
	    "Waiting downs cancelled by a Cancel request.", METRICS_K(cancels) },
	{ "semd_cancels_disconnect_total", "counter",
	    "Waiting downs cancelled because their client went away.",
	    METRICS_K(cancels_disconnect) },
	{ "semd_leases_expired_total", "counter",
	    "Detached holds released when their lease ran out.",
	    METRICS_K(leases_expired) },
	{ "semd_sessions_expired_total", "counter",
	    "Lingering sessions freed when their lease ran out.",
	    METRICS_K(sessions_expired) },
	{ "semd_errors_total", "counter",
	    "Replies with a code other than OK.", METRICS_K(errors) },
	{ "semd_multi_grants_total", "counter",
	    "Multi-name downs granted (all their names at once).",
	    METRICS_K(multi_grants) },
	{ "semd_deadlocks_total", "counter",
	    "Downs answered DEADLOCK: they closed a cycle of waiting sessions.",
	    METRICS_K(deadlocks) },
	{ "semd_deadlock_checks_total", "counter",
	    "Searches of the wait-for graph.", METRICS_K(deadlock_checks) },
	{ "semd_deadlock_steps_total", "counter",
	    "Holds the wait-for graph searches looked at.",
	    METRICS_K(deadlock_steps) },
	{ "semd_watch_notices_total", "counter",
	    "Watch events sent by this node.", METRICS_K(watch_notices) },
	{ "semd_clients_dropped_total", "counter",
	    "Clients cut off (bad frames, limits, slow readers).",
	    METRICS_DROPPED },
	{ "semd_holders", "gauge",
	    "Hold records, over all semaphores.", METRICS_K(holders) },
	{ "semd_waiters", "gauge",
	    "Queued downs, over all semaphores.", METRICS_K(waiters) },
	{ "semd_sessions", "gauge",
	    "Sessions, connected or lingering.", METRICS_K(sessions) },
	{ "semd_connections", "gauge",
	    "Client connections open.", METRICS_K(clients) },
	{ "semd_semaphores", "gauge",
	    "Named semaphores.", METRICS_K(semaphores) },
	{ "semd_memory_bytes", "gauge",
	    "Bytes the semaphore table and sessions use.",
	    METRICS_K(memory_bytes) },
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

static bool metrics_ready(struct metrics *m, char *why, size_t len);

/* Microseconds as seconds, exactly, without trailing zeros ("0.00025"). */
static void metrics_us(struct evbuffer *b, uint64_t us)
{
	char frac[8];
	int n;

	evbuffer_add_printf(b, "%" PRIu64, us / 1000000);
	if (us % 1000000 == 0)
		return;
	n = snprintf(frac, sizeof frac, "%06u", (unsigned int)(us % 1000000));
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = '\0';
	evbuffer_add_printf(b, ".%s", frac);
}

/* The log's disk work (--data-dir): append times, snapshots written. */
static void metrics_log_io(struct metrics *m, struct evbuffer *b)
{
	struct semlog_io_stats st;
	uint64_t cum = 0;
	unsigned int i;

	if (!m->srv->feed->io_stats(m->srv, &st))
		return;		/* in memory: no log */
	metrics_head(b, "semd_log_append_seconds", "histogram", "Time the log "
	    "took to write and fsync an append of entries, from libraft's "
	    "request to its completion.");
	for (i = 0; i < SEMLOG_APPEND_BUCKETS - 1; i++) {
		cum += st.append_bucket[i];
		evbuffer_add_printf(b, "semd_log_append_seconds_bucket{le=\"");
		metrics_us(b, semlog_append_le_us[i]);
		evbuffer_add_printf(b, "\"} %" PRIu64 "\n", cum);
	}
	cum += st.append_bucket[SEMLOG_APPEND_BUCKETS - 1];
	evbuffer_add_printf(b, "semd_log_append_seconds_bucket{le=\"+Inf\"} %"
	    PRIu64 "\nsemd_log_append_seconds_sum ", cum);
	metrics_us(b, st.append_sum_us);
	evbuffer_add_printf(b, "\nsemd_log_append_seconds_count %" PRIu64 "\n",
	    cum);
	metrics_one(b, "semd_snapshots_total", "counter", "Snapshots of the "
	    "state this node wrote (taken, or installed from the leader).",
	    st.snapshots);
	metrics_one(b, "semd_snapshot_failures_total", "counter", "Snapshot "
	    "writes that failed (the disk full, say); the log keeps growing "
	    "until one succeeds.", st.snapshot_failures);
	metrics_head(b, "semd_log_write_wait_seconds", "gauge", "How long the "
	    "oldest write of the log not yet done has waited (0: none waits).");
	evbuffer_add_printf(b, "semd_log_write_wait_seconds ");
	metrics_us(b, st.write_wait_ms * 1000);
	evbuffer_add_printf(b, "\n");
	metrics_one(b, "semd_log_disk_full", "gauge", "1 while a write of the "
	    "log has waited a second and the data directory's disk has no "
	    "room for the log's next segment, else 0.",
	    st.disk == SEMLOG_DISK_FULL);
	metrics_one(b, "semd_log_writes_refused", "gauge", "1 while this node "
	    "refuses writes (UNAVAILABLE) because nothing commits while its "
	    "disk takes no writes, else 0.", st.refusing);
}

/* semd_build_info: the version, and those of the libraries it runs on. */
static void metrics_build_info(struct evbuffer *b)
{
	metrics_head(b, "semd_build_info", "gauge", "The version of semd and of "
	    "the libevent and OpenSSL it runs on, as labels; always 1.");
	evbuffer_add_printf(b, "semd_build_info{version=\"");
	metrics_label(b, PACKAGE_VERSION, strlen(PACKAGE_VERSION));
	evbuffer_add_printf(b, "\",libevent=\"");
	metrics_label(b, event_get_version(), strlen(event_get_version()));
	evbuffer_add_printf(b, "\",openssl=\"");
	metrics_label(b, OpenSSL_version(OPENSSL_VERSION_STRING),
	    strlen(OpenSSL_version(OPENSSL_VERSION_STRING)));
	evbuffer_add_printf(b, "\"} 1\n");
}

/* The boot time in seconds since the epoch (/proc/stat's btime), or 0. */
static unsigned long long metrics_btime(void)
{
	unsigned long long bt = 0;
	char line[256];
	FILE *f = fopen("/proc/stat", "re");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "btime %llu", &bt) == 1)
			break;
	fclose(f);
	return bt;
}

/* Descriptors open in this process, or -1. */
static long metrics_open_fds(void)
{
	DIR *dp = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (dp == NULL)
		return -1;
	while ((e = readdir(dp)) != NULL)
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(dp))
			n++;
	closedir(dp);
	return n;
}

/*
 * The process families every Prometheus client library exports, read from
 * /proc/self as they do: CPU time, memory, descriptors, start time. A
 * family that cannot be read is left out rather than reported wrong.
 */
static void metrics_process(struct metrics *m, struct evbuffer *b)
{
	unsigned long long utime, stime, start, vsize;
	long long rss;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds;
	struct rlimit rl;
	char buf[1024], *p;
	FILE *f;
	size_t n;
	int got = 0;

	if ((f = fopen("/proc/self/stat", "re")) != NULL) {
		n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = '\0';
		fclose(f);
		/* Fields after the command name, which may hold anything. */
		p = strrchr(buf, ')');
		if (p != NULL)
			got = sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u "
			    "%*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
			    &utime, &stime, &start, &vsize, &rss);
	}
	if (got == 5 && tck > 0 && page > 0) {
		metrics_head(b, "process_cpu_seconds_total", "counter",
		    "CPU time this process has used, user and system, in seconds.");
		evbuffer_add_printf(b, "process_cpu_seconds_total %.3f\n",
		    (double)(utime + stime) / (double)tck);
		metrics_one(b, "process_virtual_memory_bytes", "gauge",
		    "Size of this process' virtual address space in bytes.", vsize);
		metrics_one(b, "process_resident_memory_bytes", "gauge",
		    "Bytes of this process' memory resident in RAM.",
		    rss > 0 ? (uint64_t)rss * (uint64_t)page : 0);
		if (m->btime == 0)
			m->btime = metrics_btime();
		if (m->btime != 0) {
			metrics_head(b, "process_start_time_seconds", "gauge",
			    "When this process started, in seconds since the epoch.");
			evbuffer_add_printf(b, "process_start_time_seconds %.2f\n",
			    (double)m->btime + (double)start / (double)tck);
		}
	}
	if ((fds = metrics_open_fds()) >= 0)
		metrics_one(b, "process_open_fds", "gauge",
		    "File descriptors this process has open.", (uint64_t)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		metrics_one(b, "process_max_fds", "gauge", "The most file "
		    "descriptors this process may open (RLIMIT_NOFILE).",
		    (uint64_t)rl.rlim_cur);
}

/* Render the whole page into b. */
static int metrics_render(struct metrics *m, struct evbuffer *b)
{
	const ProtobufCEnumValue *ev;
	const struct metrics_counter *c;
	const char *op;
	struct sm_counters k;
	unsigned int i, j;
	uint64_t dropped;
	char why[256];

	server_lock(worker_self);
	sm_get_counters(m->srv->sm, &k);
	dropped = server_dropped(m->srv);
	server_unlock(worker_self);
	metrics_head(b, "semd_requests_total", "counter",
	    "Replies sent, by the operation they answer and their code.");
	for (i = 0; i < SM_NOPS; i++) {
		for (j = 0; j < SM_NCODES; j++) {
			/* replies to no request: "notice", "invalid_request" */
			op = sm_reply_op((int)i, (int)j);
			ev = protobuf_c_enum_descriptor_get_value(
			    &semd__code__descriptor, (int)j);
			if (k.replies[i][j] == 0 || op == NULL || ev == NULL)
				continue;
			evbuffer_add_printf(b,
			    "semd_requests_total{op=\"%s\",code=\"%s\"} %" PRIu64 "\n",
			    op, ev->name, k.replies[i][j]);
		}
	}
	for (i = 0; i < sizeof metrics_counters / sizeof metrics_counters[0]; i++) {
		c = &metrics_counters[i];
		metrics_one(b, c->name, c->type, c->help, c->off == METRICS_DROPPED ?
		    dropped : *(const uint64_t *)((const char *)&k + c->off));
	}
	metrics_hist(b, "semd_wait_seconds",
	    "Time from a down to its grant (0 for an immediate grant).", &k.wait);
	metrics_hist(b, "semd_hold_seconds",
	    "Time from a grant to the release of the hold.", &k.hold);
	metrics_one(b, "semd_ready", "gauge", "1 when /readyz answers 200 "
	    "(this node takes clients), else 0.",
	    metrics_ready(m, why, sizeof why));
	metrics_one(b, "semd_max_sessions", "gauge",
	    "The max-sessions setting: sessions there may be at once.",
	    m->srv->cfg.max_sessions);
	metrics_one(b, "semd_max_connections", "gauge",
	    "The max-connections setting: clients served at once.",
	    m->srv->cfg.max_connections);
	metrics_build_info(b);
	metrics_process(m, b);
	{
		struct sm_local_counters lc = { 0 };
		char name[64];

		/* The node's view of its log, if it feeds the state through one. */
		m->srv->feed->counters(m->srv, &lc);
		for (i = 0; i < lc.n; i++) {
			snprintf(name, sizeof name, "semd_%s", lc.name[i]);
			metrics_one(b, name, "gauge", "This node's view of the raft log "
			    "(semctl cluster status).", lc.value[i]);
		}
		metrics_log_io(m, b);
	}
	return metrics_sems(m, b);
}

/* Forget a scraper's connection. */
static void metrics_conn_free(struct metrics_conn *mc)
{
	list_del_init(&mc->entry);
	mc->m->nconns--;
	if (mc->deadline != NULL)
		event_free(mc->deadline);
	bufferevent_free(mc->bev);
	free(mc);
}

/* Queue the answer (head, and body unless HEAD) and close once it is out. */
static void metrics_answer(struct metrics_conn *mc, int status,
    const char *reason, const char *ctype, struct evbuffer *body, bool head)
{
	struct evbuffer *out = bufferevent_get_output(mc->bev);
	size_t len = body != NULL ? evbuffer_get_length(body) : 0;

	mc->answered = true;
	bufferevent_disable(mc->bev, EV_READ);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, reason,
	    ctype, len);
	if (body != NULL && !head)
		evbuffer_add_buffer(out, body);
}

/* A short error page. */
static void metrics_error(struct metrics_conn *mc, int status,
    const char *reason, bool head)
{
	struct evbuffer *b = evbuffer_new();

	if (b != NULL)
		evbuffer_add_printf(b, "%d %s\n", status, reason);
	metrics_answer(mc, status, reason, "text/plain; charset=utf-8", b, head);
	if (b != NULL)
		evbuffer_free(b);
}

/* Ready for clients? (health.c decides) */
static bool metrics_ready(struct metrics *m, char *why, size_t len)
{
	struct health_view v = { 0 };

	v.stopping = m->srv->stopping;
	v.max_lag = m->srv->cfg.ready_max_lag;
	v.durable = m->srv->feed->health(m->srv, &v.log);
	return health_ready(&v, why, len);
}

/*
 * /healthz: the loop that serves this answered, so the process serves;
 * /readyz: ready for clients (200) or not (503), with the reason. Plain
 * text, one line.
 */
static void metrics_health(struct metrics_conn *mc, bool ready_check,
    bool head)
{
	struct evbuffer *b = evbuffer_new();
	char why[256];
	bool ok = true;

	if (ready_check)
		ok = metrics_ready(mc->m, why, sizeof why);
	else
		snprintf(why, sizeof why, "ok: serving");
	if (b == NULL) {
		metrics_error(mc, 500, "Internal Server Error", head);
		return;
	}
	evbuffer_add_printf(b, "%s\n", why);
	metrics_answer(mc, ok ? 200 : 503, ok ? "OK" : "Service Unavailable",
	    "text/plain; charset=utf-8", b, head);
	evbuffer_free(b);
}

/* Is the path (without its query) p? */
static bool metrics_path_is(const char *path, size_t plen, const char *p)
{
	return plen == strlen(p) && memcmp(path, p, plen) == 0;
}

/*
 * The request line of a complete request head: GET or HEAD of /metrics,
 * /healthz or /readyz (a query string is ignored), 404 for another path,
 * 405 for another method, 400 for anything that is not a request line.
 */
static void metrics_serve(struct metrics_conn *mc, const char *line, size_t len)
{
	const char *sp1, *sp2, *path;
	size_t plen;
	struct evbuffer *b;
	bool head;

	sp1 = memchr(line, ' ', len);
	sp2 = sp1 != NULL ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - line)) : NULL;
	if (sp1 == NULL || sp2 == NULL ||
	    len - (size_t)(sp2 + 1 - line) < 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0) {
		metrics_error(mc, 400, "Bad Request", false);
		return;
	}
	head = sp1 - line == 4 && memcmp(line, "HEAD", 4) == 0;
	if (!head && !(sp1 - line == 3 && memcmp(line, "GET", 3) == 0)) {
		metrics_error(mc, 405, "Method Not Allowed", false);
		return;
	}
	path = sp1 + 1;
	plen = (size_t)(sp2 - path);
	if (memchr(path, '?', plen) != NULL)
		plen = (size_t)((const char *)memchr(path, '?', plen) - path);
	if (metrics_path_is(path, plen, "/healthz") ||
	    metrics_path_is(path, plen, "/readyz")) {
		metrics_health(mc, metrics_path_is(path, plen, "/readyz"), head);
		return;
	}
	if (!metrics_path_is(path, plen, "/metrics")) {
		metrics_error(mc, 404, "Not Found (try /metrics, /healthz or /readyz)",
		    head);
		return;
	}
	b = evbuffer_new();
	if (b == NULL || metrics_render(mc->m, b) != 0) {
		log_warn("out of memory rendering the metrics");
		if (b != NULL)
			evbuffer_free(b);
		metrics_error(mc, 500, "Internal Server Error", head);
		return;
	}
	metrics_answer(mc, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
	    b, head);
	evbuffer_free(b);
}

/* Request bytes came: answer once the head is complete (or too long). */
static void metrics_read_cb(struct bufferevent *bev, void *arg)
{
	struct metrics_conn *mc = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end;
	size_t eol;
	char *line;

	end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (end.pos < 0)
		end = evbuffer_search(in, "\n\n", 2, NULL);
	if (end.pos < 0) {
		if (evbuffer_get_length(in) >= METRICS_MAX_HEADERS)
			metrics_error(mc, 431, "Request Header Fields Too Large",
			    false);
		return;
	}
	line = evbuffer_readln(in, &eol, EVBUFFER_EOL_CRLF);
	if (line == NULL) {
		metrics_error(mc, 400, "Bad Request", false);
		return;
	}
	metrics_serve(mc, line, eol);
	free(line);
}

/* The answer is written: close. */
static void metrics_write_cb(struct bufferevent *bev, void *arg)
{
	struct metrics_conn *mc = arg;

	if (!(bufferevent_get_enabled(bev) & EV_READ))
		metrics_conn_free(mc);
}

/* The scraper left or failed. */
static void metrics_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	metrics_conn_free(arg);
}

/* metrics-timeout passed since the accept: the request or answer is late. */
static void metrics_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct metrics_conn *mc = arg;

	(void)fd;
	(void)what;
	log_info("metrics: a scraper took longer than metrics-timeout %u ms "
	    "(%s), closing", mc->m->srv->cfg.metrics_timeout_ms,
	    mc->answered ? "reading the page" : "sending its request");
	metrics_conn_free(mc);
}

/* A line about refused or evicted scrapers, once a second at most. */
static void metrics_log_full(struct metrics *m, const char *what, size_t max)
{
	uint64_t now = server_now();

	if (m->last_log_ms != 0 && now - m->last_log_ms < 1000)
		return;
	log_warn("metrics: %s %zu reached: closing the scrapers that have "
	    "been sending their request the longest (%" PRIu64 " so far), "
	    "refusing new ones while every slot is writing a page (%" PRIu64
	    " so far)", what, max, m->evicted, m->refused);
	m->last_log_ms = now;
}

/*
 * The connection that has been sending its request the longest (the
 * first in the list not writing a page), from src's address only with
 * from_src; NULL when every one is writing a page.
 */
static struct metrics_conn *metrics_slowest(struct metrics *m,
    const struct sockaddr *src, bool from_src)
{
	struct metrics_conn *mc;
	struct list_head *pos;

	list_for_each(pos, &m->conns) {
		mc = list_entry(pos, struct metrics_conn, entry);
		if (!mc->answered && (!from_src || listener_same_source(
		    (const struct sockaddr *)&mc->src, src)))
			return mc;
	}
	return NULL;
}

/* Connections open from src's address. */
static size_t metrics_from(const struct metrics *m, const struct sockaddr *src)
{
	const struct metrics_conn *mc;
	struct list_head *pos;
	size_t n = 0;

	list_for_each(pos, &m->conns) {
		mc = list_entry(pos, struct metrics_conn, entry);
		n += listener_same_source((const struct sockaddr *)&mc->src, src);
	}
	return n;
}

/*
 * A scraper connected: serve it, once there is room for it (its address's
 * slots, then all of them), within metrics-timeout from now.
 */
static void metrics_accept_cb(struct evconnlistener *evl, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct metrics *m = arg;
	const struct semd_config *cfg = &m->srv->cfg;
	struct metrics_conn *mc;
	struct timeval tv;
	bool per;

	(void)evl;
	/* Full for its address (then one of its own makes room), or in all. */
	per = cfg->metrics_per_source > 0 &&
	    metrics_from(m, sa) >= cfg->metrics_per_source;
	if (per || m->nconns >= cfg->metrics_max_connections) {
		metrics_log_full(m, per ? "metrics-per-source-max-connections" :
		    "metrics-max-connections", per ? cfg->metrics_per_source :
		    cfg->metrics_max_connections);
		if ((mc = metrics_slowest(m, sa, per)) == NULL) {
			m->refused++;
			close(fd);
			return;
		}
		m->evicted++;
		metrics_conn_free(mc);
	}
	mc = calloc(1, sizeof *mc);
	if (mc == NULL ||
	    (mc->bev = bufferevent_socket_new(m->srv->base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL ||
	    (mc->deadline = evtimer_new(m->srv->base, metrics_deadline_cb,
	    mc)) == NULL) {
		log_warn("metrics: out of memory accepting a scraper");
		if (mc != NULL && mc->bev != NULL)
			bufferevent_free(mc->bev);
		else
			close(fd);
		free(mc);
		return;
	}
	mc->m = m;
	if (salen > 0 && (size_t)salen <= sizeof mc->src)
		memcpy(&mc->src, sa, (size_t)salen);
	list_add_tail(&mc->entry, &m->conns);
	m->nconns++;
	tv.tv_sec = cfg->metrics_timeout_ms / 1000;
	tv.tv_usec = (cfg->metrics_timeout_ms % 1000) * 1000;
	evtimer_add(mc->deadline, &tv);
	bufferevent_setwatermark(mc->bev, EV_READ, 0, METRICS_MAX_HEADERS);
	bufferevent_setcb(mc->bev, metrics_read_cb, metrics_write_cb,
	    metrics_event_cb, mc);
	bufferevent_enable(mc->bev, EV_READ | EV_WRITE);
}

/* Accept again after an EMFILE pause. */
static void metrics_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct metrics *m = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(m->evl);
}

/* accept() failed: out of descriptors pauses a second rather than spin. */
static void metrics_error_cb(struct evconnlistener *evl, void *arg)
{
	struct metrics *m = arg;
	struct timeval tv = { 1, 0 };
	int err = EVUTIL_SOCKET_ERROR();

	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		log_warn("metrics: accept: %s; pausing for 1 s", strerror(err));
		evconnlistener_disable(evl);
		evtimer_add(m->resume, &tv);
		return;
	}
	log_warn("metrics: accept: %s", strerror(err));
}

/* Bind and serve. */
int metrics_new(struct server *srv, const char *addr, struct metrics **out)
{
	struct metrics *m;
	bool is_unix = strncmp(addr, "unix:", 5) == 0;
	char *name;
	int fd, r;

	*out = NULL;
	m = calloc(1, sizeof *m);
	if (m == NULL)
		return -ENOMEM;
	m->srv = srv;
	INIT_LIST_HEAD(&m->conns);
	/* Owner and group as for the client sockets; never world-reachable. */
	fd = is_unix ? listener_bind_unix(srv, addr + 5, 0660) :
	    listener_bind_tcp(addr);
	if (fd < 0) {
		r = fd;
		log_err_errno(r, "metrics-listen %s: cannot bind", addr);
		goto fail;
	}
	if (is_unix && (m->unlink_path = strdup(addr + 5)) == NULL) {
		close(fd);
		unlink(addr + 5);
		r = -ENOMEM;
		goto fail;
	}
	name = listener_name(fd, &is_unix);
	m->resume = evtimer_new(srv->base, metrics_resume_cb, m);
	m->evl = evconnlistener_new(srv->base, metrics_accept_cb, m,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (name == NULL || m->resume == NULL || m->evl == NULL) {
		free(name);
		if (m->evl == NULL)
			close(fd);
		r = -ENOMEM;
		goto fail;
	}
	evconnlistener_set_error_cb(m->evl, metrics_error_cb);
	/* The ready file's metrics: line: HOST:PORT, or unix:PATH. */
	if (!is_unix)
		memmove(name, name + 4, strlen(name + 4) + 1);
	m->addr = name;
	if (is_unix)
		log_notice("metrics on %s, path /metrics", m->addr);
	else
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
	struct list_head *pos, *tmp;

	if (m == NULL)
		return;
	list_for_each_safe(pos, tmp, &m->conns)
		metrics_conn_free(list_entry(pos, struct metrics_conn, entry));
	listener_close(m->evl, m->unlink_path);
	if (m->resume != NULL)
		event_free(m->resume);
	free(m->addr);
	free(m);
}

/* HOST:PORT as bound, or unix:PATH. */
const char *metrics_addr(const struct metrics *m)
{
	return m->addr;
}
