/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/fuzz_http_json.c - the HTTP front door's JSON mapping
 * (daemon/http/http_json.c), both ways.
 *
 * The input: a byte k, a byte l, l bytes of a name, then the rest. The
 * rest is read as the body of an HTTP request of kind k % HJ_NKINDS for
 * that name (http_json_load, hj_body): whatever it holds, the mapping
 * either refuses it with a message or makes a request of that kind that
 * packs and unpacks to the same bytes (a NUL in a string, \u0000, jansson
 * refuses with the broken JSON). The
 * rest is also read as a semd.Reply, as the daemon could send one, and
 * every reply-to-JSON mapping is run on it: each makes JSON that dumps
 * (valid UTF-8 whatever the strings held) and reads back as the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/http_json.h"
#include "proto/semd.pb-c.h"
#include "tests/fuzz/fuzz.h"

/* The op case a kind of body makes. */
static int fuzz_op_of(enum hj_kind k)
{
	switch (k) {
	case HJ_ACQUIRE: return SEMD__REQUEST__OP_DOWN;
	case HJ_ACQUIRE_MANY: return SEMD__REQUEST__OP_DOWN_MULTI;
	case HJ_CREATE: return SEMD__REQUEST__OP_CREATE;
	case HJ_LIMIT: return SEMD__REQUEST__OP_SET_LIMIT;
	case HJ_RATE: return SEMD__REQUEST__OP_SET_RATE;
	case HJ_QUEUE: return SEMD__REQUEST__OP_SET_QUEUE;
	case HJ_UP: return SEMD__REQUEST__OP_UP;
	case HJ_RENEW: return SEMD__REQUEST__OP_RENEW;
	default: return SEMD__REQUEST__OP_CLUSTER;
	}
}

/* A body to a request: refused with a message, or a request that packs. */
static void fuzz_body(enum hj_kind k, const char *name, const uint8_t *p,
    size_t n)
{
	struct hj_body *b = malloc(sizeof *b);
	Semd__Request *again;
	uint8_t *buf, *buf2;
	char err[256];
	json_t *j;
	size_t m, i;

	FUZZ_ASSERT(b != NULL);
	err[0] = '\0';
	j = http_json_load((const char *)p, n, err, sizeof err);
	if (j == NULL) {
		FUZZ_ASSERT(err[0] != '\0');
		free(b);
		return;
	}
	FUZZ_ASSERT(json_is_object(j));
	if (hj_body(k, name, j, b, err, sizeof err) != SEMD__CODE__OK) {
		FUZZ_ASSERT(err[0] != '\0');
		json_decref(j);
		free(b);
		return;
	}
	FUZZ_ASSERT((int)b->req.op_case == fuzz_op_of(k));
	if (k == HJ_ACQUIRE_MANY) {
		FUZZ_ASSERT(b->m.multi.n_wants >= 1 &&
		    b->m.multi.n_wants <= HJ_WANTS_MAX);
		for (i = 0; i < b->m.multi.n_wants; i++)
			FUZZ_ASSERT(b->m.multi.wants[i]->name[0] != '\0');
	}
	m = semd__request__get_packed_size(&b->req);
	buf = malloc(m + 1);
	FUZZ_ASSERT(buf != NULL);
	FUZZ_ASSERT(semd__request__pack(&b->req, buf) == m);
	again = semd__request__unpack(NULL, m, buf);
	FUZZ_ASSERT(again != NULL);
	FUZZ_ASSERT(semd__request__get_packed_size(again) == m);
	buf2 = malloc(m + 1);
	FUZZ_ASSERT(buf2 != NULL);
	FUZZ_ASSERT(semd__request__pack(again, buf2) == m);
	FUZZ_ASSERT(memcmp(buf, buf2, m) == 0);
	semd__request__free_unpacked(again, NULL);
	free(buf2);
	free(buf);
	json_decref(j);
	free(b);
}

/* JSON made from a reply dumps, and reads back the same. */
static void fuzz_dump(json_t *j)
{
	json_error_t je;
	json_t *back;
	char *s;

	FUZZ_ASSERT(j != NULL);
	s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	FUZZ_ASSERT(s != NULL);
	back = json_loads(s, JSON_DECODE_ANY, &je);
	FUZZ_ASSERT(back != NULL);
	FUZZ_ASSERT(json_equal(j, back));
	json_decref(back);
	free(s);
	json_decref(j);
}

/* The grant written as text is what jansson writes of it as an object. */
static void fuzz_grant_text(const char *name, const Semd__Grant *g)
{
	static const uint32_t leases[] = { 0, 1000, UINT32_MAX };
	char text[2048], href[1024], *want;
	json_t *j;
	size_t i, n;

	for (i = 0; i < sizeof leases / sizeof leases[0]; i++) {
		j = hj_grant(name, g->permit_id, g->token, g->n, g->waited_us,
		    leases[i], g->token);
		FUZZ_ASSERT(j != NULL);
		want = json_dumps(j, JSON_COMPACT);
		FUZZ_ASSERT(want != NULL);
		n = hj_grant_text(text, sizeof text, href, sizeof href, name,
		    g->permit_id, g->token, g->n, g->waited_us, leases[i],
		    g->token);
		FUZZ_ASSERT(n == 0 || (n == strlen(want) &&
		    memcmp(text, want, n) == 0));
		FUZZ_ASSERT(n > 0 || strlen(want) >= sizeof text - 1);
		free(want);
		json_decref(j);
	}
}

/* Every reply-to-JSON mapping of the reply in p[0..n), if it is one. */
static void fuzz_reply(const uint8_t *p, size_t n)
{
	Semd__Reply *r = semd__reply__unpack(NULL, n, p);
	char buf[1024];
	size_t i;

	if (r == NULL)
		return;
	fuzz_dump(hj_problem(r->code, hj_status(r->code), r->message, "/v1/x"));
	switch (r->body_case) {
	case SEMD__REPLY__BODY_GRANT:
		fuzz_dump(hj_grant(r->message, r->grant->permit_id,
		    r->grant->token, r->grant->n, r->grant->waited_us, 1000, 1));
		fuzz_grant_text(r->message, r->grant);
		break;
	case SEMD__REPLY__BODY_INFO:
		fuzz_dump(hj_info(r->info));
		for (i = 0; i < r->info->n_holders; i++)
			fuzz_dump(hj_holder(r->info->holders[i], r->info->name));
		break;
	case SEMD__REPLY__BODY_LIST:
		fuzz_dump(hj_list(r->list));
		break;
	case SEMD__REPLY__BODY_STATS:
		fuzz_dump(hj_stats(r->stats));
		break;
	case SEMD__REPLY__BODY_HOLDS:
		fuzz_dump(hj_holds(r->holds));
		break;
	case SEMD__REPLY__BODY_CLUSTER:
		fuzz_dump(hj_cluster(r->cluster));
		break;
	case SEMD__REPLY__BODY_WATCH_EVENT:
		fuzz_dump(hj_event(r->watch_event));
		break;
	case SEMD__REPLY__BODY_WHERE:
		fuzz_dump(hj_places(r->where));
		break;
	default:
		break;
	}
	if (hj_href(buf, sizeof buf, r->message, "/permits/1"))
		FUZZ_ASSERT(strncmp(buf, "/v1/semaphores/", 15) == 0 &&
		    strchr(buf + 15, '/') == strstr(buf + 15, "/permits/1"));
	semd__reply__free_unpacked(r, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[256];
	size_t l;

	if (size < 2)
		return 0;
	l = data[1];
	if (size < 2 + l)
		return 0;
	memcpy(name, data + 2, l);
	name[l] = '\0';
	fuzz_body((enum hj_kind)(data[0] % HJ_NKINDS), name, data + 2 + l,
	    size - 2 - l);
	fuzz_reply(data + 2 + l, size - 2 - l);
	return 0;
}
