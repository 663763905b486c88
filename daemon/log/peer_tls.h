/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/peer_tls.h - raft's peer transport in mutually authenticated TLS
 * 1.3 (a struct raft_uv_transport on the raft thread's libuv loop).
 *
 * Both ends of every peer connection prove a certificate signed by the peer
 * CA; the certificate must also name the host the node is known by in the
 * cluster (its peer-listen): an IP subjectAltName for an IP literal, a DNS
 * one for a name (resolved at every connection attempt). Raft itself is
 * handed one end of a socketpair and never sees the network: a relay pumps
 * the bytes between it and the TLS connection (peer_tls.c).
 */
#ifndef SEMD_PEER_TLS_H
#define SEMD_PEER_TLS_H

#include <stddef.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

struct peer_tls_config {
	const char	*cert_file;	/* PEM chain of this node, leaf first */
	const char	*key_file;	/* its key */
	const char	*ca_file;	/* the CA that signs every peer */
	const char	*bind;		/* HOST:PORT to listen on, or NULL */
};

/*
 * Make t a TLS transport on loop (the files are loaded now). 0, or an error
 * with a message in err (t is then untouched and needs no free).
 */
int peer_tls_init(struct raft_uv_transport *t, uv_loop_t *loop,
    const struct peer_tls_config *cfg, char *err, size_t errlen);
/* Free t's state once raft closed it (as raft_uv_tcp_close()). */
void peer_tls_free(struct raft_uv_transport *t);

#endif
