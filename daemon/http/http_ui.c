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

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

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
static void http_ui_headers(struct evkeyvalq *out, const struct http_config *cfg)
{
	char nodes[2048] = "", csp[sizeof nodes + sizeof UI_CSP];
	size_t i, used = 0;

	for (i = 0; cfg != NULL && i < cfg->nnodes; i++)
		used = http_ui_origin(nodes, sizeof nodes, used, cfg->nodes[i].url);
	snprintf(csp, sizeof csp, UI_CSP, nodes);
	evhttp_add_header(out, "Content-Security-Policy", csp);
	evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(out, "X-Frame-Options", "DENY");
	evhttp_add_header(out, "Referrer-Policy", "no-referrer");
	evhttp_add_header(out, "Cross-Origin-Opener-Policy", "same-origin");
	evhttp_add_header(out, "Cross-Origin-Resource-Policy", "same-origin");
}

/* Send req's answer (500: evhttp's own error page). */
static int http_ui_send(struct evhttp_request *req, int status,
    const char *reason, struct evbuffer *b)
{
	if (status == 500)
		evhttp_send_error(req, status, reason);
	else
		evhttp_send_reply(req, status, reason, b);
	return status;
}

/* Send status with a short plain text (NULL: no body). */
static int http_ui_plain(struct evhttp_request *req,
    const struct http_config *cfg, int status, const char *reason,
    const char *text)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	struct evbuffer *b = evbuffer_new();

	http_ui_headers(out, cfg);
	evhttp_add_header(out, "Cache-Control", "no-store");
	if (b == NULL)
		return http_ui_send(req, 500, "out of memory", NULL);
	if (text != NULL) {
		evhttp_add_header(out, "Content-Type", "text/plain; charset=utf-8");
		evbuffer_add_printf(b, "%s\n", text);
	}
	http_ui_send(req, status, reason, b);
	evbuffer_free(b);
	return status;
}

/* Answer a request for the console: a file, 304, 301, 404 or 405. */
int http_ui_answer(struct evhttp_request *req, const struct http_config *cfg)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	const char *uri = evhttp_request_get_uri(req), *p;
	const struct http_ui_file *f;
	struct evbuffer *b;
	int method = evhttp_request_get_command(req);
	char clen[24];
	size_t len;

	if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
		evhttp_add_header(out, "Allow", "GET, HEAD");
		return http_ui_plain(req, cfg, 405, "Method Not Allowed",
		    "the console's files are only read (GET, HEAD)");
	}
	if (strncmp(uri, UI_PREFIX "/", strlen(UI_PREFIX) + 1) != 0) {
		/* "/ui" and "/": the console is at /ui/ */
		evhttp_add_header(out, "Location", UI_PREFIX "/");
		return http_ui_plain(req, cfg, 301, "Moved Permanently",
		    "the console is at /ui/");
	}
	p = uri + strlen(UI_PREFIX) + 1;
	len = strcspn(p, "?#");
	if ((f = http_ui_find(p, len)) == NULL)
		return http_ui_plain(req, cfg, 404, "Not Found",
		    "no such file of the console");
	http_ui_headers(out, cfg);
	evhttp_add_header(out, "ETag", f->etag);
	evhttp_add_header(out, "Cache-Control", "no-cache");
	if (http_ui_fresh(evhttp_find_header(evhttp_request_get_input_headers(req),
	    "If-None-Match"), f->etag))
		return http_ui_send(req, 304, "Not Modified", NULL);
	evhttp_add_header(out, "Content-Type", f->type);
	if (method == EVHTTP_REQ_HEAD) {
		/* its length, not its bytes (evhttp would send what it is given) */
		snprintf(clen, sizeof clen, "%zu", f->len);
		evhttp_add_header(out, "Content-Length", clen);
		return http_ui_send(req, 200, "OK", NULL);
	}
	if ((b = evbuffer_new()) == NULL ||
	    evbuffer_add_reference(b, f->data, f->len, NULL, NULL) != 0) {
		if (b != NULL)
			evbuffer_free(b);
		return http_ui_send(req, 500, "out of memory", NULL);
	}
	http_ui_send(req, 200, "OK", b);
	evbuffer_free(b);
	return 200;
}
