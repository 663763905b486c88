/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/fastpb.h - protobuf coding of the most frequent messages without
 * protobuf-c's table walks: Down, Up and Ping requests, and replies whose
 * body is empty, a Grant, Released or Pong. Everything else, and anything
 * unusual in a request (an unknown or repeated field, a second op), is left
 * to protobuf-c, so the result is always what protobuf-c would give
 * (tests/daemon/test_fastpb checks this on random and mangled messages,
 * and that every reply fits the bound the daemon sizes its buffer with).
 *
 * Why it is kept - what it is worth (semd-benchmark -t down-up -c 16 -P 1,
 * UNIX socket, in-memory semd, SEMD_FASTPB=0 turning it off):
 * - three interleaved runs each on a busy two-core machine: medians 36.1k
 *   op/s with it, 31.5k without (+15%), p99 4.8 ms vs 6.4;
 * - re-measured for issue 16 (one client thread, 5 s per run, on/off/on/off
 *   beside other builds and benchmarks, so low absolute figures): 14.3k and
 *   14.1k op/s with it, 10.7k and 6.5k without; p50 0.41 and 0.39 ms vs
 *   0.52 and 0.61.
 */
#ifndef SEMD_FASTPB_H
#define SEMD_FASTPB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/semd.pb-c.h"

/*
 * Whether the fast paths are on: yes, unless SEMD_FASTPB=0 is in the
 * environment (read once), which leaves every message to protobuf-c - to
 * measure what they are worth.
 */
bool fastpb_enabled(void);

/* A request decoded in place: req points into op. */
struct fastpb_req {
	Semd__Request	req;
	union {
		Semd__Down	down;
		Semd__Up	up;
		Semd__Ping	ping;
	} op;
};

/*
 * Decode len bytes at p when they are a Down, Up or Ping request of the
 * usual shape. Strings are copied NUL-terminated into buf (bufsize bytes);
 * a Ping payload points into p. Returns true with *out filled, or false
 * when protobuf-c must decode it (it may still be valid).
 */
bool fastpb_request(struct fastpb_req *out, const uint8_t *p, size_t len,
    char *buf, size_t bufsize);

/*
 * Does no string field of a message of type d, encoded in p[0..len), hold a
 * NUL byte? protobuf-c unpacks strings as C strings, so "a\0b" would reach
 * the daemon as "a": a request with such a field is refused instead. The
 * walk follows the descriptor into sub-messages; it allocates nothing and
 * expects bytes the decoder accepted.
 */
bool fastpb_strings_clean(const ProtobufCMessageDescriptor *d,
    const uint8_t *p, size_t len);

/*
 * An upper bound of the packed size of a reply this encoder handles (empty,
 * Grant, Released or Pong body), cheaper than the exact size: what the
 * daemon sizes the buffer with. False when protobuf-c must pack it (or
 * SEMD_FASTPB=0).
 */
bool fastpb_reply_bound(const Semd__Reply *r, size_t *bound);
/* Pack a reply fastpb_reply_bound() accepted; returns the bytes written. */
size_t fastpb_reply_pack(const Semd__Reply *r, uint8_t *out);

/* The room fastpb_reply_frame() needs. */
#define FASTPB_FRAME_ROOM	(4 + 2 * 11 + 2 + 4 * 11)	/* header, id, code, body */

/*
 * The replies of almost every request - no message, an empty body, a Grant
 * or Released - packed with their frame header into out (FASTPB_FRAME_ROOM
 * bytes) in one go; returns the frame's bytes, or 0 when r is of another
 * shape (or SEMD_FASTPB=0): then reply_bound() and reply_pack().
 */
size_t fastpb_reply_frame(const Semd__Reply *r, uint8_t *out);

/*
 * The reply that carries a watch event to watch: { watch_event: { watch,
 * ... } }, from ev[0..len), the event packed by protobuf-c with its watch
 * field 0 (left out). The same bytes as protobuf-c's pack of the whole
 * reply (watch is the event's field 1, so it comes first), made without
 * packing the event again for every watcher. At most len +
 * FASTPB_NOTICE_EXTRA bytes; returns the bytes written.
 */
#define FASTPB_NOTICE_EXTRA	(1 + 10 + 1 + 10)
size_t fastpb_notice_pack(uint64_t watch, const uint8_t *ev, size_t len,
    uint8_t *out);

#endif
