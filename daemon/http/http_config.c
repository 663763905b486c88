/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_config.c - the http-* settings (http_config.h): parsed
 * from semd.conf and the flags, bearer tokens checked by their SHA-256,
 * new tokens made for semd --make-token.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sysexits.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "daemon/config.h"
#include "daemon/http/http_config.h"

/* Settings that are a number, a duration (ms) or a byte count. */
struct http_key {
	const char	*name;
	size_t		off;
	bool		duration;
	uint32_t	min;
	uint32_t	max;
};

#define OFF(f) offsetof(struct http_config, f)
static const struct http_key http_keys[] = {
	{ "http-max-connections", OFF(max_connections), false, 1, 1000000 },
	{ "http-max-header", OFF(max_header), false, 1024, 1u << 20 },
	{ "http-max-body", OFF(max_body), false, 1024, 16u << 20 },
	{ "http-request-timeout", OFF(request_timeout_ms), true, 100, 3600000 },
	{ "http-idle-timeout", OFF(idle_timeout_ms), true, 100, 86400000 },
	{ "http-rate", OFF(rate), false, 0, 100000000 },
	{ "http-max-wait", OFF(max_wait_ms), true, 0, 3600000 },
	{ "http-lease", OFF(lease_ms), true, 100, UINT32_MAX },
	{ "http-idempotency-keys", OFF(idem_keys), false, 0, 1000000 },
};
#undef OFF

/* Keys that are no number: lists and tokens. */
static const char *const http_list_keys[] = {
	"http-token", "http-nodes", "http-cors-origin",
};

static _Atomic uint64_t http_config_serials;

/* Is key an http-* setting? */
bool http_config_known(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof http_keys / sizeof http_keys[0]; i++)
		if (strcmp(http_keys[i].name, key) == 0)
			return true;
	for (i = 0; i < sizeof http_list_keys / sizeof http_list_keys[0]; i++)
		if (strcmp(http_list_keys[i], key) == 0)
			return true;
	return false;
}

/* The defaults (doc/http.md, Limits). */
struct http_config *http_config_default(void)
{
	struct http_config *hc = calloc(1, sizeof *hc);

	if (hc == NULL)
		return NULL;
	atomic_init(&hc->refs, 1);
	hc->serial = atomic_fetch_add(&http_config_serials, 1) + 1;
	hc->max_connections = 10000;
	hc->max_header = 8192;
	hc->max_body = 65536;
	hc->request_timeout_ms = 10000;
	hc->idle_timeout_ms = 60000;
	hc->rate = 0;
	hc->max_wait_ms = 60000;
	hc->lease_ms = 30000;
	hc->idem_keys = 10000;
	return hc;
}

/* One more reference. */
struct http_config *http_config_get(struct http_config *hc)
{
	if (hc != NULL)
		atomic_fetch_add(&hc->refs, 1);
	return hc;
}

/* Drop a reference; the last frees it. */
void http_config_put(struct http_config *hc)
{
	size_t i;

	if (hc == NULL || atomic_fetch_sub(&hc->refs, 1) != 1)
		return;
	for (i = 0; i < hc->ncors; i++)
		free(hc->cors[i]);
	free(hc->cors);
	OPENSSL_cleanse(hc->tokens, hc->ntokens * sizeof *hc->tokens);
	free(hc->tokens);
	free(hc->nodes);
	free(hc);
}

/*
 * A token's principal: cn:NAME (written as in acl lines: bytes 0x21-0x7e),
 * uid:N, or user:NAME (looked up now, as uid:N with that name).
 */
static int http_token_principal(struct http_token *t, const char *p,
    char *err, size_t errlen)
{
	unsigned long long v;
	struct passwd *pw;
	char *end;
	size_t i, n = strlen(p);

	if (strncmp(p, "cn:", 3) == 0 && n > 3 && n < sizeof t->principal) {
		for (i = 3; i < n; i++)
			if (p[i] < 0x21 || p[i] > 0x7e)
				break;
		if (i == n) {
			memcpy(t->principal, p, n + 1);
			return 0;
		}
	} else if (strncmp(p, "uid:", 4) == 0 && isdigit((unsigned char)p[4])) {
		errno = 0;
		v = strtoull(p + 4, &end, 10);
		if (errno == 0 && *end == '\0' && v < UINT32_MAX) {
			t->is_uid = true;
			t->uid = (uid_t)v;
			snprintf(t->principal, sizeof t->principal, "uid:%llu", v);
			return 0;
		}
	} else if (strncmp(p, "user:", 5) == 0 && p[5] != '\0') {
		if ((pw = getpwnam(p + 5)) == NULL ||
		    strlen(pw->pw_name) >= sizeof t->user) {
			snprintf(err, errlen, "http-token %s: no such user", p);
			return -EINVAL;
		}
		t->is_uid = true;
		t->uid = pw->pw_uid;
		snprintf(t->user, sizeof t->user, "%s", pw->pw_name);
		snprintf(t->principal, sizeof t->principal, "uid:%u",
		    (unsigned)pw->pw_uid);
		return 0;
	}
	snprintf(err, errlen, "http-token %s: a principal is cn:NAME, uid:N or "
	    "user:NAME", p);
	return -EINVAL;
}

/* http-token PRINCIPAL sha256:HEX */
static int http_add_token(struct http_config *hc, const char *value,
    char *err, size_t errlen)
{
	struct http_token t, *nt;
	char principal[HTTP_PRINCIPAL_MAX + 8];
	const char *hex;
	unsigned int b;
	size_t i, plen = strcspn(value, " \t");
	int r;

	memset(&t, 0, sizeof t);
	hex = value + plen + strspn(value + plen, " \t");
	if (plen == 0 || plen >= sizeof principal || strncmp(hex, "sha256:", 7) != 0 ||
	    strlen(hex + 7) != 2 * HTTP_TOKEN_HASH) {
		snprintf(err, errlen, "http-token: want PRINCIPAL sha256:HEX "
		    "(64 hex digits; semd --make-token PRINCIPAL prints a line)");
		return -EINVAL;
	}
	memcpy(principal, value, plen);
	principal[plen] = '\0';
	if ((r = http_token_principal(&t, principal, err, errlen)) != 0)
		return r;
	for (i = 0; i < HTTP_TOKEN_HASH; i++) {
		if (!isxdigit((unsigned char)hex[7 + 2 * i]) ||
		    !isxdigit((unsigned char)hex[8 + 2 * i]) ||
		    sscanf(hex + 7 + 2 * i, "%2x", &b) != 1) {
			snprintf(err, errlen, "http-token: sha256: wants 64 hex digits");
			return -EINVAL;
		}
		t.hash[i] = (uint8_t)b;
	}
	for (i = 0; i < hc->ntokens; i++) {
		if (memcmp(hc->tokens[i].hash, t.hash, sizeof t.hash) == 0) {
			snprintf(err, errlen, "http-token: this hash is given twice");
			return -EINVAL;
		}
	}
	if ((nt = realloc(hc->tokens, (hc->ntokens + 1) * sizeof *nt)) == NULL)
		goto nomem;
	hc->tokens = nt;
	hc->tokens[hc->ntokens++] = t;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

/* http-nodes ID=URL,ID=URL,... (http://HOST:PORT or https://HOST:PORT) */
static int http_set_nodes(struct http_config *hc, const char *value,
    char *err, size_t errlen)
{
	struct http_node *nodes = NULL, *nn;
	const char *p = value, *eq, *end;
	unsigned long long id;
	size_t n = 0, ulen, i;
	char *e = NULL;

	while (*p != '\0') {
		end = p + strcspn(p, ",");
		eq = memchr(p, '=', (size_t)(end - p));
		errno = 0;
		id = isdigit((unsigned char)*p) ? strtoull(p, &e, 10) : 0;
		ulen = eq != NULL ? (size_t)(end - eq - 1) : 0;
		if (eq == NULL || errno != 0 || e != eq || id == 0 || id > 65535 ||
		    ulen == 0 || ulen >= sizeof nodes->url ||
		    (strncmp(eq + 1, "http://", 7) != 0 &&
		    strncmp(eq + 1, "https://", 8) != 0) ||
		    memchr(eq + 1, ' ', ulen) != NULL || eq[ulen] == '/') {
			snprintf(err, errlen, "http-nodes: want ID=URL,... with "
			    "URL http://HOST:PORT or https://HOST:PORT (no path)");
			free(nodes);
			return -EINVAL;
		}
		for (i = 0; i < n; i++) {
			if (nodes[i].id == id) {
				snprintf(err, errlen, "http-nodes: node %llu twice", id);
				free(nodes);
				return -EINVAL;
			}
		}
		if ((nn = realloc(nodes, (n + 1) * sizeof *nn)) == NULL) {
			free(nodes);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		nodes = nn;
		nodes[n].id = (uint32_t)id;
		memcpy(nodes[n].url, eq + 1, ulen);
		nodes[n++].url[ulen] = '\0';
		p = *end == ',' ? end + 1 : end;
	}
	free(hc->nodes);
	hc->nodes = nodes;
	hc->nnodes = n;
	return 0;
}

/* http-cors-origin ORIGIN (scheme://host[:port], or * for any) */
static int http_add_cors(struct http_config *hc, const char *value,
    char *err, size_t errlen)
{
	const char *host = strncmp(value, "https://", 8) == 0 ? value + 8 :
	    strncmp(value, "http://", 7) == 0 ? value + 7 : NULL;
	char **l, *dup;

	if (strcmp(value, "*") != 0 && (host == NULL || *host == '\0' ||
	    strpbrk(host, " \t,/") != NULL)) {
		snprintf(err, errlen, "http-cors-origin %s: want * or "
		    "SCHEME://HOST[:PORT], as a browser sends in Origin", value);
		return -EINVAL;
	}
	if ((l = realloc(hc->cors, (hc->ncors + 1) * sizeof *l)) == NULL)
		goto nomem;
	hc->cors = l;
	if ((dup = strdup(value)) == NULL)
		goto nomem;
	hc->cors[hc->ncors++] = dup;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

/* Set one http-* key. */
int http_config_set(struct http_config **hcp, const char *key, const char *value,
    char *err, size_t errlen)
{
	struct http_config *hc = *hcp;
	unsigned long long v;
	const struct http_key *k = NULL;
	char *end;
	size_t i;

	if (hc == NULL && (hc = *hcp = http_config_default()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (strcmp(key, "http-token") == 0)
		return http_add_token(hc, value, err, errlen);
	if (strcmp(key, "http-nodes") == 0)
		return http_set_nodes(hc, value, err, errlen);
	if (strcmp(key, "http-cors-origin") == 0)
		return http_add_cors(hc, value, err, errlen);
	for (i = 0; i < sizeof http_keys / sizeof http_keys[0]; i++)
		if (strcmp(http_keys[i].name, key) == 0)
			k = &http_keys[i];
	if (k == NULL) {
		snprintf(err, errlen, "unknown setting '%s'", key);
		return -EINVAL;
	}
	if (k->duration) {
		if (config_parse_duration(value, &v) != 0) {
			snprintf(err, errlen, "%s '%s': not a duration (e.g. "
			    "500ms, 10s, 5m, 1h)", key, value);
			return -EINVAL;
		}
	} else {
		errno = 0;
		v = isdigit((unsigned char)*value) ? strtoull(value, &end, 10) : 0;
		if (!isdigit((unsigned char)*value) || errno != 0 || *end != '\0') {
			snprintf(err, errlen, "%s '%s': not a number", key, value);
			return -EINVAL;
		}
	}
	if (v < k->min || v > k->max) {
		snprintf(err, errlen, "%s %s: out of range (%u..%u%s)", key, value,
		    k->min, k->max, k->duration ? " ms" : "");
		return -EINVAL;
	}
	*(uint32_t *)((char *)hc + k->off) = (uint32_t)v;
	return 0;
}

/* SHA-256 of len bytes. */
static void http_sha256(const void *p, size_t len, uint8_t out[HTTP_TOKEN_HASH])
{
	unsigned int n = 0;

	if (EVP_Digest(p, len, out, &n, EVP_sha256(), NULL) != 1 ||
	    n != HTTP_TOKEN_HASH)
		memset(out, 0, HTTP_TOKEN_HASH);	/* matches no token: */
}						/* every line checks its hex */

/* The token whose secret is text (every line compared, in constant time). */
const struct http_token *http_config_token(const struct http_config *hc,
    const char *text, size_t len)
{
	const struct http_token *found = NULL;
	uint8_t h[HTTP_TOKEN_HASH], zero[HTTP_TOKEN_HASH] = { 0 };
	size_t i;

	if (hc == NULL || len == 0)
		return NULL;
	http_sha256(text, len, h);
	if (CRYPTO_memcmp(h, zero, sizeof h) == 0)
		return NULL;
	for (i = 0; i < hc->ntokens; i++)
		if (CRYPTO_memcmp(h, hc->tokens[i].hash, sizeof h) == 0)
			found = &hc->tokens[i];
	OPENSSL_cleanse(h, sizeof h);
	return found;
}

/* The base URL of node id, or NULL. */
const char *http_config_node_url(const struct http_config *hc, uint64_t id)
{
	size_t i;

	for (i = 0; hc != NULL && i < hc->nnodes; i++)
		if (hc->nodes[i].id == id)
			return hc->nodes[i].url;
	return NULL;
}

/* Is origin allowed by http-cors-origin? */
bool http_config_cors(const struct http_config *hc, const char *origin)
{
	size_t i;

	for (i = 0; hc != NULL && i < hc->ncors; i++)
		if (strcmp(hc->cors[i], "*") == 0 ||
		    strcmp(hc->cors[i], origin) == 0)
			return true;
	return false;
}

/* base64url without padding of p[0..len) into out (4 * len / 3 + 2 bytes). */
void http_b64url(const uint8_t *p, size_t len, char *out)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789-_";
	uint32_t acc = 0;
	int bits = 0;
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		acc = acc << 8 | p[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[n++] = b64[(acc >> bits) & 63];
		}
	}
	if (bits > 0)
		out[n++] = b64[(acc << (6 - bits)) & 63];
	out[n] = '\0';
}

/* semd --make-token PRINCIPAL */
int http_make_token(const char *principal, FILE *out)
{
	struct http_token t;
	uint8_t raw[32], h[HTTP_TOKEN_HASH];
	char tok[64], err[256];
	size_t i;

	memset(&t, 0, sizeof t);
	if (http_token_principal(&t, principal, err, sizeof err) != 0) {
		fprintf(stderr, "semd: %s\n", err);
		return EX_USAGE;
	}
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
		fprintf(stderr, "semd: getrandom: %s\n", strerror(errno));
		return EX_OSERR;
	}
	http_b64url(raw, sizeof raw, tok);	/* 43 characters for 256 bits */
	http_sha256(tok, strlen(tok), h);
	fprintf(out, "token: %s\n# in semd.conf:\nhttp-token %s sha256:", tok,
	    principal);
	for (i = 0; i < sizeof h; i++)
		fprintf(out, "%02x", h[i]);
	fprintf(out, "\n");
	OPENSSL_cleanse(raw, sizeof raw);
	OPENSSL_cleanse(tok, sizeof tok);
	return 0;
}
