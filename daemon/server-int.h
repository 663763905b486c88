/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/server-int.h - what server.c asks of server_config.c; nothing
 * else includes it.
 */
#ifndef SEMD_SERVER_INT_H
#define SEMD_SERVER_INT_H

#include "daemon/server.h"

/* Copy the settings the loops read without the lock (struct server_live). */
void server_set_live(struct server *srv);
/*
 * SIGHUP: read the configuration again into next, keeping (and logging)
 * what changes only at a restart. 0, or -1 to keep the running one.
 */
int server_config_reread(struct server *srv, struct semd_config *next);
/* Under the lock: next (taken over) becomes the running configuration. */
void server_config_apply_locked(struct server *srv, struct semd_config *next);

#endif
