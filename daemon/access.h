/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/access.h - who a connection is, and what it may do.
 *
 * Every connection gets an identity when it is accepted, worked out by its
 * transport before the state lock is taken (xprt.h): the peer's uid, user
 * name and groups over UNIX sockets (SO_PEERCRED), cn:NAME from a verified
 * client certificate over TLS, or anonymous. Each request is checked
 * against the configuration's acl/protect rules (security/acl.h) before it
 * reaches the state machine; a denial is logged with the principal and
 * handed back to conn.c, which answers PERMISSION_DENIED. The connection
 * quota is counted here, per principal. Policy only: nothing here writes
 * to a client.
 */
#ifndef SEMD_ACCESS_H
#define SEMD_ACCESS_H

struct acl_subject;
struct server;

/* Copy an identity (principal, uid/user or cn, groups): 0 or -ENOMEM. */
int access_subject_copy(struct acl_subject *dst, const struct acl_subject *src);

/*
 * Make access.c the policy of srv's connections (srv->policy, struct
 * conn_policy in conn.h) and filter List and Watch by it. Called once,
 * before the loops run.
 */
void access_init(struct server *srv);

#endif
