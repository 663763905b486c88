/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http_ui.h - the web console's files under /ui/ (http_ui.c),
 * answered by the HTTP front door beside the API.
 */
#ifndef SEMD_HTTP_UI_H
#define SEMD_HTTP_UI_H

#include <stdbool.h>
#include <stddef.h>

struct evhttp_request;
struct http_config;

/* A file of the console, built into the daemon (console/embed.sh). */
struct http_ui_file {
	const char		*path;		/* under /ui/: "js/app.js" */
	const char		*type;		/* its Content-Type */
	const unsigned char	*data;
	size_t			len;
	const char		*etag;		/* "\"<16 hex of its SHA-256>\"" */
};

/* The console's files, sorted by path (console/ui_files.c, generated). */
extern const struct http_ui_file http_ui_files[];
extern const size_t http_ui_nfiles;

/* Is the path of uri the console's: /ui, /ui/..., or / (sent on to /ui/)? */
bool http_ui_path(const char *uri);

/*
 * Answer req, whose path http_ui_path() took, with a console file, a 304
 * (If-None-Match), a redirect to /ui/, a 404 or a 405; the answer is sent
 * (evhttp_send_reply) before this returns. cfg: the front door's settings
 * (the pages may call the nodes of http-nodes). The status is returned.
 */
int http_ui_answer(struct evhttp_request *req, const struct http_config *cfg);

#endif
