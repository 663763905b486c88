/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_routes.c - the resources that are one binary request
 * and its answer (doc/http.md, Resources): names, permits held, holds,
 * stats, the cluster, backups. Each goes through the service gate of its
 * caller (http_service_call) and turns the reply into JSON, or into the
 * problem it says.
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "daemon/backup.h"
#include "daemon/feed.h"
#include "daemon/http/http-int.h"
#include "daemon/server.h"

/* A call of a route: its request, and what to do with the answer. */
struct svc_call {
	struct hreq	*r;
	struct gate	*g;
	void		(*done)(struct hreq *r, const Semd__Reply *rep);
};

/*
 * The answer to a route's call, to the route; when none came (the gate
 * closed: this node does not serve, or stops), the route is answered
 * UNAVAILABLE as the gate was told (with where the leader is), so that
 * whatever it began (an idempotency key) ends with it.
 */
static void http_service_done(void *arg, const Semd__Reply *rep)
{
	struct svc_call *sc = arg;
	Semd__Reply gone = SEMD__REPLY__INIT;
	Semd__Redirect rd = SEMD__REDIRECT__INIT;

	if (rep == NULL) {
		gone.code = SEMD__CODE__UNAVAILABLE;
		gone.message = (char *)"the request was not answered (this "
		    "node does not serve, or semd is stopping)";
		if (sc->g != NULL && sc->g->redirected) {
			rd.leader_id = sc->g->leader_id;
			rd.leader = sc->g->leader;
			gone.body_case = SEMD__REPLY__BODY_REDIRECT;
			gone.redirect = &rd;
		}
		rep = &gone;
	}
	sc->done(sc->r, rep);
	http_req_put(sc->r);
	free(sc);
}

/* Who r's caller is for the holder lists: its program, its address. */
void http_ident(struct hreq *r, struct gate_ident *id, char *client,
    size_t clen, char *host, size_t hlen)
{
	const char *ua = http_in_header(r, "User-Agent"), *h = http_peer_host(r);
	size_t n;

	/* its program: User-Agent's first word (made per request: no printf) */
	if (ua == NULL)
		ua = "http";
	for (n = 0; ua[n] != '\0' && ua[n] != ' ' && n + 1 < clen; n++)
		client[n] = ua[n];
	client[n] = '\0';
	n = strnlen(h, hlen - 1);
	memcpy(host, h, n);
	host[n] = '\0';
	id->client = client;
	id->host = host;
	id->pid = http_peer_pid(r);
}

/* One request to r's caller's service gate; done(r, reply) answers it. */
bool http_service_call(struct hreq *r, Semd__Request *req,
    void (*done)(struct hreq *r, const Semd__Reply *rep))
{
	struct gate_ident id;
	char client[64], host[64];

	http_ident(r, &id, client, sizeof client, host, sizeof host);
	return http_service_call_as(r, &id, req, done);
}

/* The same through the service gate of r's principal as id says. */
bool http_service_call_as(struct hreq *r, const struct gate_ident *id,
    Semd__Request *req, void (*done)(struct hreq *r, const Semd__Reply *rep))
{
	struct svc_call *sc;
	char why[256];
	struct gate *g;
	int e;

	if ((g = gate_service(r->f, r->who, id, &e, why, sizeof why)) == NULL) {
		http_problem(r, e, "%s", why);
		return false;
	}
	if ((sc = http_alloc(r, sizeof *sc)) == NULL)
		return false;
	sc->r = r;
	sc->g = g;
	sc->done = done;
	if (gate_call(g, req, http_service_done, sc) == 0) {
		free(sc);
		http_problem_gone(r, g);
		return false;
	}
	http_req_hold(r);
	gate_push(g);
	return true;
}

/* Read a query parameter as a number in 0..max (absent: def). */
static bool http_q_u64(struct hreq *r, const char *name, uint64_t max,
    uint64_t def, uint64_t *v)
{
	const char *s = http_query(r, name);

	*v = def;
	if (s == NULL)
		return true;
	if (!hj_read_id(s, v) || *v > max) {
		http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "%s=%.40s: want a "
		    "number up to %" PRIu64, name, s, max);
		return false;
	}
	return true;
}

/* Read a query parameter as a boolean (absent: false). */
static bool http_q_bool(struct hreq *r, const char *name, bool *v)
{
	const char *s = http_query(r, name);

	*v = s != NULL && (strcmp(s, "true") == 0 || strcmp(s, "1") == 0);
	if (s == NULL || *v || strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
		return true;
	http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "%s=%.40s: want true or "
	    "false", name, s);
	return false;
}

/* A reply that must be OK, then fn's JSON (or none: 204). */
static bool http_ok(struct hreq *r, const Semd__Reply *rep, int body_case)
{
	if (rep->code != SEMD__CODE__OK) {
		http_problem_reply(r, rep);
		return false;
	}
	if (body_case != 0 && (int)rep->body_case != body_case) {
		http_problem(r, SEMD__CODE__INTERNAL, "an answer of another kind");
		return false;
	}
	return true;
}

/* A reply whose body is answered as JSON, 200, by its kind. */
static void http_done_json(struct hreq *r, const Semd__Reply *rep)
{
	json_t *o = NULL;

	if (!http_ok(r, rep, 0))
		return;
	switch (rep->body_case) {
	case SEMD__REPLY__BODY_LIST:
		o = hj_list(rep->list);
		break;
	case SEMD__REPLY__BODY_INFO:
		o = hj_info(rep->info);
		break;
	case SEMD__REPLY__BODY_HOLDS:
		o = hj_holds(rep->holds);
		break;
	case SEMD__REPLY__BODY_SESSIONS:
		o = hj_sessions(rep->sessions);
		break;
	case SEMD__REPLY__BODY_STATS:
		o = hj_stats(rep->stats);
		break;
	case SEMD__REPLY__BODY_VALIDATE:
		o = json_pack("{s:b}", "valid", rep->validate->valid);
		break;
	case SEMD__REPLY__BODY_RELEASED:
		o = json_pack("{s:i}", "n", (int)rep->released->n);
		break;
	case SEMD__REPLY__BODY_RENEWED:
		o = json_pack("{s:I}", "expires_ms",
		    (json_int_t)rep->renewed->expires_ms);
		break;
	default:
		http_problem(r, SEMD__CODE__INTERNAL, "an answer of another kind");
		return;
	}
	/* A read a watch brings up to date: where in the history it stands. */
	if (o != NULL && (rep->body_case == SEMD__REPLY__BODY_LIST ||
	    rep->body_case == SEMD__REPLY__BODY_INFO ||
	    rep->body_case == SEMD__REPLY__BODY_HOLDS ||
	    rep->body_case == SEMD__REPLY__BODY_SESSIONS))
		json_object_set_new(o, "revision", hj_id(rep->revision));
	http_reply_json(r, 200, o);
}

/* A reply with no body: 204. */
static void http_done_204(struct hreq *r, const Semd__Reply *rep)
{
	if (http_ok(r, rep, 0))
		http_reply_empty(r, 204, NULL, NULL);
}

/* --- /v1/server ----------------------------------------------------------- */

/* Who you are, which daemon (on the first loop: the ACL is read there). */
void http_route_server(struct hreq *r)
{
	struct server *srv = r->f->srv;
	const char *url;
	char addr[256];
	uint64_t leader;
	json_t *o;

	if (http_home(r, http_route_server))
		return;
	if ((o = json_object()) == NULL) {
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	leader = srv->feed->leader(srv, addr, sizeof addr);
	json_object_set_new(o, "server", json_string("semd " PACKAGE_VERSION));
	json_object_set_new(o, "api", json_string("v1"));
	json_object_set_new(o, "principal", json_string(r->who->subj.principal));
	json_object_set_new(o, "admin", json_boolean(acl_is_admin(srv->cfg.acl,
	    &r->who->subj, geteuid())));
	json_object_set_new(o, "mode", json_string(!srv->feed->durable ?
	    "memory" : srv->cfg.node_id != 0 ? "cluster" : "durable"));
	json_object_set_new(o, "node_id", json_integer(srv->cfg.node_id));
	json_object_set_new(o, "leader_id", json_integer((json_int_t)leader));
	/* The history the revisions count (0 until a log's first leader) */
	json_object_set_new(o, "instance", hj_id(server_instance(srv)));
	url = http_config_node_url(http_settings(r), leader);
	if (url != NULL)
		json_object_set_new(o, "leader_url", json_string(url));
	http_reply_json(r, 200, o);
}

/* --- names ---------------------------------------------------------------- */

/* GET /v1/semaphores: List. */
void http_route_list(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__List l = SEMD__LIST__INIT;
	const char *prefix = http_query(r, "prefix"), *after = http_query(r, "after");
	uint64_t max;

	if (!http_q_u64(r, "limit", 1000, 0, &max))
		return;
	l.prefix = (char *)(prefix != NULL ? prefix : "");
	l.after = (char *)(after != NULL ? after : "");
	l.max = (uint32_t)max;
	req.op_case = SEMD__REQUEST__OP_LIST;
	req.list = &l;
	http_service_call(r, &req, http_done_json);
}

static void http_create_done(struct hreq *r, const Semd__Reply *rep)
{
	char href[1024];
	json_t *o;
	bool nex = json_is_true(json_object_get(r->body, "if_not_exists"));

	if (!http_ok(r, rep, 0))
		return;
	if (!hj_href(href, sizeof href, r->args[0], "")) {
		http_problem(r, SEMD__CODE__INTERNAL, "the name does not fit a URL");
		return;
	}
	o = json_pack("{s:s,s:s}", "name", r->args[0], "href", href);
	http_header(r, "Location", href);
	http_reply_json(r, nex ? 200 : 201, o);
}

/* A route whose body of kind is its request; done answers it. */
static void http_route_body(struct hreq *r, enum hj_kind kind,
    void (*done)(struct hreq *r, const Semd__Reply *rep))
{
	struct hj_body *b = http_alloc(r, sizeof *b);
	char err[256];

	if (b == NULL)
		return;
	if (hj_body(kind, r->args[0], r->body, b, err, sizeof err) !=
	    SEMD__CODE__OK)
		http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "%s", err);
	else
		http_service_call(r, &b->req, done);
	free(b);
}

/* PUT /v1/semaphores/{name}: Create. */
void http_route_create(struct hreq *r)
{
	http_route_body(r, HJ_CREATE, http_create_done);
}

/* GET /v1/semaphores/{name}: Info. */
void http_route_info(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Info in = SEMD__INFO__INIT;
	uint64_t max, ha, wa;

	if (!http_q_u64(r, "limit", 1000, 0, &max) ||
	    !http_q_u64(r, "holders_after", UINT64_MAX, 0, &ha) ||
	    !http_q_u64(r, "waiters_after", UINT64_MAX, 0, &wa))
		return;
	in.name = r->args[0];
	in.max = (uint32_t)max;
	in.after_permit = ha;
	in.after_waiter = wa;
	req.op_case = SEMD__REQUEST__OP_INFO;
	req.info = &in;
	http_service_call(r, &req, http_done_json);
}

/* DELETE /v1/semaphores/{name}: Delete. */
void http_route_delete(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Delete d = SEMD__DELETE__INIT;
	bool force;

	if (!http_q_bool(r, "force", &force))
		return;
	d.name = r->args[0];
	d.force = force;
	req.op_case = SEMD__REQUEST__OP_DELETE;
	req.delete_ = &d;
	http_service_call(r, &req, http_done_204);
}

/* PUT a name's limit, rate or queue bound. */
void http_route_set_limit(struct hreq *r)
{
	http_route_body(r, HJ_LIMIT, http_done_204);
}

void http_route_set_rate(struct hreq *r)
{
	http_route_body(r, HJ_RATE, http_done_204);
}

void http_route_set_queue(struct hreq *r)
{
	http_route_body(r, HJ_QUEUE, http_done_204);
}

/* --- permits held --------------------------------------------------------- */

/* The permit id of the path, or answered 404. */
static bool http_permit_arg(struct hreq *r, uint64_t *id)
{
	if (hj_read_id(r->args[1], id) && *id != 0)
		return true;
	http_problem(r, SEMD__CODE__NOT_FOUND, "%.40s is no permit id", r->args[1]);
	return false;
}

static void http_permit_done(struct hreq *r, const Semd__Reply *rep)
{
	uint64_t id = 0;

	if (!http_ok(r, rep, SEMD__REPLY__BODY_INFO))
		return;
	(void)hj_read_id(r->args[1], &id);
	if (rep->info->n_holders == 0 || rep->info->holders[0]->permit_id != id) {
		http_problem(r, SEMD__CODE__NOT_FOUND, "%s has no permit %" PRIu64
		    " of yours (released, or its lease ran out)", r->args[0], id);
		return;
	}
	http_reply_json(r, 200, hj_holder(rep->info->holders[0], r->args[0]));
}

/* GET /v1/semaphores/{name}/permits/{permit}: its holder, by Info. */
void http_route_permit(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Info in = SEMD__INFO__INIT;
	uint64_t id;

	if (!http_permit_arg(r, &id))
		return;
	in.name = r->args[0];
	in.max = 1;
	in.after_permit = id - 1;
	in.after_waiter = UINT64_MAX;	/* no waiter after it: none listed */
	req.op_case = SEMD__REQUEST__OP_INFO;
	req.info = &in;
	http_service_call(r, &req, http_permit_done);
}

/* POST .../permits/{permit}/renew: Renew. */
void http_route_renew(struct hreq *r)
{
	struct hj_body *b;
	char err[256];
	uint64_t id;

	if (!http_permit_arg(r, &id) || (b = http_alloc(r, sizeof *b)) == NULL)
		return;
	if (hj_body(HJ_RENEW, r->args[0], r->body, b, err, sizeof err) !=
	    SEMD__CODE__OK) {
		http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "%s", err);
	} else {
		b->m.renew.permit_id = id;
		http_service_call(r, &b->req, http_done_json);
	}
	free(b);
}

/* DELETE .../permits/{permit}: Up of it, or with force Release. */
void http_route_release(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Up up = SEMD__UP__INIT;
	Semd__Release rl = SEMD__RELEASE__INIT;
	uint64_t id;
	bool force;

	if (!http_permit_arg(r, &id) || !http_q_bool(r, "force", &force))
		return;
	if (force) {
		rl.name = r->args[0];
		rl.permit_id = id;
		req.op_case = SEMD__REQUEST__OP_RELEASE;
		req.release = &rl;
	} else {
		up.name = r->args[0];
		up.permit_id = id;
		req.op_case = SEMD__REQUEST__OP_UP;
		req.up = &up;
	}
	http_service_call(r, &req, http_done_204);
}

/* DELETE /v1/semaphores/{name}/waiters/{seq}: Release of a waiter. */
void http_route_cancel_queued(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Release rl = SEMD__RELEASE__INIT;
	uint64_t seq;

	if (!hj_read_id(r->args[1], &seq) || seq == 0) {
		http_problem(r, SEMD__CODE__NOT_FOUND, "%.40s is no waiter's seq",
		    r->args[1]);
		return;
	}
	rl.name = r->args[0];
	rl.waiter = seq;
	req.op_case = SEMD__REQUEST__OP_RELEASE;
	req.release = &rl;
	http_service_call(r, &req, http_done_204);
}

/* POST /v1/semaphores/{name}/up: Up. */
void http_route_up(struct hreq *r)
{
	http_route_body(r, HJ_UP, http_done_json);
}

/* GET /v1/semaphores/{name}/tokens/{token}: Validate. */
void http_route_validate(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Validate v = SEMD__VALIDATE__INIT;

	if (!hj_read_id(r->args[1], &v.token)) {
		http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "%.40s is no token "
		    "(a decimal number)", r->args[1]);
		return;
	}
	v.name = r->args[0];
	req.op_case = SEMD__REQUEST__OP_VALIDATE;
	req.validate = &v;
	http_service_call(r, &req, http_done_json);
}

/* --- holds, stats, cluster ------------------------------------------------ */

/*
 * The query of a page of a principal's (holds, sessions): principal= (""
 * when absent), after= and limit= (at most 1000; 0: the daemon's page).
 * False when r was answered 400.
 */
static bool http_page_query(struct hreq *r, const char **principal,
    uint64_t *after, uint32_t *max)
{
	const char *p = http_query(r, "principal");
	uint64_t m;

	if (!http_q_u64(r, "limit", 1000, 0, &m) ||
	    !http_q_u64(r, "after", UINT64_MAX, 0, after))
		return false;
	*principal = p != NULL ? p : "";
	*max = (uint32_t)m;
	return true;
}

/* GET /v1/sessions?principal=&after=&limit=: the sessions one may see. */
void http_route_sessions(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Sessions q = SEMD__SESSIONS__INIT;
	const char *p;

	if (!http_page_query(r, &p, &q.after, &q.max))
		return;
	q.principal = (char *)p;
	req.op_case = SEMD__REQUEST__OP_SESSIONS;
	req.sessions = &q;
	http_service_call(r, &req, http_done_json);
}

/* GET /v1/holds?principal=&after=&limit=: Holds. */
void http_route_holds(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Holds h = SEMD__HOLDS__INIT;
	const char *p;

	if (!http_page_query(r, &p, &h.after_permit, &h.max))
		return;
	h.principal = (char *)p;
	req.op_case = SEMD__REQUEST__OP_HOLDS;
	req.holds = &h;
	http_service_call(r, &req, http_done_json);
}

/* GET /v1/stats: Stats. */
void http_route_stats(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Stats st = SEMD__STATS__INIT;

	req.op_case = SEMD__REQUEST__OP_STATS;
	req.stats = &st;
	http_service_call(r, &req, http_done_json);
}

static void http_cluster_done(struct hreq *r, const Semd__Reply *rep)
{
	const struct http_config *hc = http_settings(r);
	json_t *o, *nodes, *n;
	const char *url;
	size_t i;

	if (!http_ok(r, rep, SEMD__REPLY__BODY_CLUSTER))
		return;
	o = hj_cluster(rep->cluster);
	nodes = json_object_get(o, "nodes");
	json_array_foreach(nodes, i, n) {
		url = http_config_node_url(hc, (uint64_t)json_integer_value(
		    json_object_get(n, "id")));
		if (url != NULL)
			json_object_set_new(n, "url", json_string(url));
	}
	http_reply_json(r, 200, o);
}

/* The node's answer: the gate goes with it. */
static void http_node_done(void *arg, const Semd__Reply *rep)
{
	struct svc_call *sc = arg;

	if (rep == NULL)
		http_problem_gone(sc->r, sc->g);
	else
		sc->done(sc->r, rep);
	gate_release(sc->g, false);
	http_req_put(sc->r);
	free(sc);
}

/*
 * GET /v1/cluster: Cluster STATUS, answered by this node itself (a
 * follower too), through a gate without a session.
 */
void http_route_cluster(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Cluster c = SEMD__CLUSTER__INIT;
	struct svc_call *sc = http_alloc(r, sizeof *sc);
	char why[256];
	int e;

	if (sc == NULL)
		return;
	sc->r = r;
	sc->done = http_cluster_done;
	sc->g = gate_open(r->f, GATE_NODE, r->who, NULL, 0, 0, NULL, &e, why,
	    sizeof why);
	if (sc->g == NULL) {
		http_problem(r, e, "%s", why);
		free(sc);
		return;
	}
	c.action = SEMD__CLUSTER__ACTION__STATUS;
	req.op_case = SEMD__REQUEST__OP_CLUSTER;
	req.cluster = &c;
	if (gate_call(sc->g, &req, http_node_done, sc) == 0) {
		http_problem_gone(r, sc->g);
		gate_release(sc->g, false);
		free(sc);
		return;
	}
	http_req_hold(r);
	gate_push(sc->g);
}

/* POST /v1/cluster/members, /v1/cluster/leader: Cluster ADD, TRANSFER. */
void http_route_member_add(struct hreq *r)
{
	http_route_body(r, HJ_MEMBER, http_done_204);
}

void http_route_transfer(struct hreq *r)
{
	http_route_body(r, HJ_TRANSFER, http_done_204);
}

/* DELETE /v1/cluster/members/{id}: Cluster REMOVE. */
void http_route_member_remove(struct hreq *r)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Cluster c = SEMD__CLUSTER__INIT;

	if (!hj_read_id(r->args[0], &c.node_id) || c.node_id == 0 ||
	    c.node_id > 65535) {
		http_problem(r, SEMD__CODE__NOT_FOUND, "%.40s is no node id",
		    r->args[0]);
		return;
	}
	c.action = SEMD__CLUSTER__ACTION__REMOVE;
	req.op_case = SEMD__REQUEST__OP_CLUSTER;
	req.cluster = &c;
	http_service_call(r, &req, http_done_204);
}

/* --- backup --------------------------------------------------------------- */

/* A backup being sent: its own gate (the copy is its connection's). */
struct hbackup {
	struct hreq	*r;
	struct gate	*g;
	uint64_t	total;
	uint64_t	off;
	uint8_t		sha[32];
};

static void http_backup_next(struct hbackup *b);

/* Put v little-endian in n bytes at p. */
static void http_put_le(uint8_t *p, uint64_t v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* End a backup: its gate goes, r is let go. */
static void http_backup_end(struct hbackup *b)
{
	if (b->off > 0)
		http_stream_end(b->r);	/* started: end the stream */
	gate_release(b->g, false);
	http_req_put(b->r);
	free(b);
}

/* A chunk: the first starts the answer (the file's header), the others follow. */
static void http_backup_done(void *arg, const Semd__Reply *rep)
{
	struct hbackup *b = arg;
	struct hreq *r = b->r;
	const Semd__BackupChunk *ch;
	uint8_t h[BACKUP_HEADER_LEN] = { 0 };
	char len[32], b64[48], digest[64];

	if (rep == NULL || rep->code != SEMD__CODE__OK ||
	    rep->body_case != SEMD__REPLY__BODY_BACKUP) {
		if (b->off == 0 && rep == NULL)
			http_problem_gone(r, b->g);
		else if (b->off == 0)
			http_problem_reply(r, rep);
		http_backup_end(b);
		return;
	}
	ch = rep->backup;
	if (b->off == 0) {
		if (ch->sha256.len != 32) {
			http_problem(r, SEMD__CODE__INTERNAL, "a backup without its "
			    "checksum");
			http_backup_end(b);
			return;
		}
		b->total = ch->total;
		memcpy(b->sha, ch->sha256.data, 32);
		memcpy(h, BACKUP_MAGIC, sizeof BACKUP_MAGIC - 1);	/* no NUL */
		http_put_le(h + 8, BACKUP_FORMAT, 4);
		http_put_le(h + 12, BACKUP_HEADER_LEN, 4);
		http_put_le(h + 16, ch->total, 8);
		http_put_le(h + 24, ch->wall_ms, 8);
		memcpy(h + 32, ch->sha256.data, 32);
		snprintf(len, sizeof len, "%" PRIu64, BACKUP_HEADER_LEN + ch->total);
		http_header(r, "Content-Length", len);
		EVP_EncodeBlock((unsigned char *)b64, ch->sha256.data, 32);
		snprintf(digest, sizeof digest, "sha-256=:%s:", b64);
		http_header(r, "Repr-Digest", digest);
		http_header(r, "Content-Disposition",
		    "attachment; filename=\"semd.backup\"");
		if (!http_stream_start(r, "application/octet-stream") ||
		    !http_stream_chunk(r, (const char *)h, sizeof h)) {
			http_backup_end(b);
			return;
		}
	}
	if (ch->offset != b->off || ch->total != b->total ||
	    ch->data.len > b->total - b->off || (ch->data.len == 0 &&
	    b->off < b->total) || memcmp(ch->sha256.data, b->sha, 32) != 0 ||
	    !http_stream_chunk(r, (const char *)ch->data.data, ch->data.len)) {
		/* Cut short: the client sees fewer bytes than Content-Length. */
		http_cut(r);
		http_backup_end(b);
		return;
	}
	b->off += ch->data.len;
	if (b->off == b->total)
		http_backup_end(b);
	else
		http_backup_next(b);
}

/* Ask for the chunk at b->off. */
static void http_backup_next(struct hbackup *b)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Backup bk = SEMD__BACKUP__INIT;

	bk.offset = b->off;
	req.op_case = SEMD__REQUEST__OP_BACKUP;
	req.backup = &bk;
	if (gate_call(b->g, &req, http_backup_done, b) == 0) {
		if (b->off == 0)
			http_problem_gone(b->r, b->g);
		http_backup_end(b);
		return;
	}
	gate_push(b->g);
}

/* The client left: the gate (and its copy) goes with the next answer. */
static void http_backup_gone(struct hreq *r)
{
	(void)r;
}

/* GET /v1/backup: the whole state, as semctl backup writes it. */
void http_route_backup(struct hreq *r)
{
	struct hbackup *b = http_alloc(r, sizeof *b);
	char why[256];
	int e;

	if (b == NULL)
		return;
	b->r = r;
	b->g = gate_open(r->f, GATE_BACKUP, r->who, NULL, 0, 0, NULL, &e, why,
	    sizeof why);
	if (b->g == NULL) {
		http_problem(r, e, "%s", why);
		free(b);
		return;
	}
	http_req_hold(r);
	http_req_watch(r, http_backup_gone);
	http_backup_next(b);
}
