/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/state/sm_entry.c - log entries: every change of the state as bytes
 * that any replica applies alike (sm_apply), and the commands they carry.
 *
 * An entry is a header and commands:
 *   u8 version, u64 time (state time, stamped by the leader, never going
 *   backwards), u64 wall (the leader's wall clock, for what clients are
 *   shown), then commands until the end, each a u8 kind and its fields:
 *     BOOT     -                 the first entry of a log: the clock starts
 *     CONFIG   7 x u32           the settings that decide answers
 *     OPEN     u64 id, u32 flags, 16 bytes secret, string principal
 *     CLOSE    u64 id
 *     REQUEST  u64 id, u32 privs, 4 x u64 caps, string request (protobuf):
 *              the caps of enum sm_limit_kind up to semaphores (written by
 *              semd before the watches cap; read still, with no such cap)
 *     RESTART  u32 grace_ms      the service came back: every client is
 *                                gone, leases get a grace
 *     LEADER   u64 node, u32 grace_ms, string address
 *                                a leader took over: RESTART, and who
 *                                it is and where clients reach it
 *     LEASES   u32 floor_ms      sessions' leases are the leader's from
 *                                here on: no timer; a RESTART or LEADER
 *                                starts each afresh with its grace, at
 *                                least floor_ms
 *     EXPIRE   u64 session       the leader heard nothing of it for its
 *                                lease: it ends (unless an entry did)
 *     WATCH_HISTORY u32 bytes    the watch history's size (watch-history),
 *                                written after every CONFIG
 *     CAPS_REQUEST u64 id, u32 privs, u8 n, n x u64 caps, string request
 *                                REQUEST with its caps counted: the first n
 *                                of enum sm_limit_kind (the others: none)
 *     INSTANCE u64 instance      the history the revisions count from
 *                                here on (HelloReply.instance)
 *     CLUSTER  u64 term, string members
 *                                the cluster as the leader has it (the
 *                                leader: the last LEADER's), told to
 *                                watchers (EVENT_CLUSTER)
 *     SEED     u64 length, a snapshot (sm_snapshot's bytes)
 *                                the state is that snapshot's (semd
 *                                --restore: a new log's first entry); an
 *                                entry of its own, applied by the log
 *                                (sm_entry_seed), never by sm_apply
 * (integers little-endian, strings as u32 length + bytes), and zero bytes
 * to pad the entry to a multiple of 8 bytes (raft_uv writes entries in
 * 8-byte units: its check of that is an assert, compiled out of Debian's
 * libraft, after which an odd-sized entry corrupts the segment). Applying an
 * entry first fires every deadline due at its time, then runs its commands
 * in order. Everything an answer depends on is in the entry or the state:
 * the access layer's decision travels with the request, and the settings
 * come through the log.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/sm-int.h"

#define ENTRY_VERSION	1u

enum {
	CMD_BOOT = 1,
	CMD_CONFIG,
	CMD_OPEN,
	CMD_CLOSE,
	CMD_REQUEST,
	CMD_RESTART,
	CMD_LEADER,
	/* 8-15: the leases' */
	CMD_LEASES = 8,
	CMD_EXPIRE = 9,
	CMD_SEED = 16,
	CMD_WATCH_HISTORY = 17,
	CMD_CAPS_REQUEST = 18,
	CMD_INSTANCE = 19,
	CMD_CLUSTER = 20,
};

/* --- building ------------------------------------------------------------------ */

/* Start a command. */
static void batch_cmd(struct sm_batch *b, int kind)
{
	bytes_int(b, (uint64_t)kind, 1);
	b->ncmds++;
}

/* An empty batch. */
void sm_batch_init(struct sm_batch *b)
{
	memset(b, 0, sizeof *b);
}

/* Forget the commands, keep the memory. */
void sm_batch_reset(struct sm_batch *b)
{
	b->len = 0;
	b->ncmds = 0;
	b->failed = false;
}

/* Free a batch's memory. */
void sm_batch_free(struct sm_batch *b)
{
	free(b->p);
	sm_batch_init(b);
}

/* The first entry of a log. */
void sm_batch_boot(struct sm_batch *b)
{
	batch_cmd(b, CMD_BOOT);
}

/* The settings that decide answers (the rest of cfg is the node's). */
void sm_batch_config(struct sm_batch *b, const struct sm_config *cfg)
{
	batch_cmd(b, CMD_CONFIG);
	bytes_int(b, cfg->default_limit, 4);
	bytes_int(b, cfg->max_semaphores, 4);
	bytes_int(b, cfg->max_sessions, 4);
	bytes_int(b, cfg->max_waiters_per_session, 4);
	bytes_int(b, cfg->max_holds_per_session, 4);
	bytes_int(b, cfg->max_lease_ms, 4);
	bytes_int(b, cfg->max_reply, 4);
	batch_cmd(b, CMD_WATCH_HISTORY);
	bytes_int(b, cfg->watch_history, 4);
}

/* A client opens (sm_client_open). */
void sm_batch_open(struct sm_batch *b, uint64_t id, const char *principal,
    const uint8_t secret[SM_SECRET_LEN], unsigned int flags)
{
	size_t len = strlen(principal);

	batch_cmd(b, CMD_OPEN);
	bytes_int(b, id, 8);
	bytes_int(b, flags, 4);
	bytes_put(b, secret, SM_SECRET_LEN);
	bytes_int(b, len, 4);
	bytes_put(b, principal, len);
}

/* A client closes (sm_client_close). */
void sm_batch_close(struct sm_batch *b, uint64_t id)
{
	batch_cmd(b, CMD_CLOSE);
	bytes_int(b, id, 8);
}

/* A request of client id, as its protobuf bytes, with the access decision. */
void sm_batch_request(struct sm_batch *b, uint64_t id,
    const struct sm_caller *who, const uint8_t *req, size_t len)
{
	size_t i;

	batch_cmd(b, CMD_CAPS_REQUEST);
	bytes_int(b, id, 8);
	bytes_int(b, who->privs, 4);
	bytes_int(b, SM_NLIMITS, 1);
	for (i = 0; i < SM_NLIMITS; i++)
		bytes_int(b, who->limit[i], 8);
	bytes_int(b, len, 4);
	bytes_put(b, req, len);
}

/* The service came back after a stop or a crash. */
void sm_batch_restart(struct sm_batch *b, uint32_t grace_ms)
{
	batch_cmd(b, CMD_RESTART);
	bytes_int(b, grace_ms, 4);
}

/* A leader took over (a restart of one node, or a new leader elected). */
void sm_batch_leader(struct sm_batch *b, uint64_t node, uint32_t grace_ms,
    const char *address)
{
	size_t len = strlen(address);

	batch_cmd(b, CMD_LEADER);
	bytes_int(b, node, 8);
	bytes_int(b, grace_ms, 4);
	bytes_int(b, len, 4);
	bytes_put(b, address, len);
}

/* Leases are the leader's from here on (sm_session.c). */
void sm_batch_leases(struct sm_batch *b, uint32_t floor_ms)
{
	batch_cmd(b, CMD_LEASES);
	bytes_int(b, floor_ms, 4);
}

/* The leader heard nothing of session id for its lease. */
void sm_batch_expire(struct sm_batch *b, uint64_t session)
{
	batch_cmd(b, CMD_EXPIRE);
	bytes_int(b, session, 8);
}

/* The history the revisions count from here on. */
void sm_batch_instance(struct sm_batch *b, uint64_t instance)
{
	batch_cmd(b, CMD_INSTANCE);
	bytes_int(b, instance, 8);
}

/* The cluster as the leader has it (members cut at SM_MEMBERS_MAX). */
void sm_batch_cluster(struct sm_batch *b, uint64_t term, const char *members)
{
	size_t len = strlen(members);

	if (len > SM_MEMBERS_MAX)
		len = SM_MEMBERS_MAX;
	batch_cmd(b, CMD_CLUSTER);
	bytes_int(b, term, 8);
	bytes_int(b, len, 4);
	bytes_put(b, members, len);
}

/* A new log's state: a snapshot's (an entry of its own: sm_entry_seed). */
void sm_batch_seed(struct sm_batch *b, const uint8_t *snap, size_t len)
{
	batch_cmd(b, CMD_SEED);
	bytes_int(b, len, 8);
	bytes_put(b, snap, len);
}

/*
 * Is this entry a SEED? 1 and its snapshot's bytes (inside buf), 0 when
 * it is another entry, -EINVAL when it is a SEED that is malformed.
 */
int sm_entry_seed(const uint8_t *buf, size_t len, const uint8_t **snap,
    size_t *snap_len)
{
	struct sm_rbuf e = { buf, len, 0, false };
	uint64_t n;
	size_t i;

	*snap = NULL;
	*snap_len = 0;
	if (rbuf_int(&e, 1) != ENTRY_VERSION)
		return 0;
	(void)rbuf_int(&e, 8);
	(void)rbuf_int(&e, 8);
	if (e.bad || e.off >= e.len || e.p[e.off] != CMD_SEED)
		return 0;
	e.off++;
	n = rbuf_int(&e, 8);
	if (e.bad || n > e.len - e.off || (*snap = rbuf_take(&e, n)) == NULL)
		return -EINVAL;
	for (i = e.off; i < e.len; i++)
		if (e.p[i] != 0)
			return -EINVAL;		/* only the padding may follow */
	*snap_len = n;
	return 1;
}

/* Bytes of an entry's header. */
size_t sm_entry_header_size(void)
{
	return 1 + 8 + 8;
}

/* Write an entry's header (sm_entry_header_size() bytes) at p. */
void sm_entry_header(uint8_t *p, uint64_t time, uint64_t wall)
{
	unsigned int i;

	p[0] = ENTRY_VERSION;
	for (i = 0; i < 8; i++) {
		p[1 + i] = (uint8_t)(time >> (8 * i));
		p[9 + i] = (uint8_t)(wall >> (8 * i));
	}
}

/* A leader takes over at state time t, or start for a new log (t == 0). */
void sm_clock_start(struct sm_clock *k, uint64_t t, uint64_t start,
    uint64_t mono)
{
	k->base = t == 0 ? start : t;
	k->mono_base = mono;
	k->last = k->base;
}

/* The leader's state time now. */
uint64_t sm_clock_now(const struct sm_clock *k, uint64_t mono)
{
	return k->base + (mono - k->mono_base);
}

/* The state time of the leader's next entry (see state.h). */
uint64_t sm_clock_stamp(struct sm_clock *k, uint64_t mono, uint64_t at_least)
{
	uint64_t t = sm_clock_now(k, mono);

	if (t < k->last)
		t = k->last;
	if (t < at_least)
		t = at_least;
	k->last = t;
	return t;
}

/* --- applying ----------------------------------------------------------------- */

/*
 * The grace a session's lease gets at a restart or a new leader: at most
 * the lease itself. A client's own lease ends at most lease_ms after the
 * last answer it had, which came before this entry, and time in the state
 * stood still in between: kept lease_ms past this entry the session outlives
 * every client that can still resume it, and the rest of the grace is slack
 * for clock rates. Beyond that it only kept the permits of clients that had
 * given up (a 2 s lease through a failover: a new session each) for 10 s
 * more at every fault, with their waiters granted ahead of the live ones.
 */
static uint64_t session_grace(const struct sm_session *s, uint32_t grace_ms)
{
	return grace_ms < s->lease_ms ? grace_ms : s->lease_ms;
}

/*
 * The service came back: every client of before is gone (their connections
 * went with the old process, which is no death of theirs), and every lease
 * - sessions', detached holds' - is extended by grace_ms (Chubby's rule: no
 * holder loses its permit because the service was away), a session's by
 * no more than its lease (session_grace). State time does
 * not pass while no leader runs, so only the grace is added.
 */
static void sm_restart(struct sm *sm, uint32_t grace_ms, uint64_t now)
{
	struct sm_session **ss;
	struct hmap_iter it;
	struct hnode *n;
	struct list_head *pos;
	struct sm_hold *h;
	size_t i = 0, ns;

	while (!list_empty(&sm->clients)) {
		struct sm_client *c = list_first_entry(&sm->clients,
		    struct sm_client, entry);

		c->detach = true;	/* not its death */
		sm_client_close(sm, c, now);
	}
	/* Sessions by id, so the timers are armed in the same order anywhere. */
	ns = hmap_count(&sm->sessions);
	ss = ptr_array(ns + 1);
	if (ss != NULL) {
		hmap_iter_init(&it, &sm->sessions);
		while ((n = hmap_iter_next(&it)) != NULL)
			ss[i++] = container_of(n, struct sm_session, node);
		ptr_sort(ss, ns, sm_session_cmp);
		for (i = 0; i < ns; i++) {
			uint64_t g = session_grace(ss[i], grace_ms);

			/*
			 * A leader's lease starts afresh (the requests it
			 * answered without an entry are not in heard), with
			 * at least the floor, and never ends sooner than the
			 * last start's did.
			 */
			if (sm->leader_leases && g < sm->lease_floor_ms)
				g = sm->lease_floor_ms;
			if (!sm->leader_leases)
				ss[i]->heard += g;
			else if (ss[i]->heard < now + g)
				ss[i]->heard = now + g;
			session_arm(sm, ss[i]);
		}
		free(ss);
	}
	list_for_each(pos, &sm->detached) {
		h = list_entry(pos, struct sm_hold, owner_entry);
		if (h->expiry.idx != SIZE_MAX) {
			uint64_t when = h->expiry.when + grace_ms;

			timer_disarm(sm, &h->expiry);
			if (timer_arm(sm, &h->expiry, T_HOLD, when) != 0)
				h->expiry.idx = SIZE_MAX;	/* held until released */
		}
	}
}

/*
 * EXPIRE: the leader heard nothing of session id for its lease. It ends
 * unless an entry since heard it (a request logged after the leader looked,
 * or a new leader's grace): the state's own record has the last word.
 */
static void session_expire_asked(struct sm *sm, uint64_t id, uint64_t now)
{
	struct sm_session *s = session_find(sm, id);

	if (s == NULL || !sm->leader_leases || s->lease_ms == 0 ||
	    s->heard + s->lease_ms > now)
		return;
	sm->cur_op = 0;
	session_expire(sm, s, now);
	sm_settle(sm);
}

/* The leader answers client id without an entry: its session was heard. */
bool sm_heard_local(struct sm *sm, uint64_t client_id, uint64_t mono)
{
	struct sm_client *c = sm_client_find(sm, client_id);

	if (c == NULL || !c->hello || c->session == NULL)
		return false;
	c->session->seen_mono = mono;
	return true;
}

/* The leader's sweep: sessions whose lease ran out by its clock. */
size_t sm_leases_due(struct sm *sm, const struct sm_clock *k, uint64_t mono,
    uint64_t retry_ms, uint64_t *ids, size_t max)
{
	uint64_t now = sm_clock_now(k, mono), last;
	struct sm_session *s;
	struct hmap_iter it;
	struct hnode *n;
	size_t count = 0;

	if (!sm->leader_leases)
		return 0;
	hmap_iter_init(&it, &sm->sessions);
	while (count < max && (n = hmap_iter_next(&it)) != NULL) {
		s = container_of(n, struct sm_session, node);
		if (s->lease_ms == 0)
			continue;
		last = s->heard;
		/* Heard in this leadership (earlier: the grace covers it). */
		if (s->seen_mono >= k->mono_base &&
		    sm_clock_now(k, s->seen_mono) > last)
			last = sm_clock_now(k, s->seen_mono);
		if (last + s->lease_ms > now)
			continue;
		if (s->asked_mono >= k->mono_base &&
		    s->asked_mono + retry_ms > mono)
			continue;
		s->asked_mono = mono;
		ids[count++] = s->id;
	}
	return count;
}

/* One command of an entry, decoded (its bytes point into the entry). */
struct cmd {
	int		kind;
	uint64_t	id;		/* OPEN CLOSE REQUEST LEADER EXPIRE,
					 * INSTANCE's instance, CLUSTER's term */
	uint32_t	u32;		/* OPEN's flags, RESTART's, LEADER's and
					 * LEASES' milliseconds, WATCH_HISTORY */
	struct sm_config cfg;		/* CONFIG's fields (the rest zero) */
	struct sm_caller who;		/* REQUEST */
	const uint8_t	*secret;	/* OPEN */
	const uint8_t	*str;		/* OPEN's principal, REQUEST's bytes,
					 * LEADER's address, CLUSTER's members */
	size_t		len;
};

/*
 * Decode one command and check what applying it would (sizes, ranges);
 * false when it is malformed. The one reader of commands: sm_entry_check
 * refuses exactly what sm_apply would.
 */
static bool cmd_decode(struct sm_rbuf *e, struct cmd *c)
{
	uint64_t kind, n;
	size_t i;

	memset(c, 0, sizeof *c);
	kind = rbuf_int(e, 1);
	c->kind = (int)kind;
	switch (kind) {
	case CMD_BOOT:
		return !e->bad;
	case CMD_CONFIG:
		c->cfg.default_limit = (uint32_t)rbuf_int(e, 4);
		c->cfg.max_semaphores = (uint32_t)rbuf_int(e, 4);
		c->cfg.max_sessions = (uint32_t)rbuf_int(e, 4);
		c->cfg.max_waiters_per_session = (uint32_t)rbuf_int(e, 4);
		c->cfg.max_holds_per_session = (uint32_t)rbuf_int(e, 4);
		c->cfg.max_lease_ms = (uint32_t)rbuf_int(e, 4);
		c->cfg.max_reply = (uint32_t)rbuf_int(e, 4);
		/* Names are made with the default limit: one a snapshot keeps. */
		return !e->bad && c->cfg.default_limit != 0 &&
		    c->cfg.default_limit <= SM_LIMIT_MAX;
	case CMD_WATCH_HISTORY:
		c->u32 = (uint32_t)rbuf_int(e, 4);
		return !e->bad && c->u32 <= SM_WATCH_HISTORY_MAX;
	case CMD_OPEN:
		c->id = rbuf_int(e, 8);
		c->u32 = (uint32_t)rbuf_int(e, 4);
		c->secret = rbuf_take(e, SM_SECRET_LEN);
		c->len = rbuf_int(e, 4);
		return !e->bad && c->len <= SM_PRINCIPAL_MAX &&
		    (c->str = rbuf_take(e, c->len)) != NULL;
	case CMD_CLOSE:
	case CMD_EXPIRE:
		c->id = rbuf_int(e, 8);
		return !e->bad;
	case CMD_REQUEST:
	case CMD_CAPS_REQUEST:
		c->kind = CMD_REQUEST;
		c->id = rbuf_int(e, 8);
		c->who.privs = (unsigned int)rbuf_int(e, 4);
		/* REQUEST: the caps up to semaphores, as they were then */
		n = kind == CMD_REQUEST ? SM_LIMIT_SEMAPHORES + 1 :
		    rbuf_int(e, 1);
		if (n > SM_NLIMITS)
			return false;
		for (i = 0; i < n; i++)
			c->who.limit[i] = rbuf_int(e, 8);
		c->len = rbuf_int(e, 4);
		return !e->bad && (c->str = rbuf_take(e, c->len)) != NULL;
	case CMD_RESTART:
	case CMD_LEASES:
		c->u32 = (uint32_t)rbuf_int(e, 4);
		return !e->bad;
	case CMD_LEADER:
		c->id = rbuf_int(e, 8);
		c->u32 = (uint32_t)rbuf_int(e, 4);
		c->len = rbuf_int(e, 4);
		return !e->bad && c->len < sizeof ((struct sm *)NULL)->leader_addr &&
		    (c->str = rbuf_take(e, c->len)) != NULL;
	case CMD_INSTANCE:
		c->id = rbuf_int(e, 8);
		return !e->bad;
	case CMD_CLUSTER:
		c->id = rbuf_int(e, 8);
		c->len = rbuf_int(e, 4);
		return !e->bad && c->len <= SM_MEMBERS_MAX &&
		    (c->str = rbuf_take(e, c->len)) != NULL &&
		    memchr(c->str, '\0', c->len) == NULL;
	default:
		return false;
	}
}

/* Run one decoded command. */
static void cmd_run(struct sm *sm, const struct cmd *k,
    const struct sm_apply_hooks *hooks, uint64_t now, uint64_t wall)
{
	char principal[SM_PRINCIPAL_MAX + 1], members[SM_MEMBERS_MAX + 1];
	struct sm_config cfg;
	struct sm_client *c;
	Semd__Request *req;
	int r;

	switch (k->kind) {
	case CMD_BOOT:
		sm->start_ms = now;
		sm->token_base = wall * 1000;
		break;
	case CMD_CONFIG:
		cfg = sm->cfg;
		cfg.default_limit = k->cfg.default_limit;
		cfg.max_semaphores = k->cfg.max_semaphores;
		cfg.max_sessions = k->cfg.max_sessions;
		cfg.max_waiters_per_session = k->cfg.max_waiters_per_session;
		cfg.max_holds_per_session = k->cfg.max_holds_per_session;
		cfg.max_lease_ms = k->cfg.max_lease_ms;
		cfg.max_reply = k->cfg.max_reply;
		sm_reconfigure(sm, &cfg);
		break;
	case CMD_WATCH_HISTORY:
		cfg = sm->cfg;
		cfg.watch_history = k->u32;
		sm_reconfigure(sm, &cfg);
		break;
	case CMD_OPEN:
		memcpy(principal, k->str, k->len);
		principal[k->len] = '\0';
		c = sm_client_open(sm, k->id, NULL, principal, k->secret, k->u32,
		    now);
		if (c != NULL && hooks != NULL && hooks->bind != NULL)
			sm_client_bind(c, hooks->bind(hooks->arg, k->id));
		break;
	case CMD_CLOSE:
		sm_client_close(sm, sm_client_find(sm, k->id), now);
		break;
	case CMD_REQUEST:
		if (hooks != NULL && hooks->done != NULL)
			hooks->done(hooks->arg, k->id, k->len);
		c = sm_client_find(sm, k->id);
		if (c == NULL)
			break;	/* closed in the meantime: nobody to answer */
		req = semd__request__unpack(NULL, k->len, k->str);
		if (req == NULL) {
			sm_protocol_error(sm, c, "undecodable request");
			r = SM_CLOSE;
		} else {
			r = sm_request(sm, c, req, &k->who, now);
			semd__request__free_unpacked(req, NULL);
		}
		if (r == SM_CLOSE && c->conn != NULL && sm->out.close != NULL)
			sm->out.close(sm->out.ctx, c->conn);
		break;
	case CMD_RESTART:
		sm_restart(sm, k->u32, now);
		break;
	case CMD_LEADER:
		sm_restart(sm, k->u32, now);
		sm->leader_id = k->id;
		memcpy(sm->leader_addr, k->str, k->len);
		sm->leader_addr[k->len] = '\0';
		break;
	case CMD_LEASES:
		session_leases_start(sm, k->u32);
		break;
	case CMD_EXPIRE:
		session_expire_asked(sm, k->id, now);
		break;
	case CMD_INSTANCE:
		sm->instance = k->id;
		break;
	case CMD_CLUSTER:
		memcpy(members, k->str, k->len);
		members[k->len] = '\0';
		watch_cluster(sm, k->id, members);
		break;
	default:
		break;
	}
}

/*
 * An entry's header and where its padding starts: 0 and the commands in
 * e, or -EINVAL (why in err).
 */
static int entry_open(struct sm_rbuf *e, uint64_t *now, uint64_t *wall,
    char *err, size_t errlen)
{
	if (rbuf_int(e, 1) != ENTRY_VERSION) {
		snprintf(err, errlen, "entry of an unknown format");
		return -EINVAL;
	}
	*now = rbuf_int(e, 8);
	*wall = rbuf_int(e, 8);
	if (e->bad) {
		snprintf(err, errlen, "entry shorter than its header");
		return -EINVAL;
	}
	return 0;
}

/*
 * At the padding (a zero byte where a command would start): true when only
 * zeros follow (e is then at its end), else why in err.
 */
static bool entry_padding(struct sm_rbuf *e, char *err, size_t errlen)
{
	while (e->off < e->len && e->p[e->off] == 0)
		e->off++;
	if (e->off != e->len) {
		snprintf(err, errlen, "bytes after the padding");
		return false;
	}
	return true;
}

/*
 * The next command of e, decoded in k: 1; 0 at the entry's end (its
 * padding checked); -1 with why in err (n: the command's number).
 */
static int entry_next(struct sm_rbuf *e, struct cmd *k, unsigned int n,
    char *err, size_t errlen)
{
	if (e->off >= e->len)
		return 0;
	if (e->p[e->off] == 0)
		return entry_padding(e, err, errlen) ? 0 : -1;
	if (!cmd_decode(e, k)) {
		snprintf(err, errlen, "command %u of the entry is malformed", n);
		return -1;
	}
	return 1;
}

/* Would sm_apply take this entry? 0, or -EINVAL with why in err. */
int sm_entry_check(const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	struct sm_rbuf e = { buf, len, 0, false };
	const uint8_t *snap;
	uint64_t now, wall;
	unsigned int n = 0;
	struct cmd k;
	size_t slen;
	int seed, r;

	if ((seed = sm_entry_seed(buf, len, &snap, &slen)) != 0) {
		if (seed < 0)
			snprintf(err, errlen, "a malformed SEED entry");
		return seed < 0 ? -EINVAL : 0;
	}
	if (entry_open(&e, &now, &wall, err, errlen) != 0)
		return -EINVAL;
	while ((r = entry_next(&e, &k, n, err, errlen)) > 0)
		n++;
	return r < 0 ? -EINVAL : 0;
}

/*
 * Apply one entry: its time first (deadlines due fire), then its commands.
 * 0, or -EINVAL for bytes that are not an entry (nothing after the bad
 * command is applied; why in err).
 */
int sm_apply(struct sm *sm, const uint8_t *buf, size_t len,
    const struct sm_apply_hooks *hooks, char *err, size_t errlen)
{
	struct sm_rbuf e = { buf, len, 0, false };
	uint64_t now, wall, prev;
	unsigned int n = 0;
	struct cmd k;
	int r;

	if (entry_open(&e, &now, &wall, err, errlen) != 0)
		return -EINVAL;
	if (now < sm->now)
		now = sm->now;		/* never backwards, whatever the stamp */
	prev = sm->now;
	sm->now = now;
	sm_set_wall(sm, wall);
	sm_tick_from(sm, prev, now);	/* each deadline at its own time */
	while ((r = entry_next(&e, &k, n, err, errlen)) > 0) {
		cmd_run(sm, &k, hooks, now, wall);
		n++;
	}
	return r < 0 ? -EINVAL : 0;
}
