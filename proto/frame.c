/* SPDX-License-Identifier: BSD-2-Clause */
/* proto/frame.c - length-prefixed framing. */
#include <errno.h>

#include "proto/frame.h"

/* Decide whether buf holds a whole frame. */
int frame_peek(const uint8_t *buf, size_t len, size_t max, size_t *payload_len)
{
	uint32_t n;

	if (len < FRAME_HDR)
		return 0;
	n = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 |
	    (uint32_t)buf[2] << 8 | (uint32_t)buf[3];
	if (n > max)
		return -EMSGSIZE;
	if (len - FRAME_HDR < n)
		return 0;
	*payload_len = n;
	return 1;
}

/* Encode a payload length as the frame header. */
void frame_put_header(uint8_t hdr[FRAME_HDR], uint32_t len)
{
	hdr[0] = (uint8_t)(len >> 24);
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
}
