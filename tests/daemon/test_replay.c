/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/test_replay.c - the state machine is a function of its log.
 *
 * A random log of N steps (default 120,000; -n) - clients opening and
 * closing (local ones too, some detaching), hellos with leases, resumes and
 * parents, every operation on a few contended names (rates, multi-name downs,
 * watches, renews and deadlocks among them), time passing, settings
 * changing, restarts - is applied by two state machines built with
 * different hash keys, clocks and start times. After every entry both must
 * have sent byte-identical replies and pass sm_check; every few thousand
 * entries their snapshots must be byte-identical, and a third machine
 * restored from the snapshot (another hash key) joins and must answer the
 * rest of the log exactly as they do.
 *
 * Usage: test_replay [-s seed] [-n steps]   (the seed is printed; a failure
 * replays exactly with the same -s)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/fastpb.h"
#include "daemon/state/state.h"
#include "tests/common/req.h"
#include "tests/common/rng.h"

#define NCLIENTS	24
#define NSESS		64
#define NREPLICAS	3
#define SNAP_EVERY	4000

static unsigned long step;

#define FAIL(...) do {							\
	fprintf(stderr, "step %lu: ", step);				\
	fprintf(stderr, __VA_ARGS__);					\
	fprintf(stderr, "\n");						\
	exit(1);							\
} while (0)

/* --- the replicas and what they said ----------------------------------------- */

struct said {
	uint8_t	*p;
	size_t	len;
	size_t	cap;
};

struct replica {
	struct sm	*sm;
	struct said	out;		/* replies of the entry in progress */
	bool		live;
};

static struct replica reps[NREPLICAS];

/* Record a reply as (client id, packed bytes). */
static void rec_reply(void *ctx, void *conn, const Semd__Reply *r)
{
	struct said *s = ctx;
	uint64_t id = (uint64_t)(uintptr_t)conn;
	size_t n = semd__reply__get_packed_size(r);

	if (s->cap - s->len < n + 16) {
		s->cap = (s->cap + n + 16) * 2;
		s->p = realloc(s->p, s->cap);
		if (s->p == NULL)
			FAIL("out of memory");
	}
	memcpy(s->p + s->len, &id, 8);
	memcpy(s->p + s->len + 8, &n, 8);
	semd__reply__pack(r, s->p + s->len + 16);
	s->len += n + 16;
}

/*
 * A watch event through the daemon's notice path (sm_out.notice, framed
 * by fastpb_notice_pack()), recorded as rec_reply() records a reply: one
 * replica takes it, so its bytes are compared with the others' packs of
 * the whole reply.
 */
static void rec_notice(void *ctx, void *conn, uint64_t watch,
    const uint8_t *ev, size_t len)
{
	struct said *s = ctx;
	uint64_t id = (uint64_t)(uintptr_t)conn;
	size_t n;

	if (s->cap - s->len < len + FASTPB_NOTICE_EXTRA + 16) {
		s->cap = (s->cap + len + FASTPB_NOTICE_EXTRA + 16) * 2;
		s->p = realloc(s->p, s->cap);
		if (s->p == NULL)
			FAIL("out of memory");
	}
	n = fastpb_notice_pack(watch, ev, len, s->p + s->len + 16);
	memcpy(s->p + s->len, &id, 8);
	memcpy(s->p + s->len + 8, &n, 8);
	s->len += n + 16;
}

/*
 * A Backup's copy of the state, recorded as a reply (its bytes under the
 * request's id): replicas must take the same copy at the same point.
 */
static void rec_backup(void *ctx, void *conn, uint64_t id, uint8_t *snap, size_t len,
		       uint64_t wall_ms)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__BackupChunk ch = SEMD__BACKUP_CHUNK__INIT;

	(void)wall_ms;	/* each replica's own wall clock */
	ch.total = len;
	ch.data.data = snap;
	ch.data.len = len;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_BACKUP;
	r.backup = &ch;
	rec_reply(ctx, conn, &r);
	free(snap);
}

/* Connections closed by a replica's decision: the harness closes them. */
static uint64_t to_close[NCLIENTS * 4];
static int nto_close;

static void rec_close(void *ctx, void *conn)
{
	if (ctx == &reps[0].out && nto_close < NCLIENTS * 4)
		to_close[nto_close++] = (uint64_t)(uintptr_t)conn;
}

/* Every client is bound to "its connection": its own id. */
static void *bind_id(void *arg, uint64_t id)
{
	return (void *)(uintptr_t)id;
}

static const struct sm_apply_hooks hooks = { bind_id, NULL, NULL };

/* A replica with its own hash key, clock and start time. */
static struct sm *replica_new(int k, struct replica *rp)
{
	struct sm_config cfg;
	struct sm_out out = { rec_reply, &rp->out, rec_close, NULL, rec_backup,
	    k == 1 ? rec_notice : NULL };

	sm_config_defaults(&cfg);
	cfg.wall_ms = 1600000000000ULL + (uint64_t)k * 7777777;
	for (int i = 0; i < 16; i++)
		cfg.hash_key[i] = (uint8_t)(rnd() >> 8);
	return sm_new(&cfg, &out, 1000 + (uint64_t)k * 31337);
}

/* --- the simulated clients ------------------------------------------------------ */

struct client {
	uint64_t	id;		/* 0: not open */
	bool		hello;
	uint64_t	next_req;
	bool		local;
};

struct known {
	uint64_t	id;
	uint64_t	link;		/* for a child's Hello.parent_link */
	uint8_t		secret[SM_SECRET_LEN];
};

static struct client cl[NCLIENTS];
static struct known sessions[NSESS];
static int nsessions;
static uint64_t next_client = 1;
static const char *const names[] = {
	"a", "b", "c", "jobs/x", "jobs/y", "sig", "q", "pool", "api", "gh",
};
#define NNAMES	((unsigned int)(sizeof names / sizeof names[0]))
static const char *const principals[] = { "uid:0", "uid:1", "uid:2", "cn:w 1" };
static const char *const rkeys[] = { "a", "b", "deploy/main" };
/* Weights of the names with fair shares, and the groups of downs. */
static Semd__GroupWeight gw_a = { PROTOBUF_C_MESSAGE_INIT(&semd__group_weight__descriptor),
	(char *)"a", 3 };
static Semd__GroupWeight gw_uid1 = { PROTOBUF_C_MESSAGE_INIT(&semd__group_weight__descriptor),
	(char *)"uid:1", 2 };
static Semd__GroupWeight *gweights[] = { &gw_a, &gw_uid1 };

/* Learn session ids and secrets from replica 0's HelloReplies. */
static void learn_sessions(const struct said *s)
{
	size_t off = 0, n;
	Semd__Reply *r;

	while (off < s->len) {
		memcpy(&n, s->p + off + 8, 8);
		r = semd__reply__unpack(NULL, n, s->p + off + 16);
		if (r == NULL)
			FAIL("a reply does not decode");
		if (r->body_case == SEMD__REPLY__BODY_HELLO &&
		    r->hello->secret.len == SM_SECRET_LEN) {
			struct known *k = &sessions[nsessions < NSESS ?
			    nsessions++ : (int)rnd_below(NSESS)];

			k->id = r->hello->session;
			k->link = r->hello->link;
			memcpy(k->secret, r->hello->secret.data, SM_SECRET_LEN);
		}
		semd__reply__free_unpacked(r, NULL);
		off += 16 + n;
	}
}

/* Pack a request into the batch for client i. */
static void add_request(struct sm_batch *b, int i, Semd__Request *rq)
{
	struct sm_caller who = { 0 };
	uint8_t buf[4096];
	size_t len = semd__request__get_packed_size(rq);

	if (len > sizeof buf)
		FAIL("request too big");
	semd__request__pack(rq, buf);
	/* Half the clients are ordinary users with small caps. */
	if (i % 2 == 0)
		who.privs = SM_PRIV_ADMIN;
	else {
		who.limit[SM_LIMIT_SESSIONS] = 4;
		who.limit[SM_LIMIT_PERMITS] = 6;
		who.limit[SM_LIMIT_WAITERS] = 5;
		who.limit[SM_LIMIT_SEMAPHORES] = 3;
		who.limit[SM_LIMIT_WATCHES] = 2;
	}
	sm_batch_request(b, cl[i].id, &who, buf, len);
}

/* Request id of op, naming one of the client's requests so far (Cancel, Where). */
static void req_earlier(struct req *q, uint64_t id, int op)
{
	req_make(q, id, op, "request_id=%" PRIu64, 1 + rnd_below((unsigned int)id));
}

/* One random command for the batch. */
static void random_command(struct sm_batch *b)
{
	static const uint32_t periods[] = { 7, 100, 1000, 60000 };
	static const int simple[] = {
		SEMD__REQUEST__OP_PING, SEMD__REQUEST__OP_STATS, SEMD__REQUEST__OP_DETACH,
	};
	Semd__Want wv[4], *wp[4];
	Semd__Create *cr;
	uint8_t secret[SM_SECRET_LEN];
	int i = (int)rnd_below(NCLIENTS), k;
	struct known *ks;
	struct req q;
	uint64_t id;

	if (cl[i].id == 0) {
		for (k = 0; k < SM_SECRET_LEN; k++)
			secret[k] = (uint8_t)rnd();
		cl[i].id = next_client++;
		cl[i].hello = false;
		cl[i].next_req = 1;
		cl[i].local = rnd_below(3) == 0;
		sm_batch_open(b, cl[i].id, principals[i % 4], secret,
		    cl[i].local ? SM_CLIENT_LOCAL : 0);
		return;
	}
	if (rnd_below(40) == 0) {
		sm_batch_close(b, cl[i].id);
		cl[i].id = 0;
		return;
	}
	id = cl[i].next_req++;
	/* Each req_set() in turn: the random numbers come in a fixed order. */
	if (!cl[i].hello) {
		req_make(&q, id, SEMD__REQUEST__OP_HELLO, "version=%d client_name=%s host=%s pid=%d",
		    rnd_below(50) ? 1 : 2, "replay", "h", i);
		req_set(&q, "lease_ms=%" PRIu64, rnd_below(2) ? 0 : 200 + rnd_below(3000));
		if (nsessions > 0 && rnd_below(3) == 0) {
			ks = &sessions[rnd_below((unsigned int)nsessions)];
			req_set(&q, "resume_session=%" PRIu64 " resume_secret=%.*s", ks->id,
			    rnd_below(10) ? SM_SECRET_LEN : 3, (const char *)ks->secret);
		} else if (nsessions > 0 && rnd_below(3) == 0) {
			/* a child of a session (semctl run's command) */
			ks = &sessions[rnd_below((unsigned int)nsessions)];
			req_set(&q, "parent_session=%" PRIu64 " parent_link=%" PRIu64, ks->id,
			    ks->link + (rnd_below(8) == 0));
		}
		cl[i].hello = true;
		add_request(b, i, &q.r);
		return;
	}
	switch (rnd_below(26)) {
	case 0: case 1: case 2: case 3:
		req_make(&q, id, SEMD__REQUEST__OP_DOWN, "name=%s", names[rnd_below(NNAMES)]);
		req_set(&q, "n=%" PRIu64, rnd_below(4) ? 1 : 1 + rnd_below(3));
		req_set(&q, "timeout_ms=%" PRId64, rnd_below(3) == 0 ? 0 : rnd_below(3) == 0 ? -1 :
		    (int64_t)(50 + rnd_below(800)));
		req_set(&q, "lease_ms=%" PRIu64, rnd_below(6) == 0 ? 100 + rnd_below(2000) : 0);
		req_set(&q, "limit=%" PRIu64, rnd_below(10) == 0 ? 1 + rnd_below(3) : 0);
		if (rnd_below(4) == 0)		/* a replace key (queue policies) */
			req_set(&q, "replace=%s", rkeys[rnd_below(3)]);
		if (rnd_below(3) == 0)		/* a priority, now and then out of range */
			req_set(&q, "priority=%d", (int)rnd_below(18) - 9);
		if (rnd_below(3) == 0)		/* a fair-share group */
			req_set(&q, "group=%s", rkeys[rnd_below(2)]);
		if (rnd_below(8) == 0)
			q.r.id = 1 + rnd_below((unsigned int)id);	/* a retry */
		break;
	case 4: case 5: case 6:
		req_make(&q, id, SEMD__REQUEST__OP_UP, "name=%s", names[rnd_below(NNAMES)]);
		req_set(&q, "n=%d", rnd_below(3) ? 1 : 2);
		req_set(&q, "permit_id=%" PRIu64, rnd_below(4) == 0 ? 1 + rnd_below(200) : 0);
		break;
	case 7:
		cr = req_make(&q, id, SEMD__REQUEST__OP_CREATE, "name=%s",
		    names[rnd_below(NNAMES)])->create;
		cr->limit = 1 + rnd_below(4);
		cr->mode = rnd_below(4) == 0 ? SEMD__MODE__SIGNAL : SEMD__MODE__OWNED;
		cr->if_not_exists = rnd_below(2);
		cr->initial_set = cr->mode == SEMD__MODE__SIGNAL && rnd_below(2);
		cr->initial = rnd_below(cr->limit + 1);
		cr->max_waiters = rnd_below(4) == 0 ? 1 + rnd_below(3) : 0;
		if (cr->mode == SEMD__MODE__OWNED && rnd_below(3) == 0) {
			cr->share = (Semd__ShareBy)(1 + rnd_below(2));
			cr->n_weights = rnd_below(3);
			cr->weights = gweights;
		}
		if (cr->mode == SEMD__MODE__OWNED && rnd_below(2)) {
			/* A rate: with the limit, or rate-only (limit 0). */
			cr->rate = 1 + rnd_below(5);
			cr->rate_period_ms = periods[rnd_below(4)];
			cr->burst = rnd_below(3) ? 1 + rnd_below(4) : 0;
			if (rnd_below(3) == 0)
				cr->limit = 0;
		}
		break;
	case 8:
		req_make(&q, id, SEMD__REQUEST__OP_INFO, "name=%s", names[rnd_below(NNAMES)]);
		req_set(&q, "max=%" PRIu64, rnd_below(4));
		req_set(&q, "after_permit=%" PRIu64, rnd_below(3) == 0 ? rnd_below(100) : 0);
		req_set(&q, "after_waiter=%" PRIu64, rnd_below(3) == 0 ? rnd_below(100) : 0);
		break;
	case 9:
		req_make(&q, id, SEMD__REQUEST__OP_LIST, "prefix=%s", rnd_below(2) ? "" : "jobs/");
		req_set(&q, "max=%" PRIu64 " after=%s", rnd_below(4), "");
		break;
	case 10:
		req_make(&q, id, SEMD__REQUEST__OP_DELETE, "name=%s", names[rnd_below(NNAMES)]);
		req_set(&q, "force=%" PRIu64, rnd_below(2));
		break;
	case 11:
		req_make(&q, id, SEMD__REQUEST__OP_SET_LIMIT, "name=%s", names[rnd_below(NNAMES)]);
		req_set(&q, "limit=%" PRIu64, 1 + rnd_below(4));
		break;
	case 12:
		req_earlier(&q, id, SEMD__REQUEST__OP_CANCEL);
		break;
	case 13:
		req_make(&q, id, SEMD__REQUEST__OP_VALIDATE, "name=%s", names[rnd_below(NNAMES)]);
		req_set(&q, "token=%" PRIu64, rnd_below(2) ? rnd() : 0);
		break;
	case 14:
		req_make(&q, id, SEMD__REQUEST__OP_RELEASE, "name=%s", names[rnd_below(NNAMES)]);
		req_set(&q, "permit_id=%" PRIu64, 1 + rnd_below(200));
		break;
	case 16: case 17: case 18:
		/* A multi-name down of 1 to 4 names, some repeated (refused). */
		req_op(&q, id, SEMD__REQUEST__OP_DOWN_MULTI);
		q.r.down_multi->n_wants = 1 + rnd_below(4);
		for (k = 0; k < (int)q.r.down_multi->n_wants; k++) {
			semd__want__init(&wv[k]);
			wv[k].name = (char *)names[rnd_below(NNAMES)];
			wv[k].n = rnd_below(4) ? 1 : 2;
			wv[k].limit = rnd_below(10) == 0 ? 1 + rnd_below(3) : 0;
			wp[k] = &wv[k];
		}
		q.r.down_multi->wants = wp;
		req_set(&q, "timeout_ms=%" PRId64, rnd_below(4) == 0 ? 0 : rnd_below(3) == 0 ? -1 :
		    (int64_t)(50 + rnd_below(800)));
		req_set(&q, "lease_ms=%" PRIu64, rnd_below(6) == 0 ? 100 + rnd_below(2000) : 0);
		if (rnd_below(3) == 0)
			req_set(&q, "priority=%d", (int)rnd_below(16) - 8);
		if (rnd_below(8) == 0)
			q.r.id = 1 + rnd_below((unsigned int)id);	/* a retry */
		break;
	case 19:
		req_make(&q, id, SEMD__REQUEST__OP_SET_RATE, "name=%s", names[rnd_below(NNAMES)]);
		req_set(&q, "rate=%" PRIu64, rnd_below(4) ? 1 + rnd_below(5) : 0);
		req_set(&q, "rate_period_ms=%u", periods[rnd_below(4)]);
		req_set(&q, "burst=%" PRIu64, rnd_below(3) ? 1 + rnd_below(4) : 0);
		break;
	case 20:
		/* A watch (a name, or a prefix), or the end of one. */
		if (rnd_below(3) == 0) {
			req_earlier(&q, id, SEMD__REQUEST__OP_CANCEL);
			break;
		}
		req_make(&q, id, SEMD__REQUEST__OP_WATCH, "prefix=%" PRIu64, rnd_below(2));
		req_set(&q, "name=%s", q.r.watch->prefix ? (rnd_below(2) ? "" : "jobs/") :
		    names[rnd_below(NNAMES)]);
		/* a resume: replayed from the history, compacted, or to come */
		req_set(&q, "from_revision=%" PRIu64, rnd_below(2) ? (uint64_t)0 :
		    (uint64_t)1 + rnd_below(300000));
		break;
	case 21:
		req_make(&q, id, SEMD__REQUEST__OP_RENEW, "name=%s", names[rnd_below(NNAMES)]);
		req_set(&q, "permit_id=%" PRIu64, rnd_below(2) ? 0 : 1 + rnd_below(200));
		req_set(&q, "lease_ms=%" PRIu64, rnd_below(2) ? 0 : 100 + rnd_below(3000));
		break;
	case 22:
		req_make(&q, id, SEMD__REQUEST__OP_HOLDS, "principal=%s",
		    rnd_below(2) ? "" : principals[rnd_below(4)]);
		req_set(&q, "after_permit=%" PRIu64, rnd_below(2) ? 0 : rnd_below(100));
		req_set(&q, "max=%" PRIu64, rnd_below(4));
		break;
	case 24:
		req_make(&q, id, SEMD__REQUEST__OP_SET_QUEUE, "name=%s",
		    names[rnd_below(NNAMES)]);
		req_set(&q, "max_waiters=%" PRIu64, rnd_below(3) ? rnd_below(4) : 0);
		break;
	case 23:
		req_earlier(&q, id, SEMD__REQUEST__OP_WHERE);
		break;
	case 25:
		/* rarely (a copy of the whole state is big), else a Ping */
		if (rnd_below(16) == 0)
			req_make(&q, id, SEMD__REQUEST__OP_BACKUP, "offset=%u",
			    rnd_below(8) == 0 ? 1u : 0u);
		else
			req_op(&q, id, SEMD__REQUEST__OP_PING);
		break;
	default:
		req_op(&q, id, simple[rnd_below(3)]);
		break;
	}
	add_request(b, i, &q.r);
}

/* --- the run --------------------------------------------------------------------- */

/* Print the replies of a replica (on a failure). */
static void dump(const char *who, const struct said *s)
{
	size_t off = 0, n, i;
	uint64_t id;
	Semd__Reply *r;

	while (off < s->len) {
		memcpy(&id, s->p + off, 8);
		memcpy(&n, s->p + off + 8, 8);
		r = semd__reply__unpack(NULL, n, s->p + off + 16);
		fprintf(stderr, "%s: client %" PRIu64 " id %" PRIu64 " code %d body %d msg %s |",
		    who, id, r ? r->id : 0, r ? (int)r->code : -1,
		    r ? (int)r->body_case : -1, r && r->message ? r->message : "");
		for (i = 0; i < n; i++)
			fprintf(stderr, "%02x", s->p[off + 16 + i]);
		fprintf(stderr, "\n");
		if (r)
			semd__reply__free_unpacked(r, NULL);
		off += 16 + n;
	}
}

/* Apply one entry on every live replica and compare what they said. */
static void apply_all(const uint8_t *entry, size_t len)
{
	char err[256];
	int k;

	nto_close = 0;
	for (k = 0; k < NREPLICAS; k++) {
		if (!reps[k].live)
			continue;
		reps[k].out.len = 0;
		if (sm_apply(reps[k].sm, entry, len, &hooks, err, sizeof err) != 0)
			FAIL("replica %d refused an entry: %s", k, err);
		if (sm_check(reps[k].sm, err, sizeof err) != 0)
			FAIL("replica %d: invariant: %s", k, err);
	}
	for (k = 1; k < NREPLICAS; k++) {
		if (!reps[k].live)
			continue;
		if (reps[k].out.len != reps[0].out.len || (reps[0].out.len > 0 &&
		    memcmp(reps[k].out.p, reps[0].out.p, reps[0].out.len) != 0)) {
			dump("replica 0", &reps[0].out);
			dump("other", &reps[k].out);
			FAIL("replica %d answered differently (%zu bytes vs %zu)",
			    k, reps[k].out.len, reps[0].out.len);
		}
	}
	learn_sessions(&reps[0].out);
}

/* Compare the snapshots; start (or restart) replica 2 from replica 0's. */
static void snapshots(void)
{
	struct sm_config cfg;
	struct sm_out out = { rec_reply, &reps[2].out, rec_close, NULL, rec_backup,
	    NULL };
	uint8_t *s[NREPLICAS] = { NULL };
	size_t len[NREPLICAS] = { 0 };
	char err[256];
	int k;

	for (k = 0; k < NREPLICAS; k++)
		if (reps[k].live && sm_snapshot(reps[k].sm, &s[k], &len[k]) != 0)
			FAIL("replica %d: snapshot out of memory", k);
	for (k = 1; k < NREPLICAS; k++)
		if (reps[k].live && (len[k] != len[0] ||
		    memcmp(s[k], s[0], len[0]) != 0))
			FAIL("replica %d's snapshot differs (%zu bytes vs %zu)", k,
			    len[k], len[0]);
	sm_free(reps[2].sm);
	sm_config_defaults(&cfg);
	for (k = 0; k < 16; k++)
		cfg.hash_key[k] = (uint8_t)rnd();
	reps[2].sm = sm_restore(&cfg, &out, s[0], len[0], err, sizeof err);
	if (reps[2].sm == NULL)
		FAIL("restore of a %zu-byte snapshot failed: %s", len[0], err);
	/* The restored clients are bound again, as a node would bind its own. */
	for (k = 0; k < NCLIENTS; k++) {
		struct sm_client *c = cl[k].id ?
		    sm_client_find(reps[2].sm, cl[k].id) : NULL;

		if (c != NULL)
			sm_client_bind(c, (void *)(uintptr_t)cl[k].id);
	}
	if (sm_check(reps[2].sm, err, sizeof err) != 0)
		FAIL("restored replica: invariant: %s", err);
	free(s[2]);
	if (sm_snapshot(reps[2].sm, &s[2], &len[2]) != 0 || len[2] != len[0] ||
	    memcmp(s[2], s[0], len[0]) != 0)
		FAIL("a restored state snapshots to other bytes");
	reps[2].live = true;
	for (k = 0; k < NREPLICAS; k++)
		free(s[k]);
}

int main(int argc, char **argv)
{
	uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 16;
	unsigned long steps = 120000;
	struct sm_batch b;
	struct sm_config cfg;
	uint64_t now = 5000000, wall = 1700000000000ULL;
	uint8_t *entry = NULL;
	size_t cap = 0, hl = sm_entry_header_size();
	int c, k, n;

	while ((c = getopt(argc, argv, "s:n:")) != -1) {
		if (c == 's')
			seed = strtoull(optarg, NULL, 0);
		else if (c == 'n')
			steps = strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	printf("test_replay: seed %" PRIu64 ", %lu steps (rerun: -s %" PRIu64 ")\n",
	    seed, steps, seed);
	fflush(stdout);
	rng = seed ? seed : 1;
	for (k = 0; k < 2; k++) {
		reps[k].sm = replica_new(k, &reps[k]);
		reps[k].live = true;
	}
	reps[2].sm = NULL;
	sm_batch_init(&b);
	sm_batch_boot(&b);
	sm_config_defaults(&cfg);
	cfg.max_waiters_per_session = 6;
	cfg.max_holds_per_session = 8;
	cfg.max_lease_ms = 5000;
	sm_batch_config(&b, &cfg);
	for (step = 0; step < steps; step++) {
		/* Time: mostly a little, sometimes a lot, sometimes none. */
		now += rnd_below(4) == 0 ? 0 : rnd_below(20) == 0 ? rnd_below(3000) : rnd_below(60);
		wall = wall + rnd_below(100) - 20;	/* any wall clock, even back */
		for (k = 0; k < nto_close; k++) {
			for (c = 0; c < NCLIENTS; c++) {
				if (cl[c].id == to_close[k]) {
					sm_batch_close(&b, cl[c].id);
					cl[c].id = 0;
				}
			}
		}
		if (rnd_below(5000) == 0) {
			if (rnd_below(2))
				sm_batch_restart(&b, rnd_below(2000));
			else
				sm_batch_leader(&b, 1 + rnd_below(5), rnd_below(2000),
				    rnd_below(2) ? "tcp:127.0.0.1:7385" : "");
			for (c = 0; c < NCLIENTS; c++)
				cl[c].id = 0;
		} else if (rnd_below(4000) == 0) {
			/* Leases become the leader's: EXPIRE entries end them. */
			sm_batch_leases(&b, rnd_below(2) ? 0 : 1000);
		} else if (rnd_below(40) == 0) {
			/* The leader's word, for sessions that may be heard. */
			sm_batch_expire(&b, 1 + rnd_below(64));
		} else if (rnd_below(3000) == 0) {
			cfg.default_limit = 1 + rnd_below(3);
			cfg.max_semaphores = 4 + rnd_below(8);
			sm_batch_config(&b, &cfg);
		}
		n = (int)rnd_below(4);
		for (k = 0; k < n; k++)
			random_command(&b);
		if (b.failed)
			FAIL("out of memory building a batch");
		if (cap < hl + b.len) {
			cap = 2 * (hl + b.len);
			if ((entry = realloc(entry, cap)) == NULL)
				FAIL("out of memory");
		}
		sm_entry_header(entry, now, wall);
		if (b.len > 0)
			memcpy(entry + hl, b.p, b.len);
		apply_all(entry, hl + b.len);
		sm_batch_reset(&b);
		if (step % SNAP_EVERY == SNAP_EVERY - 1)
			snapshots();
		else if (getenv("REPLAY_SNAP_EACH") != NULL && reps[2].live) {
			uint8_t *s0, *s2;
			size_t l0, l2;

			sm_snapshot(reps[0].sm, &s0, &l0);
			sm_snapshot(reps[2].sm, &s2, &l2);
			if (l0 != l2 || memcmp(s0, s2, l0) != 0) {
				FILE *f = fopen("/tmp/snap0", "w");

				fwrite(s0, 1, l0, f);
				fclose(f);
				f = fopen("/tmp/snap2", "w");
				fwrite(s2, 1, l2, f);
				fclose(f);
				dump("replica 0", &reps[0].out);
				FAIL("snapshots differ after this step");
			}
			free(s0);
			free(s2);
		}
	}
	snapshots();
	{
		struct sm_counters ct;

		sm_get_counters(reps[0].sm, &ct);
		printf("test_replay: %" PRIu64 " grants (%" PRIu64 " multi-name), "
		    "%" PRIu64 " deadlocks in %" PRIu64 " searches, %" PRIu64
		    " set-rates, %" PRIu64 " watches, %" PRIu64 " renews OK\n",
		    ct.grants, ct.multi_grants, ct.deadlocks, ct.deadlock_checks,
		    ct.ops[SEMD__REQUEST__OP_SET_RATE],
		    ct.replies[SEMD__REQUEST__OP_WATCH][SEMD__CODE__OK],
		    ct.replies[SEMD__REQUEST__OP_RENEW][SEMD__CODE__OK]);
		printf("test_replay: %" PRIu64 " downs replaced, %" PRIu64
		    " refused QUEUE_FULL (queue policies, priorities, fair shares on)\n",
		    ct.replies[SEMD__REQUEST__OP_DOWN][SEMD__CODE__REPLACED],
		    ct.replies[SEMD__REQUEST__OP_DOWN][SEMD__CODE__QUEUE_FULL]);
		if (steps >= 100000 && (ct.multi_grants == 0 || ct.deadlocks == 0 ||
		    ct.replies[SEMD__REQUEST__OP_WATCH][SEMD__CODE__OK] == 0 ||
		    ct.replies[SEMD__REQUEST__OP_DOWN][SEMD__CODE__REPLACED] == 0 ||
		    ct.replies[SEMD__REQUEST__OP_DOWN][SEMD__CODE__QUEUE_FULL] == 0))
			FAIL("the log did not reach the new operations");
	}
	for (k = 0; k < NREPLICAS; k++) {
		sm_free(reps[k].sm);
		free(reps[k].out.p);
	}
	sm_batch_free(&b);
	free(entry);
	printf("test_replay: %lu entries, %" PRIu64 " clients, identical replies and snapshots\n",
	    steps, next_client - 1);
	return 0;
}
