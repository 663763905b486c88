/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http-int.h - what the parts of the HTTP front door share
 * (doc/http.md, "How it is built"); nothing outside daemon/http/ includes it.
 *
 *   http_parse.c	requests read from bytes: heads, chunked bodies (fuzzed)
 *   http_conn.c	HTTP/1.1 on the connection layer: requests read,
 *			queued, answered in order; deadlines
 *   http_front.c	the listeners, the loops' parts, who a request is,
 *			limits, CORS, routing, answers and problems
 *   http_gate.c	gates: clients inside the daemon that make the
 *			binary requests (conn_start_inner) and get the replies
 *   http_json.c	JSON bodies to requests, replies to JSON (fuzzed)
 *   http_routes.c	the resources that are one request and one answer
 *   http_acquire.c	acquire, waiters, idempotency keys
 *   http_watch.c	watches as Server-Sent Events
 *
 * Every loop of the server serves HTTP connections (http_conn.c), runs
 * their requests and has gates of its own; what a loop has is touched by
 * its thread alone (struct hworker). Waiters and idempotency keys belong
 * to the first loop ("home"): a request that needs them is sent there
 * (http_home()) and its answer comes back. The principals, shared, are
 * under a lock of their own; the state lock is taken only by the
 * connection layer under the gates.
 */
#ifndef SEMD_HTTP_INT_H
#define SEMD_HTTP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pthread.h>
#include <stdatomic.h>

#include <event2/event.h>
#include <jansson.h>

#include "core/list.h"
#include "daemon/http/http_config.h"
#include "daemon/http/http_json.h"
#include "daemon/state/hmap.h"
#include "proto/semd.pb-c.h"
#include "security/acl.h"

struct conn;
struct conn_proto;
struct evconnlistener;
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

/*
 * A loop's part of the front door: one for each of the server's workers,
 * touched by its thread alone (but its job queue). Its connections, its
 * gates, its copy of the settings.
 */
struct hworker {
	struct http_front	*f;
	struct worker		*w;
	struct event_base	*base;
	unsigned int		idx;
	struct http_config	*cfg;		/* its reference to the settings */
	uint32_t		max_lease_ms;	/* the server's max-lease, too */
	struct event		*tick;		/* every HTTP_TICK_MS */
	unsigned int		ticks;
	size_t			nconns;		/* its HTTP connections */
	struct list_head	idle;		/* struct hconn, idle the longest first */
	struct list_head	partial;	/* struct hconn, a request begun, oldest first */
	struct hmap		gates;		/* service gates by key */
	struct list_head	gate_lru;	/* service gates, least used first */
	size_t			ngates;
	struct list_head	all_gates;	/* every gate of this loop not freed */
	/* Work for this loop from the others (hreq hops, answers, leavings). */
	pthread_mutex_t		jlock;
	struct list_head	jobs;		/* struct hjob */
	int			jfd;		/* eventfd */
	struct event		*jev;
	bool			ready;		/* made (the others may post) */
};

/* The loop's part this thread runs. */
struct hworker *http_here(void);

/*
 * The front door of the server: one per process. The listeners belong to
 * the first loop; the principals are everyone's (under plock); waiters and
 * idempotency keys belong to the first loop (hw[0], "home"), where every
 * request that needs them is run (http_home()).
 */
struct http_front {
	struct server		*srv;
	struct hworker		*hw;		/* one per worker; hw[0]: home */
	unsigned int		nhw;
	struct list_head	listeners;	/* struct http_listener */
	struct http_config	*defaults;	/* without any http-* line */
	_Atomic size_t		nconns;		/* HTTP connections, all loops */
	_Atomic bool		stopping;
	pthread_mutex_t		plock;		/* the principals: */
	struct hmap		prins;		/* struct hprin by principal */
	struct list_head	prin_list;
	struct hmap		waiters;	/* home's: struct hwaiter by id */
	struct list_head	waiter_list;
	struct hmap		idem;		/* home's: struct hidem by principal+key */
	struct list_head	idem_list;
	uint8_t			hash_key[16];
};

/* An HTTP listener (on the first loop): its connections go to every loop. */
struct http_listener {
	struct list_head	entry;
	struct http_front	*f;
	struct evconnlistener	*evl;		/* NULL once closed */
	char			*addr;		/* http:HOST:PORT, ... */
	char			*unlink_path;
	bool			tls;
	bool			is_unix;
};

/* A request's header field: its name and value, NUL-ended. */
struct hfield {
	const char		*name;
	const char		*value;
};

/* A query parameter, decoded. */
struct hqparam {
	char			*name;
	char			*value;
};

/* The methods of HTTP/1.1 a route can take, a bit each. */
enum http_method {
	HTTP_GET = 1 << 0,
	HTTP_POST = 1 << 1,
	HTTP_HEAD = 1 << 2,
	HTTP_PUT = 1 << 3,
	HTTP_DELETE = 1 << 4,
	HTTP_OPTIONS = 1 << 5,
	HTTP_TRACE = 1 << 6,
	HTTP_CONNECT = 1 << 7,
	HTTP_PATCH = 1 << 8,
};

/*
 * One request, from its arrival to its answer (or its client's going). Its
 * connection's loop (cw) reads it and writes its answer out; the loop that
 * runs its route (rw) is the same, but for the requests sent home
 * (http_home()), whose answers come back through cw's job queue. Each
 * side's fields are its own; it is freed when both let go (owners).
 */
struct hreq {
	struct http_front	*f;
	/* the connection's side */
	struct list_head	qentry;		/* its connection's queue */
	struct hconn		*hc;		/* NULL once popped or its client left */
	struct hworker		*cw;		/* its connection's loop */
	bool			dispatched;	/* its route runs (or ran) */
	bool			arrived;	/* its answer came back from rw */
	bool			want_continue;	/* a 100 Continue to send in turn */
	_Atomic unsigned	owners;		/* the connection, the route, jobs */
	_Atomic bool		left;		/* its client left */
	/* what was asked */
	int			method;		/* enum http_method */
	int			minor;		/* HTTP/1.minor */
	bool			close;		/* the connection ends with it */
	const char		*target;	/* path and query, NUL-ended */
	char			*segs;		/* room for its path, decoded */
	struct hfield		*fields;
	size_t			nfields;
	struct hqparam		*query;
	size_t			nquery;
	bool			query_ok;
	json_t			*body;
	char			*args[3];	/* the path's {...}, decoded */
	struct hprin		*who;
	uint32_t		pid;		/* a UNIX peer's */
	char			host[64];	/* a TCP peer's address */
	char			origin[256];	/* a CORS origin allowed */
	const struct http_route	*route;
	/* the answer (the route's loop makes it) */
	struct hworker		*rw;		/* the loop that runs its route */
	char			*hdrs;		/* header lines the route added */
	size_t			hlen, hcap;
	bool			cache_set;	/* the route said Cache-Control */
	bool			answered;	/* its answer is made (or begun: a stream) */
	bool			streaming;	/* a stream: chunks go on */
	bool			final;		/* all of the answer is in out or written */
	uint8_t			*out;		/* answer bytes not written yet */
	size_t			olen, ocap;
	/* the route's */
	_Atomic unsigned	refs;		/* the route, each call in flight */
	void			*priv;
	void			(*gone)(struct hreq *r);	/* its client left */
	char			data[];		/* its head's bytes, the fields' */
};

typedef void (*http_handler_fn)(struct hreq *r);

struct http_route {
	int			method;		/* enum http_method */
	const char		*pattern;	/* "semaphores/ * /permits" */
	http_handler_fn		fn;
	bool			state;		/* redirected on a follower */
};

/* --- http_front.c -------------------------------------------------------- */
/*
 * A request as the routes see it: what was asked (method, target, headers,
 * query, body: r->body, r->args) and who asks (r->who, the peer), and the
 * answers below. Nothing else of the transport under it is theirs.
 */
extern struct http_front *http_the_front;
/* r's method (enum http_method). */
int http_method(const struct hreq *r);
/* r's target as it was sent: the path and the query ("" once it is gone). */
const char *http_uri(const struct hreq *r);
/* Is r's client still there, its answer not made yet? */
bool http_live(const struct hreq *r);
/* The address of r's TCP or TLS peer ("" over a UNIX socket). */
const char *http_peer_host(const struct hreq *r);
/* The process id of r's UNIX peer (0 over TCP). */
uint32_t http_peer_pid(const struct hreq *r);
/* The event loop that runs r's route (its timers go there). */
struct event_base *http_loop(const struct hreq *r);
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
/*
 * Answer r with bytes of type that live as long as the process (NULL type:
 * none), or, to HEAD, with their length alone.
 */
void http_reply_static(struct hreq *r, int status, const char *type,
    const void *data, size_t len);
/* Answer r with a line of plain text (NULL: no body). */
void http_reply_plain(struct hreq *r, int status, const char *text);
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
/*
 * Run fn(r) on the first loop, where waiters and idempotency keys live:
 * true when r was sent there (the caller lets go of it and returns), false
 * when this is the first loop (the caller goes on).
 */
bool http_home(struct hreq *r, http_handler_fn fn);
/* The settings r is served with, and the server's max-lease. */
const struct http_config *http_settings(const struct hreq *r);
uint32_t http_max_lease(const struct hreq *r);
/* Watch r's socket while it waits: gone() runs when its client leaves. */
void http_req_watch(struct hreq *r, void (*gone)(struct hreq *r));
/* A principal's entry (refs +1), made on first use; NULL: out of memory. */
struct hprin *http_prin_get(struct http_front *f, const struct acl_subject *s);
/* One more reference to p; drop one (any loop). */
void http_prin_hold(struct hprin *p);
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

/* A request read whole (http_conn.c): who, may it, its route (body: its bytes). */
void http_request_run(struct hreq *r, const char *body, size_t blen);
/* r's answer made on another loop goes to its connection's loop. */
void http_post_answered(struct hreq *r);
/* r's client left: its route's loop is told. */
void http_post_gone(struct hreq *r);

/* --- http_conn.c --------------------------------------------------------- */
extern const struct conn_proto http_conn_proto;
/* Room for n more bytes of r's answer (NULL: none, or its client is gone). */
uint8_t *hconn_room(struct hreq *r, size_t n);
/* n bytes were written there. */
void hconn_done(struct hreq *r, size_t n);
/* r's answer is whole: out in its turn. */
void hconn_final(struct hreq *r);
/* r's answer, made on another loop, came back (its connection's loop). */
void hconn_answered(struct hreq *r);
/* Bytes of r's connection not written yet; cut it off. */
size_t hconn_backlog(const struct hreq *r);
void hconn_cut(struct hreq *r);
/* The loop's deadlines (its tick). */
void hconn_tick(struct hworker *hw, uint64_t now);
/* Drop one owner of r (its connection, its route, a job); the last frees it. */
void hreq_owner_put(struct hreq *r);

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
	struct hworker		*hw;		/* its loop */
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
	struct list_head	all;		/* its loop's all_gates */
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
void gate_sweep(struct hworker *hw, bool all);
/* After the loops ended: every gate's connection freed, and the gates. */
void gate_free_all(struct hworker *hw);

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
void http_route_sessions(struct hreq *r);
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
