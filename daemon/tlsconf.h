/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/tlsconf.h - the daemon's TLS server context (security/tls.h) made
 * from the tls-* settings: built when the first tls: listener opens,
 * reloaded on SIGHUP (new handshakes get the new certificate, established
 * connections keep theirs), freed at exit.
 */
#ifndef SEMD_TLSCONF_H
#define SEMD_TLSCONF_H

#include "daemon/config.h"

struct tls_server;

/* The context for cfg, made on first use; NULL (logged) on error. */
struct tls_server *tlsconf_server(const struct semd_config *cfg);
/* SIGHUP: load cfg's files again if TLS is in use; errors keep the old. */
void tlsconf_reload(const struct semd_config *cfg);
/* Free the context (live connections keep theirs). */
void tlsconf_free(void);

#endif
