/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/listen.h - the listening sockets: unix:PATH, tcp:HOST:PORT,
 * tcp:[ADDR6]:PORT, tls:..., or sockets passed by systemd.
 *
 * listen.c accepts clients and hands them to conn_accept() (conn.h). It
 * also binds the metrics endpoint's socket (metrics.c) and writes the
 * ready file. The server learns of the listeners through one hook
 * (srv->unlisten, set when the first one opens).
 */
#ifndef SEMD_LISTEN_H
#define SEMD_LISTEN_H

#include <stdbool.h>
#include <stddef.h>

#include "core/list.h"

struct server;
struct evconnlistener;
struct sockaddr;

struct listener {
	struct server		*srv;
	struct evconnlistener	*evl;
	char			*addr;		/* the bound address, unix:/tcp:/tls: */
	char			*unlink_path;	/* our UNIX socket file */
	bool			is_unix;
	struct list_head	entry;
};

/* Open the listeners (socket activation, or cfg.listen, or the defaults): 0 or an exit code. */
int listeners_open(struct server *srv);
/* A listening socket (fd, or -errno): for the metrics endpoint too. */
int listener_bind_unix(struct server *srv, const char *path, unsigned int mode);
int listener_bind_tcp(const char *spec);
/*
 * Do a and b come from the same source: the same IPv4 address, or the same
 * IPv6 /64? (All UNIX peers are one source.)
 */
bool listener_same_source(const struct sockaddr *a, const struct sockaddr *b);
/* The address a socket is bound to, in the listen syntax (malloc'd). */
char *listener_name(int fd, bool *is_unix);
/* Stop listening on a socket (evl may be NULL); remove its file, free the path. */
void listener_close(struct evconnlistener *evl, char *unlink_path);
/*
 * Write the ready file (cfg.ready_file, if set: the bound addresses, then
 * extra as a metrics: line when not NULL) and the status line for systemd
 * into status. 0 or an exit code.
 */
int listeners_ready(struct server *srv, const char *extra, char *status,
    size_t len);

#endif
