/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http-int.h - what the parts of the HTTP front door share
 * (doc/http.md, "How it is built"); nothing outside daemon/http/ includes it.
 *
 *   http_front.c	the listeners (evhttp), connections, who a request
 *			is, limits, CORS, routing, answers and problems
 *   http_gate.c	gates: clients inside the daemon that make the
 *			binary requests (conn_start_inner) and get the replies
 *   http_json.c	JSON bodies to requests, replies to JSON (fuzzed)
 *   http_routes.c	the resources that are one request and one answer
 *   http_acquire.c	acquire, waiters, idempotency keys
 *   http_watch.c	watches as Server-Sent Events
 *
 * Everything runs on the server's first event loop (workers[0]), so none
 * of it needs a lock of its own; the state lock is taken only by the
 * connection layer under the gates.
 */
#ifndef SEMD_HTTP_INT_H
#define SEMD_HTTP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "core/list.h"
#include "daemon/http/http_config.h"
#include "daemon/http/http_json.h"
#include "daemon/state/hmap.h"
#include "proto/semd.pb-c.h"
#include "security/acl.h"

struct conn;
struct evhttp_connection;
struct evbuffer_cb_entry;
struct hconn;
struct hreq;
struct gate;
struct server;
struct worker;

/* A principal seen over HTTP: its identity, its request rate. */
struct hprin {
	struct hnode		node;
	struct list_head	entry;		/* the front's, for the sweep */
	unsigned int		refs;		/* connections, requests, gates */
	struct acl_subject	subj;
	bool			admin;
	uint64_t		tokens_milli;	/* its rate bucket, 1/1000 request */
	uint64_t		refill_ms;
	uint64_t		used_ms;
	size_t			nidem;		/* idempotency keys it has */
};

/* The front door of the server: one per process (its first loop's). */
struct http_front {
	struct server		*srv;
	struct worker		*w;
	struct event_base	*base;
	struct list_head	listeners;	/* struct http_listener */
	struct http_config	*cfg;		/* our reference */
	uint64_t		cfg_serial;
	struct event		*tick;		/* every second */
	size_t			nconns;		/* HTTP connections */
	struct list_head	conns;		/* struct hconn, idle the longest first */
	struct hmap		conn_map;	/* struct hconn by bufferevent */
	struct hmap		prins;		/* struct hprin by principal */
	struct list_head	prin_list;
	struct hmap		gates;		/* service gates by key */
	struct list_head	gate_lru;	/* service gates, least used first */
	size_t			ngates;
	struct hmap		waiters;	/* struct hwaiter by id */
	struct list_head	waiter_list;
	struct hmap		idem;		/* struct hidem by principal+key */
	struct list_head	idem_list;
	struct list_head	watches;	/* struct hwatch */
	struct list_head	all_gates;	/* every gate not freed */
	bool			stopping;
	uint8_t			hash_key[16];
};

/* An HTTP listener: its own evhttp (plain or TLS connections). */
struct http_listener {
	struct list_head	entry;
	struct http_front	*f;
	struct evhttp		*evh;
	struct evhttp_bound_socket *bound;	/* NULL once closed */
	char			*addr;		/* http:HOST:PORT, ... */
	char			*unlink_path;
	bool			tls;
	bool			is_unix;
};

/* One HTTP connection (made with its bufferevent, reaped after it). */
struct hconn {
	struct list_head	entry;
	struct hnode		cnode;
	struct http_front	*f;
	struct http_listener	*l;
	struct bufferevent	*bev;		/* evhttp's, and one reference ours */
	struct evhttp_connection *evcon;	/* known from its first request */
	struct event		*deadline;	/* a request to complete */
	struct event		*watch;		/* EV_CLOSED while one waits */
	struct event		*reap;		/* frees it once evhttp let go */
	struct evbuffer_cb_entry *in_cb;
	struct hreq		*cur;		/* the request being answered */
	struct hprin		*who;		/* the transport's identity */
	bool			identified;
	bool			nodelay;	/* TCP_NODELAY set */
	bool			busy;		/* a request is in our hands */
	bool			gone;
	uint32_t		pid;		/* a UNIX peer's */
	char			peer[80];
	int			fd;
};

/* One request, from its arrival to its answer (or its client's going). */
struct hreq {
	struct http_front	*f;
	struct evhttp_request	*req;		/* NULL: its client left */
	struct hconn		*hc;
	struct hprin		*who;
	unsigned int		refs;		/* us, and each call in flight */
	const struct http_route	*route;
	char			*args[3];	/* the path's {...}, decoded */
	json_t			*body;
	struct evkeyvalq	query;
	bool			query_ok;
	bool			answered;
	bool			head;
	char			origin[256];	/* a CORS origin allowed */
	/* what the route keeps while it waits */
	void			*priv;
	void			(*gone)(struct hreq *r);	/* its client left */
	struct event		*timer;
};

typedef void (*http_handler_fn)(struct hreq *r);

struct http_route {
	int			method;		/* EVHTTP_REQ_* */
	const char		*pattern;	/* "semaphores/ * /permits" */
	http_handler_fn		fn;
	bool			state;		/* redirected on a follower */
};

/* --- http_front.c -------------------------------------------------------- */
extern struct http_front *http_the_front;
/* The time now (the loops' monotonic clock), ms. */
uint64_t http_now(void);
/* Arm ev to fire in ms milliseconds. */
void http_arm(struct event *ev, uint64_t ms);
/* Memory for r's work (zeroed), or NULL with r answered out of memory. */
void *http_alloc(struct hreq *r, size_t n);
/* The state's wall clock, unix ms. */
uint64_t http_wall_ms(void);
/* Answer r with status and body (NULL: none; taken), JSON. */
void http_reply_json(struct hreq *r, int status, json_t *body);
/* Answer r with JSON text already written (json[0..len), no newline). */
void http_reply_text(struct hreq *r, int status, const char *json, size_t len);
/* Answer r with a header (NULL: none) and no body. */
void http_reply_empty(struct hreq *r, int status, const char *hname,
    const char *hvalue);
/* Answer r with a problem of error e (HJ_E_*) and detail. */
void http_problem(struct hreq *r, int e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with an HTTP status of its own (not the code's). */
void http_problem_at(struct hreq *r, int code, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Answer r with the failure of reply rep (its code, message, redirect). */
void http_problem_reply(struct hreq *r, const Semd__Reply *rep);
/* Answer r: its gate went away before the answer (g: which). */
void http_problem_gone(struct hreq *r, const struct gate *g);
/* Add a response header to r. */
void http_header(struct hreq *r, const char *name, const char *value);
/* A request header of r, or NULL. */
const char *http_in_header(const struct hreq *r, const char *name);
/* A query parameter of r, or NULL. */
const char *http_query(struct hreq *r, const char *name);
/* The wait r asks for (Prefer: wait=N), ms, capped by http-max-wait. */
uint64_t http_prefer_wait(struct hreq *r, bool *given);
/* One more reference to r; drop one (the last frees it). */
void http_req_hold(struct hreq *r);
void http_req_put(struct hreq *r);
/* Watch r's socket while it waits: gone() runs when its client leaves. */
void http_req_watch(struct hreq *r, void (*gone)(struct hreq *r));
/* A principal's entry (refs +1), made on first use; NULL: out of memory. */
struct hprin *http_prin_get(struct http_front *f, const struct acl_subject *s);
void http_prin_put(struct http_front *f, struct hprin *p);
/* The URI of r's resource at the leader, when a follower was told where it is. */
bool http_redirect(struct hreq *r, uint64_t leader_id, const char *leader);
/* Stream r's answer: start (200, type), send a chunk; false: it is gone. */
bool http_stream_start(struct hreq *r, const char *type);
bool http_stream_chunk(struct hreq *r, const char *p, size_t len);
/* End a streamed answer. */
void http_stream_end(struct hreq *r);
/* Cut r's connection off (a stream that cannot go on); gone() is not run. */
void http_cut(struct hreq *r);
/* Bytes r's connection has not written yet. */
size_t http_backlog(const struct hreq *r);

/* --- http_gate.c --------------------------------------------------------- */
/*
 * Service: cached, a principal's reads and quick writes; waiter, watch,
 * backup: one's own; node: no Hello, for what a node answers itself
 * (Cluster STATUS, on any node).
 */
enum gate_kind { GATE_SERVICE, GATE_WAITER, GATE_WATCH, GATE_BACKUP, GATE_NODE };

/* The answer to a call; r NULL when none will come (the gate closed). */
typedef void (*gate_done_fn)(void *arg, const Semd__Reply *rep);

struct gate_call {
	struct list_head	entry;
	uint64_t		id;
	gate_done_fn		done;
	void			*arg;
};

/* Who the caller is, for the state's holder lists (Hello). */
struct gate_ident {
	const char		*client;
	const char		*host;
	uint32_t		pid;
};

struct gate {
	struct http_front	*f;
	struct conn		*c;		/* NULL once closed */
	enum gate_kind		kind;
	struct hprin		*who;
	uint64_t		next_id;
	struct list_head	calls;
	uint8_t			*out;		/* frames staged */
	size_t			olen, ocap;
	uint8_t			*in;		/* reply frames received */
	size_t			ilen, icap;
	struct event		*deliver;
	uint64_t		session;
	uint8_t			secret[16];
	uint32_t		lease_ms;
	bool			hello;		/* answered OK */
	bool			released;	/* its owner let go */
	bool			closing;
	unsigned int		running;	/* deliveries under way */
	bool			redirected;	/* told: not the leader */
	uint64_t		leader_id;
	char			leader[256];
	/* the owner's: the Hello's answer, notices (id 0), its end */
	gate_done_fn		hello_cb;
	void			*hello_arg;
	void			(*notice)(void *owner, const Semd__Reply *rep);
	void			(*closed)(void *owner);
	void			*owner;
	struct list_head	all;		/* the front's all_gates */
	/* service gates (the cache) */
	bool			cached;
	struct hnode		node;
	struct list_head	lru;
	char			*key;
	size_t			keylen;
	uint64_t		used_ms;
};

/*
 * A new gate of kind for who, Hello staged (lease_ms; resume a session when
 * session is not 0): NULL with *e (HJ_E_*) and why filled.
 */
struct gate *gate_open(struct http_front *f, enum gate_kind kind,
    struct hprin *who, const struct gate_ident *id, uint32_t lease_ms,
    uint64_t session, const uint8_t *secret, int *e, char *why, size_t len);
/* The service gate of who and id (made, or from the cache). */
struct gate *gate_service(struct http_front *f, struct hprin *who,
    const struct gate_ident *id, int *e, char *why, size_t len);
/* Stage a request (its id set here); done(arg, reply) when answered. */
uint64_t gate_call(struct gate *g, Semd__Request *req, gate_done_fn done,
    void *arg);
/* The same with its id given (a retry of a down, by its first id). */
uint64_t gate_call_id(struct gate *g, Semd__Request *req, uint64_t id,
    gate_done_fn done, void *arg);
/* Send what is staged. */
void gate_push(struct gate *g);
/* Forget the call of id (its answer will be dropped). */
void gate_forget(struct gate *g, void *arg);
/*
 * The owner lets go: close the gate (detach: its session outlives it for
 * its lease; else the session ends now). Calls in flight are dropped.
 */
void gate_release(struct gate *g, bool detach);
/* Close idle service gates (the second tick), every one when all is true. */
void gate_sweep(struct http_front *f, bool all);
/* After the loops ended: every gate's connection freed, and the gates. */
void gate_free_all(struct http_front *f);

/* --- http_routes.c, http_acquire.c, http_watch.c ------------------------- */
void http_route_server(struct hreq *r);
void http_route_list(struct hreq *r);
void http_route_create(struct hreq *r);
void http_route_info(struct hreq *r);
void http_route_delete(struct hreq *r);
void http_route_set_limit(struct hreq *r);
void http_route_set_rate(struct hreq *r);
void http_route_set_queue(struct hreq *r);
void http_route_permit(struct hreq *r);
void http_route_renew(struct hreq *r);
void http_route_release(struct hreq *r);
void http_route_cancel_queued(struct hreq *r);
void http_route_up(struct hreq *r);
void http_route_validate(struct hreq *r);
void http_route_holds(struct hreq *r);
void http_route_stats(struct hreq *r);
void http_route_cluster(struct hreq *r);
void http_route_member_add(struct hreq *r);
void http_route_member_remove(struct hreq *r);
void http_route_transfer(struct hreq *r);
void http_route_backup(struct hreq *r);
void http_route_acquire(struct hreq *r);
void http_route_acquire_many(struct hreq *r);
void http_route_waiter_get(struct hreq *r);
void http_route_waiter_renew(struct hreq *r);
void http_route_waiter_delete(struct hreq *r);
void http_route_watch(struct hreq *r);
/* The waiters' and keys' second: leases, forgotten answers. */
void http_acquire_sweep(struct http_front *f, bool all);
/* Every watch ends (a stop). */
void http_watch_stop_all(struct http_front *f);
/* The OpenAPI document (http_openapi.c, made from openapi.json). */
extern const unsigned char http_openapi_json[];
extern const size_t http_openapi_json_len;

/*
 * One request of a route to the service gate of r's caller, answered by
 * done(r, reply) (reply NULL: the gate closed; r is held until then).
 * False when it could not be sent (r answered already).
 */
bool http_service_call(struct hreq *r, Semd__Request *req,
    void (*done)(struct hreq *r, const Semd__Reply *rep));
/* Who r's caller is for the holder lists: its program (User-Agent), its address. */
void http_ident(struct hreq *r, struct gate_ident *id, char *client,
    size_t clen, char *host, size_t hlen);
/* The same as the caller id says (an acquire's client, host, pid). */
bool http_service_call_as(struct hreq *r, const struct gate_ident *id,
    Semd__Request *req, void (*done)(struct hreq *r, const Semd__Reply *rep));

#endif
