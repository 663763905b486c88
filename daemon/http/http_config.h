/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_config.h - the settings of the HTTP front door (the
 * http-* keys of semd.conf, semd.conf(5)): limits, bearer tokens, the
 * nodes' URLs, CORS origins. config.c hands every http-* key here; the
 * result hangs off struct semd_config (cfg.http), replaced whole by a
 * reload. The front door keeps a reference of its own (http_config_get),
 * so a reload never frees what it reads.
 */
#ifndef SEMD_HTTP_CONFIG_H
#define SEMD_HTTP_CONFIG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define HTTP_TOKEN_HASH		32	/* SHA-256 */
#define HTTP_PRINCIPAL_MAX	260	/* "cn:" + 255 + NUL, as ACL_PRINCIPAL_MAX */

/* A bearer token: the hash of its secret and the principal it acts as. */
struct http_token {
	uint8_t		hash[HTTP_TOKEN_HASH];
	char		principal[HTTP_PRINCIPAL_MAX];	/* cn:NAME or uid:N */
	bool		is_uid;
	uid_t		uid;
	char		user[64];	/* user:NAME's name ("" otherwise) */
};

/* A node of a cluster and the base URL its HTTP clients reach it at. */
struct http_node {
	uint32_t	id;
	char		url[256];
};

struct http_config {
	_Atomic unsigned	refs;
	uint64_t		serial;		/* new for every one made */
	uint32_t		max_connections;
	uint32_t		max_header;
	uint32_t		max_body;
	uint32_t		request_timeout_ms;
	uint32_t		idle_timeout_ms;
	uint32_t		rate;		/* requests/s per principal; 0: none */
	uint32_t		max_wait_ms;
	uint32_t		lease_ms;
	uint32_t		idem_keys;	/* per principal */
	char			**cors;		/* allowed origins ("*": any) */
	size_t			ncors;
	struct http_token	*tokens;
	size_t			ntokens;
	struct http_node	*nodes;
	size_t			nnodes;
};

/* Is key an http-* setting? */
bool http_config_known(const char *key);
/* Set one http-* key in *hc (made on first use): 0, or -EINVAL/-ENOMEM with err. */
int http_config_set(struct http_config **hc, const char *key, const char *value,
    char *err, size_t errlen);
/* The defaults, for a configuration without any http-* line (refs 1). */
struct http_config *http_config_default(void);
/* One more reference (any thread). */
struct http_config *http_config_get(struct http_config *hc);
/* Drop one; the last frees it. NULL: nothing. */
void http_config_put(struct http_config *hc);
/* The token whose secret is text, or NULL (constant time per token). */
const struct http_token *http_config_token(const struct http_config *hc,
    const char *text, size_t len);
/* The base URL of node id, or NULL. */
const char *http_config_node_url(const struct http_config *hc, uint64_t id);
/* Is origin allowed by http-cors-origin? */
bool http_config_cors(const struct http_config *hc, const char *origin);
/* base64url without padding of p[0..len) into out (4 * len / 3 + 2 bytes). */
void http_b64url(const uint8_t *p, size_t len, char *out);
/*
 * semd --make-token PRINCIPAL: print a new token and the line that lets it
 * in. 0, or a sysexits code with the reason on stderr.
 */
int http_make_token(const char *principal, FILE *out);

#endif
