/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/core_lead.c - leadership: followed from raft_state() and
 * raft_current_term() after every step of raft, the take-over (a barrier,
 * then the leader's first entry; serving once it is applied), its loss;
 * the leader's timers (deadline ticks, the lease sweep); membership changes
 * and transfers asked for by clients; the hand-over before a stop.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <sysexits.h>

#include "daemon/log/core-int.h"
#include "daemon/log/peer_addr.h"
#include "daemon/logging.h"

/*
 * A take-over's barrier: its own memory, so that one left over from an
 * earlier leadership cannot be confused with the current one's.
 */
struct takeover {
	struct raft_barrier	req;
	struct semlog_core	*c;
	unsigned int		gen;	/* c->term_leader when it was made */
};

/* A one-voter start failed (a cluster node keeps trying while it leads). */
static void core_start_failed(struct semlog_core *c, int status,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void core_start_failed(struct semlog_core *c, int status,
    const char *fmt, ...)
{
	char why[256];
	va_list ap;

	if (c->cfg.cluster)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (c->env.started != NULL)
		c->env.started(c->env.arg, status, why);
}

/* Serving starts or stops; the environment hears of it. */
static void core_set_serving(struct semlog_core *c, bool on)
{
	if (c->serving == on)
		return;
	c->serving = on;
	if (c->env.serving != NULL)
		c->env.serving(c->env.arg, on);
}

/*
 * The leader's first entry was applied (status 0), or not. One of an
 * earlier leadership (raft fails it as it steps down) changes nothing.
 */
static void core_first_done(struct semlog_core *c, int status)
{
	if (!c->leader || raft_current_term(c->raft) != c->lead_term)
		return;
	c->taking_over = false;
	if (status != 0) {
		core_start_failed(c, EX_IOERR, "the restart entry was not "
		    "committed: %s", raft_strerror(status));
		return;
	}
	core_set_serving(c, true);
	log_notice("log: node %llu serves", (unsigned long long)c->cfg.id);
	if (!c->cfg.cluster && c->env.started != NULL)
		c->env.started(c->env.arg, 1, NULL);
	core_propose_queued(c);
	core_reads_run(c);
}

/*
 * The SEED entry of a new log (an entry of its own), before the leader's
 * first: false when it could not be proposed (the start fails).
 */
static bool core_propose_seed(struct semlog_core *c)
{
	struct sm_batch b;
	struct semlog_chunk *q;

	sm_batch_init(&b);
	sm_batch_seed(&b, c->seed, c->cfg.seed_len);
	q = b.failed ? NULL : semlog_chunk_new(b.p, b.len);
	sm_batch_free(&b);
	if (q != NULL && core_propose(c, q, NULL, 0, NULL))
		return true;
	c->taking_over = false;
	log_err("log: the backup's state could not be proposed");
	core_start_failed(c, EX_IOERR, "the backup's state could not be "
	    "proposed (out of memory?)");
	return false;
}

/*
 * The members as the port saw them stored, "ID ROLE" each by id, into buf
 * (for the state's CLUSTER command: its watchers hear of them).
 */
static void core_members(struct semlog_core *c, char *buf, size_t len)
{
	const struct raft_configuration *conf = semlog_port_configuration(c->port);
	raft_id last = 0, next;
	size_t off = 0;
	unsigned int i, k;
	int n;

	buf[0] = '\0';
	for (k = 0; conf != NULL && k < conf->n; k++) {
		/* The next id up: a handful of members, no sort needed. */
		next = 0;
		for (i = 0; i < conf->n; i++)
			if (conf->servers[i].id > last &&
			    (next == 0 || conf->servers[i].id < next))
				next = conf->servers[i].id;
		for (i = 0; i < conf->n && conf->servers[i].id != next; i++)
			;
		if (next == 0 || i == conf->n)
			break;
		n = snprintf(buf + off, len - off, "%s%llu %s", off > 0 ? "," : "",
		    (unsigned long long)next, conf->servers[i].role == RAFT_VOTER ?
		    "voter" : conf->servers[i].role == RAFT_STANDBY ? "standby" :
		    "spare");
		if (n < 0 || (size_t)n >= len - off) {
			buf[off] = '\0';
			break;
		}
		off += (size_t)n;
		last = next;
	}
}

/* Tell the state the cluster as it is now (an entry of its own). */
static void core_propose_cluster(struct semlog_core *c)
{
	char members[SM_MEMBERS_MAX + 1];
	struct semlog_chunk *q;
	struct sm_batch b;

	if (!c->serving)
		return;		/* the next leader's first entry tells it */
	core_members(c, members, sizeof members);
	sm_batch_init(&b);
	sm_batch_cluster(&b, raft_current_term(c->raft), members);
	q = b.failed ? NULL : semlog_chunk_new(b.p, b.len);
	sm_batch_free(&b);
	if (q == NULL || !core_propose(c, q, NULL, 0, NULL))
		log_warn("log: the cluster's new members could not be told to "
		    "watchers");
}

/* Leadership is ours and everything before is applied: take over. */
static void core_barrier_cb(struct raft_barrier *req, int status)
{
	struct takeover *t = req->data;
	struct semlog_core *c = t->c;
	bool stale = t->gen != c->term_leader, instance;
	char members[SM_MEMBERS_MAX + 1];
	struct semlog_chunk *q;
	struct sm_batch b;
	uint64_t now;

	free(t);
	if (stale)
		return;		/* an earlier leadership's */
	if (status != 0) {
		c->taking_over = false;	/* tried again while we lead */
		log_warn("log: the barrier of a new leadership failed: %s",
		    raft_strerror(status));
		core_start_failed(c, EX_IOERR, "the log could not be replayed: %s",
		    raft_strerror(status));
		return;
	}
	if (!c->leader) {
		c->taking_over = false;
		return;		/* lost it again meanwhile */
	}
	core_lock(c);
	now = sm_now(core_sm(c));
	instance = sm_instance(core_sm(c)) != 0;
	core_unlock(c);
	/* A new log seeded by --restore: the backup's state comes first. */
	if (now == 0 && c->seed != NULL && !core_propose_seed(c))
		return;
	/* A restored state begins another history than its backup's. */
	if (now == 0 && c->seed != NULL)
		instance = false;
	if (now == 0 && c->seed != NULL)
		now = c->cfg.seed_now;
	/*
	 * Log time goes on from the last entry applied (the time no leader
	 * ran counts against no lease); a new log starts at the wall clock.
	 */
	sm_clock_start(&c->clock, now, c->env.wall_ms(c->env.arg), core_now(c));
	c->lead_start = now;
	c->takeovers++;
	sm_batch_init(&b);
	if (now == 0)
		sm_batch_boot(&b);
	sm_batch_config(&b, &c->smcfg);
	/*
	 * Every client of before is gone (they were another process's, or
	 * another node's), and every lease starts afresh with the grace
	 * (Chubby's rule); leases are the leader's (sm_leases_due): what it
	 * answers without an entry keeps a session, its sweep ends one.
	 */
	sm_batch_leases(&b, c->cfg.cluster ? 2 * c->cfg.election_ms : 0);
	sm_batch_leader(&b, c->cfg.id, now == 0 ? 0 : c->cfg.grace_ms,
	    c->cfg.advertise);
	/*
	 * The history the revisions count: the first leader's (of a new log,
	 * of one written before there were instances, of a restored one).
	 */
	if (!instance)
		sm_batch_instance(&b, c->smcfg.instance);
	core_members(c, members, sizeof members);
	sm_batch_cluster(&b, raft_current_term(c->raft), members);
	q = b.failed ? NULL : semlog_chunk_new(b.p, b.len);
	sm_batch_free(&b);
	if (q == NULL || !core_propose(c, q, NULL, 0, core_first_done)) {
		c->taking_over = false;
		log_err("log: the leader's first entry could not be proposed");
		core_start_failed(c, EX_IOERR, "the restart entry could not be "
		    "proposed");
	}
}

/* Start taking over: a barrier, then the LEADER entry. */
static void core_take_over(struct semlog_core *c)
{
	struct takeover *t = calloc(1, sizeof *t);
	int rv;

	if (t == NULL) {
		log_warn("log: out of memory taking over; trying again");
		return;
	}
	t->c = c;
	t->gen = c->term_leader;
	t->req.data = t;
	c->taking_over = true;
	rv = raft_barrier(c->raft, &t->req, core_barrier_cb);
	if (rv != 0) {
		c->taking_over = false;
		free(t);
		log_warn("log: barrier: %s", raft_strerror(rv));
	}
}

/* Leadership went: stop serving; the clients go and find the new leader. */
static void core_leadership_lost(struct semlog_core *c)
{
	c->taking_over = false;		/* what was under way fails */
	core_set_serving(c, false);
	core_queue_drop(c);
	core_reads_refuse(c);
	log_notice("log: node %llu is no longer the leader",
	    (unsigned long long)c->cfg.id);
	c->host.drop_clients(c->host.arg);
}

/*
 * Before an entry is applied: raft may have stepped down within the step
 * that applies it (a message of a newer term, then entries it had already
 * stored), before the core followed. What is applied once the leadership
 * is over must reach none of its clients: their sessions end at the new
 * leader's first entry, and what an entry says to them on the way there is
 * void before it could arrive (a take-over ends the sessions of before one
 * by one, and each permit is handed to the next waiter, often another
 * session of before: a grant that the deposed node would pass on). The
 * host stops answering them now (drop_clients), also during a hand-over.
 */
void core_lead_check(struct semlog_core *c)
{
	if (!c->leader || (raft_state(c->raft) == RAFT_LEADER &&
	    raft_current_term(c->raft) == c->lead_term))
		return;
	c->leader = false;
	if (c->stopping)
		c->host.drop_clients(c->host.arg);
	else
		core_leadership_lost(c);
}

/*
 * Follow raft's state (after every step, and on every tick of the core):
 * libraft 0.22 tells a leadership change through a callback of its
 * internals only (step_cb), so the core asks raft_state() and
 * raft_current_term() each time raft moved. A leadership lost and won again
 * between two looks is a new term: a new leadership all the same.
 */
void core_follow(struct semlog_core *c)
{
	bool leader = raft_state(c->raft) == RAFT_LEADER;
	raft_term term = raft_current_term(c->raft);

	if (c->stopping)
		return;		/* a hand-over, or the loop is ending */
	if (leader && c->leader && term != c->lead_term) {
		c->leader = false;
		core_leadership_lost(c);
	}
	if (leader && !c->leader) {
		c->leader = true;
		c->lead_term = term;
		c->term_leader++;
		log_notice("log: node %llu is the leader (term %llu)",
		    (unsigned long long)c->cfg.id, (unsigned long long)term);
		core_take_over(c);
	} else if (leader && !c->serving && !c->taking_over) {
		/*
		 * Leading without serving, and nothing under way that would
		 * change it (a barrier or the LEADER entry failed, raft still
		 * leads): the clients would be sent here and back for as long
		 * as it lasts. Take over again.
		 */
		log_warn("log: node %llu leads but does not serve: taking over "
		    "again", (unsigned long long)c->cfg.id);
		core_take_over(c);
	} else if (!leader && c->leader) {
		c->leader = false;
		core_leadership_lost(c);
	}
}

/* The state's earliest deadline came: an empty entry makes time pass. */
static void core_deadline_tick(struct semlog_core *c)
{
	if (!c->serving || c->tick_out || c->deadline == NEVER ||
	    c->deadline > sm_clock_now(&c->clock, core_now(c)) ||
	    raft_transferee(c->raft) != 0)
		return;
	if (core_propose(c, NULL, NULL, c->deadline, NULL))
		c->tick_out = true;
}

/*
 * The leader's sweep, every SWEEP_MS while it serves: the sessions whose
 * lease ran out by this leader's clock - nothing heard of them, by entry or
 * by a request answered without one, for their lease since the later of
 * their last entry and this leadership's start with its grace - end by an
 * EXPIRE command each, queued as the loops' commands are. Not while the
 * disk takes no writes: an EXPIRE would wait with the rest, and another be
 * queued for the same session every SWEEP_RETRY_MS; the first sweep after
 * it sees who was heard meanwhile (a Ping answered without an entry).
 */
static void core_sweep(struct semlog_core *c)
{
	uint64_t ids[SWEEP_MAX], mono = core_now(c);
	struct semlog_chunk *q;
	struct sm_batch b;
	size_t n, i;

	if (!c->serving || mono < c->next_sweep)
		return;
	c->next_sweep = mono + SWEEP_MS;
	if (c->stalled)
		return;
	core_lock(c);
	n = sm_leases_due(core_sm(c), &c->clock, mono, SWEEP_RETRY_MS, ids,
	    SWEEP_MAX);
	core_unlock(c);
	if (n == 0)
		return;
	sm_batch_init(&b);
	for (i = 0; i < n; i++)
		sm_batch_expire(&b, ids[i]);
	c->expired += n;
	q = b.failed ? NULL : semlog_chunk_new(b.p, b.len);
	sm_batch_free(&b);
	if (q == NULL) {
		log_err("log: out of memory ending sessions; trying again");
		return;
	}
	core_queue(c, q);
	core_propose_queued(c);
}

/* The leader's timers that are due. */
void core_timers(struct semlog_core *c)
{
	core_deadline_tick(c);
	core_sweep(c);
}

/* When the leader's timers are next due (NEVER: none). */
uint64_t core_timers_due(struct semlog_core *c)
{
	uint64_t now, st, due = NEVER;

	if (!c->serving)
		return NEVER;
	due = c->next_sweep;
	if (c->deadline != NEVER && !c->tick_out) {
		now = core_now(c);
		st = sm_clock_now(&c->clock, now);
		if (c->deadline <= st)
			return now;
		if (now + (c->deadline - st) < due)
			due = now + (c->deadline - st);
	}
	return due;
}

/* --- membership changes and transfers ------------------------------------- */

/* Answer a change's client (the reply goes by the host), and free it. */
static void core_change_reply(struct semlog_change *ch, int code,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void core_change_reply(struct semlog_change *ch, int code,
    const char *fmt, ...)
{
	struct semlog_core *c = ch->core;
	Semd__Reply r = SEMD__REPLY__INIT;
	char msg[256] = "";
	void *conn;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	r.id = ch->req_id;
	r.code = code;
	r.message = msg;
	core_lock(c);
	conn = c->host.conn(c->host.arg, ch->cid);
	if (conn != NULL)
		c->host.reply(c->host.arg, conn, &r);
	core_unlock(c);
	if (code == SEMD__CODE__OK)
		log_notice("log: cluster: %s", msg);
	free(ch);
}

/* A change of the configuration is done (or failed). */
static void core_change_cb(struct raft_change *req, int status)
{
	struct semlog_change *ch = req->data;
	int rv;

	if (status != 0) {
		core_change_reply(ch, SEMD__CODE__UNAVAILABLE, "%s",
		    raft_strerror(status));
		return;
	}
	if (ch->action == SEMD__CLUSTER__ACTION__ADD) {
		/* Added as a spare; now a voter (it catches up first). */
		ch->action = -1;
		rv = raft_assign(ch->core->raft, &ch->change, ch->node,
		    RAFT_VOTER, core_change_cb);
		if (rv != 0)
			core_change_reply(ch, SEMD__CODE__UNAVAILABLE, "%s",
			    raft_errmsg(ch->core->raft));
		return;
	}
	core_propose_cluster(ch->core);
	core_change_reply(ch, SEMD__CODE__OK, ch->action == -1 ?
	    "node %llu is a voter" : "node %llu removed",
	    (unsigned long long)ch->node);
}

/* A leadership transfer ended (it worked if the leader is now ch->node). */
static void core_transfer_cb(struct raft_transfer *req)
{
	struct semlog_change *ch = req->data;
	struct semlog_core *c = ch->core;
	const char *addr = NULL;
	raft_id id = 0;

	raft_leader(c->raft, &id, &addr);
	if (ch->node == 0 ? id != c->cfg.id && id != 0 : id == ch->node)
		core_change_reply(ch, SEMD__CODE__OK, "leadership went to node "
		    "%llu", (unsigned long long)id);
	else
		core_change_reply(ch, SEMD__CODE__UNAVAILABLE, "the transfer did "
		    "not happen in time (leader: node %llu)",
		    (unsigned long long)id);
}

/* Start a cluster change asked for by a client. */
void core_change_start(struct semlog_core *c, struct semlog_change *ch)
{
	const char *why;
	int rv;

	ch->core = c;
	if (!c->leader || c->stopping) {
		core_change_reply(ch, SEMD__CODE__UNAVAILABLE, "this node is not "
		    "the leader");
		return;
	}
	ch->change.data = ch;
	ch->transfer.data = ch;
	switch (ch->action) {
	case SEMD__CLUSTER__ACTION__ADD:
		if ((why = peer_addr_check(ch->address, c->cfg.peer_tls)) != NULL) {
			core_change_reply(ch, SEMD__CODE__INVALID_ARGUMENT,
			    "node %llu: %s %s", (unsigned long long)ch->node,
			    ch->address, why);
			return;
		}
		rv = raft_add(c->raft, &ch->change, ch->node, ch->address,
		    core_change_cb);
		break;
	case SEMD__CLUSTER__ACTION__REMOVE:
		rv = raft_remove(c->raft, &ch->change, ch->node, core_change_cb);
		break;
	default:
		rv = raft_transfer(c->raft, &ch->transfer, ch->node,
		    core_transfer_cb);
		break;
	}
	if (rv != 0)
		core_change_reply(ch, rv == RAFT_BADID || rv == RAFT_NOTFOUND ||
		    rv == RAFT_DUPLICATEID || rv == RAFT_DUPLICATEADDRESS ||
		    rv == RAFT_BADROLE ? SEMD__CODE__INVALID_ARGUMENT :
		    SEMD__CODE__UNAVAILABLE, "%s", raft_errmsg(c->raft));
}

/* --- stopping -------------------------------------------------------------- */

/*
 * The hand-over before stopping ended, done or given up by raft: stop. Once
 * only: the core gives up on its own too (core_hand_over_late).
 */
static void core_handed_over(struct raft_transfer *req)
{
	struct semlog_core *c = req->data;
	const char *addr = NULL;
	raft_id id = 0;

	if (c->handover_until == 0)
		return;
	c->handover_until = 0;
	raft_leader(c->raft, &id, &addr);
	if (id != 0 && id != c->cfg.id)
		log_notice("log: leadership handed over to node %llu",
		    (unsigned long long)id);
	else
		log_warn("log: leadership was not handed over in time; stopping "
		    "all the same");
	if (c->env.stopped != NULL)
		c->env.stopped(c->env.arg);
}

/*
 * Stopping a leader of several voters: hand leadership over first (raft's
 * TimeoutNow to the most up-to-date follower), so that the clients find a
 * new leader in milliseconds instead of waiting out an election. Nothing
 * more is proposed meanwhile; raft gives up after an election timeout.
 * true when a hand-over is under way.
 */
bool core_hand_over(struct semlog_core *c)
{
	int rv;

	c->stopping = true;
	core_set_serving(c, false);
	if (!c->cfg.cluster || !c->leader ||
	    raft_state(c->raft) != RAFT_LEADER)
		return false;
	c->handover.data = c;
	rv = raft_transfer(c->raft, &c->handover, 0, core_handed_over);
	if (rv != 0) {
		if (rv != RAFT_NOTFOUND)	/* NOTFOUND: the only voter */
			log_warn("log: no hand-over of leadership: %s",
			    raft_errmsg(c->raft));
		return false;
	}
	c->handover_until = core_now(c) + 2 * (uint64_t)c->cfg.election_ms;
	log_notice("log: node %llu stops: handing leadership over",
	    (unsigned long long)c->cfg.id);
	return true;
}

/*
 * A hand-over not over after two election timeouts: stop all the same.
 * libraft 0.22 calls a transfer back when the leader still leads after an
 * election timeout, or once it knows a new leader - never when it stepped
 * down with no leader in view (every peer gone): the core does not wait
 * for that.
 */
void core_hand_over_late(struct semlog_core *c)
{
	if (c->handover_until == 0 || core_now(c) < c->handover_until)
		return;
	c->handover_until = 0;
	log_warn("log: leadership was not handed over in time; stopping all "
	    "the same");
	if (c->env.stopped != NULL)
		c->env.stopped(c->env.arg);
}
