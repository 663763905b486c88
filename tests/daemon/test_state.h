/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_state.h - what the state machine's test programs
 * (tests/daemon/test_state_*.c, one per part of daemon/state/) share: the
 * state driven directly with fake time, its replies captured through the
 * sink (packed and unpacked again, so they are real wire messages), and the
 * requests and checks the tests are written in. Included by one file of each
 * program.
 */
#ifndef SEMD_TESTS_DAEMON_TEST_STATE_H
#define SEMD_TESTS_DAEMON_TEST_STATE_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/state.h"
#include "tests/common/check.h"
#include "tests/common/req.h"

#define CHECK_SM(sm) do {						\
	char e_[256];							\
	if (sm_check((sm), e_, sizeof e_) != 0)				\
		FAIL("invariant: %s", e_);				\
} while (0)

/* --- captured replies --------------------------------------------------- */

#define MAX_CAPS 20000

struct cap {
	uintptr_t	conn;
	Semd__Reply	*r;
	int		used;
};

static struct cap caps[MAX_CAPS];
static int ncaps;

/* The sink: deep-copy a reply through the wire format. */
static inline void cap_reply(void *ctx, void *conn, const Semd__Reply *r)
{
	size_t len = semd__reply__get_packed_size(r);
	uint8_t *buf = malloc(len ? len : 1);

	semd__reply__pack(r, buf);
	if (ncaps == MAX_CAPS) {
		FAIL("too many replies captured");
		free(buf);
		return;
	}
	caps[ncaps].conn = (uintptr_t)conn;
	caps[ncaps].r = semd__reply__unpack(NULL, len, buf);
	caps[ncaps].used = 0;
	ncaps++;
	free(buf);
}

/* Forget every captured reply. */
static inline void caps_clear(void)
{
	int i;

	for (i = 0; i < ncaps; i++)
		semd__reply__free_unpacked(caps[i].r, NULL);
	ncaps = 0;
}

/* Take the first unused reply for (conn, id), or NULL. */
static inline Semd__Reply *take(uintptr_t conn, uint64_t id)
{
	int i;

	for (i = 0; i < ncaps; i++) {
		if (!caps[i].used && caps[i].conn == conn && caps[i].r->id == id) {
			caps[i].used = 1;
			return caps[i].r;
		}
	}
	return NULL;
}

/* Take a reply and check its code; prints the message on mismatch. */
static inline Semd__Reply *expect_code_(int line, uintptr_t conn, uint64_t id, int code)
{
	Semd__Reply *r = take(conn, id);

	if (r == NULL) {
		FAIL("line %d: no reply for conn %lu id %" PRIu64 " (want code %d)",
		    line, (unsigned long)conn, id, code);
		return NULL;
	}
	if ((int)r->code != code)
		FAIL("line %d: conn %lu id %" PRIu64 ": want code %d, got %d (%s)",
		    line, (unsigned long)conn, id, code, r->code, r->message);
	return r;
}
#define expect_code(conn, id, code) expect_code_(__LINE__, conn, id, code)

/* No (unused) reply for (conn, id) yet. */
static inline int none(uintptr_t conn, uint64_t id)
{
	int i;

	for (i = 0; i < ncaps; i++)
		if (!caps[i].used && caps[i].conn == conn && caps[i].r->id == id)
			return 0;
	return 1;
}

/* --- building requests ------------------------------------------------ */

static uint64_t now = 1000;
static const uint8_t secret_a[SM_SECRET_LEN] = "0123456789abcdef";

/* The access layer's decision for the next requests (NULL: admin, no caps). */
static const struct sm_caller *t_who;

/* Connections the state machine asked to close, in order. */
static uintptr_t closed[64];
static int nclosed;

/* The close effect: record it. */
static inline void cap_close(void *ctx, void *conn)
{
	if (nclosed < 64)
		closed[nclosed++] = (uintptr_t)conn;
}

/* The last Backup's copy of the state (the backup effect), the caller's. */
static uint8_t *bk_snap;
static size_t bk_len;
static uintptr_t bk_conn;
static uint64_t bk_id;

/* The backup effect: keep the copy. */
static inline void cap_backup(void *ctx, void *conn, uint64_t id, uint8_t *snap,
    size_t len, uint64_t wall_ms)
{
	(void)ctx;
	(void)wall_ms;
	free(bk_snap);
	bk_snap = snap;
	bk_len = len;
	bk_conn = (uintptr_t)conn;
	bk_id = id;
}

/* A state machine with a fixed clock and hash key. */
static inline struct sm *t_new(uint64_t wall_ms, void (*tune)(struct sm_config *))
{
	struct sm_config cfg;
	struct sm_out out = { cap_reply, NULL, cap_close, NULL, cap_backup, NULL };

	sm_config_defaults(&cfg);
	cfg.wall_ms = wall_ms;
	memcpy(cfg.hash_key, "fixed hash key!!", 16);
	cfg.stats_local = true;
	if (tune != NULL)
		tune(&cfg);
	caps_clear();
	nclosed = 0;
	t_who = NULL;
	return sm_new(&cfg, &out, now);
}

/* Check the invariants after every request (the tests of issue 15). */
static bool t_check_each;

/* Send one request. */
static inline int t_req(struct sm *sm, struct sm_client *c, Semd__Request *req)
{
	int r = sm_request(sm, c, req, t_who, now);

	if (t_check_each)
		CHECK_SM(sm);
	return r;
}

/* Send request id of op with the fields fmt names (tests/common/req.h). */
__attribute__((format(printf, 5, 6)))
static inline int t_op(struct sm *sm, struct sm_client *c, uint64_t id, int op,
    const char *fmt, ...)
{
	struct req q;
	va_list ap;

	req_op(&q, id, op);
	va_start(ap, fmt);
	req_vset(&q, fmt, ap);
	va_end(ap);
	return t_req(sm, c, &q.r);
}

/* Hello with a lease and optional resume. */
static inline int t_hello(struct sm *sm, struct sm_client *c, uint64_t id,
    uint32_t lease, uint64_t resume, const uint8_t *secret)
{
	return t_op(sm, c, id, SEMD__REQUEST__OP_HELLO,
	    "version=%d client_name=%s host=%s pid=%d lease_ms=%u resume_session=%" PRIu64
	    " resume_secret=%.*s", 1, "test", "localhost", 42, lease, resume,
	    secret != NULL ? SM_SECRET_LEN : 0,
	    secret != NULL ? (const char *)secret : "");
}

/* Open a client on conn k with a principal and say hello. */
static inline struct sm_client *t_client(struct sm *sm, uintptr_t k,
    const char *principal, uint32_t lease)
{
	struct sm_client *c = sm_client_open(sm, (uint64_t)k, (void *)k, principal, secret_a, 0, now);

	t_hello(sm, c, 1, lease, 0, NULL);
	expect_code(k, 1, SEMD__CODE__OK);
	return c;
}

/* Down with a replace key and a fair-share group ("": none). */
static inline void t_down_policy(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t n, int64_t timeout, const char *replace,
    const char *group)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_DOWN, "name=%s n=%u timeout_ms=%" PRId64
	    " replace=%s group=%s", name, n, timeout, replace, group);
}

/* Down. */
static inline void t_down(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t n, int64_t timeout, uint32_t lease)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_DOWN, "name=%s n=%u timeout_ms=%" PRId64
	    " lease_ms=%u", name, n, timeout, lease);
}

/* Up by n or by permit id. */
static inline void t_up(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t n, uint64_t permit)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_UP, "name=%s n=%u permit_id=%" PRIu64,
	    name, n, permit);
}

/* Create. */
static inline void t_create(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit, int mode, int ine)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_CREATE,
	    "name=%s limit=%u mode=%d if_not_exists=%d", name, limit, mode, ine);
}

/* Info; returns the reply (or NULL). */
static inline Semd__Reply *t_info(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *name, int code)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_INFO, "name=%s", name);
	return expect_code(k, id, code);
}

/* SetLimit. */
static inline void t_set_limit(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_SET_LIMIT, "name=%s limit=%u", name, limit);
}

/* Delete. */
static inline void t_delete(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, int force)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_DELETE, "name=%s force=%d", name, force);
}

/* Cancel. */
static inline void t_cancel(struct sm *sm, struct sm_client *c, uint64_t id,
    uint64_t which)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_CANCEL, "request_id=%" PRIu64, which);
}

/* Value of a stats counter. */
static inline uint64_t t_stat(struct sm *sm, struct sm_client *c, uintptr_t k,
    const char *name)
{
	struct req q;
	Semd__Reply *r;
	size_t i;

	t_req(sm, c, req_op(&q, 999999, SEMD__REQUEST__OP_STATS));
	r = expect_code(k, 999999, SEMD__CODE__OK);
	if (r == NULL || r->body_case != SEMD__REPLY__BODY_STATS)
		return UINT64_MAX;
	for (i = 0; i < r->stats->n_counters; i++)
		if (strcmp(r->stats->counters[i]->name, name) == 0)
			return r->stats->counters[i]->value;
	FAIL("no counter %s", name);
	return UINT64_MAX;
}

/* The Grant of a reply, checked. */
static inline Semd__Grant *grant_of_(int line, uintptr_t k, uint64_t id)
{
	Semd__Reply *r = expect_code_(line, k, id, SEMD__CODE__OK);

	if (r == NULL || r->body_case != SEMD__REPLY__BODY_GRANT) {
		FAIL("line %d: reply %" PRIu64 " is not a grant", line, id);
		return NULL;
	}
	return r->grant;
}
#define grant_of(k, id) grant_of_(__LINE__, k, id)

/* A down on conn k that waits forever, granted at once: its Grant, checked. */
static inline Semd__Grant *t_held_(int line, struct sm *sm, struct sm_client *c,
    uintptr_t k, uint64_t id, const char *name, uint32_t n)
{
	t_down(sm, c, id, name, n, -1, 0);
	return grant_of_(line, k, id);
}
#define t_held(sm, c, k, id, name, n) t_held_(__LINE__, sm, c, k, id, name, n)

/* A create on conn k, answered OK. */
static inline void t_created_(int line, struct sm *sm, struct sm_client *c,
    uintptr_t k, uint64_t id, const char *name, uint32_t limit, int mode)
{
	t_create(sm, c, id, name, limit, mode, 0);
	expect_code_(line, k, id, SEMD__CODE__OK);
}
#define t_created(sm, c, k, id, name, limit, mode) \
	t_created_(__LINE__, sm, c, k, id, name, limit, mode)

/*
 * The start of a test: TEST_START(title), a state machine at the usual wall
 * clock (tuned by tune, or not), and for each principal of who (separated
 * by spaces; "uid:1/5000" asks a lease of 5000 ms) a client on conn 1, 2,
 * ... in turn, said hello, in the next of the clients given. With t0 (not
 * 0) the clock is set to t0 first, and the invariants are checked after
 * every request until t_end() (the tests of issue 15).
 */
static inline struct sm *t_start_(uint64_t t0, const char *title,
    void (*tune)(struct sm_config *), const char *who,
    struct sm_client **const *c)
{
	struct sm *sm;
	char principal[32];
	uintptr_t k = 1;
	size_t n, len;

	TEST_START(title);
	if (t0 != 0) {
		now = t0;
		t_check_each = true;
	}
	sm = t_new(1700000000000ULL, tune);
	for (; *who != '\0'; who += n + strspn(who + n, " "), k++) {
		n = strcspn(who, " ");
		len = strcspn(who, "/ ");
		if (c[k - 1] == NULL || len >= sizeof principal) {
			fprintf(stderr, "t_start: \"%s\": not one client each\n", who);
			abort();
		}
		memcpy(principal, who, len);
		principal[len] = '\0';
		*c[k - 1] = t_client(sm, k, principal,
		    len < n ? (uint32_t)strtoul(who + len + 1, NULL, 10) : 0);
	}
	if (c[k - 1] != NULL) {
		fprintf(stderr, "t_start: more clients than principals\n");
		abort();
	}
	return sm;
}
#define t_start(title, tune, who, ...) t_start_(0, title, tune, who,	\
	(struct sm_client **const []){ __VA_ARGS__, NULL })
/* The commonest start: two clients of uid:1, a and b, with the defaults. */
#define t_pair(title, a, b) t_start(title, NULL, "uid:1 uid:1", a, b)
#define t_start_checked(t0, title, tune, who, ...) t_start_(t0, title, tune, \
	who, (struct sm_client **const []){ __VA_ARGS__, NULL })

/* The end of a test: the invariants hold; the state machine and its replies go. */
static inline void t_end(struct sm *sm)
{
	CHECK_SM(sm);
	caps_clear();
	sm_free(sm);
	t_check_each = false;
}

/*
 * The state snapshotted and restored under another hash key (16 bytes):
 * the restored state, its invariants checked and its own snapshot the same
 * bytes, or NULL (the failure said). The first snapshot is left in *snap
 * and *len (the caller frees it) when snap is not NULL.
 */
static inline struct sm *t_snap_restore(const struct sm *sm, const void *key,
    uint8_t **snap, size_t *len)
{
	struct sm_config cfg;
	struct sm_out out = { cap_reply, NULL, cap_close, NULL, NULL, NULL };
	struct sm *rs = NULL;
	uint8_t *s1 = NULL, *s2 = NULL;
	size_t l1 = 0, l2 = 0;
	char err[256];

	if (sm_snapshot(sm, &s1, &l1) != 0) {
		FAIL("snapshot");
		goto out;
	}
	sm_config_defaults(&cfg);
	memcpy(cfg.hash_key, key, sizeof cfg.hash_key);
	if ((rs = sm_restore(&cfg, &out, s1, l1, err, sizeof err)) == NULL) {
		FAIL("restore: %s", err);
		goto out;
	}
	CHECK_SM(rs);
	if (sm_snapshot(rs, &s2, &l2) != 0 || l1 != l2 || memcmp(s1, s2, l1) != 0) {
		FAIL("the restored state snapshots to other bytes");
		sm_free(rs);
		rs = NULL;
	}
out:
	free(s2);
	if (snap != NULL) {
		*snap = s1;
		*len = l1;
	} else
		free(s1);
	return rs;
}

/*
 * Go on with the restored state rs in place of sm (freed): the clients it
 * has on conns 1 to 64 are bound to them again. The new state.
 */
static inline struct sm *t_switch(struct sm *sm, struct sm *rs)
{
	struct sm_client *c;
	uintptr_t k;

	sm_free(sm);
	for (k = 1; k <= 64; k++)
		if ((c = sm_client_find(rs, (uint64_t)k)) != NULL)
			sm_client_bind(c, (void *)k);
	return rs;
}

static inline void tune_big(struct sm_config *cfg)
{
	cfg->max_holds_per_session = 20000;
}


/* Release: force-release a hold by permit id. */
static inline void t_release(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint64_t permit)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_RELEASE, "name=%s permit_id=%" PRIu64,
	    name, permit);
}

/* The hold-lost notice to conn k (id 0): its code and name. */
static inline void expect_lost_(int line, uintptr_t k, int code, const char *name,
    uint64_t permit)
{
	Semd__Reply *r = expect_code_(line, k, 0, code);

	if (r != NULL && (r->body_case != SEMD__REPLY__BODY_HOLD_LOST ||
	    strcmp(r->hold_lost->name, name) != 0 ||
	    (permit != 0 && r->hold_lost->permit_id != permit)))
		FAIL("line %d: not a hold-lost notice for %s (%s)", line, name,
		    r->message);
}
#define expect_lost(k, code, name, permit) \
	expect_lost_(__LINE__, k, code, name, permit)

/* xorshift64: the next number of the sequence in *s (each test has its own). */
static inline uint64_t xs64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* --- issue 15: rates, multi-name downs, deadlocks, watches, holds -------- */

/* Let time pass to t and fire what is due; the invariants hold after. */
static inline void t_tick(struct sm *sm, uint64_t t)
{
	now = t;
	sm_tick(sm, now);
	CHECK_SM(sm);
}

/* Create with every option of issue 15 (limit 0 and a rate: rate-only). */
static inline void t_create_rate(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, uint32_t limit, uint32_t rate, uint32_t period,
    uint32_t burst)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_CREATE,
	    "name=%s limit=%u rate=%u rate_period_ms=%u burst=%u",
	    name, limit, rate, period, burst);
}

/* DownMulti of k names (n[i] each; n NULL: 1 each). */
static inline void t_multi(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *const *names, const uint32_t *n, size_t k, int64_t timeout,
    uint32_t lease)
{
	Semd__Want wv[20], *wp[20];
	struct req q;
	size_t i;

	for (i = 0; i < k && i < 20; i++) {
		semd__want__init(&wv[i]);
		wv[i].name = (char *)names[i];
		wv[i].n = n != NULL ? n[i] : 1;
		wp[i] = &wv[i];
	}
	req_make(&q, id, SEMD__REQUEST__OP_DOWN_MULTI,
	    "timeout_ms=%" PRId64 " lease_ms=%u", timeout, lease);
	q.r.down_multi->n_wants = k;
	q.r.down_multi->wants = wp;
	t_req(sm, c, &q.r);
}

/* Watch. */
static inline void t_watch(struct sm *sm, struct sm_client *c, uint64_t id,
    const char *name, bool prefix)
{
	t_op(sm, c, id, SEMD__REQUEST__OP_WATCH, "name=%s prefix=%d", name, prefix);
}

/* The MultiGrant of a reply, checked to name names[0..k) in order. */
static inline Semd__MultiGrant *multi_of_(int line, uintptr_t k, uint64_t id,
    const char *const *names, size_t nk)
{
	Semd__Reply *r = expect_code_(line, k, id, SEMD__CODE__OK);
	size_t i;

	if (r == NULL || r->body_case != SEMD__REPLY__BODY_MULTI_GRANT) {
		FAIL("line %d: reply %" PRIu64 " is not a multi-grant", line, id);
		return NULL;
	}
	if (r->multi_grant->n_grants != nk) {
		FAIL("line %d: %zu grants, want %zu", line,
		    r->multi_grant->n_grants, nk);
		return NULL;
	}
	for (i = 0; i < nk; i++)
		if (strcmp(r->multi_grant->grants[i]->name, names[i]) != 0 ||
		    r->multi_grant->grants[i]->token == 0)
			FAIL("line %d: grant %zu is of %s", line, i,
			    r->multi_grant->grants[i]->name);
	return r->multi_grant;
}
#define multi_of(k, id, names, nk) multi_of_(__LINE__, k, id, names, nk)

/* The next watch event to conn k, checked to be of kind on name. */
static inline Semd__WatchEvent *event_of_(int line, uintptr_t k, int kind,
    const char *name)
{
	int i;

	for (i = 0; i < ncaps; i++) {
		if (caps[i].used || caps[i].conn != k || caps[i].r->id != 0 ||
		    caps[i].r->body_case != SEMD__REPLY__BODY_WATCH_EVENT)
			continue;
		caps[i].used = 1;
		if ((int)caps[i].r->watch_event->kind != kind ||
		    strcmp(caps[i].r->watch_event->name, name) != 0) {
			FAIL("line %d: event %d on %s, want %d on %s", line,
			    (int)caps[i].r->watch_event->kind,
			    caps[i].r->watch_event->name, kind, name);
			return NULL;
		}
		return caps[i].r->watch_event;
	}
	FAIL("line %d: no event %d on %s", line, kind, name);
	return NULL;
}
#define event_of(k, kind, name) event_of_(__LINE__, k, SEMD__EVENT_KIND__##kind, name)

/* Watch events to conn k not taken yet. */
static inline int events_left(uintptr_t k)
{
	int i, n = 0;

	for (i = 0; i < ncaps; i++)
		if (!caps[i].used && caps[i].conn == k && caps[i].r->id == 0 &&
		    caps[i].r->body_case == SEMD__REPLY__BODY_WATCH_EVENT)
			n++;
	return n;
}

/* The InfoReply of a name. */
static inline Semd__InfoReply *info_of(struct sm *sm, struct sm_client *c, uintptr_t k,
    uint64_t id, const char *name)
{
	Semd__Reply *r = t_info(sm, c, k, id, name, SEMD__CODE__OK);

	return r != NULL && r->body_case == SEMD__REPLY__BODY_INFO ? r->info : NULL;
}

#endif
