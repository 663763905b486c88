/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_json.h - JSON to requests, replies to JSON: the pure
 * part of the HTTP front door (no I/O, no libevent), which the fuzzer
 * drives (tests/fuzz/fuzz_http_json.c).
 *
 * A body is a JSON object whose members are checked one by one against
 * the kind's table: an unknown member, a member of another type, a number
 * out of range, a string too long are each refused with a message that
 * names it. jansson has refused broken JSON, duplicate members and NUL
 * bytes before (http_json_load). 64-bit identities are written as decimal
 * strings and read as strings or numbers.
 */
#ifndef SEMD_HTTP_JSON_H
#define SEMD_HTTP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "proto/semd.pb-c.h"

#define HJ_WANTS_MAX	16	/* as DownMulti */
#define HJ_WEIGHTS_MAX	64	/* the groups a name lists (the state's bound) */
#define HJ_STR_MAX	255	/* a client, host, group, replace key */
#define HJ_DEPTH_MAX	8	/* nesting of a body */

/* The kinds of body, one a request. */
enum hj_kind {
	HJ_ACQUIRE,		/* Down */
	HJ_ACQUIRE_MANY,	/* DownMulti */
	HJ_CREATE,		/* Create */
	HJ_LIMIT,		/* SetLimit */
	HJ_RATE,		/* SetRate */
	HJ_QUEUE,		/* SetQueue */
	HJ_UP,			/* Up */
	HJ_RENEW,		/* Renew */
	HJ_MEMBER,		/* Cluster ADD */
	HJ_TRANSFER,		/* Cluster TRANSFER */
	HJ_NKINDS
};

/*
 * A body mapped to a request: req points into the rest, and the strings
 * into the JSON it came from (which must live as long).
 */
struct hj_body {
	Semd__Request		req;
	union {
		Semd__Down	down;
		Semd__DownMulti	multi;
		Semd__Create	create;
		Semd__SetLimit	limit;
		Semd__SetRate	rate;
		Semd__SetQueue	queue;
		Semd__Up	up;
		Semd__Renew	renew;
		Semd__Cluster	cluster;
	} m;
	/* Besides the request: who the caller is, and what it asked of HTTP. */
	bool			lease_given;
	bool			timeout_given;
	const char		*client;
	const char		*host;
	uint32_t		pid;
	bool			pid_given;
	/* Last, and not cleared by hj_body(): each entry is set as it is used. */
	Semd__Want		wants[HJ_WANTS_MAX];
	Semd__Want		*wantp[HJ_WANTS_MAX];
	Semd__GroupWeight	weights[HJ_WEIGHTS_MAX];
	Semd__GroupWeight	*weightp[HJ_WEIGHTS_MAX];
};

/*
 * Parse len bytes of a body: a JSON object (an empty body is {}), no
 * duplicate member, no NUL, nested at most HJ_DEPTH_MAX. NULL with err.
 */
json_t *http_json_load(const char *p, size_t len, char *err, size_t errlen);
/*
 * Map body (NULL: none) of kind to b->req, for the name of the path (kinds
 * on one name). SEMD__CODE__OK, or SEMD__CODE__INVALID_ARGUMENT with err.
 */
int hj_body(enum hj_kind kind, const char *name, const json_t *body,
    struct hj_body *b, char *err, size_t errlen);

/* semctl's name, code and exit code of a failure, and its HTTP status. */
const char *hj_error_name(int code);
int hj_error_code(int code);
int hj_error_exit(int code);
int hj_status(int code);
const char *hj_error_title(int code);
/* An RFC 9457 problem. */
json_t *hj_problem(int code, int status, const char *detail,
    const char *instance);

/* A string of the state as JSON (bytes that are no UTF-8 replaced). */
json_t *hj_string(const char *s);
/* A 64-bit identity as JSON (a decimal string); read one (string or number). */
json_t *hj_id(uint64_t v);
bool hj_read_id(const char *s, uint64_t *v);
/*
 * The path of a name's resource: "/v1/semaphores/" NAME (percent-encoded)
 * and suffix, into buf. False if it does not fit.
 */
bool hj_href(char *buf, size_t len, const char *name, const char *suffix);

/* Replies as JSON (new references; NULL when out of memory). */
json_t *hj_grant(const char *name, uint64_t permit, uint64_t token, uint32_t n,
    uint64_t waited_us, uint32_t lease_ms, uint64_t expires_ms);
/*
 * The same grant written straight as compact JSON text (the answer to an
 * acquire, the hot path: jansson's objects and its writer cost more than
 * the rest of the request), byte for byte what json_dumpb(hj_grant(...),
 * JSON_COMPACT) writes (the fuzz target checks it), and its href into
 * href (empty without a permit). Its length, or 0 if it does not fit.
 */
size_t hj_grant_text(char *buf, size_t len, char *href, size_t hlen,
    const char *name, uint64_t permit, uint64_t token, uint32_t n,
    uint64_t waited_us, uint32_t lease_ms, uint64_t expires_ms);
json_t *hj_list(const Semd__ListReply *l);
json_t *hj_info(const Semd__InfoReply *in);
json_t *hj_holder(const Semd__Holder *h, const char *name);
json_t *hj_holds(const Semd__HoldsReply *h);
json_t *hj_stats(const Semd__StatsReply *s);
json_t *hj_cluster(const Semd__ClusterStatus *c);
json_t *hj_event(const Semd__WatchEvent *e);
json_t *hj_places(const Semd__WhereReply *w);
const char *hj_event_kind(int kind);
const char *hj_mode(int mode);

#endif
