/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/http/http.h - semd over HTTP/JSON (doc/http.md): what the rest of
 * the daemon calls. listen.c opens the listeners (http:HOST:PORT,
 * https:HOST:PORT, http+unix:PATH), config.c hands over the http-* keys
 * (http_config.h), main.c frees it all after the loops ended.
 */
#ifndef SEMD_HTTP_H
#define SEMD_HTTP_H

#include <stdbool.h>
#include <stddef.h>

struct server;

/* Is spec an HTTP listener address (http:, https:, http+unix:)? */
bool http_listener_kind(const char *spec);
/* Check an HTTP listener address; 0, or -EINVAL with err filled. */
int http_listener_check(const char *spec, char *err, size_t errlen);
/* Open an HTTP listener of srv, served by its first loop: 0 or -errno. */
int http_listen(struct server *srv, const char *spec);
/* Call fn with the bound address of every HTTP listener (the ready file). */
void http_listeners_each(void (*fn)(void *arg, const char *addr), void *arg);
/* A stop: close the listeners, end the streams, answer what waits. */
void http_unlisten(struct server *srv);
/* After the loops ended: free the front door (its connections too). */
void http_free(void);

#endif
