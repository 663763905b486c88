/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_json.c - JSON bodies to requests, replies to JSON
 * (http_json.h). Pure: jansson and protobuf-c, no I/O.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/http_json.h"

/* --- errors --------------------------------------------------------------- */

/*
 * By Semd__Code: semctl --json's name (its code is the negative of the
 * protocol's), semctl's exit code, the HTTP status, a title.
 */
static const struct {
	const char	*name;
	int		exit;
	int		status;
	const char	*title;
} hj_errors[] = {
	[SEMD__CODE__OK] = { "ok", 0, 200, "ok" },
	[SEMD__CODE__TIMEOUT] = { "timeout", 1, 409, "timed out" },
	[SEMD__CODE__WOULD_BLOCK] = { "would_block", 1, 409, "would block" },
	[SEMD__CODE__NOT_FOUND] = { "not_found", 6, 404, "not found" },
	[SEMD__CODE__EXISTS] = { "exists", 6, 409, "exists" },
	[SEMD__CODE__NOT_HOLDER] = { "not_holder", 6, 409, "not the holder" },
	[SEMD__CODE__PERMISSION_DENIED] = { "permission_denied", 4, 403,
	    "permission denied" },
	[SEMD__CODE__INVALID_ARGUMENT] = { "invalid_argument", 6, 400,
	    "invalid argument" },
	[SEMD__CODE__RESOURCE_EXHAUSTED] = { "resource_exhausted", 6, 429,
	    "resource exhausted" },
	[SEMD__CODE__CANCELLED] = { "cancelled", 6, 410, "cancelled" },
	[SEMD__CODE__UNAVAILABLE] = { "unavailable", 3, 503, "unavailable" },
	[SEMD__CODE__PROTOCOL_ERROR] = { "protocol_error", 3, 400,
	    "protocol error" },
	[SEMD__CODE__INTERNAL] = { "internal", 6, 500, "internal error" },
	[SEMD__CODE__SESSION_EXPIRED] = { "session_expired", 5, 410,
	    "session expired" },
	[SEMD__CODE__DEADLOCK] = { "deadlock", 7, 409, "deadlock" },
	[SEMD__CODE__QUEUE_FULL] = { "queue_full", 8, 409, "queue full" },
	[SEMD__CODE__REPLACED] = { "replaced", 9, 410, "replaced" },
	[SEMD__CODE__COMPACTED] = { "compacted", 6, 410, "compacted" },
};
#define HJ_NERRORS	(sizeof hj_errors / sizeof hj_errors[0])

/* A code we know, or INTERNAL. */
static int hj_known(int code)
{
	return code > 0 && (size_t)code < HJ_NERRORS &&
	    hj_errors[code].name != NULL ? code : SEMD__CODE__INTERNAL;
}

const char *hj_error_name(int code)
{
	return hj_errors[hj_known(code)].name;
}

int hj_error_code(int code)
{
	return -hj_known(code);
}

int hj_error_exit(int code)
{
	return hj_errors[hj_known(code)].exit;
}

int hj_status(int code)
{
	return hj_errors[hj_known(code)].status;
}

const char *hj_error_title(int code)
{
	return hj_errors[hj_known(code)].title;
}

/* An RFC 9457 problem of code (status: its own, or one of HTTP's). */
json_t *hj_problem(int code, int status, const char *detail,
    const char *instance)
{
	char type[64];
	json_t *o = json_object();

	if (o == NULL)
		return NULL;
	snprintf(type, sizeof type, "urn:semd:problem:%s", hj_error_name(code));
	json_object_set_new(o, "type", json_string(type));
	json_object_set_new(o, "title", json_string(hj_error_title(code)));
	json_object_set_new(o, "status", json_integer(status));
	if (detail != NULL && *detail != '\0')
		json_object_set_new(o, "detail", hj_string(detail));
	if (instance != NULL)
		json_object_set_new(o, "instance", hj_string(instance));
	json_object_set_new(o, "error", json_string(hj_error_name(code)));
	json_object_set_new(o, "code", json_integer(hj_error_code(code)));
	json_object_set_new(o, "exit", json_integer(hj_error_exit(code)));
	return o;
}

/* --- reading -------------------------------------------------------------- */

/* The deepest nesting of j (an object or an array counts one). */
static int hj_depth(const json_t *j, int limit)
{
	const char *k;
	json_t *v;
	size_t i;
	int d, max = 0;

	if (limit < 0)
		return 1;
	if (json_is_object(j)) {
		json_object_foreach((json_t *)j, k, v) {
			if ((d = hj_depth(v, limit - 1)) > max)
				max = d;
		}
		return max + 1;
	}
	if (json_is_array(j)) {
		json_array_foreach(j, i, v) {
			if ((d = hj_depth(v, limit - 1)) > max)
				max = d;
		}
		return max + 1;
	}
	return 0;
}

/* Parse a body: an object, no duplicates, no NUL, bounded nesting. */
json_t *http_json_load(const char *p, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	json_t *j;

	if (len == 0)
		return json_object();
	j = json_loadb(p, len, JSON_REJECT_DUPLICATES, &je);
	if (j == NULL) {
		snprintf(err, errlen, "the body is no JSON: %s (at byte %d)",
		    je.text, je.position);
		return NULL;
	}
	if (!json_is_object(j)) {
		snprintf(err, errlen, "the body must be a JSON object");
		json_decref(j);
		return NULL;
	}
	if (hj_depth(j, HJ_DEPTH_MAX) > HJ_DEPTH_MAX) {
		snprintf(err, errlen, "the body is nested deeper than %d",
		    HJ_DEPTH_MAX);
		json_decref(j);
		return NULL;
	}
	return j;
}

/* Read a 64-bit identity in decimal (no sign, no spaces). */
bool hj_read_id(const char *s, uint64_t *v)
{
	uint64_t x = 0;

	if (s == NULL || *s == '\0' || strlen(s) > 20)
		return false;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = x;
	return true;
}

enum hj_type { HJ_U32, HJ_I32, HJ_I64, HJ_BOOL, HJ_STR, HJ_ID };

/* One member a body may have: its type, range and where it goes. */
struct hj_field {
	const char	*name;
	enum hj_type	type;
	int64_t		min;
	int64_t		max;		/* HJ_STR: the longest, in bytes */
	void		*dst;
	bool		*given;
};

/* Read member v as f says; false with err. */
static bool hj_field_read(const struct hj_field *f, json_t *v, char *err,
    size_t errlen)
{
	json_int_t x;
	uint64_t id;

	switch (f->type) {
	case HJ_BOOL:
		if (!json_is_boolean(v))
			goto type;
		*(bool *)f->dst = json_is_true(v);
		break;
	case HJ_STR:
		if (!json_is_string(v))
			goto type;
		if (json_string_length(v) > (size_t)f->max) {
			snprintf(err, errlen, "%s: at most %" PRId64 " bytes",
			    f->name, f->max);
			return false;
		}
		*(const char **)f->dst = json_string_value(v);
		break;
	case HJ_ID:
		if (json_is_integer(v) && json_integer_value(v) >= 0)
			id = (uint64_t)json_integer_value(v);
		else if (!json_is_string(v) || !hj_read_id(json_string_value(v), &id))
			goto type;
		*(uint64_t *)f->dst = id;
		break;
	default:
		if (!json_is_integer(v))
			goto type;
		x = json_integer_value(v);
		if (x < f->min || x > f->max) {
			snprintf(err, errlen, "%s: %lld is out of range (%" PRId64
			    "..%" PRId64 ")", f->name, (long long)x, f->min, f->max);
			return false;
		}
		if (f->type == HJ_U32)
			*(uint32_t *)f->dst = (uint32_t)x;
		else if (f->type == HJ_I32)
			*(int32_t *)f->dst = (int32_t)x;
		else
			*(int64_t *)f->dst = (int64_t)x;
	}
	if (f->given != NULL)
		*f->given = true;
	return true;
type:
	snprintf(err, errlen, "%s: must be %s", f->name,
	    f->type == HJ_BOOL ? "true or false" : f->type == HJ_STR ?
	    "a string" : f->type == HJ_ID ? "a decimal string or a number" :
	    "an integer");
	return false;
}

/*
 * Read the members of obj by the table f[0..n): every member must be in
 * it (ignored: those named in skip, read by the caller). False with err.
 */
static bool hj_fields(const json_t *obj, const struct hj_field *f, size_t n,
    const char *const *skip, char *err, size_t errlen)
{
	const char *k;
	json_t *v;
	size_t i;

	if (obj == NULL)
		return true;
	json_object_foreach((json_t *)obj, k, v) {
		for (i = 0; i < n && strcmp(f[i].name, k) != 0; i++)
			;
		if (i < n) {
			if (!hj_field_read(&f[i], v, err, errlen))
				return false;
			continue;
		}
		for (i = 0; skip != NULL && skip[i] != NULL &&
		    strcmp(skip[i], k) != 0; i++)
			;
		if (skip == NULL || skip[i] == NULL) {
			snprintf(err, errlen, "unknown member \"%.64s\"", k);
			return false;
		}
	}
	return true;
}

#define FIELD(NAME, TYPE, MIN, MAX, DST, GIVEN) \
	{ NAME, TYPE, MIN, MAX, DST, GIVEN }
#define NFIELDS(a)	(sizeof (a) / sizeof (a)[0])

/* The mode of a Create. */
static bool hj_mode_read(const char *s, Semd__Mode *m)
{
	if (strcmp(s, "owned") == 0)
		*m = SEMD__MODE__OWNED;
	else if (strcmp(s, "signal") == 0)
		*m = SEMD__MODE__SIGNAL;
	else if (strcmp(s, "rate") == 0)
		*m = SEMD__MODE__RATE;
	else
		return false;
	return true;
}

/* The share of a Create. */
static bool hj_share_read(const char *s, Semd__ShareBy *m)
{
	if (strcmp(s, "none") == 0)
		*m = SEMD__SHARE_BY__SHARE_NONE;
	else if (strcmp(s, "principal") == 0)
		*m = SEMD__SHARE_BY__SHARE_PRINCIPAL;
	else if (strcmp(s, "key") == 0)
		*m = SEMD__SHARE_BY__SHARE_KEY;
	else
		return false;
	return true;
}

/* Create: every option of a name. */
static bool hj_create(const char *name, const json_t *body, struct hj_body *b,
    char *err, size_t errlen)
{
	static const char *const skip[] = { "mode", "share", "weights", NULL };
	Semd__Create *c = &b->m.create;
	bool nex = false;
	const char *k;
	json_t *v;
	size_t n = 0;
	struct hj_field f[] = {
		FIELD("limit", HJ_U32, 0, 1 << 30, &c->limit, NULL),
		FIELD("initial", HJ_U32, 0, 1 << 30, &c->initial, NULL),
		FIELD("rate", HJ_U32, 0, 1 << 30, &c->rate, NULL),
		FIELD("rate_period_ms", HJ_U32, 0, 86400000, &c->rate_period_ms, NULL),
		FIELD("burst", HJ_U32, 0, 1 << 30, &c->burst, NULL),
		FIELD("max_waiters", HJ_U32, 0, UINT32_MAX, &c->max_waiters, NULL),
		FIELD("if_not_exists", HJ_BOOL, 0, 0, &nex, NULL),
	};
	bool initial = false;

	semd__create__init(c);
	c->name = (char *)name;
	f[1].given = &initial;
	if (!hj_fields(body, f, NFIELDS(f), skip, err, errlen))
		return false;
	c->initial_set = initial;
	c->if_not_exists = nex;
	if (body == NULL)
		return true;
	if ((v = json_object_get(body, "mode")) != NULL &&
	    (!json_is_string(v) || !hj_mode_read(json_string_value(v), &c->mode))) {
		snprintf(err, errlen, "mode: must be \"owned\", \"signal\" or \"rate\"");
		return false;
	}
	if ((v = json_object_get(body, "share")) != NULL &&
	    (!json_is_string(v) || !hj_share_read(json_string_value(v), &c->share))) {
		snprintf(err, errlen, "share: must be \"none\", \"principal\" or \"key\"");
		return false;
	}
	if ((v = json_object_get(body, "weights")) == NULL)
		return true;
	if (!json_is_object(v) || json_object_size(v) > HJ_WEIGHTS_MAX) {
		snprintf(err, errlen, "weights: an object of at most %d groups, "
		    "each a weight", HJ_WEIGHTS_MAX);
		return false;
	}
	json_object_foreach(v, k, body) {
		if (!json_is_integer(body) || json_integer_value(body) < 1 ||
		    json_integer_value(body) > 1000 || strlen(k) > 64) {
			snprintf(err, errlen, "weights: \"%.64s\": a group of at "
			    "most 64 bytes and a weight 1..1000", k);
			return false;
		}
		semd__group_weight__init(&b->weights[n]);
		b->weights[n].group = (char *)k;
		b->weights[n].weight = (uint32_t)json_integer_value(body);
		b->weightp[n] = &b->weights[n];
		n++;
	}
	c->n_weights = n;
	c->weights = n > 0 ? b->weightp : NULL;
	return true;
}

/* Acquire: a Down of the path's name. */
static bool hj_acquire(const char *name, const json_t *body, struct hj_body *b,
    char *err, size_t errlen)
{
	Semd__Down *d = &b->m.down;
	const char *replace = NULL, *group = NULL;
	struct hj_field f[] = {
		FIELD("n", HJ_U32, 1, 1 << 30, &d->n, NULL),
		FIELD("lease_ms", HJ_U32, 1, UINT32_MAX, &d->lease_ms, &b->lease_given),
		FIELD("timeout_ms", HJ_I64, -1, INT64_MAX / 4, &d->timeout_ms,
		    &b->timeout_given),
		FIELD("limit", HJ_U32, 0, 1 << 30, &d->limit, NULL),
		FIELD("priority", HJ_I32, -8, 7, &d->priority, NULL),
		FIELD("group", HJ_STR, 0, 64, &group, NULL),
		FIELD("replace", HJ_STR, 0, 64, &replace, NULL),
		FIELD("client", HJ_STR, 0, HJ_STR_MAX, &b->client, NULL),
		FIELD("host", HJ_STR, 0, HJ_STR_MAX, &b->host, NULL),
		FIELD("pid", HJ_U32, 0, UINT32_MAX, &b->pid, &b->pid_given),
	};

	semd__down__init(d);
	d->name = (char *)name;
	d->n = 1;
	if (!hj_fields(body, f, NFIELDS(f), NULL, err, errlen))
		return false;
	if (replace != NULL)
		d->replace = (char *)replace;
	if (group != NULL)
		d->group = (char *)group;
	return true;
}

/* Acquire several names: a DownMulti. */
static bool hj_acquire_many(const json_t *body, struct hj_body *b, char *err,
    size_t errlen)
{
	static const char *const skip[] = { "wants", NULL };
	Semd__DownMulti *m = &b->m.multi;
	const char *wname;
	json_t *wants, *w;
	size_t i, j;
	struct hj_field f[] = {
		FIELD("lease_ms", HJ_U32, 1, UINT32_MAX, &m->lease_ms, &b->lease_given),
		FIELD("timeout_ms", HJ_I64, -1, INT64_MAX / 4, &m->timeout_ms,
		    &b->timeout_given),
		FIELD("priority", HJ_I32, -8, 7, &m->priority, NULL),
		FIELD("client", HJ_STR, 0, HJ_STR_MAX, &b->client, NULL),
		FIELD("host", HJ_STR, 0, HJ_STR_MAX, &b->host, NULL),
		FIELD("pid", HJ_U32, 0, UINT32_MAX, &b->pid, &b->pid_given),
	};

	semd__down_multi__init(m);
	if (!hj_fields(body, f, NFIELDS(f), skip, err, errlen))
		return false;
	wants = body != NULL ? json_object_get(body, "wants") : NULL;
	if (!json_is_array(wants) || json_array_size(wants) == 0 ||
	    json_array_size(wants) > HJ_WANTS_MAX) {
		snprintf(err, errlen, "wants: an array of 1 to %d names",
		    HJ_WANTS_MAX);
		return false;
	}
	json_array_foreach(wants, i, w) {
		Semd__Want *x = &b->wants[i];
		struct hj_field wf[] = {
			FIELD("name", HJ_STR, 0, 255, &wname, NULL),
			FIELD("n", HJ_U32, 1, 1 << 30, &x->n, NULL),
			FIELD("limit", HJ_U32, 0, 1 << 30, &x->limit, NULL),
		};

		semd__want__init(x);
		x->n = 1;
		wname = NULL;
		if (!json_is_object(w)) {
			snprintf(err, errlen, "wants[%zu]: must be an object", i);
			return false;
		}
		if (!hj_fields(w, wf, NFIELDS(wf), NULL, err, errlen))
			return false;
		if (wname == NULL || *wname == '\0') {
			snprintf(err, errlen, "wants[%zu]: needs a name", i);
			return false;
		}
		for (j = 0; j < i; j++) {
			if (strcmp(b->wants[j].name, wname) == 0) {
				snprintf(err, errlen, "wants: %.255s twice", wname);
				return false;
			}
		}
		x->name = (char *)wname;
		b->wantp[i] = x;
	}
	m->n_wants = json_array_size(wants);
	m->wants = b->wantp;
	return true;
}

/* Map a body to its request. */
int hj_body(enum hj_kind kind, const char *name, const json_t *body,
    struct hj_body *b, char *err, size_t errlen)
{
	Semd__Request *q = &b->req;
	bool ok = true;
	uint64_t node = 0;
	const char *addr = NULL;

	memset(b, 0, offsetof(struct hj_body, wants));
	semd__request__init(q);
	switch (kind) {
	case HJ_ACQUIRE:
		ok = hj_acquire(name, body, b, err, errlen);
		q->op_case = SEMD__REQUEST__OP_DOWN;
		q->down = &b->m.down;
		break;
	case HJ_ACQUIRE_MANY:
		ok = hj_acquire_many(body, b, err, errlen);
		q->op_case = SEMD__REQUEST__OP_DOWN_MULTI;
		q->down_multi = &b->m.multi;
		break;
	case HJ_CREATE:
		ok = hj_create(name, body, b, err, errlen);
		q->op_case = SEMD__REQUEST__OP_CREATE;
		q->create = &b->m.create;
		break;
	case HJ_LIMIT: {
		bool given = false;
		struct hj_field f[] = { FIELD("limit", HJ_U32, 1, 1 << 30,
		    &b->m.limit.limit, &given) };

		semd__set_limit__init(&b->m.limit);
		b->m.limit.name = (char *)name;
		ok = hj_fields(body, f, NFIELDS(f), NULL, err, errlen);
		if (ok && !given) {
			snprintf(err, errlen, "limit: wanted");
			ok = false;
		}
		q->op_case = SEMD__REQUEST__OP_SET_LIMIT;
		q->set_limit = &b->m.limit;
		break;
	}
	case HJ_RATE: {
		bool given = false;
		Semd__SetRate *r = &b->m.rate;
		struct hj_field f[] = {
			FIELD("rate", HJ_U32, 0, 1 << 30, &r->rate, &given),
			FIELD("rate_period_ms", HJ_U32, 0, 86400000,
			    &r->rate_period_ms, NULL),
			FIELD("burst", HJ_U32, 0, 1 << 30, &r->burst, NULL),
		};

		semd__set_rate__init(r);
		r->name = (char *)name;
		ok = hj_fields(body, f, NFIELDS(f), NULL, err, errlen);
		if (ok && !given) {
			snprintf(err, errlen, "rate: wanted (0 removes it)");
			ok = false;
		}
		q->op_case = SEMD__REQUEST__OP_SET_RATE;
		q->set_rate = r;
		break;
	}
	case HJ_QUEUE: {
		bool given = false;
		struct hj_field f[] = { FIELD("max_waiters", HJ_U32, 0,
		    UINT32_MAX, &b->m.queue.max_waiters, &given) };

		semd__set_queue__init(&b->m.queue);
		b->m.queue.name = (char *)name;
		ok = hj_fields(body, f, NFIELDS(f), NULL, err, errlen);
		if (ok && !given) {
			snprintf(err, errlen, "max_waiters: wanted (0 removes the bound)");
			ok = false;
		}
		q->op_case = SEMD__REQUEST__OP_SET_QUEUE;
		q->set_queue = &b->m.queue;
		break;
	}
	case HJ_UP: {
		struct hj_field f[] = { FIELD("n", HJ_U32, 1, 1 << 30,
		    &b->m.up.n, NULL) };

		semd__up__init(&b->m.up);
		b->m.up.name = (char *)name;
		b->m.up.n = 1;
		ok = hj_fields(body, f, NFIELDS(f), NULL, err, errlen);
		q->op_case = SEMD__REQUEST__OP_UP;
		q->up = &b->m.up;
		break;
	}
	case HJ_RENEW: {
		struct hj_field f[] = { FIELD("lease_ms", HJ_U32, 0, UINT32_MAX,
		    &b->m.renew.lease_ms, &b->lease_given) };

		semd__renew__init(&b->m.renew);
		b->m.renew.name = (char *)name;
		ok = hj_fields(body, f, NFIELDS(f), NULL, err, errlen);
		q->op_case = SEMD__REQUEST__OP_RENEW;
		q->renew = &b->m.renew;
		break;
	}
	case HJ_MEMBER:
	case HJ_TRANSFER: {
		bool given = false;
		struct hj_field f[] = {
			FIELD("node_id", HJ_ID, 0, 0, &node, &given),
			FIELD("address", HJ_STR, 0, 255, &addr, NULL),
		};

		semd__cluster__init(&b->m.cluster);
		ok = hj_fields(body, f, kind == HJ_MEMBER ? 2 : 1, NULL, err,
		    errlen);
		if (ok && kind == HJ_MEMBER && (!given || node == 0 ||
		    node > 65535 || addr == NULL || *addr == '\0')) {
			snprintf(err, errlen, "node_id (1..65535) and address "
			    "(the new node's peer-listen HOST:PORT) wanted");
			ok = false;
		}
		if (ok && node > 65535) {
			snprintf(err, errlen, "node_id: 0..65535");
			ok = false;
		}
		b->m.cluster.action = kind == HJ_MEMBER ?
		    SEMD__CLUSTER__ACTION__ADD : SEMD__CLUSTER__ACTION__TRANSFER;
		b->m.cluster.node_id = node;
		if (addr != NULL)
			b->m.cluster.address = (char *)addr;
		q->op_case = SEMD__REQUEST__OP_CLUSTER;
		q->cluster = &b->m.cluster;
		break;
	}
	default:
		snprintf(err, errlen, "no such kind of body");
		ok = false;
	}
	return ok ? SEMD__CODE__OK : SEMD__CODE__INVALID_ARGUMENT;
}

/* --- writing -------------------------------------------------------------- */

/* A 64-bit identity: a decimal string. */
json_t *hj_id(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof buf, "%" PRIu64, v);
	return json_string(buf);
}

/*
 * A string of the state as JSON: its bytes if they are UTF-8 (names are;
 * a binary client's Hello may say anything of its client and host), else
 * with each byte that is not replaced by U+FFFD. Never NULL but when out
 * of memory.
 */
json_t *hj_string(const char *s)
{
	json_t *j;
	char *t;
	size_t i, n, o = 0;

	if (s == NULL)
		s = "";
	if ((j = json_string(s)) != NULL)
		return j;
	n = strlen(s);
	if ((t = malloc(3 * n + 1)) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x80) {
			t[o++] = s[i];
		} else {
			t[o++] = (char)0xef;	/* U+FFFD: not a byte to trust */
			t[o++] = (char)0xbf;
			t[o++] = (char)0xbd;
		}
	}
	t[o] = '\0';
	j = json_stringn(t, o);
	free(t);
	return j;
}

/* A 64-bit count that JavaScript reads exactly (it is: < 2^53 in practice). */
static json_t *hj_u64(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* Percent-encode s (RFC 3986 unreserved characters stay) into buf. */
static bool hj_pct(char *buf, size_t len, size_t *off, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s;

	if (p == NULL)
		return false;
	for (; *p != '\0'; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
		    *p == '_' || *p == '~') {
			if (*off + 1 >= len)
				return false;
			buf[(*off)++] = (char)*p;
		} else {
			if (*off + 3 >= len)
				return false;
			buf[(*off)++] = '%';
			buf[(*off)++] = hex[*p >> 4];
			buf[(*off)++] = hex[*p & 15];
		}
	}
	buf[*off] = '\0';
	return true;
}

/* "/v1/semaphores/" NAME suffix */
bool hj_href(char *buf, size_t len, const char *name, const char *suffix)
{
	static const char base[] = "/v1/semaphores/";
	size_t off = sizeof base - 1, n = strlen(suffix);

	if (len <= off)
		return false;
	memcpy(buf, base, off);
	if (!hj_pct(buf, len, &off, name) || len - off <= n)
		return false;
	memcpy(buf + off, suffix, n + 1);
	return true;
}

/* Set key to the string s unless it is empty. */
static void hj_set_str(json_t *o, const char *key, const char *s)
{
	if (s != NULL && *s != '\0')
		json_object_set_new(o, key, hj_string(s));
}

/* The href of a name's sub-resource, as a member. */
static void hj_set_href(json_t *o, const char *name, const char *suffix)
{
	char buf[1024];

	if (hj_href(buf, sizeof buf, name, suffix))
		json_object_set_new(o, "href", json_string(buf));
}

const char *hj_mode(int mode)
{
	return mode == SEMD__MODE__SIGNAL ? "signal" : mode == SEMD__MODE__RATE ?
	    "rate" : "owned";
}

/* A grant: a permit (permit != 0) or a signal/rate grant. */
json_t *hj_grant(const char *name, uint64_t permit, uint64_t token, uint32_t n,
    uint64_t waited_us, uint32_t lease_ms, uint64_t expires_ms)
{
	char suffix[40];
	json_t *o = json_object();

	if (o == NULL)
		return NULL;
	json_object_set_new(o, "name", hj_string(name));
	if (permit != 0)
		json_object_set_new(o, "permit", hj_id(permit));
	json_object_set_new(o, "token", hj_id(token));
	json_object_set_new(o, "n", json_integer(n));
	if (permit != 0 && lease_ms > 0) {
		json_object_set_new(o, "lease_ms", json_integer(lease_ms));
		json_object_set_new(o, "expires_ms", hj_u64(expires_ms));
	}
	json_object_set_new(o, "waited_ms", hj_u64(waited_us / 1000));
	if (permit != 0) {
		snprintf(suffix, sizeof suffix, "/permits/%" PRIu64, permit);
		hj_set_href(o, name, suffix);
	}
	return o;
}

/* --- the grant as text ---------------------------------------------------- */

/* A text being written: buf[0..off), room for len; ok until it overflows. */
struct hj_text {
	char	*buf;
	size_t	len;
	size_t	off;
	bool	ok;
};

static void hj_put(struct hj_text *t, const char *p, size_t n)
{
	if (!t->ok || t->len - t->off <= n) {
		t->ok = false;
		return;
	}
	memcpy(t->buf + t->off, p, n);
	t->off += n;
}

/* A signed decimal, as jansson writes an integer. */
static void hj_put_int(struct hj_text *t, int64_t v)
{
	char d[24];
	size_t i = sizeof d;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		d[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		d[--i] = '-';
	hj_put(t, d + i, sizeof d - i);
}

/* v in decimal at d (room for 21): its length. */
static size_t hj_dec(char *d, uint64_t v)
{
	char t[20];
	size_t i = sizeof t, n;

	do {
		t[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	n = sizeof t - i;
	memcpy(d, t + i, n);
	d[n] = '\0';
	return n;
}

/* The length of the UTF-8 sequence at p (jansson's rules), or 0. */
static size_t hj_utf8_len(const unsigned char *p)
{
	size_t n, i;
	uint32_t c;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, c = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, c = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, c = p[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) ||
	    (n == 3 && c < 0x800) || (n == 4 && c < 0x10000))
		return 0;
	return n;
}

/* A string as hj_string() makes it and jansson writes it. */
static void hj_put_str(struct hj_text *t, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
	bool utf8 = true;
	char e[6];
	size_t i, n;

	for (i = 0; p[i] != '\0'; i += n) {
		if ((n = hj_utf8_len(p + i)) == 0) {
			utf8 = false;
			break;
		}
	}
	hj_put(t, "\"", 1);
	for (; *p != '\0'; p++) {
		/* a run that needs no escape, at once */
		for (n = 0; p[n] >= 0x20 && p[n] != '"' && p[n] != '\\' &&
		    (p[n] < 0x80 || utf8); n++)
			;
		if (n > 0) {
			hj_put(t, (const char *)p, n);
			p += n - 1;
		} else if (*p >= 0x80 && !utf8) {
			hj_put(t, "\xef\xbf\xbd", 3);	/* U+FFFD */
		} else if (*p == '"' || *p == '\\') {
			e[0] = '\\';
			e[1] = (char)*p;
			hj_put(t, e, 2);
		} else {		/* a control character */
			e[0] = '\\';
			e[1] = *p == '\b' ? 'b' : *p == '\f' ? 'f' : *p == '\n' ? 'n' :
			    *p == '\r' ? 'r' : *p == '\t' ? 't' : 'u';
			if (e[1] != 'u') {
				hj_put(t, e, 2);
				continue;
			}
			e[2] = '0';
			e[3] = '0';
			e[4] = hex[*p >> 4];
			e[5] = hex[*p & 15];
			hj_put(t, e, 6);
		}
	}
	hj_put(t, "\"", 1);
}

/* ,"key": (a key that needs no escape) */
static void hj_put_key(struct hj_text *t, const char *key)
{
	if (t->off > 1)
		hj_put(t, ",", 1);
	hj_put(t, "\"", 1);
	hj_put(t, key, strlen(key));
	hj_put(t, "\":", 2);
}

size_t hj_grant_text(char *buf, size_t len, char *href, size_t hlen,
    const char *name, uint64_t permit, uint64_t token, uint32_t n,
    uint64_t waited_us, uint32_t lease_ms, uint64_t expires_ms)
{
	struct hj_text t = { buf, len, 0, true };
	char suffix[40], id[24];

	href[0] = '\0';
	hj_put(&t, "{", 1);
	hj_put_key(&t, "name");
	hj_put_str(&t, name);
	if (permit != 0) {
		hj_put_key(&t, "permit");
		hj_dec(id, permit);
		hj_put_str(&t, id);
	}
	hj_put_key(&t, "token");
	hj_dec(id, token);
	hj_put_str(&t, id);
	hj_put_key(&t, "n");
	hj_put_int(&t, n);
	if (permit != 0 && lease_ms > 0) {
		hj_put_key(&t, "lease_ms");
		hj_put_int(&t, lease_ms);
		hj_put_key(&t, "expires_ms");
		hj_put_int(&t, expires_ms > (uint64_t)INT64_MAX ? INT64_MAX :
		    (int64_t)expires_ms);
	}
	hj_put_key(&t, "waited_ms");
	hj_put_int(&t, (int64_t)(waited_us / 1000));
	if (permit != 0) {
		static const char sub[] = "/permits/";

		memcpy(suffix, sub, sizeof sub);
		hj_dec(suffix + sizeof sub - 1, permit);
		if (hj_href(href, hlen, name, suffix)) {
			hj_put_key(&t, "href");
			hj_put_str(&t, href);
		} else {
			href[0] = '\0';
		}
	}
	hj_put(&t, "}", 1);
	if (!t.ok)
		return 0;
	buf[t.off] = '\0';
	return t.off;
}

/* A page of List. */
json_t *hj_list(const Semd__ListReply *l)
{
	json_t *o = json_object(), *items = json_array(), *e;
	size_t i;

	if (o == NULL || items == NULL) {
		json_decref(o);
		json_decref(items);
		return NULL;
	}
	for (i = 0; i < l->n_entries; i++) {
		const Semd__Summary *s = l->entries[i];

		if ((e = json_object()) == NULL)
			continue;
		json_object_set_new(e, "name", hj_string(s->name));
		json_object_set_new(e, "limit", json_integer(s->limit));
		json_object_set_new(e, "available", json_integer(s->available));
		json_object_set_new(e, "mode", hj_string(hj_mode(s->mode)));
		json_object_set_new(e, "holders", json_integer(s->holders));
		json_object_set_new(e, "waiters", json_integer(s->waiters));
		if (s->rate > 0) {
			json_object_set_new(e, "rate", json_integer(s->rate));
			json_object_set_new(e, "rate_period_ms",
			    json_integer(s->rate_period_ms));
		}
		hj_set_href(e, s->name, "");
		json_array_append_new(items, e);
	}
	json_object_set_new(o, "items", items);
	hj_set_str(o, "next", l->next);
	return o;
}

/* Who a holder, waiter or event names: principal, client, host, pid. */
static void hj_who(json_t *o, const char *principal, const char *client,
    const char *host, uint32_t pid)
{
	json_object_set_new(o, "principal", hj_string(principal != NULL ?
	    principal : ""));
	hj_set_str(o, "client", client);
	hj_set_str(o, "host", host);
	if (pid != 0)
		json_object_set_new(o, "pid", json_integer(pid));
}

/* A holder (name: its semaphore, for the href). */
json_t *hj_holder(const Semd__Holder *h, const char *name)
{
	char suffix[40];
	json_t *o = json_object();

	if (o == NULL)
		return NULL;
	if (h->name != NULL && *h->name != '\0')
		json_object_set_new(o, "name", hj_string(h->name));
	json_object_set_new(o, "permit", hj_id(h->permit_id));
	json_object_set_new(o, "token", hj_id(h->token));
	json_object_set_new(o, "n", json_integer(h->n));
	hj_who(o, h->principal, h->client_name, h->host, h->pid);
	json_object_set_new(o, "since_ms", hj_u64(h->since_ms));
	json_object_set_new(o, "detached", json_boolean(h->detached));
	json_object_set_new(o, "expires_ms", hj_u64(h->expires_ms));
	snprintf(suffix, sizeof suffix, "/permits/%" PRIu64, h->permit_id);
	hj_set_href(o, name != NULL ? name : h->name, suffix);
	return o;
}

/* A waiter in a queue. */
static json_t *hj_queued(const Semd__Waiter *w)
{
	json_t *o = json_object();

	if (o == NULL)
		return NULL;
	json_object_set_new(o, "seq", hj_id(w->seq));
	json_object_set_new(o, "request", hj_id(w->request_id));
	json_object_set_new(o, "n", json_integer(w->n));
	hj_who(o, w->principal, w->client_name, w->host, w->pid);
	json_object_set_new(o, "since_ms", hj_u64(w->since_ms));
	json_object_set_new(o, "deadline_ms", hj_u64(w->deadline_ms));
	json_object_set_new(o, "detached", json_boolean(w->detached));
	hj_set_str(o, "replace", w->replace);
	json_object_set_new(o, "priority", json_integer(w->priority));
	hj_set_str(o, "group", w->group);
	return o;
}

/*
 * A histogram as Stats' are shown: count, sum_ms, the buckets that are not
 * empty, each with its upper bound (le_ms; null for the last, unbounded).
 */
static json_t *hj_hist(const Semd__Histogram *h)
{
	json_t *o = json_object(), *bs = json_array(), *b;
	size_t i;

	if (o == NULL || bs == NULL) {
		json_decref(o);
		json_decref(bs);
		return NULL;
	}
	json_object_set_new(o, "count", hj_u64(h->count));
	json_object_set_new(o, "sum_ms", hj_u64(h->sum_ms));
	for (i = 0; i < h->n_buckets && i < 64; i++) {
		if (h->buckets[i] == 0 || (b = json_object()) == NULL)
			continue;
		json_object_set_new(b, "le_ms", i + 1 == h->n_buckets ?
		    json_null() : hj_u64((uint64_t)1 << i));
		json_object_set_new(b, "count", hj_u64(h->buckets[i]));
		json_array_append_new(bs, b);
	}
	json_object_set_new(o, "buckets", bs);
	return o;
}

/* Info: a name, its holders and its queue. */
json_t *hj_info(const Semd__InfoReply *in)
{
	json_t *o = json_object(), *hs = json_array(), *ws = json_array(), *gs;
	size_t i;

	if (o == NULL || hs == NULL || ws == NULL) {
		json_decref(o);
		json_decref(hs);
		json_decref(ws);
		return NULL;
	}
	json_object_set_new(o, "name", hj_string(in->name));
	json_object_set_new(o, "limit", json_integer(in->limit));
	json_object_set_new(o, "available", json_integer(in->available));
	json_object_set_new(o, "mode", hj_string(hj_mode(in->mode)));
	json_object_set_new(o, "auto_created", json_boolean(in->auto_created));
	json_object_set_new(o, "last_token", hj_id(in->last_token));
	json_object_set_new(o, "holders_total", json_integer(in->holders_total));
	json_object_set_new(o, "waiters_total", json_integer(in->waiters_total));
	for (i = 0; i < in->n_holders; i++)
		json_array_append_new(hs, hj_holder(in->holders[i], in->name));
	for (i = 0; i < in->n_waiters; i++)
		json_array_append_new(ws, hj_queued(in->waiters[i]));
	json_object_set_new(o, "holders", hs);
	json_object_set_new(o, "waiters", ws);
	if (in->next_permit != 0)
		json_object_set_new(o, "next_holder", hj_id(in->next_permit));
	if (in->next_waiter != 0)
		json_object_set_new(o, "next_waiter", hj_id(in->next_waiter));
	if (in->rate > 0) {
		json_object_set_new(o, "rate", json_integer(in->rate));
		json_object_set_new(o, "rate_period_ms",
		    json_integer(in->rate_period_ms));
		json_object_set_new(o, "burst", json_integer(in->burst));
		json_object_set_new(o, "tokens",
		    json_real((double)in->tokens_nano / 1e9));
		json_object_set_new(o, "next_token_ms", hj_u64(in->next_token_ms));
	}
	json_object_set_new(o, "max_waiters", json_integer(in->max_waiters));
	json_object_set_new(o, "share", hj_string(
	    in->share == SEMD__SHARE_BY__SHARE_PRINCIPAL ? "principal" :
	    in->share == SEMD__SHARE_BY__SHARE_KEY ? "key" : "none"));
	if (in->n_groups > 0 && (gs = json_array()) != NULL) {
		for (i = 0; i < in->n_groups; i++) {
			const Semd__GroupInfo *g = in->groups[i];
			json_t *e = json_object();

			if (e == NULL)
				continue;
			json_object_set_new(e, "group", hj_string(g->group));
			json_object_set_new(e, "weight", json_integer(g->weight));
			json_object_set_new(e, "share", json_integer(g->share));
			json_object_set_new(e, "held", json_integer(g->held));
			json_object_set_new(e, "waiting", json_integer(g->waiting));
			json_array_append_new(gs, e);
		}
		json_object_set_new(o, "groups", gs);
	}
	if (in->wait != NULL && in->hold != NULL)
		json_object_set_new(o, "histograms", json_pack("{s:o,s:o}",
		    "wait", hj_hist(in->wait), "hold", hj_hist(in->hold)));
	return o;
}

/* One session of a Sessions page. */
static json_t *hj_session(const Semd__SessionInfo *s)
{
	json_t *e = json_object();

	if (e == NULL)
		return NULL;
	json_object_set_new(e, "id", hj_id(s->id));
	hj_who(e, s->principal, s->client_name, s->host, s->pid);
	json_object_set_new(e, "lease_ms", json_integer(s->lease_ms));
	json_object_set_new(e, "holds", json_integer(s->holds));
	json_object_set_new(e, "waiters", json_integer(s->waiters));
	json_object_set_new(e, "heard_ms", hj_u64(s->heard_ms));
	json_object_set_new(e, "connected", json_boolean(s->connected));
	return e;
}

/* Sessions: a page of them (NULL: out of memory). */
json_t *hj_sessions(const Semd__SessionsReply *sr)
{
	json_t *items = json_array(), *o;
	size_t i;

	for (i = 0; items != NULL && i < sr->n_sessions; i++)
		json_array_append_new(items, hj_session(sr->sessions[i]));
	/* "o" takes items over, also when the pack fails */
	o = json_pack("{s:o,s:I}", "items", items, "total", (json_int_t)sr->total);
	if (o != NULL && sr->next != 0)
		json_object_set_new(o, "next", hj_id(sr->next));
	return o;
}

/* Holds: a principal's permits. */
json_t *hj_holds(const Semd__HoldsReply *h)
{
	json_t *o = json_object(), *items = json_array();
	size_t i;

	if (o == NULL || items == NULL) {
		json_decref(o);
		json_decref(items);
		return NULL;
	}
	for (i = 0; i < h->n_holds; i++)
		json_array_append_new(items, hj_holder(h->holds[i], NULL));
	json_object_set_new(o, "items", items);
	if (h->next_permit != 0)
		json_object_set_new(o, "next", hj_id(h->next_permit));
	json_object_set_new(o, "total", json_integer(h->total));
	return o;
}

/*
 * Stats: the counters by name; those of a histogram (NAME_count,
 * NAME_sum_ms, NAME_ms_le_N, NAME_ms_le_inf) also as one histogram.
 */
json_t *hj_stats(const Semd__StatsReply *s)
{
	json_t *o = json_object(), *cs = json_object(), *hs = json_object();
	json_t *h, *b;
	char base[64];
	const char *name, *p;
	size_t i;

	if (o == NULL || cs == NULL || hs == NULL) {
		json_decref(o);
		json_decref(cs);
		json_decref(hs);
		return NULL;
	}
	for (i = 0; i < s->n_counters; i++) {
		name = s->counters[i]->name;
		json_object_set_new(cs, name, hj_u64(s->counters[i]->value));
		if ((p = strstr(name, "_ms_le_")) == NULL &&
		    (p = strstr(name, "_count")) == NULL &&
		    (p = strstr(name, "_sum_ms")) == NULL)
			continue;
		if ((size_t)(p - name) >= sizeof base ||
		    (strcmp(p, "_count") != 0 && strcmp(p, "_sum_ms") != 0 &&
		    strncmp(p, "_ms_le_", 7) != 0))
			continue;
		memcpy(base, name, (size_t)(p - name));
		base[p - name] = '\0';
		if ((h = json_object_get(hs, base)) == NULL) {
			h = json_object();
			json_object_set_new(h, "count", json_integer(0));
			json_object_set_new(h, "sum_ms", json_integer(0));
			json_object_set_new(h, "buckets", json_array());
			json_object_set_new(hs, base, h);
		}
		if (strcmp(p, "_count") == 0) {
			json_object_set_new(h, "count", hj_u64(s->counters[i]->value));
		} else if (strcmp(p, "_sum_ms") == 0) {
			json_object_set_new(h, "sum_ms", hj_u64(s->counters[i]->value));
		} else if ((b = json_object()) != NULL) {
			uint64_t le = 0;

			json_object_set_new(b, "le_ms", strcmp(p + 7, "inf") == 0 ||
			    !hj_read_id(p + 7, &le) ? json_null() : hj_u64(le));
			json_object_set_new(b, "count", hj_u64(s->counters[i]->value));
			json_array_append_new(json_object_get(h, "buckets"), b);
		}
	}
	/* A counter that only looked like one of a histogram: none has all. */
	json_object_set_new(o, "counters", cs);
	json_object_set_new(o, "histograms", hs);
	return o;
}

/* Cluster STATUS. */
json_t *hj_cluster(const Semd__ClusterStatus *c)
{
	json_t *o = json_object(), *ns = json_array(), *e;
	size_t i;

	if (o == NULL || ns == NULL) {
		json_decref(o);
		json_decref(ns);
		return NULL;
	}
	json_object_set_new(o, "node_id", hj_u64(c->node_id));
	json_object_set_new(o, "state", hj_string(c->state));
	json_object_set_new(o, "term", hj_u64(c->term));
	json_object_set_new(o, "commit_index", hj_u64(c->commit_index));
	json_object_set_new(o, "applied_index", hj_u64(c->applied_index));
	json_object_set_new(o, "last_index", hj_u64(c->last_index));
	json_object_set_new(o, "leader_id", hj_u64(c->leader_id));
	hj_set_str(o, "leader", c->leader);
	for (i = 0; i < c->n_nodes; i++) {
		if ((e = json_object()) == NULL)
			continue;
		json_object_set_new(e, "id", hj_u64(c->nodes[i]->id));
		json_object_set_new(e, "address", hj_string(c->nodes[i]->address));
		json_object_set_new(e, "role", hj_string(c->nodes[i]->role));
		json_object_set_new(e, "match_index", hj_u64(c->nodes[i]->match_index));
		json_object_set_new(e, "lag", hj_u64(c->nodes[i]->lag));
		json_array_append_new(ns, e);
	}
	json_object_set_new(o, "nodes", ns);
	return o;
}

/* The kind of a watch event, as its SSE event name. */
const char *hj_event_kind(int kind)
{
	static const char *const kinds[] = {
		[SEMD__EVENT_KIND__EVENT_WAIT] = "wait",
		[SEMD__EVENT_KIND__EVENT_GRANT] = "grant",
		[SEMD__EVENT_KIND__EVENT_RELEASE] = "release",
		[SEMD__EVENT_KIND__EVENT_TIMEOUT] = "timeout",
		[SEMD__EVENT_KIND__EVENT_CANCEL] = "cancel",
		[SEMD__EVENT_KIND__EVENT_LIMIT] = "limit",
		[SEMD__EVENT_KIND__EVENT_RATE] = "rate",
		[SEMD__EVENT_KIND__EVENT_CREATE] = "create",
		[SEMD__EVENT_KIND__EVENT_DELETE] = "delete",
		[SEMD__EVENT_KIND__EVENT_DEADLOCK] = "deadlock",
		[SEMD__EVENT_KIND__EVENT_QUEUE] = "queue",
		[SEMD__EVENT_KIND__EVENT_REPLACED] = "replaced",
		[SEMD__EVENT_KIND__EVENT_CLUSTER] = "cluster",
	};

	return kind > 0 && (size_t)kind < sizeof kinds / sizeof kinds[0] &&
	    kinds[kind] != NULL ? kinds[kind] : "event";
}

/*
 * A cluster event: its leader, term and members ("ID ROLE" each, comma-
 * separated, as the state has them) as [{id, role}].
 */
static json_t *hj_cluster_event(const Semd__WatchEvent *e)
{
	json_t *o = json_object(), *ms = json_array(), *m;
	const char *p = e->members != NULL ? e->members : "";
	char role[16];
	uint64_t id;
	int n;

	if (o == NULL || ms == NULL) {
		json_decref(o);
		json_decref(ms);
		return NULL;
	}
	json_object_set_new(o, "revision", hj_id(e->revision));
	json_object_set_new(o, "kind", hj_string("cluster"));
	json_object_set_new(o, "time_ms", hj_u64(e->time_ms));
	json_object_set_new(o, "leader_id", hj_u64(e->leader_id));
	hj_set_str(o, "leader", e->leader);
	json_object_set_new(o, "term", hj_u64(e->term));
	while (*p != '\0' && sscanf(p, "%" SCNu64 " %15[a-z]%n", &id, role,
	    &n) == 2) {
		if ((m = json_pack("{s:I,s:s}", "id", (json_int_t)id, "role",
		    role)) != NULL)
			json_array_append_new(ms, m);
		p += n;
		p += *p == ',';
	}
	json_object_set_new(o, "members", ms);
	return o;
}

/* A watch event. */
json_t *hj_event(const Semd__WatchEvent *e)
{
	json_t *o;

	if (e->kind == SEMD__EVENT_KIND__EVENT_CLUSTER)
		return hj_cluster_event(e);
	if ((o = json_object()) == NULL)
		return NULL;
	json_object_set_new(o, "revision", hj_id(e->revision));
	json_object_set_new(o, "kind", hj_string(hj_event_kind(e->kind)));
	json_object_set_new(o, "name", hj_string(e->name));
	json_object_set_new(o, "time_ms", hj_u64(e->time_ms));
	json_object_set_new(o, "n", json_integer(e->n));
	if (e->permit_id != 0)
		json_object_set_new(o, "permit", hj_id(e->permit_id));
	if (e->token != 0)
		json_object_set_new(o, "token", hj_id(e->token));
	if (e->request_id != 0)
		json_object_set_new(o, "request", hj_id(e->request_id));
	hj_set_str(o, "principal", e->principal);
	hj_set_str(o, "client", e->client_name);
	hj_set_str(o, "host", e->host);
	if (e->pid != 0)
		json_object_set_new(o, "pid", json_integer(e->pid));
	json_object_set_new(o, "holders", json_integer(e->holders));
	json_object_set_new(o, "waiters", json_integer(e->waiters));
	json_object_set_new(o, "available", json_integer(e->available));
	json_object_set_new(o, "limit", json_integer(e->limit));
	if (e->rate > 0) {
		json_object_set_new(o, "rate", json_integer(e->rate));
		json_object_set_new(o, "rate_period_ms",
		    json_integer(e->rate_period_ms));
		json_object_set_new(o, "burst", json_integer(e->burst));
	}
	hj_set_str(o, "reason", e->reason);
	if (e->max_waiters > 0)
		json_object_set_new(o, "max_waiters", json_integer(e->max_waiters));
	return o;
}

/* Where: a waiter's places. */
json_t *hj_places(const Semd__WhereReply *w)
{
	json_t *a = json_array(), *e;
	size_t i;

	if (a == NULL)
		return NULL;
	for (i = 0; i < w->n_places; i++) {
		const Semd__Place *p = w->places[i];

		if ((e = json_object()) == NULL)
			continue;
		json_object_set_new(e, "name", hj_string(p->name));
		json_object_set_new(e, "n", json_integer(p->n));
		json_object_set_new(e, "position", json_integer(p->position));
		json_object_set_new(e, "waiters", json_integer(p->waiters));
		json_object_set_new(e, "held", hj_u64(p->held));
		json_object_set_new(e, "limit", json_integer(p->limit));
		json_object_set_new(e, "available", json_integer(p->available));
		json_array_append_new(a, e);
	}
	return a;
}
