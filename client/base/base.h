/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/base/base.h - libsemclient's ground floor: addresses, errors and
 * clocks, the results made from the daemon's replies, and the transports
 * a connection is made through. It calls nothing of the floors above;
 * where a function takes the handle, it reads the handle's addresses or
 * TLS settings (client/handle.h).
 *
 * A struct semc_conn is one socket: reference-counted so a reader or a
 * writer that still uses a broken connection never sees its fd closed and
 * reused under it.
 */
#ifndef SEMC_BASE_H
#define SEMC_BASE_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <openssl/ssl.h>

#include "client/semclient.h"
#include "proto/semd.pb-c.h"

enum semc_addr_kind { SEMC_ADDR_UNIX = 1, SEMC_ADDR_TCP, SEMC_ADDR_TLS };
#define SEMC_MAX_ADDRS	9	/* daemons in an address list */

struct semc;
struct semc_conn;

/*
 * A transport (HAProxy's xprt_ops): how a connection to one kind of address
 * is opened, read, written and closed (xprt.c: UNIX, TCP; tls.c: TLS). The
 * rest of the library reaches the socket only through these, so a new
 * transport is one of them and a prefix in semc_addr_parse().
 */
struct semc_xprt {
	const char *name;	/* the address prefix: "unix", "tcp", "tls" */
	/* Prepare the handle before the first connection (NULL: nothing). */
	int (*setup)(struct semc *c);
	/* Connect k->fd to c->addr and finish any handshake before deadline;
	 * 0, or semc_fail()'s error. */
	int (*open)(struct semc *c, struct semc_conn *k, int64_t deadline);
	/* Read what is there without blocking: n, 0 at EOF, -1 with errno. */
	ssize_t (*read)(struct semc_conn *k, void *buf, size_t len);
	/* Write without blocking: n, or -1 with errno (EAGAIN: poll for *want). */
	ssize_t (*write)(struct semc_conn *k, const void *buf, size_t len, int *want);
	/* Whether bytes already taken off the socket wait inside (NULL: never). */
	bool (*buffered)(struct semc_conn *k);
	/* Free what open() made besides the fd (NULL: nothing). */
	void (*close)(struct semc_conn *k);
};

extern const struct semc_xprt semc_xprt_unix, semc_xprt_tcp, semc_xprt_tls;

struct semc_addr {
	enum semc_addr_kind kind;
	const struct semc_xprt *xprt;
	char path[108];		/* UNIX */
	char host[256];		/* TCP/TLS, without brackets */
	unsigned port;
	char canon[400];
};

struct semc_conn {
	const struct semc_xprt *xprt;
	int fd;
	SSL *ssl;		/* TLS */
	struct semc *owner;	/* TLS: whose session cache a ticket goes to */
	char tls_addr[400];	/* ... under this address (canon) */
	pthread_mutex_t iolock;	/* SSL objects are not thread-safe */
	int refs;
	uint64_t gen;
};

/* A TLS session kept for resumption (tlssess.c), per server address. */
struct semc_tls_sess {
	char addr[400];
	SSL_SESSION *sess;
};

/* base/error.c */
int semc_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void semc_clear_message(void);
int semc_code_error(int code);
int semc_reply_error(const Semd__Reply *rp);

/* base/util.c */
unsigned semc_fork_gen(void);
bool semc_forked(const struct semc *c);
int64_t semc_now_ms(void);
int64_t semc_wall_ms(void);
int semc_str_set(char **dst, const char *s);

/* base/addr.c */
int semc_addr_parse(const char *s, struct semc_addr *a);
int semc_addrs_set(struct semc *c, const char *address);
int semc_addrs_default(struct semc *c);
void semc_addr_use_locked(struct semc *c, unsigned i);
void semc_addr_redirect_locked(struct semc *c, const Semd__Redirect *rd);

/* base/result.c */
/* How a result is made from a reply's body (a table: see result.c, conv.h). */
struct semc_conv;
extern const struct semc_conv semc_info_conv, semc_list_conv, semc_stats_conv,
	semc_multi_conv, semc_holds_conv, semc_where_conv, semc_cluster_conv;
void semc_grant_copy(struct semc_grant *g, const Semd__Grant *pg);
void *semc_convert(const struct semc_conv *cv, const Semd__Reply *rp);
void semc_result_deliver(struct semc *c, uint64_t id, int error, const Semd__Reply *rp,
			 semc_done_fn fn, void *arg);

/* base/tlssess.c */
void semc_tls_sess_setup(struct semc *c, SSL_CTX *ctx, const char *ca);
SSL_SESSION *semc_tls_sess_get(struct semc *c, const char *addr);
void semc_tls_sess_put(struct semc *c, const char *addr, SSL_SESSION *sess);
void semc_tls_sess_free(struct semc *c);

/* base/tls.c */
int semc_tls_setup(struct semc *c);
void semc_tls_free(struct semc *c);

/* base/xprt.c */
int semc_fd_wait(int fd, short events, int64_t deadline);
int semc_tcp_open(struct semc *c, struct semc_conn *k, int64_t deadline);
int semc_xprt_setup(struct semc *c);
int semc_conn_open(struct semc *c, int64_t deadline, struct semc_conn **out);
void semc_conn_put_locked(struct semc_conn *k);
int semc_conn_write_all(struct semc_conn *k, const uint8_t *buf, size_t len, int64_t deadline);
int semc_frame_exchange(struct semc *c, struct semc_conn *k, int64_t deadline,
			Semd__Request *rq, Semd__Reply **out, int64_t *sent_at, const char *what);

#endif
