/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/access.h - who a connection is, and what it may do.
 *
 * Every connection gets an identity when it is accepted: the peer's uid,
 * user name and groups over UNIX sockets (SO_PEERCRED), cn:NAME from a
 * verified client certificate over TLS, or anonymous. Each request is
 * checked against the configuration's acl/protect rules (security/acl.h)
 * before it reaches the state machine; a denied request is answered
 * PERMISSION_DENIED and logged with the principal. The connection quota is
 * counted here, per principal.
 */
#ifndef SEMD_ACCESS_H
#define SEMD_ACCESS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "daemon/state.h"
#include "proto/semd.pb-c.h"

struct server;
struct conn;
struct access_id;

/*
 * Identify a new connection on fd (ssl: its TLS session, or NULL) and count
 * it against its principal's connection quota. Fills principal (for the
 * state machine) and *out. -EDQUOT when over the quota (the client has been
 * told RESOURCE_EXHAUSTED; the caller closes fd), -ENOMEM.
 */
int access_open(struct server *srv, int fd, bool is_unix, SSL *ssl,
    struct access_id **out, char *principal, size_t len);
/* The connection is gone; NULL is a no-op. */
void access_close(struct access_id *id);
/* The principal text of an identity ("uid:1000", "cn:web1", "anonymous"). */
const char *access_principal(const struct access_id *id);
/*
 * May this request go to the state machine? If not, the PERMISSION_DENIED
 * reply has been queued and the refusal logged. If so, *who says what the
 * caller may do with it (privileges, per-principal caps: state.h).
 */
bool access_check(struct conn *c, const Semd__Request *req,
    struct sm_caller *who);

#endif
