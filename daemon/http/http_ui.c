/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_ui.c - the web console's files (console/, doc/console.md)
 * under /ui/ on the HTTP listeners.
 *
 * The files are built into semd (console/embed.sh makes a table of them at
 * build time) rather than read from a directory: the console always speaks
 * the API of the daemon that serves it, a request can name nothing but a
 * file of the table (no path reaches the filesystem, so no traversal, no
 * symbolic link, no file of another package), nothing is read from the disk
 * on the event loop, and the tests serve what is installed. Each answer
 * says exactly what it is (its type, nosniff) and what the page may do: a
 * Content-Security-Policy that allows only the console's own scripts and
 * styles, no inline code, no markup from strings (Trusted Types), requests
 * to this origin and the cluster's nodes (http-nodes) only, no framing.
 * Files are revalidated by ETag (a hash of their bytes), so an upgraded
 * daemon's console is taken at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/http-int.h"
#include "daemon/http/http_config.h"
#include "daemon/http/http_ui.h"

#define UI_PREFIX	"/ui"

/*
 * What the console's pages may do (and the answers of this file): %s is
 * where they may send requests, this origin and the other nodes'.
 */
#define UI_CSP \
    "default-src 'none'; script-src 'self'; style-src 'self'; " \
    "img-src 'self'; connect-src 'self'%s; base-uri 'none'; " \
    "form-action 'self'; frame-ancestors 'none'; " \
    "require-trusted-types-for 'script'; trusted-types 'none'"

/* Is uri's path (before any query) exactly p, or p followed by '/'? */
static bool http_ui_under(const char *uri, const char *p, size_t len)
{
	return strncmp(uri, p, len) == 0 &&
	    (uri[len] == '\0' || uri[len] == '?' || uri[len] == '/');
}

/* Is uri the console's: /ui, /ui/..., or / (sent on to /ui/)? */
bool http_ui_path(const char *uri)
{
	return uri != NULL && (http_ui_under(uri, UI_PREFIX, strlen(UI_PREFIX)) ||
	    strcmp(uri, "/") == 0 || strncmp(uri, "/?", 2) == 0);
}

/* Compare a file's path with a key of len bytes (bsearch). */
static int http_ui_cmp(const char *key, size_t len, const struct http_ui_file *f)
{
	size_t flen = strlen(f->path);
	int c = memcmp(key, f->path, len < flen ? len : flen);

	return c != 0 ? c : len < flen ? -1 : len > flen ? 1 : 0;
}

/*
 * The file of a path under /ui/ of len bytes ("" is index.html), or NULL.
 * Only letters, digits, '-', '_', '.' and '/' can name one, never "..":
 * the table has no other names, and a name that could mean something to a
 * filesystem is refused before it is looked up.
 */
static const struct http_ui_file *http_ui_find(const char *p, size_t len)
{
	size_t lo = 0, hi = http_ui_nfiles, i;
	int c;

	if (len == 0) {
		p = "index.html";
		len = strlen(p);
	}
	for (i = 0; i < len; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		    (p[i] >= '0' && p[i] <= '9') || p[i] == '-' || p[i] == '_' ||
		    p[i] == '.' || p[i] == '/'))
			return NULL;
	if (memmem(p, len, "..", 2) != NULL || memmem(p, len, "//", 2) != NULL)
		return NULL;
	while (lo < hi) {
		i = lo + (hi - lo) / 2;
		c = http_ui_cmp(p, len, &http_ui_files[i]);
		if (c == 0)
			return &http_ui_files[i];
		if (c < 0)
			hi = i;
		else
			lo = i + 1;
	}
	return NULL;
}

/* Does an If-None-Match header name etag (or "*")? Weak tags match too. */
static bool http_ui_fresh(const char *inm, const char *etag)
{
	const char *p;
	size_t len = strlen(etag);

	if (inm == NULL)
		return false;
	if (strcmp(inm, "*") == 0)
		return true;
	for (p = inm; (p = strstr(p, etag)) != NULL; p += len)
		if (p[len] == '\0' || p[len] == ',' || p[len] == ' ' || p[len] == '\t')
			return true;
	return false;
}

/*
 * Append to b (size bytes, used of them taken) the origin of a node's URL
 * ("http://h:p" of "http://h:p/x"), as a source of connect-src; the bytes
 * taken after. A URL with anything a policy could read as more than one
 * source is left out.
 */
static size_t http_ui_origin(char *b, size_t size, size_t used, const char *url)
{
	const char *host = strstr(url, "://"), *p;
	size_t len;

	if (host == NULL || (strncmp(url, "http://", 7) != 0 &&
	    strncmp(url, "https://", 8) != 0))
		return used;
	len = (size_t)(host + 3 - url) + strcspn(host + 3, "/");
	for (p = url; p < url + len; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr(".-:/[]", *p) != NULL))
			return used;
	if (used + 1 + len + 1 > size)
		return used;
	b[used++] = ' ';
	memcpy(b + used, url, len);
	used += len;
	b[used] = '\0';
	return used;
}

/* The headers every answer of the console carries. */
static void http_ui_headers(struct hreq *r, const struct http_config *cfg)
{
	char nodes[2048] = "", csp[sizeof nodes + sizeof UI_CSP];
	size_t i, used = 0;

	for (i = 0; cfg != NULL && i < cfg->nnodes; i++)
		used = http_ui_origin(nodes, sizeof nodes, used, cfg->nodes[i].url);
	snprintf(csp, sizeof csp, UI_CSP, nodes);
	http_header(r, "Content-Security-Policy", csp);
	http_header(r, "X-Content-Type-Options", "nosniff");
	http_header(r, "X-Frame-Options", "DENY");
	http_header(r, "Referrer-Policy", "no-referrer");
	http_header(r, "Cross-Origin-Opener-Policy", "same-origin");
	http_header(r, "Cross-Origin-Resource-Policy", "same-origin");
}

/* Answer status with a short plain text. */
static int http_ui_plain(struct hreq *r, const struct http_config *cfg,
    int status, const char *text)
{
	http_ui_headers(r, cfg);
	http_header(r, "Cache-Control", "no-store");
	http_reply_plain(r, status, text);
	return status;
}

/* Answer a request for the console: a file, 304, 301, 404 or 405. */
int http_ui_answer(struct hreq *r, const struct http_config *cfg)
{
	const char *uri = http_uri(r), *p;
	const struct http_ui_file *f;
	int method = http_method(r);
	size_t len;

	if (method != HTTP_GET && method != HTTP_HEAD) {
		http_header(r, "Allow", "GET, HEAD");
		return http_ui_plain(r, cfg, 405,
		    "the console's files are only read (GET, HEAD)");
	}
	if (strncmp(uri, UI_PREFIX "/", strlen(UI_PREFIX) + 1) != 0) {
		/* "/ui" and "/": the console is at /ui/ */
		http_header(r, "Location", UI_PREFIX "/");
		return http_ui_plain(r, cfg, 301, "the console is at /ui/");
	}
	p = uri + strlen(UI_PREFIX) + 1;
	len = strcspn(p, "?#");
	if ((f = http_ui_find(p, len)) == NULL)
		return http_ui_plain(r, cfg, 404, "no such file of the console");
	http_ui_headers(r, cfg);
	http_header(r, "ETag", f->etag);
	http_header(r, "Cache-Control", "no-cache");
	if (http_ui_fresh(http_in_header(r, "If-None-Match"), f->etag)) {
		http_reply_empty(r, 304, NULL, NULL);
		return 304;
	}
	http_reply_static(r, 200, f->type, f->data, f->len);
	return 200;
}
