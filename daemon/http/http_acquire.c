/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_acquire.c - acquire as a resource (doc/http.md,
 * Acquiring): POST .../permits tries at once through the caller's service
 * gate (a down that waits for nothing, its permit a detached hold of the
 * caller's principal with the acquire's lease); only when that would wait
 * does it get a waiter: a gate of its own, whose session (with the
 * acquire's lease) holds the waiting down and so its place in line. The
 * waiter is long-polled, renewed (a Ping), cancelled (the session's end),
 * and resumed on any node from its id, which names the session, its secret
 * and the down's request id and names: a retry of that down on the
 * resumed session answers what it became (sm_down.c).
 *
 * Idempotency-Key: the key and the hash of what the acquire asks go with
 * its down into the state (proto: Idempotency keys), which keeps them with
 * the permit or waiter the down made, on every node: a retry anywhere is
 * answered the same permit, or Pending - the waiter of the first attempt,
 * which the retry then polls (on this node, or resumed from its id). A
 * grant that holds nothing (signal or rate mode) leaves no record in the
 * state: its answer is kept here, by the node that gave it, for its lease
 * and a minute more.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "daemon/http/http-int.h"
#include "daemon/server.h"
#include "daemon/state/state.h"

#define HW_FORGET_MS	60000	/* a finished waiter's answer is kept */
#define HW_ID_MAX	6000	/* bytes of a waiter id */

enum hw_state { HW_RESOLVING, HW_WAITING, HW_GRANTED, HW_FAILED };

struct hwant {
	uint32_t	n;
	uint32_t	limit;
	char		name[SM_NAME_MAX + 1];
};

struct hidem;

/* A waiting acquire (doc/http.md: the waiter). */
struct hwaiter {
	struct hnode		node;
	struct list_head	entry;
	struct http_front	*f;
	struct hprin		*who;
	char			*id;
	struct gate		*g;		/* NULL once closed */
	enum hw_state		state;
	bool			multi;
	bool			lease_given;
	uint32_t		lease_ms;
	uint64_t		request_id;	/* the down's */
	size_t			nwants;
	struct hwant		*wants;
	uint64_t		since_ms;	/* wall */
	uint64_t		renewed_ms;	/* wall: its lease runs from here */
	json_t			*places;	/* the last Where's */
	json_t			*grants;	/* HW_GRANTED */
	int			fail_code;	/* HW_FAILED */
	char			*fail_msg;
	bool			where_asked;
	struct list_head	polls;		/* struct hpoll */
	struct event		*keepalive;
	uint64_t		forget_at;	/* mono, once finished */
};

enum hpoll_kind { HP_ACQUIRE, HP_GET, HP_RENEW, HP_DELETE };

/* A request waiting on a waiter. */
struct hpoll {
	struct list_head	entry;
	struct hwaiter		*w;
	struct hreq		*r;
	enum hpoll_kind		kind;
	struct event		*timer;
	bool			due;		/* its wait is over: answer at the Where */
};

/*
 * An idempotency key whose answer this node keeps: a grant that holds
 * nothing (signal or rate mode), of which the state keeps no record.
 */
struct hidem {
	struct hnode		node;
	struct list_head	entry;
	struct hprin		*who;
	char			key[256];
	uint8_t			hash[32];
	json_t			*body;
	uint64_t		expires;	/* mono */
};

/* An acquire under way (r->priv). */
struct hacq {
	struct hreq		*r;
	bool			multi;
	uint32_t		lease_ms;
	int64_t			timeout_ms;
	uint64_t		wait_ms;
	char			key[256];	/* Idempotency-Key ("": none) */
	uint8_t			hash[32];	/* ... of what the acquire asks */
	struct hj_body		b;	/* last: hj_body() sets what it uses */
};

static void hw_answer_polls(struct hwaiter *w);
static void hw_resolved(struct hwaiter *w);
static void acq_give_back(struct hreq *r, const char *name, uint64_t permit);
static void hw_where(struct hwaiter *w);
static void hw_free(struct hwaiter *w);
static struct hwaiter *hw_lookup_id(struct hreq *r, const char *id);
static void hpoll_add(struct hwaiter *w, struct hreq *r, enum hpoll_kind kind,
    uint64_t wait_ms);

/* --- waiter ids ----------------------------------------------------------- */

/* The alphabet of base64url (http_b64url's), for reading ids. */
static const char hw_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Decode base64url into out (room for max): the bytes, or -1. */
static ssize_t hw_b64_dec(const char *s, uint8_t *out, size_t max)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t n = 0;
	const char *p;

	for (; *s != '\0'; s++) {
		if ((p = strchr(hw_b64, *s)) == NULL)
			return -1;
		acc = acc << 6 | (uint32_t)(p - hw_b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n == max)
				return -1;
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	return (ssize_t)n;
}

/* Put v big-endian in n bytes. */
static uint8_t *hw_put(uint8_t *p, uint64_t v, size_t n)
{
	while (n-- > 0)
		*p++ = (uint8_t)(v >> (8 * n));
	return p;
}

/* Read n bytes big-endian. */
static const uint8_t *hw_get(const uint8_t *p, uint64_t *v, size_t n)
{
	*v = 0;
	while (n-- > 0)
		*v = *v << 8 | *p++;
	return p;
}

/*
 * The id of w: version 1, session, secret, request id, lease, multi, the
 * wants (n, limit, name each). NULL when out of memory.
 */
static char *hw_make_id(const struct hwaiter *w)
{
	uint8_t raw[HW_ID_MAX], *p = raw;
	size_t i, len;
	char *id;

	p = hw_put(p, 1, 1);
	p = hw_put(p, w->g->session, 8);
	memcpy(p, w->g->secret, 16);
	p += 16;
	p = hw_put(p, w->request_id, 8);
	p = hw_put(p, w->lease_ms, 4);
	p = hw_put(p, w->multi, 1);
	p = hw_put(p, w->nwants, 1);
	for (i = 0; i < w->nwants; i++) {
		len = strlen(w->wants[i].name);
		p = hw_put(p, w->wants[i].n, 4);
		p = hw_put(p, w->wants[i].limit, 4);
		p = hw_put(p, len, 1);
		memcpy(p, w->wants[i].name, len);
		p += len;
	}
	if ((id = malloc((size_t)(p - raw) * 4 / 3 + 4)) != NULL)
		http_b64url(raw, (size_t)(p - raw), id);
	return id;
}

/* Read a waiter id into w (session and secret too): false if it is none. */
static bool hw_read_id(const char *id, struct hwaiter *w, uint64_t *session,
    uint8_t secret[16])
{
	uint8_t raw[HW_ID_MAX];
	const uint8_t *p = raw, *end;
	uint64_t v, n, limit, len;
	ssize_t got;
	size_t i;

	if (strlen(id) > HW_ID_MAX * 4 / 3 ||
	    (got = hw_b64_dec(id, raw, sizeof raw)) < 39)
		return false;
	end = raw + got;
	p = hw_get(p, &v, 1);
	if (v != 1)
		return false;
	p = hw_get(p, session, 8);
	memcpy(secret, p, 16);
	p += 16;
	p = hw_get(p, &w->request_id, 8);
	p = hw_get(p, &v, 4);
	w->lease_ms = (uint32_t)v;
	p = hw_get(p, &v, 1);
	w->multi = v != 0;
	p = hw_get(p, &v, 1);
	if (v == 0 || v > HJ_WANTS_MAX || (!w->multi && v != 1) ||
	    (w->wants = calloc(v, sizeof *w->wants)) == NULL)
		return false;
	w->nwants = v;
	for (i = 0; i < w->nwants; i++) {
		if (end - p < 9)
			return false;
		p = hw_get(p, &n, 4);
		p = hw_get(p, &limit, 4);
		p = hw_get(p, &len, 1);
		if (len == 0 || (uint64_t)(end - p) < len)
			return false;
		w->wants[i].n = (uint32_t)n;
		w->wants[i].limit = (uint32_t)limit;
		memcpy(w->wants[i].name, p, len);
		w->wants[i].name[len] = '\0';
		if (strlen(w->wants[i].name) != len)
			return false;
		p += len;
	}
	return p == end && *session != 0 && w->request_id != 0;
}

/*
 * The id of the waiter a Pending names, whose down asked wants (n of them,
 * multi: a DownMulti): the id its own node made. NULL: not one.
 */
static char *hw_pending_id(const Semd__Pending *p, bool multi, size_t n,
    struct hwant *wants)
{
	struct hwaiter tmp;
	struct gate g;

	if (p->secret.len != sizeof g.secret || p->session == 0 ||
	    p->request_id == 0)
		return NULL;
	memset(&tmp, 0, sizeof tmp);
	memset(&g, 0, sizeof g);
	g.session = p->session;
	memcpy(g.secret, p->secret.data, sizeof g.secret);
	tmp.g = &g;
	tmp.request_id = p->request_id;
	tmp.lease_ms = p->lease_ms;
	tmp.multi = multi;
	tmp.nwants = n;
	tmp.wants = wants;
	return hw_make_id(&tmp);
}

/* --- the table of waiters ------------------------------------------------- */

/* Is this the waiter of that id? */
static bool hw_eq(const struct hnode *n, const void *key)
{
	return strcmp(container_of(n, struct hwaiter, node)->id, key) == 0;
}

/* The waiter of id on this node, or NULL. */
static struct hwaiter *hw_find(struct http_front *f, const char *id)
{
	struct hnode *n = hmap_find(&f->waiters, hmap_siphash(f->hash_key, id,
	    strlen(id)), hw_eq, id);

	return n != NULL ? container_of(n, struct hwaiter, node) : NULL;
}

/* Put w in the table under its id (made once its session is known). */
static void hw_index(struct hwaiter *w)
{
	hmap_insert(&w->f->waiters, &w->node, hmap_siphash(w->f->hash_key, w->id,
	    strlen(w->id)));
	list_add_tail(&w->entry, &w->f->waiter_list);
}

/* --- answers -------------------------------------------------------------- */

/* The waiter as JSON. */
static json_t *hw_json(const struct hwaiter *w)
{
	char href[HW_ID_MAX + 32];
	json_t *o = json_object();

	if (o == NULL)
		return NULL;
	snprintf(href, sizeof href, "/v1/waiters/%s", w->id);
	json_object_set_new(o, "id", json_string(w->id));
	json_object_set_new(o, "href", json_string(href));
	json_object_set_new(o, "state", json_string(w->state == HW_GRANTED ?
	    "granted" : "waiting"));
	json_object_set_new(o, "lease_ms", json_integer(w->lease_ms));
	json_object_set_new(o, "expires_ms", json_integer(
	    (json_int_t)w->renewed_ms + (json_int_t)w->lease_ms));
	if (w->since_ms != 0)
		json_object_set_new(o, "since_ms", json_integer((json_int_t)
		    w->since_ms));
	if (w->places != NULL)
		json_object_set(o, "places", w->places);
	if (w->grants != NULL)
		json_object_set(o, "grants", w->grants);
	return o;
}

/* The first grant (a permit) of a granted waiter, for a 201. */
static json_t *hw_first_grant(const struct hwaiter *w)
{
	return json_incref(json_array_get(w->grants, 0));
}

/* Take a poll off its waiter and let its request go. */
static void hpoll_end(struct hpoll *p)
{
	list_del_init(&p->entry);
	if (p->timer != NULL)
		event_free(p->timer);
	p->r->gone = NULL;
	p->r->priv = NULL;
	http_req_put(p->r);
	free(p);
}

/*
 * The answer to w's acquire as w stands (granted, or waiting with its id
 * known): its status, body (taken by the caller) and Location (loc[0] 0:
 * none). 0: none yet, or it failed.
 */
static int hw_acquire_answer(const struct hwaiter *w, json_t **body,
    char *loc, size_t len)
{
	loc[0] = '\0';
	*body = NULL;
	if (w->state == HW_GRANTED && !w->multi &&
	    json_object_get(json_array_get(w->grants, 0), "href") != NULL) {
		*body = hw_first_grant(w);
		snprintf(loc, len, "%s", json_string_value(json_object_get(*body,
		    "href")));
		return 201;
	}
	if (w->state == HW_GRANTED) {
		*body = w->multi ? json_pack("{s:O}", "grants", w->grants) :
		    hw_first_grant(w);
		return 200;
	}
	if (w->state == HW_WAITING && w->id != NULL) {
		snprintf(loc, len, "/v1/waiters/%s", w->id);
		*body = hw_json(w);
		return 202;
	}
	return 0;
}

/* Answer one poll as its waiter stands now (may it, before a Where). */
static bool hpoll_answer(struct hpoll *p, bool final)
{
	struct hwaiter *w = p->w;
	struct hreq *r = p->r;
	char loc[HW_ID_MAX + 32];
	json_t *body;
	int status;

	if (w->state == HW_RESOLVING)
		return false;
	if (w->state == HW_FAILED) {
		if (p->kind == HP_DELETE) {
			http_reply_empty(r, 204, NULL, NULL);
		} else {
			http_problem(r, w->fail_code, "%s", w->fail_msg != NULL ?
			    w->fail_msg : "");
		}
		return true;
	}
	/* waiting: answered when its wait is over, with a Where's places */
	if (w->state != HW_GRANTED && ((!final && !(p->due &&
	    w->places != NULL && !w->where_asked)) || w->id == NULL))
		return false;
	if (p->kind == HP_DELETE) {
		http_reply_empty(r, 204, NULL, NULL);
	} else if (p->kind == HP_ACQUIRE) {
		status = hw_acquire_answer(w, &body, loc, sizeof loc);
		if (loc[0] != '\0')
			http_header(r, "Location", loc);
		http_reply_json(r, status, body);
	} else {
		http_reply_json(r, 200, hw_json(w));
	}
	return true;
}

/* Answer every poll that can be, and keep the others. */
static void hw_answer_polls(struct hwaiter *w)
{
	struct list_head *pos, *tmp;
	struct hpoll *p;

	list_for_each_safe(pos, tmp, &w->polls) {
		p = list_entry(pos, struct hpoll, entry);
		if (hpoll_answer(p, false))
			hpoll_end(p);
	}
	if (list_empty(&w->polls) && w->keepalive != NULL)
		evtimer_del(w->keepalive);
}

/* The waiter ended (granted or failed): its session goes, polls are told. */
static void hw_finish(struct hwaiter *w)
{
	w->forget_at = http_now() + (w->lease_ms > HW_FORGET_MS ? w->lease_ms :
	    HW_FORGET_MS);
	if (w->g != NULL) {
		gate_release(w->g, false);	/* the session ends: its hold */
		w->g = NULL;			/* is detached, it stays */
	}
	if (w->keepalive != NULL)
		evtimer_del(w->keepalive);
	hw_answer_polls(w);
}

/* Fail w with code and message. */
static void hw_fail(struct hwaiter *w, int code, const char *msg)
{
	if (w->state == HW_GRANTED || w->state == HW_FAILED)
		return;
	w->state = HW_FAILED;
	w->fail_code = code;
	free(w->fail_msg);
	w->fail_msg = strdup(msg != NULL ? msg : "");
	hw_finish(w);
}

/* --- the waiter's gate ---------------------------------------------------- */

/* The lease of w's session, from now (wall). */
static void hw_renewed(struct hwaiter *w)
{
	w->renewed_ms = http_wall_ms();
}

/* A Ping: the session is heard, its lease starts again. */
static void hw_ping(struct hwaiter *w)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Ping ping = SEMD__PING__INIT;

	if (w->g == NULL)
		return;
	req.op_case = SEMD__REQUEST__OP_PING;
	req.ping = &ping;
	if (gate_call(w->g, &req, NULL, NULL) != 0) {
		gate_push(w->g);
		hw_renewed(w);
	}
}

/* While a request waits on w, its lease is kept: a Ping a third of it. */
static void hw_keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hwaiter *w = arg;
	uint32_t ms = w->lease_ms / 3 > 50 ? w->lease_ms / 3 : 50;

	(void)fd;
	(void)what;
	if (list_empty(&w->polls) || w->state != HW_WAITING)
		return;
	hw_ping(w);
	http_arm(w->keepalive, ms);
}

/*
 * w's down carried an idempotency key whose down waits already (a retry of
 * the same acquire raced it): w goes, its acquire polls that waiter.
 */
static void hw_moved(struct hwaiter *w, const Semd__Pending *pd)
{
	char *id = hw_pending_id(pd, w->multi, w->nwants, w->wants);
	struct list_head *pos, *tmp;
	struct hwaiter *o;
	struct hpoll *p;
	struct hreq *r;

	list_for_each_safe(pos, tmp, &w->polls) {
		p = list_entry(pos, struct hpoll, entry);
		if (p->kind != HP_ACQUIRE)
			continue;
		r = p->r;
		http_req_hold(r);
		hpoll_end(p);
		if (id == NULL)
			http_problem(r, SEMD__CODE__INTERNAL, "the waiter of the "
			    "key could not be named");
		else if ((o = hw_lookup_id(r, id)) != NULL)
			hpoll_add(o, r, HP_ACQUIRE, 0);
		http_req_put(r);
	}
	free(id);
	hw_fail(w, SEMD__CODE__CANCELLED, "its idempotency key names another "
	    "waiter");
	w->forget_at = http_now();
}

/* The answer to the down: a grant, or why it ended. */
static void hw_down_done(void *arg, const Semd__Reply *rep)
{
	struct hwaiter *w = arg;
	json_t *grants, *g;
	uint64_t expires = http_wall_ms() + w->lease_ms;
	size_t i;

	if (rep == NULL)
		return;		/* the gate is gone: hw_gate_closed says */
	if (rep->code == SEMD__CODE__WOULD_BLOCK &&
	    rep->body_case == SEMD__REPLY__BODY_PENDING) {
		hw_moved(w, rep->pending);
		return;
	}
	if (rep->code != SEMD__CODE__OK) {
		if (rep->code == SEMD__CODE__UNAVAILABLE &&
		    rep->body_case == SEMD__REPLY__BODY_REDIRECT)
			return;		/* not the leader: the gate goes */
		hw_fail(w, rep->code, rep->message);
		return;
	}
	if ((grants = json_array()) == NULL) {
		hw_fail(w, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	if (rep->body_case == SEMD__REPLY__BODY_GRANT) {
		g = hj_grant(w->wants[0].name, rep->grant->permit_id,
		    rep->grant->token, rep->grant->n, rep->grant->waited_us,
		    w->lease_ms, expires);
		json_array_append_new(grants, g);
	} else if (rep->body_case == SEMD__REPLY__BODY_MULTI_GRANT) {
		for (i = 0; i < rep->multi_grant->n_grants; i++) {
			const Semd__NamedGrant *ng = rep->multi_grant->grants[i];

			json_array_append_new(grants, hj_grant(ng->name,
			    ng->permit_id, ng->token, ng->n,
			    rep->multi_grant->waited_us, w->lease_ms, expires));
		}
	}
	w->grants = grants;
	json_decref(w->places);		/* in line no more */
	w->places = NULL;
	if (w->state == HW_RESOLVING) {
		w->state = HW_GRANTED;
		hw_resolved(w);
	}
	w->state = w->state == HW_FAILED ? HW_FAILED : HW_GRANTED;
	hw_finish(w);
}

/* The Where: the places in line (the down waits), or none (it ended). */
static void hw_where_done(void *arg, const Semd__Reply *rep)
{
	struct hwaiter *w = arg;

	w->where_asked = false;
	if (rep == NULL)
		return;
	if (rep->code == SEMD__CODE__OK &&
	    rep->body_case == SEMD__REPLY__BODY_WHERE) {
		json_decref(w->places);
		w->places = hj_places(rep->where);
		if (w->since_ms == 0)
			w->since_ms = rep->where->since_ms;
		if (w->state == HW_RESOLVING) {
			w->state = HW_WAITING;
			hw_resolved(w);
		}
	} else if (w->state == HW_RESOLVING) {
		/* No down waits and none answered: it ended while away. */
		hw_fail(w, SEMD__CODE__NOT_FOUND, "the waiter ended (granted "
		    "and given back, or its lease ran out)");
		return;
	}
	hw_answer_polls(w);
}

/* Ask where w stands (one Where at a time). */
static void hw_where(struct hwaiter *w)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Where wh = SEMD__WHERE__INIT;

	if (w->g == NULL || w->where_asked)
		return;
	wh.request_id = w->request_id;
	req.op_case = SEMD__REQUEST__OP_WHERE;
	req.where = &wh;
	if (gate_call(w->g, &req, hw_where_done, w) != 0) {
		w->where_asked = true;
		gate_push(w->g);
	}
}

/* The Hello of w's gate: its session (the id), or why there is none. */
static void hw_hello_done(void *arg, const Semd__Reply *rep)
{
	struct hwaiter *w = arg;

	if (rep == NULL)
		return;
	if (rep->code != SEMD__CODE__OK || !w->g->hello) {
		if (rep->code == SEMD__CODE__UNAVAILABLE &&
		    rep->body_case == SEMD__REPLY__BODY_REDIRECT)
			return;
		/* A resume of a session gone, or of another's: no such waiter. */
		if (rep->code == SEMD__CODE__SESSION_EXPIRED ||
		    rep->code == SEMD__CODE__PERMISSION_DENIED)
			hw_fail(w, SEMD__CODE__NOT_FOUND, "no such waiter (it "
			    "ended, its lease ran out, or it is not yours)");
		else
			hw_fail(w, rep->code, rep->message);
		return;
	}
	w->lease_ms = w->g->lease_ms;
	hw_renewed(w);
	if (w->id == NULL) {
		if ((w->id = hw_make_id(w)) == NULL) {
			hw_fail(w, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
			return;
		}
		hw_index(w);
	}
}

/* The gate closed: the state ended the session, or this node stopped leading. */
static void hw_gate_closed(void *owner)
{
	struct hwaiter *w = owner;
	struct gate *g = w->g;
	struct list_head *pos, *tmp;
	struct hpoll *p;

	w->g = NULL;
	if (w->state == HW_GRANTED || w->state == HW_FAILED)
		return;
	if (g != NULL && g->redirected) {
		/* Its session lives on in the log: the leader resumes it. */
		list_for_each_safe(pos, tmp, &w->polls) {
			p = list_entry(pos, struct hpoll, entry);
			http_redirect(p->r, g->leader_id, g->leader);
			hpoll_end(p);
		}
		w->state = HW_FAILED;
		w->fail_code = SEMD__CODE__UNAVAILABLE;
		w->forget_at = http_now();	/* forgotten: resumed when asked */
		return;
	}
	hw_fail(w, SEMD__CODE__UNAVAILABLE, "the waiter's session ended "
	    "(semd is stopping, or its lease ran out)");
}

/* A notice to the waiter's session: its end (the lease) is told so. */
static void hw_notice(void *owner, const Semd__Reply *rep)
{
	struct hwaiter *w = owner;

	if (rep->code == SEMD__CODE__SESSION_EXPIRED)
		hw_fail(w, SEMD__CODE__SESSION_EXPIRED, rep->message);
}

/* A waiter of who, its gate opened (a resume when session is not 0). */
static struct hwaiter *hw_new(struct hreq *r, const struct gate_ident *id,
    uint32_t lease_ms, uint64_t session, const uint8_t *secret)
{
	struct hwaiter *w = http_alloc(r, sizeof *w);
	char why[256];
	int e;

	if (w == NULL)
		return NULL;
	w->f = r->f;
	w->who = r->who;
	http_prin_hold(w->who);
	INIT_LIST_HEAD(&w->polls);
	INIT_LIST_HEAD(&w->entry);
	w->state = session != 0 ? HW_RESOLVING : HW_WAITING;
	w->lease_ms = lease_ms;
	w->keepalive = evtimer_new(http_loop(r), hw_keepalive_cb, w);
	w->g = gate_open(r->f, GATE_WAITER, r->who, id, lease_ms, session, secret,
	    &e, why, sizeof why);
	if (w->g == NULL || w->keepalive == NULL) {
		if (w->g == NULL)
			http_problem(r, e, "%s", why);
		else
			http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
		hw_free(w);
		return NULL;
	}
	w->g->owner = w;
	w->g->hello_cb = hw_hello_done;
	w->g->hello_arg = w;
	w->g->closed = hw_gate_closed;
	w->g->notice = hw_notice;
	return w;
}

/* Free a waiter (its polls answered already, or dropped). */
static void hw_free(struct hwaiter *w)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &w->polls) {
		struct hpoll *p = list_entry(pos, struct hpoll, entry);

		http_problem(p->r, SEMD__CODE__UNAVAILABLE, "semd is stopping");
		hpoll_end(p);
	}
	if (w->id != NULL && !list_empty(&w->entry)) {
		hmap_remove(&w->f->waiters, &w->node);
		list_del_init(&w->entry);
	}
	gate_release(w->g, false);
	if (w->keepalive != NULL)
		event_free(w->keepalive);
	json_decref(w->places);
	json_decref(w->grants);
	http_prin_put(w->f, w->who);
	free(w->fail_msg);
	free(w->wants);
	free(w->id);
	free(w);
}

/* --- polls ---------------------------------------------------------------- */

/* A poll's wait is over: answer with a fresh Where. */
static void hpoll_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hpoll *p = arg;
	struct hwaiter *w = p->w;

	(void)fd;
	(void)what;
	p->due = true;
	if (w->state == HW_WAITING && w->g != NULL && !w->where_asked) {
		json_decref(w->places);
		w->places = NULL;
		hw_where(w);
	} else if (w->state != HW_RESOLVING && hpoll_answer(p, w->g == NULL)) {
		hpoll_end(p);
	}
}

/* The client of a poll left: without a lease of its own, the waiter goes. */
static void hpoll_gone(struct hreq *r)
{
	struct hpoll *p = r->priv;
	struct hwaiter *w;

	if (p == NULL)
		return;
	w = p->w;
	hpoll_end(p);
	if (!w->lease_given && (w->state == HW_WAITING ||
	    w->state == HW_RESOLVING)) {
		hw_fail(w, SEMD__CODE__CANCELLED, "cancelled: the connection "
		    "waiting for it closed, and it asked for no lease");
		w->forget_at = http_now();
	}
}

/* Make r a poll of w, answered within wait_ms (0: at the next Where). */
static void hpoll_add(struct hwaiter *w, struct hreq *r, enum hpoll_kind kind,
    uint64_t wait_ms)
{
	struct hpoll *p = http_alloc(r, sizeof *p);

	if (p == NULL)
		return;
	p->w = w;
	p->r = r;
	p->kind = kind;
	http_req_hold(r);
	r->priv = p;
	list_add_tail(&p->entry, &w->polls);
	http_req_watch(r, hpoll_gone);
	if ((p->timer = evtimer_new(http_loop(r), hpoll_timer_cb, p)) != NULL)
		http_arm(p->timer, wait_ms);
	if (w->state == HW_WAITING && !evtimer_pending(w->keepalive, NULL))
		http_arm(w->keepalive, w->lease_ms / 3 > 50 ? w->lease_ms / 3 : 50);
	if (hpoll_answer(p, false))
		hpoll_end(p);
}

/* --- idempotency keys ----------------------------------------------------- */

struct idem_key {
	const struct hprin	*who;
	const char		*key;
};

static bool idem_eq(const struct hnode *n, const void *key)
{
	const struct hidem *k = container_of(n, struct hidem, node);
	const struct idem_key *q = key;

	return k->who == q->who && strcmp(k->key, q->key) == 0;
}

/* The table's hash of who's key. */
static uint64_t idem_table_hash(const struct http_front *f,
    const struct hprin *who, const char *key)
{
	return hmap_siphash(f->hash_key, key, strlen(key)) ^ (uintptr_t)who;
}

/* Forget a key's answer. */
static void idem_drop(struct http_front *f, struct hidem *k)
{
	hmap_remove(&f->idem, &k->node);
	list_del_init(&k->entry);
	k->who->nidem--;
	http_prin_put(f, k->who);
	json_decref(k->body);
	free(k);
}

/*
 * Keep a's 200 (a grant that holds nothing) for its key (the principal's
 * oldest goes at http-idempotency-keys).
 */
static void idem_keep(struct hacq *a, const json_t *body)
{
	struct http_front *f = a->r->f;
	uint32_t max = http_settings(a->r)->idem_keys;
	struct list_head *pos;
	struct hidem *k;

	if (a->key[0] == '\0' || max == 0)
		return;
	if (a->r->who->nidem >= max) {
		list_for_each(pos, &f->idem_list) {
			k = list_entry(pos, struct hidem, entry);
			if (k->who == a->r->who) {
				idem_drop(f, k);
				break;
			}
		}
	}
	if ((k = calloc(1, sizeof *k)) == NULL)
		return;		/* a retry is then a new acquire */
	k->who = a->r->who;
	http_prin_hold(k->who);
	k->who->nidem++;
	memcpy(k->key, a->key, sizeof k->key);
	memcpy(k->hash, a->hash, sizeof k->hash);
	k->body = json_deep_copy(body);
	k->expires = http_now() + a->lease_ms + HW_FORGET_MS;
	hmap_insert(&f->idem, &k->node, idem_table_hash(f, k->who, k->key));
	list_add_tail(&k->entry, &f->idem_list);
}

/* The hash of what an attempt asks: method, path, body. */
static void idem_hash(struct hreq *r, uint8_t out[32])
{
	const char *uri = http_uri(r);
	char *body = json_dumps(r->body, JSON_COMPACT | JSON_SORT_KEYS);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned int n = 0;

	memset(out, 0, 32);
	if (md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1) {
		EVP_DigestUpdate(md, uri, strlen(uri));
		EVP_DigestUpdate(md, "\n", 1);
		if (body != NULL)
			EVP_DigestUpdate(md, body, strlen(body));
		EVP_DigestFinal_ex(md, out, &n);
	}
	EVP_MD_CTX_free(md);
	free(body);
}

/*
 * a's Idempotency-Key, checked and hashed into a (none: a->key empty).
 * False when r was answered: a bad key, or the answer this node keeps for
 * it (or 422: the key was used for another request).
 */
static bool idem_begin(struct hacq *a)
{
	struct hreq *r = a->r;
	struct http_front *f = r->f;
	const char *key = http_in_header(r, "Idempotency-Key");
	struct idem_key q = { r->who, key };
	struct hidem *k;
	struct hnode *n;
	size_t i;

	a->key[0] = '\0';
	if (key == NULL)
		return true;
	for (i = 0; key[i] != '\0'; i++)
		if (key[i] < 0x20 || key[i] > 0x7e)
			break;
	if (i == 0 || i >= sizeof a->key || key[i] != '\0') {
		http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "Idempotency-Key: "
		    "1 to 255 printable characters");
		return false;
	}
	memcpy(a->key, key, i + 1);
	idem_hash(r, a->hash);
	if ((n = hmap_find(&f->idem, idem_table_hash(f, r->who, key), idem_eq,
	    &q)) == NULL)
		return true;
	k = container_of(n, struct hidem, node);
	if (memcmp(k->hash, a->hash, sizeof a->hash) != 0)
		http_problem_at(r, SEMD__CODE__INVALID_ARGUMENT, 422,
		    "Idempotency-Key %s was used for another request", key);
	else
		http_reply_json(r, 200, json_deep_copy(k->body));
	return false;
}

/* --- acquire -------------------------------------------------------------- */

/* Give back what a grant held (its client left before the answer). */
static void acq_give_back(struct hreq *r, const char *name, uint64_t permit)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Up up = SEMD__UP__INIT;
	struct gate_ident id = { "http", "", 0 };
	char why[128];
	struct gate *g;
	int e;

	if (permit == 0 ||
	    (g = gate_service(r->f, r->who, &id, &e, why, sizeof why)) == NULL)
		return;
	up.name = (char *)name;
	up.permit_id = permit;
	req.op_case = SEMD__REQUEST__OP_UP;
	req.up = &up;
	if (gate_call(g, &req, NULL, NULL) != 0)
		gate_push(g);
}

/* Free an acquire's record (r keeps going). */
static void acq_free(struct hacq *a)
{
	if (a->r->priv == a)
		a->r->priv = NULL;
	free(a);
}

/* Who the acquire's caller is (its body may say), for the holder lists. */
static void acq_ident(struct hacq *a, struct gate_ident *id, char *client,
    size_t clen, char *host, size_t hlen)
{
	http_ident(a->r, id, client, clen, host, hlen);
	if (a->b.client != NULL)
		id->client = a->b.client;
	if (a->b.host != NULL)
		id->host = a->b.host;
	if (a->b.pid_given)
		id->pid = a->b.pid;
}

static void acq_wait(struct hacq *a);

/* acq_wait() on the first loop. */
static void acq_wait_home(struct hreq *r)
{
	acq_wait(r->priv);
}

/* The acquire must wait: a waiter with a session of its own. */
static void acq_wait(struct hacq *a)
{
	struct hreq *r = a->r;
	struct gate_ident id;
	struct hwaiter *w;
	char client[64], host[64];
	size_t i;

	if (http_home(r, acq_wait_home))
		return;		/* waiters are the first loop's */
	acq_ident(a, &id, client, sizeof client, host, sizeof host);
	if ((w = hw_new(r, &id, a->lease_ms, 0, NULL)) == NULL)
		goto fail;
	w->multi = a->multi;
	w->lease_given = a->b.lease_given;
	w->nwants = a->multi ? a->b.m.multi.n_wants : 1;
	if ((w->wants = http_alloc(r, w->nwants * sizeof *w->wants)) == NULL) {
		hw_free(w);
		goto fail;
	}
	for (i = 0; i < w->nwants; i++) {
		const char *name = a->multi ? a->b.m.multi.wants[i]->name :
		    a->b.m.down.name;

		snprintf(w->wants[i].name, sizeof w->wants[i].name, "%s", name);
		w->wants[i].n = a->multi ? a->b.m.multi.wants[i]->n : a->b.m.down.n;
		w->wants[i].limit = a->multi ? a->b.m.multi.wants[i]->limit :
		    a->b.m.down.limit;
	}
	if (a->multi)
		a->b.m.multi.timeout_ms = a->timeout_ms;
	else
		a->b.m.down.timeout_ms = a->timeout_ms;
	w->request_id = gate_call(w->g, &a->b.req, hw_down_done, w);
	if (w->request_id == 0) {
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
		hw_free(w);
		goto fail;
	}
	hw_where(w);		/* staged behind the down, pushed with it */
	hpoll_add(w, r, HP_ACQUIRE, a->wait_ms);
fail:
	acq_free(a);
}

/*
 * The key names a waiter still waiting (Pending): the retry polls that
 * waiter - this node's, or resumed from its id - as the first attempt
 * would have (201 when it is granted in time, else 202).
 */
static void acq_pending(struct hacq *a, const Semd__Pending *p)
{
	struct hreq *r = a->r;
	struct hwant *wants;
	struct hwaiter *w;
	size_t i, n = a->multi ? a->b.m.multi.n_wants : 1;
	char *id = NULL;

	if ((wants = http_alloc(r, n * sizeof *wants)) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		snprintf(wants[i].name, sizeof wants[i].name, "%s",
		    a->multi ? a->b.m.multi.wants[i]->name : a->b.m.down.name);
		wants[i].n = a->multi ? a->b.m.multi.wants[i]->n : a->b.m.down.n;
		wants[i].limit = a->multi ? a->b.m.multi.wants[i]->limit :
		    a->b.m.down.limit;
	}
	if ((id = hw_pending_id(p, a->multi, n, wants)) == NULL)
		http_problem(r, SEMD__CODE__INTERNAL, "the waiter of the key "
		    "could not be named");
	else if ((w = hw_lookup_id(r, id)) != NULL)
		hpoll_add(w, r, HP_ACQUIRE, a->wait_ms);
	free(id);
	free(wants);
out:
	acq_free(a);
}

/* The try: granted now, or the wait, or why not. */
static void acq_try_done(struct hreq *r, const Semd__Reply *rep)
{
	struct hacq *a = r->priv;
	uint64_t expires = http_wall_ms() + a->lease_ms;
	bool keyed = a->key[0] != '\0';
	json_t *body, *grants;
	const char *href;
	char text[2048], loc[1024];
	size_t i, len;

	if (rep->code == SEMD__CODE__WOULD_BLOCK &&
	    rep->body_case == SEMD__REPLY__BODY_PENDING) {
		acq_pending(a, rep->pending);
		return;
	}
	if (rep->code == SEMD__CODE__WOULD_BLOCK && a->timeout_ms != 0) {
		acq_wait(a);
		return;
	}
	if (rep->code == SEMD__CODE__INVALID_ARGUMENT && rep->key_reused) {
		http_problem_at(r, SEMD__CODE__INVALID_ARGUMENT, 422,
		    "Idempotency-Key %s was used for another request", a->key);
		acq_free(a);
		return;
	}
	if (rep->code != SEMD__CODE__OK) {
		http_problem_reply(r, rep);
		acq_free(a);
		return;
	}
	if (rep->body_case == SEMD__REPLY__BODY_GRANT && http_live(r) &&
	    rep->grant->permit_id != 0 && (len = hj_grant_text(text,
	    sizeof text, loc, sizeof loc, a->b.m.down.name,
	    rep->grant->permit_id, rep->grant->token, rep->grant->n,
	    rep->grant->waited_us, a->lease_ms, expires)) > 0) {
		/* The usual case, written straight. */
		http_header(r, "Location", loc);
		http_reply_text(r, 201, text, len);
	} else if (rep->body_case == SEMD__REPLY__BODY_GRANT) {
		body = hj_grant(a->b.m.down.name, rep->grant->permit_id,
		    rep->grant->token, rep->grant->n, rep->grant->waited_us,
		    a->lease_ms, expires);
		href = json_string_value(json_object_get(body, "href"));
		/* Nobody to hand it to, and no key to find it again by. */
		if (!http_live(r) && !keyed)
			acq_give_back(r, a->b.m.down.name, rep->grant->permit_id);
		if (href == NULL)
			idem_keep(a, body);	/* nothing held: the state keeps no key */
		if (href != NULL)
			http_header(r, "Location", href);
		http_reply_json(r, href != NULL ? 201 : 200, body);
	} else if (rep->body_case == SEMD__REPLY__BODY_MULTI_GRANT &&
	    (grants = json_array()) != NULL) {
		for (i = 0; i < rep->multi_grant->n_grants; i++) {
			const Semd__NamedGrant *ng = rep->multi_grant->grants[i];

			json_array_append_new(grants, hj_grant(ng->name,
			    ng->permit_id, ng->token, ng->n,
			    rep->multi_grant->waited_us, a->lease_ms, expires));
			if (!http_live(r) && !keyed)
				acq_give_back(r, ng->name, ng->permit_id);
		}
		body = json_pack("{s:o}", "grants", grants);
		http_reply_json(r, 200, body);
	} else {
		http_problem(r, SEMD__CODE__INTERNAL, "an answer of another kind");
	}
	acq_free(a);
}

/* POST .../permits and POST /v1/permits: acquire. */
static void acq_start(struct hreq *r, bool multi)
{
	const struct http_config *hc = http_settings(r);
	uint32_t max_lease = http_max_lease(r);
	struct hacq *a = malloc(sizeof *a);
	struct gate_ident id;
	char err[256], client[64], host[64];
	bool given;

	if (a == NULL) {
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	memset(a, 0, offsetof(struct hacq, b));
	a->r = r;
	a->multi = multi;
	if (hj_body(multi ? HJ_ACQUIRE_MANY : HJ_ACQUIRE, r->args[0], r->body,
	    &a->b, err, sizeof err) != SEMD__CODE__OK) {
		http_problem(r, SEMD__CODE__INVALID_ARGUMENT, "%s", err);
		free(a);
		return;
	}
	a->lease_ms = a->b.lease_given ? (multi ? a->b.m.multi.lease_ms :
	    a->b.m.down.lease_ms) : hc->lease_ms;
	if (a->lease_ms > max_lease && max_lease > 0)
		a->lease_ms = max_lease;
	a->timeout_ms = a->b.timeout_given ? (multi ? a->b.m.multi.timeout_ms :
	    a->b.m.down.timeout_ms) : -1;
	a->wait_ms = http_prefer_wait(r, &given);
	if (given) {
		char pa[32];

		snprintf(pa, sizeof pa, "wait=%llu",
		    (unsigned long long)(a->wait_ms / 1000));
		http_header(r, "Preference-Applied", pa);
	}
	if (!idem_begin(a)) {
		free(a);
		return;
	}
	r->priv = a;
	/* First a try that waits for nothing, its permit a detached hold. */
	if (multi) {
		a->b.m.multi.lease_ms = a->lease_ms;
		a->b.m.multi.timeout_ms = 0;
	} else {
		a->b.m.down.lease_ms = a->lease_ms;
		a->b.m.down.timeout_ms = 0;
	}
	if (a->key[0] != '\0' && multi) {
		a->b.m.multi.idempotency_key = a->key;
		a->b.m.multi.request_hash.data = a->hash;
		a->b.m.multi.request_hash.len = sizeof a->hash;
	} else if (a->key[0] != '\0') {
		a->b.m.down.idempotency_key = a->key;
		a->b.m.down.request_hash.data = a->hash;
		a->b.m.down.request_hash.len = sizeof a->hash;
	}
	acq_ident(a, &id, client, sizeof client, host, sizeof host);
	if (!http_service_call_as(r, &id, &a->b.req, acq_try_done))
		acq_free(a);
}

/* POST .../permits (one with an Idempotency-Key on the first loop). */
void http_route_acquire(struct hreq *r)
{
	if (http_in_header(r, "Idempotency-Key") != NULL &&
	    http_home(r, http_route_acquire))
		return;
	acq_start(r, false);
}

/* POST /v1/permits (one with an Idempotency-Key on the first loop). */
void http_route_acquire_many(struct hreq *r)
{
	if (http_in_header(r, "Idempotency-Key") != NULL &&
	    http_home(r, http_route_acquire_many))
		return;
	acq_start(r, true);
}

/* --- the waiter resource -------------------------------------------------- */

/* The waiter of r's path (hw_lookup_id). */
static struct hwaiter *hw_lookup(struct hreq *r)
{
	return hw_lookup_id(r, r->args[0]);
}

/*
 * The waiter of id: this node's record, or one resumed from its id (the
 * session in the state, its down retried by its request id). NULL:
 * answered (no such waiter).
 */
static struct hwaiter *hw_lookup_id(struct hreq *r, const char *wid)
{
	Semd__Request req = SEMD__REQUEST__INIT;
	Semd__Down d = SEMD__DOWN__INIT;
	Semd__DownMulti m = SEMD__DOWN_MULTI__INIT;
	Semd__Want wants[HJ_WANTS_MAX], *wp[HJ_WANTS_MAX];
	struct hwaiter tmp, *w = hw_find(r->f, wid);
	struct gate_ident id = { "http", "", 0 };
	uint8_t secret[16];
	uint64_t session = 0;
	size_t i;

	if (w != NULL && w->who != r->who) {
		http_problem(r, SEMD__CODE__NOT_FOUND, "no such waiter");
		return NULL;
	}
	if (w != NULL && !(w->state == HW_FAILED &&
	    w->fail_code == SEMD__CODE__UNAVAILABLE))
		return w;
	if (w != NULL)
		hw_free(w);		/* left for the leader: resume it */
	memset(&tmp, 0, sizeof tmp);
	if (!hw_read_id(wid, &tmp, &session, secret)) {
		free(tmp.wants);
		http_problem(r, SEMD__CODE__NOT_FOUND, "no such waiter");
		return NULL;
	}
	if ((w = hw_new(r, &id, tmp.lease_ms, session, secret)) == NULL) {
		free(tmp.wants);
		return NULL;
	}
	w->multi = tmp.multi;
	w->lease_given = true;		/* a resumed one keeps its lease */
	w->request_id = tmp.request_id;
	w->wants = tmp.wants;
	w->nwants = tmp.nwants;
	w->id = strdup(wid);
	if (w->id == NULL) {
		http_problem(r, SEMD__CODE__RESOURCE_EXHAUSTED, "out of memory");
		hw_free(w);
		return NULL;
	}
	hw_index(w);
	/* The down again, by its id: answered what it became, or waits on. */
	if (w->multi) {
		for (i = 0; i < w->nwants; i++) {
			semd__want__init(&wants[i]);
			wants[i].name = w->wants[i].name;
			wants[i].n = w->wants[i].n;
			wants[i].limit = w->wants[i].limit;
			wp[i] = &wants[i];
		}
		m.n_wants = w->nwants;
		m.wants = wp;
		m.timeout_ms = -1;
		m.lease_ms = w->lease_ms;
		req.op_case = SEMD__REQUEST__OP_DOWN_MULTI;
		req.down_multi = &m;
	} else {
		d.name = w->wants[0].name;
		d.n = w->wants[0].n;
		d.limit = w->wants[0].limit;
		d.timeout_ms = -1;
		d.lease_ms = w->lease_ms;
		req.op_case = SEMD__REQUEST__OP_DOWN;
		req.down = &d;
	}
	(void)gate_call_id(w->g, &req, w->request_id, hw_down_done, w);
	hw_where(w);
	return w;
}

/* GET /v1/waiters/{waiter}: where it stands, long-polled. */
void http_route_waiter_get(struct hreq *r)
{
	struct hwaiter *w;
	bool given;
	uint64_t wait = http_prefer_wait(r, &given);

	if (http_home(r, http_route_waiter_get) || (w = hw_lookup(r)) == NULL)
		return;
	if (w->state == HW_WAITING)
		hw_ping(w);
	hpoll_add(w, r, HP_GET, wait);
}

/* POST /v1/waiters/{waiter}/renew: its lease again. */
void http_route_waiter_renew(struct hreq *r)
{
	struct hwaiter *w;

	if (http_home(r, http_route_waiter_renew) || (w = hw_lookup(r)) == NULL)
		return;
	if (w->state == HW_WAITING)
		hw_ping(w);
	hpoll_add(w, r, HP_RENEW, 0);
}

/* Cancel w; what it was granted goes back (r: whose give-back it is). */
static void hw_cancel(struct hwaiter *w, struct hreq *r)
{
	uint64_t permit;
	json_t *g;
	size_t i;

	if (w->state == HW_GRANTED) {
		json_array_foreach(w->grants, i, g) {
			if (hj_read_id(json_string_value(json_object_get(g,
			    "permit")), &permit))
				acq_give_back(r, json_string_value(json_object_get(g,
				    "name")), permit);
		}
		json_decref(w->grants);
		w->grants = NULL;
		w->state = HW_FAILED;
		w->fail_code = SEMD__CODE__CANCELLED;
		free(w->fail_msg);
		w->fail_msg = strdup("cancelled after its grant: given back");
	} else if (w->state == HW_WAITING) {
		hw_fail(w, SEMD__CODE__CANCELLED, "cancelled by its client");
	}
}

/* The state of a resumed waiter is known: the cancels asked meanwhile. */
static void hw_resolved(struct hwaiter *w)
{
	struct list_head *pos;
	struct hpoll *p;

	list_for_each(pos, &w->polls) {
		p = list_entry(pos, struct hpoll, entry);
		if (p->kind == HP_DELETE) {
			hw_cancel(w, p->r);
			break;
		}
	}
}

/* DELETE /v1/waiters/{waiter}: cancel it; what it was granted goes back. */
void http_route_waiter_delete(struct hreq *r)
{
	struct hwaiter *w;

	if (http_home(r, http_route_waiter_delete) || (w = hw_lookup(r)) == NULL)
		return;
	if (w->state == HW_RESOLVING) {
		hpoll_add(w, r, HP_DELETE, 0);	/* once its state is known */
		return;
	}
	hw_cancel(w, r);
	http_reply_empty(r, 204, NULL, NULL);
}

/* --- the second's work ---------------------------------------------------- */

/* Forget finished waiters and old keys (all: every one, at the end). */
void http_acquire_sweep(struct http_front *f, bool all)
{
	struct list_head *pos, *tmp;
	struct hwaiter *w;
	struct hidem *k;
	uint64_t now = http_now();

	list_for_each_safe(pos, tmp, &f->waiter_list) {
		w = list_entry(pos, struct hwaiter, entry);
		if (all || ((w->state == HW_GRANTED || w->state == HW_FAILED) &&
		    list_empty(&w->polls) && now >= w->forget_at))
			hw_free(w);
	}
	list_for_each_safe(pos, tmp, &f->idem_list) {
		k = list_entry(pos, struct hidem, entry);
		if (all || now >= k->expires)
			idem_drop(f, k);
	}
}
