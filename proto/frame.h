/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proto/frame.h - length-prefixed framing of semd messages.
 *
 * A frame is a 4-byte big-endian payload length followed by the payload (one
 * protobuf-c message). Pure functions on byte buffers: no I/O.
 */
#ifndef SEMD_FRAME_H
#define SEMD_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_HDR		4
#define FRAME_MAX_DEFAULT	(64u * 1024u)	/* payload cap */
#define FRAME_MAX_LIMIT		(16u * 1024u * 1024u)

/*
 * Look at len bytes at buf. Returns 1 and sets *payload_len when a whole
 * frame is there (it occupies FRAME_HDR + *payload_len bytes), 0 when more
 * bytes are needed, -EMSGSIZE when the announced payload exceeds max.
 */
int frame_peek(const uint8_t *buf, size_t len, size_t max, size_t *payload_len);

/* Write the header for a payload of len bytes. */
void frame_put_header(uint8_t hdr[FRAME_HDR], uint32_t len);

#endif
