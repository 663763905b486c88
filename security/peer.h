/* SPDX-License-Identifier: BSD-2-Clause */
/* security/peer.h - the principal of a local (UNIX socket) peer. */
#ifndef SEMD_SECURITY_PEER_H
#define SEMD_SECURITY_PEER_H

#include <sys/types.h>

#include "security/acl.h"

/*
 * Fill s (initialised or cleared by the caller) with the identity of the
 * process at the other end of the connected UNIX socket fd: uid:N from
 * SO_PEERCRED, the user's name, and the names of the user's groups (the
 * peer's primary gid plus getgrouplist()). A uid with no passwd entry still
 * gets uid:N, with no user name. On error s is left anonymous.
 * Note: the name lookups go through NSS (files, or LDAP when configured);
 * the daemon does them once per accepted connection.
 */
int peer_subject(int fd, struct acl_subject *s);
/* The peer's credentials only (no name lookups): uid, gid, pid. */
int peer_cred(int fd, uid_t *uid, gid_t *gid, pid_t *pid);

#endif
