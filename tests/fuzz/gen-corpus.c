/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/gen-corpus.c - write the seed corpus: small valid inputs for
 * each fuzz target, built with protobuf-c so they track semd.proto, and
 * with the state machine's own entry builders and snapshots for the log
 * targets.
 *   gen-corpus OUTDIR   -> OUTDIR/fuzz_frame/..., OUTDIR/fuzz_dispatch/...,
 *                          OUTDIR/fuzz_entry/..., OUTDIR/fuzz_snap/...,
 *                          OUTDIR/fuzz_peer/...
 * Its output is committed under tests/fuzz/corpus/.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/state/state.h"
#include "proto/frame.h"
#include "proto/semd.pb-c.h"
#include "tests/common/req.h"
#include "tests/fuzz/fuzz.h"

struct out {
	uint8_t	buf[8192];
	size_t	len;
};

static const char *outdir;

/* Append raw bytes. */
static void out_bytes(struct out *o, const void *p, size_t n)
{
	if (o->len + n > sizeof(o->buf)) {
		fprintf(stderr, "gen-corpus: input too big\n");
		exit(1);
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

/* Append one framed request. */
static void out_req(struct out *o, const Semd__Request *req)
{
	uint8_t tmp[4096], hdr[FRAME_HDR];
	size_t n = semd__request__get_packed_size(req);

	if (n > sizeof(tmp))
		exit(1);
	semd__request__pack(req, tmp);
	frame_put_header(hdr, (uint32_t)n);
	out_bytes(o, hdr, FRAME_HDR);
	out_bytes(o, tmp, n);
}

/* Write o to OUTDIR/target/name. */
static void out_write(const struct out *o, const char *target, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, target);
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(o->buf, 1, o->len, f) != o->len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* Request builders, each appending one framed request to o. */

/* Hello resuming a session with a secret. */
static void req_hello_resume(struct out *o, uint64_t id, uint32_t lease_ms, uint64_t session,
    const uint8_t *secret, size_t secret_len)
{
	struct req q;

	out_req(o, req_make(&q, id, SEMD__REQUEST__OP_HELLO,
	    "version=%d client_name=%s lease_ms=%u resume_session=%" PRIu64
	    " resume_secret=%.*s", 1, "fuzz", lease_ms, session,
	    (int)secret_len, (const char *)secret));
}

/* Hello, version 1, with an optional session lease. */
static void req_hello(struct out *o, uint64_t id, uint32_t lease_ms)
{
	struct req q;

	out_req(o, req_make(&q, id, SEMD__REQUEST__OP_HELLO,
	    "version=%d client_name=%s host=%s pid=%d lease_ms=%u",
	    1, "fuzz", "localhost", 4242, lease_ms));
}

/* Create NAME with a limit, owned or signal mode. */
static void req_create(struct out *o, uint64_t id, const char *name, uint32_t limit, int signal)
{
	struct req q;

	out_req(o, req_make(&q, id, SEMD__REQUEST__OP_CREATE, "name=%s limit=%u mode=%d",
	    name, limit, signal ? SEMD__MODE__SIGNAL : SEMD__MODE__OWNED));
}

/* Down of n permits with a timeout and an optional detached lease. */
static void req_down(struct out *o, uint64_t id, const char *name, uint32_t n, int64_t timeout_ms,
    uint32_t lease_ms)
{
	struct req q;

	out_req(o, req_make(&q, id, SEMD__REQUEST__OP_DOWN,
	    "name=%s n=%u timeout_ms=%" PRId64 " lease_ms=%u", name, n, timeout_ms, lease_ms));
}

/* Up of n permits, or of one permit by id. */
static void req_up(struct out *o, uint64_t id, const char *name, uint32_t n, uint64_t permit)
{
	struct req q;

	out_req(o, req_make(&q, id, SEMD__REQUEST__OP_UP,
	    "name=%s n=%u permit_id=%" PRIu64, name, n, permit));
}

/* req_set() with the field list of a table (each takes a string and a number). */
static void req_set_listed(struct req *q, const char *fields, ...)
{
	va_list ap;

	va_start(ap, fields);
	req_vset(q, fields, ap);
	va_end(ap);
}

/*
 * One of the requests that only name a semaphore (info, delete, ...): the
 * field that takes the name, and the one other field set, to value.
 */
static void req_name_op(struct out *o, uint64_t id, int op, const char *name)
{
	static const struct {
		int		op;
		const char	*fields;	/* "name=%s other=%u" */
		unsigned	value;
	} ops[] = {
		{ SEMD__REQUEST__OP_INFO, "name=%s", 0 },
		{ SEMD__REQUEST__OP_DELETE, "name=%s force=%u", 1 },
		{ SEMD__REQUEST__OP_LIST, "prefix=%s max=%u", 2 },
		{ SEMD__REQUEST__OP_VALIDATE, "name=%s token=%u", 1 },
		{ SEMD__REQUEST__OP_RELEASE, "name=%s permit_id=%u", 1 },
		{ SEMD__REQUEST__OP_SET_LIMIT, "name=%s limit=%u", 3 },
	};
	struct req q;
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]) && ops[i].op != op; i++)
		continue;
	if (i == sizeof(ops) / sizeof(ops[0]))
		exit(1);
	req_op(&q, id, op);
	req_set_listed(&q, ops[i].fields, name, ops[i].value);
	out_req(o, &q.r);
}

/* Ping, Stats, Detach or Cancel (of the previous id). */
static void req_simple(struct out *o, uint64_t id, int op)
{
	static const char payload[] = "payload";
	struct req q;

	req_op(&q, id, op);
	if (op == SEMD__REQUEST__OP_PING)
		req_set(&q, "payload=%.*s", (int)sizeof(payload) - 1, payload);
	else if (op == SEMD__REQUEST__OP_CANCEL)
		req_set(&q, "request_id=%" PRIu64, id - 1);
	out_req(o, &q.r);
}

/* Control bytes of the dispatch scripts: a record of kind for client. */
static void ctl(struct out *o, int kind, int client)
{
	uint8_t c = FUZZ_CTL(kind, client);

	out_bytes(o, &c, 1);
}

/* A clock advance of root_ms squared milliseconds. */
static void tick(struct out *o, uint8_t root_ms)
{
	ctl(o, FUZZ_OP_TICK, 0);
	out_bytes(o, &root_ms, 1);
}

/* A new dispatch script: clients 0 to n - 1 say hello, without a lease. */
static void script_start(struct out *o, int n)
{
	int i;

	memset(o, 0, sizeof(*o));
	for (i = 0; i < n; i++) {
		ctl(o, 0, i);
		req_hello(o, 1, 0);
	}
}

/* The fuzz_frame seeds: one of each request, streams, and broken frames. */
static void gen_frame(void)
{
	static const int name_ops[] = {
		SEMD__REQUEST__OP_INFO, SEMD__REQUEST__OP_DELETE, SEMD__REQUEST__OP_LIST,
		SEMD__REQUEST__OP_VALIDATE, SEMD__REQUEST__OP_RELEASE, SEMD__REQUEST__OP_SET_LIMIT,
	};
	static const char *const op_files[] = {
		"info", "delete", "list", "validate", "release", "set-limit",
	};
	struct out o;
	uint8_t hdr[FRAME_HDR];
	size_t i;

	memset(&o, 0, sizeof(o)); req_hello(&o, 1, 0); out_write(&o, "fuzz_frame", "hello");
	memset(&o, 0, sizeof(o)); req_create(&o, 2, "jobs/a", 2, 0); out_write(&o, "fuzz_frame", "create");
	memset(&o, 0, sizeof(o)); req_down(&o, 3, "jobs/a", 1, -1, 0); out_write(&o, "fuzz_frame", "down");
	memset(&o, 0, sizeof(o)); req_down(&o, 3, "jobs/a", 2, 250, 1000); out_write(&o, "fuzz_frame", "down-lease");
	memset(&o, 0, sizeof(o)); req_up(&o, 4, "jobs/a", 1, 7); out_write(&o, "fuzz_frame", "up");
	memset(&o, 0, sizeof(o)); req_simple(&o, 5, SEMD__REQUEST__OP_PING); out_write(&o, "fuzz_frame", "ping");
	memset(&o, 0, sizeof(o)); req_simple(&o, 6, SEMD__REQUEST__OP_STATS); out_write(&o, "fuzz_frame", "stats");
	memset(&o, 0, sizeof(o)); req_simple(&o, 7, SEMD__REQUEST__OP_CANCEL); out_write(&o, "fuzz_frame", "cancel");
	for (i = 0; i < sizeof(name_ops) / sizeof(name_ops[0]); i++) {
		memset(&o, 0, sizeof(o));
		req_name_op(&o, 10 + i, name_ops[i], "jobs/a");
		out_write(&o, "fuzz_frame", op_files[i]);
	}
	/* a pipelined session */
	memset(&o, 0, sizeof(o));
	req_hello(&o, 1, 0);
	req_create(&o, 2, "db/replica-1", 1, 0);
	req_down(&o, 3, "db/replica-1", 1, -1, 0);
	req_up(&o, 4, "db/replica-1", 1, 0);
	req_simple(&o, 5, SEMD__REQUEST__OP_PING);
	out_write(&o, "fuzz_frame", "stream");
	/* zero-length frame: an empty Request */
	memset(&o, 0, sizeof(o));
	frame_put_header(hdr, 0);
	out_bytes(&o, hdr, FRAME_HDR);
	out_write(&o, "fuzz_frame", "empty-frame");
	/* a header over the cap */
	memset(&o, 0, sizeof(o));
	frame_put_header(hdr, FRAME_MAX_DEFAULT + 1);
	out_bytes(&o, hdr, FRAME_HDR);
	out_write(&o, "fuzz_frame", "oversized");
	/* found by fuzz_frame: a field-0 tag in an overlong varint, unframed */
	memset(&o, 0, sizeof(o));
	out_bytes(&o, "\x08\x01\x80\x00\x00", 5);
	out_write(&o, "fuzz_frame", "regress-overlong-tag0");
	/* ... and the same inside a DownMulti's Want, unframed */
	memset(&o, 0, sizeof(o));
	out_bytes(&o, "\x8a\x01\x0a\x0a\x06\xb2\x01\x00\x80\x00\x00\x10\x01", 13);
	out_write(&o, "fuzz_frame", "regress-overlong-tag0-nested");
	/* a truncated frame */
	memset(&o, 0, sizeof(o));
	req_down(&o, 3, "jobs/a", 1, -1, 0);
	o.len -= 3;
	out_write(&o, "fuzz_frame", "truncated");
}

/* The fuzz_dispatch seeds: short scripts over a few sessions. */
static void gen_dispatch(void)
{
	struct out o;

	/* hand-off: 0 holds, 1 waits, 0 ups, 1 gets it */
	script_start(&o, 2);
	ctl(&o, 0, 0); req_create(&o, 2, "a", 1, 0);
	ctl(&o, 0, 0); req_down(&o, 3, "a", 1, -1, 0);
	ctl(&o, 0, 1); req_down(&o, 2, "a", 1, -1, 0);
	ctl(&o, 0, 0); req_up(&o, 4, "a", 1, 0);
	ctl(&o, 0, 1); req_up(&o, 3, "a", 1, 0);
	out_write(&o, "fuzz_dispatch", "handoff");

	/* a waiter times out, another is cancelled, a holder disconnects */
	script_start(&o, 3);
	ctl(&o, 0, 0); req_down(&o, 2, "b", 1, -1, 0);
	ctl(&o, 0, 1); req_down(&o, 2, "b", 1, 50, 0);
	ctl(&o, 0, 2); req_down(&o, 2, "b", 1, -1, 0);
	ctl(&o, 0, 2); req_simple(&o, 3, SEMD__REQUEST__OP_CANCEL);
	tick(&o, 10);
	ctl(&o, FUZZ_OP_RECONNECT, 0);
	ctl(&o, 0, 1); req_name_op(&o, 4, SEMD__REQUEST__OP_INFO, "b");
	out_write(&o, "fuzz_dispatch", "timeout-cancel-disconnect");

	/* counting: limit 3, n = 2 each, set-limit, delete --force with waiters */
	script_start(&o, 2);
	ctl(&o, 0, 0); req_create(&o, 2, "c", 3, 0);
	ctl(&o, 0, 0); req_down(&o, 3, "c", 2, -1, 0);
	ctl(&o, 0, 1); req_down(&o, 2, "c", 2, 1000, 0);
	ctl(&o, 0, 0); req_name_op(&o, 4, SEMD__REQUEST__OP_SET_LIMIT, "c");
	ctl(&o, 0, 1); req_name_op(&o, 3, SEMD__REQUEST__OP_LIST, "");
	ctl(&o, 0, 0); req_name_op(&o, 5, SEMD__REQUEST__OP_DELETE, "c");
	ctl(&o, 0, 1); req_simple(&o, 4, SEMD__REQUEST__OP_STATS);
	out_write(&o, "fuzz_dispatch", "counting-delete");

	/* leases: a detached hold and a session lease outliving the connection */
	memset(&o, 0, sizeof(o));
	ctl(&o, 0, 0); req_hello(&o, 1, 2000);
	ctl(&o, 0, 0); req_down(&o, 2, "d", 1, 0, 500);
	ctl(&o, 0, 0); req_down(&o, 3, "e", 1, -1, 0);
	ctl(&o, FUZZ_OP_RECONNECT, 0);
	ctl(&o, 0, 1); req_hello(&o, 1, 0);
	ctl(&o, 0, 1); req_down(&o, 2, "e", 1, -1, 0);
	tick(&o, 30);
	tick(&o, 50);
	ctl(&o, 0, 1); req_name_op(&o, 3, SEMD__REQUEST__OP_VALIDATE, "e");
	out_write(&o, "fuzz_dispatch", "leases");

	/* signal mode, up without a hold, release by an admin */
	script_start(&o, 2);
	ctl(&o, 0, 0); req_create(&o, 2, "s", 2, 1);
	ctl(&o, 0, 1); req_down(&o, 2, "s", 1, -1, 0);
	ctl(&o, 0, 0); req_up(&o, 3, "s", 1, 0);
	ctl(&o, 0, 0); req_name_op(&o, 4, SEMD__REQUEST__OP_RELEASE, "s");
	ctl(&o, 0, 1); req_simple(&o, 3, SEMD__REQUEST__OP_PING);
	out_write(&o, "fuzz_dispatch", "signal-release");

	/*
	 * resume: fuzz_dispatch gives the n-th connection it opens the secret
	 * {slot, n, n >> 8, 0...}; the first session (id 1) is slot 0's, n = 0
	 */
	memset(&o, 0, sizeof(o));
	{
		static const uint8_t zero[16];

		ctl(&o, 0, 0); req_hello(&o, 1, 5000);
		ctl(&o, 0, 0); req_down(&o, 2, "r", 1, -1, 0);
		ctl(&o, 0, 1); req_hello_resume(&o, 1, 0, 1, zero, sizeof(zero));
		ctl(&o, FUZZ_OP_RECONNECT, 0);
		ctl(&o, 0, 0); req_hello_resume(&o, 1, 5000, 1, zero, sizeof(zero));
		ctl(&o, 0, 0); req_up(&o, 3, "r", 1, 0);
		ctl(&o, 0, 2); req_hello_resume(&o, 1, 0, 1, zero, 15);
		tick(&o, 80);
		ctl(&o, 0, 3); req_hello_resume(&o, 1, 0, 1, zero, sizeof(zero));
		out_write(&o, "fuzz_dispatch", "resume");
	}

	/* no Hello first, then garbage */
	memset(&o, 0, sizeof(o));
	ctl(&o, 0, 3); req_down(&o, 1, "x", 1, -1, 0);
	ctl(&o, 0, 2); out_bytes(&o, "\0\0\0\3\xff\xff\xff", 7);
	out_write(&o, "fuzz_dispatch", "no-hello-garbage");
}

/* --- the log seeds: entry lists (fuzz_entry) and snapshots (fuzz_snap) --- */

struct logw {
	struct out	o;		/* the entry list */
	struct sm	*sm;		/* the entries applied */
	struct sm_batch	b;		/* the entry being made */
};

static void no_reply(void *ctx, void *conn, const Semd__Reply *r)
{
	(void)ctx;
	(void)conn;
	(void)r;
}

static void *bind_id(void *arg, uint64_t id)
{
	(void)arg;
	return (void *)(uintptr_t)id;
}

static const struct sm_apply_hooks log_hooks = { bind_id, NULL, NULL };

/* A new list, and the state machine it is applied to. */
static void log_init(struct logw *w)
{
	static const struct sm_out out = { no_reply, NULL, NULL, NULL, NULL, NULL };
	struct sm_config cfg;

	memset(&w->o, 0, sizeof(w->o));
	sm_config_defaults(&cfg);
	cfg.wall_ms = 1700000000000ull;
	cfg.server = "semd fuzz";
	cfg.durable = true;
	w->sm = sm_new(&cfg, &out, 1000);
	if (w->sm == NULL)
		exit(1);
	sm_batch_init(&w->b);
}

/*
 * The commands batched so far as one entry stamped time: listed, and
 * applied, which must succeed (or, with refused, fail).
 */
static void log_put(struct logw *w, uint64_t time, int refused)
{
	size_t hl = sm_entry_header_size();
	size_t len = (hl + w->b.len + 7) & ~(size_t)7;
	uint8_t entry[4096], hdr[2];
	char err[160];

	if (w->b.failed || len > sizeof(entry))
		exit(1);
	memset(entry, 0, len);
	sm_entry_header(entry, time, 1700000000000ull + time);
	memcpy(entry + hl, w->b.p, w->b.len);
	hdr[0] = (uint8_t)len;
	hdr[1] = (uint8_t)(len >> 8);
	out_bytes(&w->o, hdr, 2);
	out_bytes(&w->o, entry, len);
	if ((sm_apply(w->sm, entry, len, &log_hooks, err, sizeof(err)) != 0) !=
	    refused) {
		fprintf(stderr, "gen-corpus: entry at %llu: %s\n",
		    (unsigned long long)time, refused ? "taken" : err);
		exit(1);
	}
	sm_batch_reset(&w->b);
}

static void log_entry(struct logw *w, uint64_t time)
{
	log_put(w, time, 0);
}

/* A client opens: principal uid:0 (local, over UNIX) or anonymous. */
static void log_open(struct logw *w, uint64_t id, int local)
{
	uint8_t secret[SM_SECRET_LEN];

	memset(secret, 0, sizeof(secret));
	secret[0] = (uint8_t)id;
	sm_batch_open(&w->b, id, local ? "uid:0" : "anonymous", secret,
	    local ? SM_CLIENT_LOCAL : 0);
}

/* The request that r (one framed request, then emptied) holds, for client. */
static void log_req(struct logw *w, uint64_t client, struct out *r)
{
	static const struct sm_caller admin = { SM_PRIV_ADMIN, { 0 } };
	static const struct sm_caller user = { 0, { 4, 6, 5, 3 } };

	sm_batch_request(&w->b, client, client % 2 ? &admin : &user,
	    r->buf + FRAME_HDR, r->len - FRAME_HDR);
	r->len = 0;
}

/* The snapshot of where the entries left the state. */
static void log_snapshot(struct logw *w, struct out *snap)
{
	uint8_t *p;
	size_t len;

	if (sm_snapshot(w->sm, &p, &len) != 0 || len > sizeof(snap->buf))
		exit(1);
	memcpy(snap->buf, p, len);
	snap->len = len;
	free(p);
}

/* Write the entry list and the snapshot of where it left the state. */
static void log_write(struct logw *w, const char *name)
{
	struct out snap;

	out_write(&w->o, "fuzz_entry", name);
	log_snapshot(w, &snap);
	out_write(&snap, "fuzz_snap", name);
}

/* Where the record of name (u32 length, bytes) begins in a snapshot. */
static size_t snap_find(const struct out *snap, const char *name)
{
	size_t n = strlen(name), i;

	for (i = 0; i + 4 + n <= snap->len; i++)
		if (snap->buf[i] == n && snap->buf[i + 1] == 0 &&
		    snap->buf[i + 2] == 0 && snap->buf[i + 3] == 0 &&
		    memcmp(snap->buf + i + 4, name, n) == 0)
			return i;
	fprintf(stderr, "gen-corpus: %s is not in the snapshot\n", name);
	exit(1);
}

static void log_free(struct logw *w)
{
	sm_batch_free(&w->b);
	sm_free(w->sm);
}

/* The fuzz_entry and fuzz_snap seeds. */
static void gen_log(void)
{
	static const uint8_t secret3[SM_SECRET_LEN] = { 3 };
	struct logw w;
	struct out r;

	memset(&r, 0, sizeof(r));
	/* holders, waiters of every kind, a detached hold, signal mode */
	log_init(&w);
	sm_batch_boot(&w.b);
	{
		struct sm_config cfg;

		sm_config_defaults(&cfg);
		sm_batch_config(&w.b, &cfg);
	}
	log_open(&w, 1, 1);
	log_open(&w, 2, 0);
	log_open(&w, 3, 1);
	log_entry(&w, 1000);
	req_hello(&r, 1, 5000); log_req(&w, 1, &r);
	req_hello(&r, 1, 0); log_req(&w, 2, &r);
	req_hello(&r, 1, 3000); log_req(&w, 3, &r);
	log_entry(&w, 1001);
	req_create(&r, 2, "a", 2, 0); log_req(&w, 1, &r);
	req_down(&r, 3, "a", 2, -1, 0); log_req(&w, 1, &r);
	req_down(&r, 2, "a", 1, -1, 0); log_req(&w, 2, &r);
	req_down(&r, 2, "a", 1, 500, 0); log_req(&w, 3, &r);
	req_down(&r, 3, "d", 1, 0, 1000); log_req(&w, 3, &r);
	req_create(&r, 3, "s", 3, 1); log_req(&w, 2, &r);
	req_down(&r, 4, "s", 1, -1, 0); log_req(&w, 2, &r);
	log_entry(&w, 1002);
	log_write(&w, "waiters");
	{
		struct out snap;
		size_t at;

		/*
		 * Found by fuzz_snap: a name whose limit does not match its
		 * holders and free permits was restored (sm_check failed after).
		 */
		log_snapshot(&w, &snap);
		at = snap_find(&snap, "d") + 4 + 1;
		snap.buf[at] = 7;		/* limit 1 -> 7 */
		out_write(&snap, "fuzz_snap", "regress-limit-count");
		/*
		 * Found by fuzz_snap: bytes refused after holders and waiters
		 * were read leaked them (sm_free frees them through their
		 * owners' lists, filled only at the end).
		 */
		log_snapshot(&w, &snap);
		snap.len -= 4;
		out_write(&snap, "fuzz_snap", "regress-cut-after-waiters");
	}
	/* hand-offs, a retry answered from its memo, a detach, a restart, a resume */
	req_up(&r, 4, "a", 2, 0); log_req(&w, 1, &r);
	req_down(&r, 2, "a", 1, -1, 0); log_req(&w, 2, &r);
	req_simple(&r, 5, SEMD__REQUEST__OP_DETACH); log_req(&w, 3, &r);
	sm_batch_close(&w.b, 3);
	log_entry(&w, 1100);
	sm_batch_restart(&w.b, 2000);
	log_open(&w, 4, 1);
	log_entry(&w, 1200);
	req_hello_resume(&r, 1, 3000, 3, secret3, sizeof(secret3)); log_req(&w, 4, &r);
	req_name_op(&r, 2, SEMD__REQUEST__OP_INFO, "a"); log_req(&w, 4, &r);
	log_entry(&w, 1300);
	log_write(&w, "restart-resume");
	/* a leader takes over; time passes: timeouts, leases run out; then
	 * deletes and set-limit */
	sm_batch_leader(&w.b, 2, 1500, "tcp:127.0.0.1:7385");
	log_entry(&w, 1400);
	log_entry(&w, 5000);
	log_open(&w, 5, 0);
	req_hello(&r, 1, 0); log_req(&w, 5, &r);
	req_name_op(&r, 2, SEMD__REQUEST__OP_SET_LIMIT, "s"); log_req(&w, 5, &r);
	req_name_op(&r, 3, SEMD__REQUEST__OP_DELETE, "a"); log_req(&w, 5, &r);
	req_simple(&r, 4, SEMD__REQUEST__OP_STATS); log_req(&w, 5, &r);
	log_entry(&w, 9000);
	log_write(&w, "expired");
	log_free(&w);

	/*
	 * Leases the leader's (issue 23): LEASES, a session kept alive by
	 * the leader alone, a new leader's fresh start, EXPIRE refused (heard
	 * since) and taken.
	 */
	log_init(&w);
	sm_batch_boot(&w.b);
	log_open(&w, 1, 0);
	log_open(&w, 2, 0);
	log_entry(&w, 1000);
	req_hello(&r, 1, 3000); log_req(&w, 1, &r);
	req_hello(&r, 1, 0); log_req(&w, 2, &r);
	req_down(&r, 2, "a", 1, -1, 0); log_req(&w, 1, &r);
	req_down(&r, 2, "a", 1, -1, 0); log_req(&w, 2, &r);
	sm_batch_leases(&w.b, 1000);
	log_entry(&w, 1001);
	sm_batch_leader(&w.b, 3, 500, "tcp:127.0.0.1:7385");
	log_entry(&w, 60000);
	sm_batch_expire(&w.b, 1);
	log_entry(&w, 62000);
	sm_batch_expire(&w.b, 1);
	sm_batch_expire(&w.b, 99);
	log_entry(&w, 64000);
	log_write(&w, "leader-leases");
	log_free(&w);

	/*
	 * Found by fuzz_entry: a CONFIG entry with default limit 0 was taken,
	 * a down then made a name of limit 0, and the state's own snapshot
	 * was refused. The entry is refused now (the down after it runs).
	 */
	log_init(&w);
	{
		struct sm_config cfg;

		sm_batch_boot(&w.b);
		log_open(&w, 1, 1);
		log_entry(&w, 1000);
		req_hello(&r, 1, 0); log_req(&w, 1, &r);
		log_entry(&w, 1001);
		sm_config_defaults(&cfg);
		cfg.default_limit = 0;
		sm_batch_config(&w.b, &cfg);
		log_put(&w, 1002, 1);
		req_down(&r, 2, "z", 1, 0, 0); log_req(&w, 1, &r);
		log_entry(&w, 1003);
		out_write(&w.o, "fuzz_entry", "regress-config-limit0");
	}
	log_free(&w);
}

/* --- a raft peer's stream (fuzz_peer), as libraft 0.22 writes it --------- */

/* v little-endian, in n bytes. */
static void out_le(struct out *o, uint64_t v, unsigned n)
{
	uint8_t b[8];

	for (unsigned i = 0; i < n; i++, v >>= 8)
		b[i] = (uint8_t)v;
	out_bytes(o, b, n);
}

/* A preamble: type, version, header length. */
static void peer_preamble(struct out *o, unsigned type, unsigned version,
    uint64_t hlen)
{
	out_le(o, type | (uint64_t)version << 16, 8);
	out_le(o, hlen, 8);
}

/* An entry of an AppendEntries: its term, type and bytes. */
struct peer_entry {
	uint64_t	term;
	unsigned	type;
	const uint8_t	*p;
	size_t		len;
};

/* An AppendEntries (v0) of n entries. */
static void peer_append(struct out *o, uint64_t term, uint64_t prev,
    uint64_t prev_term, uint64_t commit, const struct peer_entry *e,
    unsigned n)
{
	peer_preamble(o, 1, 0, 48 + 16 * (uint64_t)n);
	out_le(o, term, 8);
	out_le(o, prev, 8);
	out_le(o, prev_term, 8);
	out_le(o, commit, 8);
	out_le(o, n, 8);
	for (unsigned i = 0; i < n; i++) {
		out_le(o, e[i].term, 8);
		out_le(o, e[i].type, 4);
		out_le(o, e[i].len, 4);
	}
	out_le(o, 0, 8);
	for (unsigned i = 0; i < n; i++)
		out_bytes(o, e[i].p, e[i].len);
}

/* RequestVote (v2). */
static void peer_vote(struct out *o, uint64_t term, uint64_t cand,
    uint64_t last, uint64_t last_term, unsigned flags)
{
	peer_preamble(o, 3, 2, 40);
	out_le(o, term, 8);
	out_le(o, cand, 8);
	out_le(o, last, 8);
	out_le(o, last_term, 8);
	out_le(o, flags, 8);
}

/* The other fixed-size messages: their results and TimeoutNow. */
static void peer_results(struct out *o)
{
	peer_preamble(o, 2, 2, 32);	/* AppendEntries result */
	out_le(o, 5, 8);
	out_le(o, 0, 8);
	out_le(o, 12, 8);
	out_le(o, 0, 8);
	peer_preamble(o, 4, 2, 24);	/* RequestVote result */
	out_le(o, 5, 8);
	out_le(o, 1, 8);
	out_le(o, 0, 8);
	peer_preamble(o, 6, 0, 24);	/* TimeoutNow */
	out_le(o, 5, 8);
	out_le(o, 12, 8);
	out_le(o, 5, 8);
}

/* A configuration of servers 1..n as libraft encodes it, in c. */
static void peer_conf(struct out *c, unsigned n)
{
	char addr[32];

	out_le(c, 1, 1);
	out_le(c, n, 8);
	for (unsigned i = 1; i <= n; i++) {
		snprintf(addr, sizeof(addr), "127.0.0.1:900%u", i);
		out_le(c, i, 8);
		out_bytes(c, addr, strlen(addr) + 1);
		out_le(c, 1, 1);	/* a voter */
	}
	while (c->len % 8 != 0)
		out_le(c, 0, 1);
}

/* InstallSnapshot (v0) of a configuration and data. */
static void peer_snapshot(struct out *o, const struct out *conf,
    const uint8_t *data, size_t len)
{
	peer_preamble(o, 5, 0, 56 + conf->len);
	out_le(o, 5, 8);
	out_le(o, 100, 8);
	out_le(o, 4, 8);
	out_le(o, 1, 8);
	out_le(o, conf->len, 8);
	out_bytes(o, conf->buf, conf->len);
	out_le(o, len, 8);
	out_le(o, 0, 8);
	out_bytes(o, data, len);
}

/* A semd entry (a CREATE from client 7) padded to 8 bytes, in e. */
static void peer_semd_entry(struct out *e)
{
	struct out r;
	struct sm_batch b;
	size_t hl = sm_entry_header_size();

	memset(&r, 0, sizeof(r));
	sm_batch_init(&b);
	req_create(&r, 1, "peer/x", 2, 0);
	sm_batch_request(&b, 7, &(struct sm_caller){ SM_PRIV_ADMIN, { 0 } },
	    r.buf + FRAME_HDR, r.len - FRAME_HDR);
	memset(e, 0, sizeof(*e));
	e->len = (hl + b.len + 7) & ~(size_t)7;
	sm_entry_header(e->buf, 1000, 1700000000000ull);
	memcpy(e->buf + hl, b.p, b.len);
	sm_batch_free(&b);
}

/*
 * The fuzz_peer seeds: each a piece size (the first byte) and a stream,
 * the messages of a cluster and the crafted ones of issue 35.
 */
static void gen_peer(void)
{
	static const uint8_t barrier[8], nine[16] = { 9, 9, 9, 9, 9, 9, 9, 9, 9 };
	struct out o, conf, ent;
	struct peer_entry e[2];

	peer_semd_entry(&ent);
	memset(&conf, 0, sizeof(conf));
	peer_conf(&conf, 3);
	e[0] = (struct peer_entry){ 5, 1, ent.buf, ent.len };	/* RAFT_COMMAND */
	e[1] = (struct peer_entry){ 5, 2, barrier, 8 };		/* RAFT_BARRIER */

	memset(&o, 0, sizeof(o));
	out_le(&o, 255, 1);
	peer_append(&o, 5, 10, 4, 10, NULL, 0);		/* a heartbeat */
	out_write(&o, "fuzz_peer", "heartbeat");

	memset(&o, 0, sizeof(o));
	out_le(&o, 6, 1);
	peer_append(&o, 5, 10, 4, 11, e, 2);
	out_write(&o, "fuzz_peer", "entries");

	memset(&o, 0, sizeof(o));
	out_le(&o, 255, 1);
	e[1] = (struct peer_entry){ 5, 3, conf.buf, conf.len };	/* RAFT_CHANGE */
	peer_append(&o, 5, 11, 5, 12, e + 1, 1);
	out_write(&o, "fuzz_peer", "change");

	memset(&o, 0, sizeof(o));
	out_le(&o, 255, 1);
	peer_vote(&o, 6, 2, 12, 5, 2);			/* a pre-vote */
	peer_vote(&o, 6, 2, 12, 5, 0);
	peer_results(&o);
	out_write(&o, "fuzz_peer", "votes-results");

	memset(&o, 0, sizeof(o));
	out_le(&o, 15, 1);
	peer_snapshot(&o, &conf, ent.buf, ent.len);
	out_write(&o, "fuzz_peer", "snapshot");

	/* Issue 35: term+1 and one 9-byte entry of an unknown format. */
	memset(&o, 0, sizeof(o));
	out_le(&o, 255, 1);
	e[0] = (struct peer_entry){ 6, 1, nine, 9 };
	peer_append(&o, 6, 12, 5, 13, e, 1);
	out_write(&o, "fuzz_peer", "issue35-nine-bytes");
	/* ... the same padded to 16: past the wire, refused by the port. */
	memset(&o, 0, sizeof(o));
	out_le(&o, 255, 1);
	e[0] = (struct peer_entry){ 6, 1, nine, 16 };
	peer_append(&o, 6, 12, 5, 13, e, 1);
	out_write(&o, "fuzz_peer", "issue35-unknown-format");
	/* A term of 2^64 - 2. */
	memset(&o, 0, sizeof(o));
	out_le(&o, 255, 1);
	peer_vote(&o, UINT64_MAX - 1, 2, 12, 5, 0);
	out_write(&o, "fuzz_peer", "issue35-term");
	/* An AppendEntries whose header is 1 byte long, then more. */
	memset(&o, 0, sizeof(o));
	out_le(&o, 255, 1);
	peer_preamble(&o, 1, 0, 1);
	out_le(&o, 6, 8);
	peer_results(&o);
	out_write(&o, "fuzz_peer", "issue35-short-header");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen-corpus OUTDIR\n");
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) != 0 && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	gen_frame();
	gen_dispatch();
	gen_log();
	gen_peer();
	return 0;
}
