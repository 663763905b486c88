/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/xprt.h - a client connection's transport: UNIX, TCP or TLS.
 *
 * conn.c reads and conn_io.c writes every connection the same way, through
 * its transport's functions; a new transport is one more struct xprt_ops. The
 * transport also says who is at the other end (identify), before the
 * state lock is taken: SO_PEERCRED and the NSS look-ups of a UNIX peer,
 * the certificate of a TLS one.
 */
#ifndef SEMD_XPRT_H
#define SEMD_XPRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

struct conn;
struct acl_subject;

/* After a read: what the socket holds now. */
enum xprt_more {
	XPRT_AGAIN,	/* wait until it is readable again */
	XPRT_MORE,	/* more is there now: read again */
	XPRT_GONE,	/* the peer left or failed (logged): free it */
};

struct xprt_ops {
	/* Set a new client up (socket options, bookkeeping); close undoes it. */
	void		(*start)(struct conn *c, uint32_t keepalive_s);
	/* Read into buf[0..len): the bytes read; *more says what is left. */
	size_t		(*read)(struct conn *c, uint8_t *buf, size_t len,
			    enum xprt_more *more);
	/*
	 * Write p[0..len): the bytes taken (fewer when the socket is full,
	 * or c->wwant_r set: the write waits for input), -1 when the
	 * connection is lost (logged).
	 */
	ssize_t		(*write)(struct conn *c, const uint8_t *p, size_t len);
	/* Does the transport hold input the socket will not announce again? */
	bool		(*pending)(const struct conn *c);
	/* Close the socket (bye: our own close, everything said). */
	void		(*close)(struct conn *c, bool bye);
	/*
	 * Who is at the other end: fill s (initialised); names: look the user
	 * and groups up too (NSS: may be slow; never under the state lock).
	 * With peer, also the text for the log lines (sa: the peer's address).
	 */
	void		(*identify)(const struct conn *c, const struct sockaddr *sa,
			    bool names, struct acl_subject *s, char *peer,
			    size_t peerlen);
};

extern const struct xprt_ops xprt_unix;
extern const struct xprt_ops xprt_tcp;
extern const struct xprt_ops xprt_tls;

#endif
