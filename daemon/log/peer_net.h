/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/peer_net.h - raft's peer transport (a struct raft_uv_transport
 * on the raft thread's libuv loop): every peer connection proves who it is
 * before raft sees a byte of it, and every byte a peer sends raft passes the
 * wire checker (peer_wire.h) first.
 *
 * How a peer proves it, by the node's settings:
 *  - PEER_AUTH_TLS: mutually authenticated TLS 1.3. Both ends prove a
 *    certificate signed by the peer CA that names the host the node is
 *    known by in the cluster (its peer-listen): an IP subjectAltName for an
 *    IP literal, a DNS one for a name (resolved at every connection
 *    attempt).
 *  - PEER_AUTH_KEY: plain TCP, and a handshake only holders of the peer key
 *    (a file of the node's, 16 to 1024 bytes, readable by its owner only)
 *    can answer: each side sends a fresh 32-byte nonce and proves the key by
 *    an HMAC-SHA256 over both nonces (the connecting side's also over its
 *    id and address), the accepting side first. Nothing after the
 *    handshake is protected: meant for loopback, where no other user can
 *    write into an established TCP stream.
 *  - PEER_AUTH_NONE: plain TCP, a peer says who it is and is believed (only
 *    with allow-insecure-peers).
 *
 * Raft itself is handed one end of a socketpair and never sees the network:
 * a relay pumps the bytes between it and the connection (peer_net.c). At
 * most PEER_NET_MAX_PENDING accepted connections may be in their handshake
 * at once, PEER_NET_PER_SOURCE of them from one address, each for
 * PEER_NET_HS_MS: a connection past either bound takes the place of the
 * oldest, so silent connections cannot keep the nodes apart.
 */
#ifndef SEMD_PEER_NET_H
#define SEMD_PEER_NET_H

#include <stddef.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#define PEER_NET_MAX_PENDING	16
#define PEER_NET_PER_SOURCE	4
#define PEER_NET_HS_MS		2000

enum peer_auth { PEER_AUTH_NONE, PEER_AUTH_KEY, PEER_AUTH_TLS };

struct peer_net_config {
	enum peer_auth	auth;
	const char	*cert_file;	/* TLS: PEM chain of this node, leaf first */
	const char	*key_file;	/* ... its key */
	const char	*ca_file;	/* ... the CA that signs every peer */
	const char	*secret_file;	/* KEY: the peer key */
	const char	*bind;		/* HOST:PORT to listen on, or NULL */
};

/*
 * Make t a peer transport on loop (the files are loaded now). 0, or an
 * error with a message in err (t is then untouched and needs no free).
 */
int peer_net_init(struct raft_uv_transport *t, uv_loop_t *loop,
    const struct peer_net_config *cfg, char *err, size_t errlen);
/* Free t's state once raft closed it (as raft_uv_tcp_close()). */
void peer_net_free(struct raft_uv_transport *t);

/*
 * The peer key in path: 0 and its bytes in key (*len of them, at most
 * cap), or -1 with why in err: not a regular file owned by this user (or
 * root), readable or writable by others, shorter than 16 bytes or longer
 * than cap.
 */
int peer_net_key_load(const char *path, unsigned char *key, size_t cap,
    size_t *len, char *err, size_t errlen);

#endif
