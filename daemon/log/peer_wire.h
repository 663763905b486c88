/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/peer_wire.h - the bytes a peer sends raft, checked before
 * libraft reads them.
 *
 * libraft 0.22's decoder (uv_recv.c, uv_encoding.c) trusts the wire: it
 * allocates the header length a message's preamble gives, reads a header's
 * fields without looking at its length (a 1-byte AppendEntries header is
 * read 40 bytes past its end), allocates what an entry count says, and
 * lays out entries by lengths it rounds up to 8 bytes while it read their
 * sum unrounded. So every peer stream passes this checker in the transport
 * (peer_net.c), and raft is given only whole messages of libraft's own
 * format, each preamble and header held back until checked:
 *
 *   preamble  u64 (byte 0 type, byte 2 version, the others 0), u64 header
 *             length, little-endian
 *   header    by type and version, as libraft 0.22 writes them:
 *             RequestVote (v2) 40 bytes, its result (v2) 24, AppendEntries
 *             (v0) 48 + 16 a entry, its result (v2) 32, InstallSnapshot
 *             (v0) 56 + its configuration, TimeoutNow (v0) 24
 *   payload   AppendEntries: its entries, each a multiple of 8 bytes long
 *             (libraft pads them so); InstallSnapshot: the snapshot
 *
 * Bounds: PEER_WIRE_MAX_ENTRIES entries a message, PEER_WIRE_MAX_PAYLOAD
 * bytes of entries or snapshot, a configuration of PEER_WIRE_MAX_CONF bytes
 * (PEER_WIRE_MAX_SERVERS servers) that libraft's decoder reads within its
 * length. What it means (terms, senders, the entries' contents) is the
 * peer port's to check (port.c), after libraft's decoder and before raft.
 */
#ifndef SEMD_LOG_PEER_WIRE_H
#define SEMD_LOG_PEER_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEER_WIRE_MAX_ENTRIES	4096
#define PEER_WIRE_MAX_PAYLOAD	((uint64_t)1 << 30)
#define PEER_WIRE_MAX_CONF	65536
#define PEER_WIRE_MAX_SERVERS	256
#define PEER_WIRE_PREAMBLE	16

/* One direction of one peer connection, peer to raft. */
struct peer_wire {
	uint8_t		*buf;		/* preamble and header, held back */
	size_t		cap;
	size_t		have;		/* bytes of them in buf */
	size_t		want;		/* ... until the part is whole */
	uint64_t	payload;	/* payload bytes still to pass */
	unsigned long	messages;	/* whole messages passed */
};

/* A new stream: a preamble comes first. */
void peer_wire_init(struct peer_wire *w);
/* Free what w holds (w may be used again after peer_wire_init). */
void peer_wire_free(struct peer_wire *w);

/*
 * Bytes from the peer, in order. What raft may read goes to emit, in order
 * (a held-back preamble and header once checked, payload as it comes);
 * emit returns 0, or -1 to stop (no memory). 0, or -1 with why: the
 * stream is not libraft's format within the bounds, or emit stopped, and
 * nothing more of it may reach raft (the connection ends).
 */
int peer_wire_feed(struct peer_wire *w, const uint8_t *in, size_t n,
    int (*emit)(void *arg, const uint8_t *p, size_t n), void *arg,
    char *why, size_t whylen);

/*
 * A configuration as libraft encodes it (a RAFT_CHANGE entry, an
 * InstallSnapshot's): true when libraft's decoder reads it within len
 * bytes - format 1, at most PEER_WIRE_MAX_SERVERS servers of a non-zero
 * id, an address of 1 to 255 bytes and a role, zeros to a multiple of 8.
 */
bool peer_wire_conf_ok(const uint8_t *p, size_t len);

#endif
