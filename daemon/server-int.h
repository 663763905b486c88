/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/server-int.h - what server.c and server_config.c share; nothing
 * else includes it.
 */
#ifndef SEMD_SERVER_INT_H
#define SEMD_SERVER_INT_H

#include "daemon/server.h"

/* Copy the settings the loops read without the lock (struct server_live). */
void server_set_live(struct server *srv);
/* SIGHUP: read the configuration again and apply what can change live. */
void server_reload(struct server *srv);

#endif
