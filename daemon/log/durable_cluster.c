/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/durable_cluster.c - leadership and the cluster: taking over (the
 * barrier and the LEADER entry), losing it, membership changes asked for by
 * clients, transfers, and the status published for any thread.
 */
#include <config.h>	/* autoconf's */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "daemon/log/durable.h"
#include "daemon/log/peer_addr.h"
#include "daemon/log/raftguard.h"
#include "daemon/logging.h"
#include "daemon/log/durable-int.h"

/* --- leadership ------------------------------------------------------------------ */

/* A take-over's barrier: its own memory, so that one left over from an
 * earlier leadership cannot be confused with the current one's. */
struct takeover {
	struct raft_barrier	req;
	struct durable		*d;
	unsigned int		gen;	/* d->term_leader when it was made */
};

/*
 * The SEED entry of a new log (an entry of its own), before the leader's
 * first: false when it could not be proposed (the start fails).
 */
static bool d_propose_seed(struct durable *d)
{
	struct sm_batch b;
	struct qchunk *q;

	sm_batch_init(&b);
	sm_batch_seed(&b, d->seed, d->seed_len);
	q = b.failed ? NULL : qchunk_new(b.p, b.len);
	sm_batch_free(&b);
	if (q != NULL && d_propose(d, q, NULL, 0, false))
		return true;
	d->taking_over = false;
	log_err("log: the backup's state could not be proposed");
	d_started(d, EX_IOERR, "the backup's state could not be proposed "
	    "(out of memory?)");
	return false;
}

/* Leadership is ours and everything before is applied: take over. */
static void d_barrier_cb(struct raft_barrier *req, int status)
{
	struct takeover *t = req->data;
	struct durable *d = t->d;
	bool stale = t->gen != d->term_leader;
	struct sm_batch b;
	struct qchunk *q;
	uint64_t now;

	free(t);
	if (stale)
		return;		/* an earlier leadership's */
	if (status != 0) {
		d->taking_over = false;	/* the poll tries again while we lead */
		log_warn("log: the barrier of a new leadership failed: %s",
		    raft_strerror(status));
		if (!d->cluster)
			d_started(d, EX_IOERR, "the log could not be replayed: %s",
			    raft_strerror(status));
		return;
	}
	if (!d->leader) {
		d->taking_over = false;
		return;		/* lost it again meanwhile */
	}
	d_lock(d);
	now = sm_now(d_sm(d));
	d_unlock(d);
	/* A new log seeded by --restore: the backup's state comes first. */
	if (now == 0 && d->seed != NULL && !d_propose_seed(d))
		return;
	if (now == 0 && d->seed != NULL)
		now = d->seed_now;
	/*
	 * Log time goes on from the last entry applied (the time no leader
	 * ran counts against no lease); a new log starts at the wall clock.
	 */
	sm_clock_start(&d->clock, now, d_wall_ms(), d_now_ms());
	sm_batch_init(&b);
	if (now == 0)
		sm_batch_boot(&b);
	sm_batch_config(&b, &d->smcfg);
	/*
	 * Every client of before is gone (they were another process's, or
	 * another node's), and every lease starts afresh with the grace
	 * (Chubby's rule); leases are the leader's (sm_leases_due): what it
	 * answers without an entry keeps a session, its sweep ends one.
	 */
	sm_batch_leases(&b, d->cluster ? 2 * d->election_ms : 0);
	sm_batch_leader(&b, d->id, now == 0 ? 0 : d->grace_ms, d->advertise);
	q = b.failed ? NULL : qchunk_new(b.p, b.len);
	if (q == NULL || !d_propose(d, q, NULL, 0, true)) {
		d->taking_over = false;
		log_err("log: the leader's first entry could not be proposed");
		if (!d->cluster)
			d_started(d, EX_IOERR,
			    "the restart entry could not be proposed");
	}
	sm_batch_free(&b);
}

/* Start taking over: a barrier, then the LEADER entry; serving once it is
 * applied. */
static void d_take_over(struct durable *d)
{
	struct takeover *t = calloc(1, sizeof *t);
	int rv;

	if (t == NULL) {
		log_warn("log: out of memory taking over; trying again");
		return;
	}
	t->d = d;
	t->gen = d->term_leader;
	t->req.data = t;
	d->taking_over = true;
	rv = raft_barrier(&d->raft, &t->req, d_barrier_cb);
	if (rv != 0) {
		d->taking_over = false;
		free(t);
		log_warn("log: barrier: %s", raft_errmsg(&d->raft));
	}
}

/* Answer a cluster change's client (raft thread; the reply goes by mailbox). */
static void d_ctl_reply(struct ctl *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void d_ctl_reply(struct ctl *c, int code, const char *fmt, ...)
{
	Semd__Reply r = SEMD__REPLY__INIT;
	char msg[256] = "";
	void *conn;
	va_list ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
	}
	r.id = c->req_id;
	r.code = code;
	r.message = msg;
	d_lock(c->d);
	conn = c->d->host.conn(c->d->host.arg, c->cid);
	if (conn != NULL)
		c->d->host.reply(c->d->host.arg, conn, &r);
	d_unlock(c->d);
	if (code == SEMD__CODE__OK)
		log_notice("log: cluster: %s", msg);
	free(c);
}

/* A change of the configuration is done (or failed). */
static void d_change_cb(struct raft_change *req, int status)
{
	struct ctl *c = req->data;
	int rv;

	if (status != 0) {
		d_ctl_reply(c, SEMD__CODE__UNAVAILABLE, "%s",
		    raft_strerror(status));
		return;
	}
	if (c->action == SEMD__CLUSTER__ACTION__ADD) {
		/* Added as a spare; now a voter (it catches up first). */
		c->action = -1;
		rv = raft_assign(&c->d->raft, &c->change, c->node, RAFT_VOTER,
		    d_change_cb);
		if (rv != 0)
			d_ctl_reply(c, SEMD__CODE__UNAVAILABLE, "%s",
			    raft_errmsg(&c->d->raft));
		return;
	}
	d_ctl_reply(c, SEMD__CODE__OK, c->action == -1 ?
	    "node %llu is a voter" : "node %llu removed",
	    (unsigned long long)c->node);
}

/* A leadership transfer ended (it worked if the leader is now c->node). */
static void d_transfer_cb(struct raft_transfer *req)
{
	struct ctl *c = req->data;
	raft_id id = 0;
	const char *addr = NULL;

	raft_leader(&c->d->raft, &id, &addr);
	if (c->node == 0 ? id != c->d->id && id != 0 : id == c->node)
		d_ctl_reply(c, SEMD__CODE__OK, "leadership went to node %llu",
		    (unsigned long long)id);
	else
		d_ctl_reply(c, SEMD__CODE__UNAVAILABLE,
		    "the transfer did not happen in time (leader: node %llu)",
		    (unsigned long long)id);
}

/* Start a cluster change asked for by a client. */
void d_ctl_start(struct durable *d, struct ctl *c)
{
	const char *why;
	int rv;

	if (!d->leader) {
		d_ctl_reply(c, SEMD__CODE__UNAVAILABLE, "this node is not the leader");
		return;
	}
	c->d = d;
	c->change.data = c;
	c->transfer.data = c;
	switch (c->action) {
	case SEMD__CLUSTER__ACTION__ADD:
		if ((why = peer_addr_check(c->address, d->peer_tls)) != NULL) {
			d_ctl_reply(c, SEMD__CODE__INVALID_ARGUMENT,
			    "node %llu: %s %s", (unsigned long long)c->node,
			    c->address, why);
			return;
		}
		rv = raft_add(&d->raft, &c->change, c->node, c->address,
		    d_change_cb);
		break;
	case SEMD__CLUSTER__ACTION__REMOVE:
		rv = raft_remove(&d->raft, &c->change, c->node, d_change_cb);
		break;
	default:
		rv = raft_transfer(&d->raft, &c->transfer, c->node, d_transfer_cb);
		break;
	}
	if (rv != 0)
		d_ctl_reply(c, rv == RAFT_BADID || rv == RAFT_NOTFOUND ||
		    rv == RAFT_DUPLICATEID || rv == RAFT_DUPLICATEADDRESS ||
		    rv == RAFT_BADROLE ? SEMD__CODE__INVALID_ARGUMENT :
		    SEMD__CODE__UNAVAILABLE, "%s", raft_errmsg(&d->raft));
}

/* The hand-over before stopping ended, done or timed out: stop. */
static void d_handed_over(struct raft_transfer *req)
{
	struct durable *d = req->data;
	raft_id id = 0;
	const char *addr = NULL;

	raft_leader(&d->raft, &id, &addr);
	if (id != 0 && id != d->id)
		log_notice("log: leadership handed over to node %llu",
		    (unsigned long long)id);
	else
		log_warn("log: leadership was not handed over in time; stopping all the same");
	uv_stop(&d->loop);
}

/*
 * Stopping a leader of several voters: hand leadership over first (raft's
 * TimeoutNow to the most up-to-date follower), so that the clients find a
 * new leader in milliseconds instead of waiting out an election. Nothing
 * more is proposed meanwhile; raft gives up after an election timeout.
 * true when a hand-over is under way.
 */
bool d_hand_over(struct durable *d)
{
	int rv;

	if (!d->cluster || !d->leader || raft_state(&d->raft) != RAFT_LEADER)
		return false;
	uv_timer_stop(&d->poll);	/* the clients are gone already */
	uv_timer_stop(&d->deadline);
	d->serving = false;
	atomic_store(&d->serving_pub, false);
	d->handover.data = d;
	rv = raft_transfer(&d->raft, &d->handover, 0, d_handed_over);
	if (rv != 0) {
		if (rv != RAFT_NOTFOUND)	/* NOTFOUND: the only voter */
			log_warn("log: no hand-over of leadership: %s",
			    raft_errmsg(&d->raft));
		return false;
	}
	log_notice("log: node %llu stops: handing leadership over",
	    (unsigned long long)d->id);
	return true;
}

/* Leadership went: stop serving; the clients go and find the new leader. */
static void d_leadership_lost(struct durable *d)
{
	struct qchunk *q, *next;

	atomic_store(&d->serving_pub, false);
	d->serving = false;
	uv_timer_stop(&d->deadline);
	/* What the loops queued belongs to clients about to be dropped. */
	pthread_mutex_lock(&d->qlock);
	q = d->qhead;
	d->qhead = NULL;
	d->qtail = &d->qhead;
	pthread_mutex_unlock(&d->qlock);
	for (; q != NULL; q = next) {
		next = q->next;
		free(q);
	}
	log_notice("log: node %llu is no longer the leader",
	    (unsigned long long)d->id);
	d->host.drop_clients(d->host.arg);
}

/* The state name of raft_state(). */
static const char *d_state_name(int st)
{
	switch (st) {
	case RAFT_LEADER:
		return "leader";
	case RAFT_FOLLOWER:
		return "follower";
	case RAFT_CANDIDATE:
		return "candidate";
	default:
		return "unavailable";
	}
}

/* Publish the node's view of the cluster for the other threads. */
static void d_publish(struct durable *d)
{
	struct raft *r = &d->raft;
	Semd__ClusterStatus *st = &d->st;
	const char *laddr = NULL;
	raft_index last = raft_last_index(r);
	raft_id lid = 0;
	unsigned int i, n;
	char sm_addr[256];
	uint64_t sm_lid;

	d_lock(d);
	sm_lid = sm_leader(d_sm(d), sm_addr, sizeof sm_addr);
	d_unlock(d);
	raft_leader(r, &lid, &laddr);
	pthread_mutex_lock(&d->slock);
	semd__cluster_status__init(st);
	st->node_id = d->id;
	st->state = (char *)d_state_name(raft_state(r));
	st->term = r->current_term;
	st->commit_index = r->commit_index;
	st->applied_index = raft_last_applied(r);
	st->last_index = last;
	st->leader_id = lid;
	/* Where clients reach the leader: what its LEADER entry said. */
	snprintf(d->st_leader, sizeof d->st_leader, "%s",
	    lid != 0 && lid == sm_lid ? sm_addr : "");
	st->leader = d->st_leader;
	n = r->configuration.n < MAX_NODES ? r->configuration.n : MAX_NODES;
	for (i = 0; i < n; i++) {
		const struct raft_server *sv = &r->configuration.servers[i];
		Semd__ClusterNode *nd = &d->st_nodes[i];

		semd__cluster_node__init(nd);
		nd->id = sv->id;
		snprintf(d->st_addr[i], sizeof d->st_addr[i], "%s", sv->address);
		nd->address = d->st_addr[i];
		nd->role = (char *)(sv->role == RAFT_VOTER ? "voter" :
		    sv->role == RAFT_STANDBY ? "standby" : "spare");
		if (raft_state(r) == RAFT_LEADER &&
		    r->leader_state.progress != NULL) {
			nd->match_index = sv->id == d->id ? last :
			    r->leader_state.progress[i].match_index;
			nd->lag = last - nd->match_index;
		}
		d->st_nodep[i] = nd;
	}
	st->n_nodes = n;
	st->nodes = d->st_nodep;
	pthread_mutex_unlock(&d->slock);
}

/* Every POLL_MS: follow leadership (raft 0.15 has no callback for it). */
void d_poll_cb(uv_timer_t *t)
{
	struct durable *d = t->data;
	bool leader = raft_state(&d->raft) == RAFT_LEADER;

	/* Lost and won again between two polls: a new leadership all the same. */
	if (leader && d->leader && d->raft.current_term != d->lead_term) {
		d->leader = false;
		d_leadership_lost(d);
	}
	if (leader && !d->leader) {
		d->leader = true;
		d->lead_term = d->raft.current_term;
		d->term_leader++;
		log_notice("log: node %llu is the leader (term %llu)",
		    (unsigned long long)d->id,
		    (unsigned long long)d->raft.current_term);
		d_take_over(d);
	} else if (leader && !d->serving && !d->taking_over) {
		/*
		 * Leading without serving, and nothing under way that would
		 * change it (a barrier or the LEADER entry failed, raft still
		 * leads): the clients would be sent here and back for as long
		 * as it lasts. Take over again.
		 */
		log_warn("log: node %llu leads but does not serve: taking over again",
		    (unsigned long long)d->id);
		d_take_over(d);
	} else if (!leader && d->leader) {
		d->leader = false;
		d_leadership_lost(d);
	}
	if (d->serving && leader)
		d_sweep_leases(d);
	d_publish(d);
}

/* Is this node the leader, serving clients? (any thread) */
bool durable_serving(struct durable *d)
{
	return atomic_load(&d->serving_pub);
}

/* The leader as this node knows it: its id (0: none) and client address. */
uint64_t durable_leader(struct durable *d, char *addr, size_t len)
{
	uint64_t id;

	pthread_mutex_lock(&d->slock);
	id = d->st.leader_id;
	snprintf(addr, len, "%s", d->st_leader);
	pthread_mutex_unlock(&d->slock);
	return id;
}

/*
 * This node's view for readiness: the published status (as of the last
 * poll, POLL_MS ago at most) and what the guard heard from a leader.
 */
void durable_health(struct durable *d, struct durable_health *h)
{
	uint64_t heard, snap;

	memset(h, 0, sizeof *h);
	raftguard_heard(&d->io, &heard, &snap);
	h->cluster = d->cluster;
	h->serving = durable_serving(d);
	pthread_mutex_lock(&d->slock);
	h->leader = d->st.state != NULL && strcmp(d->st.state, "leader") == 0;
	h->node_id = d->id;
	h->leader_id = d->st.leader_id;
	h->leader_addr = d->st_leader[0] != '\0';
	h->term = d->st.term;
	h->applied = d->st.applied_index;
	h->commit = d->st.commit_index > heard ? d->st.commit_index : heard;
	pthread_mutex_unlock(&d->slock);
	h->snapshot = snap;
}

/* The log's disk work, as the guard measured it. */
void durable_io_stats(struct durable *d, struct raftguard_stats *out)
{
	raftguard_stats(&d->io, out);
}

/* Pack the cluster status into out (a Reply body); *buf holds it; free it. */
int durable_status(struct durable *d, Semd__Reply *r, uint8_t **buf)
{
	Semd__ClusterStatus *copy;
	size_t len;

	*buf = NULL;
	pthread_mutex_lock(&d->slock);
	len = semd__cluster_status__get_packed_size(&d->st);
	*buf = malloc(len + 1);
	if (*buf != NULL)
		semd__cluster_status__pack(&d->st, *buf);
	pthread_mutex_unlock(&d->slock);
	if (*buf == NULL)
		return -ENOMEM;
	copy = semd__cluster_status__unpack(NULL, len, *buf);
	free(*buf);
	*buf = NULL;
	if (copy == NULL)
		return -ENOMEM;
	r->body_case = SEMD__REPLY__BODY_CLUSTER;
	r->cluster = copy;
	return 0;
}

/* A cluster change for the raft thread; the client is answered from there. */
int durable_cluster_change(struct durable *d, uint64_t cid, uint64_t req_id,
    const Semd__Cluster *cl)
{
	struct ctl *c = calloc(1, sizeof *c);

	if (c == NULL)
		return -ENOMEM;
	c->cid = cid;
	c->req_id = req_id;
	c->action = cl->action;
	c->node = cl->node_id;
	/* Too long: cut with "...", which no address ends with (refused). */
	if (snprintf(c->address, sizeof c->address, "%s", cl->address) >=
	    (int)sizeof c->address)
		snprintf(c->address, sizeof c->address, "%.64s...", cl->address);
	pthread_mutex_lock(&d->qlock);
	c->next = d->ctlq;
	d->ctlq = c;
	pthread_mutex_unlock(&d->qlock);
	uv_async_send(&d->wake);
	return 0;
}

/*
 * Parse --bootstrap "ID=HOST:PORT,ID=HOST:PORT,...": every node a voter,
 * HOST an IPv4 literal for plain peers (tls false), or also [IPv6] or a
 * name for TLS peers. 0, or -1 with the reason in err.
 */
int durable_parse_bootstrap(const char *spec, bool tls,
    struct raft_configuration *conf, char *err, size_t errlen)
{
	char buf[4096], *item, *save = NULL, *eq, *end;
	const char *why;
	unsigned long long id;

	if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf) {
		snprintf(err, errlen, "bootstrap list too long");
		return -1;
	}
	for (item = strtok_r(buf, ",", &save); item != NULL;
	    item = strtok_r(NULL, ",", &save)) {
		eq = strchr(item, '=');
		errno = 0;
		id = eq != NULL ? strtoull(item, &end, 10) : 0;
		if (eq == NULL || end != eq || id == 0 || id > 65535 ||
		    eq[1] == '\0') {
			snprintf(err, errlen, "bootstrap: '%s' is not ID=HOST:PORT",
			    item);
			return -1;
		}
		if (strncmp(eq + 1, "tcp:", 4) == 0)
			eq += 4;
		if ((why = peer_addr_check(eq + 1, tls)) != NULL) {
			snprintf(err, errlen, "bootstrap: node %llu: %s %s", id,
			    eq + 1, why);
			return -1;
		}
		if (raft_configuration_add(conf, id, eq + 1, RAFT_VOTER) != 0) {
			snprintf(err, errlen, "bootstrap: node %llu or %s twice",
			    id, eq + 1);
			return -1;
		}
	}
	if (conf->n == 0) {
		snprintf(err, errlen, "bootstrap: no node");
		return -1;
	}
	return 0;
}
