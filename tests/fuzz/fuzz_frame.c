/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/fuzz_frame.c - the frame decoder and the Request decoder.
 *
 * The input is a byte stream as a client would send it. It is cut into frames
 * with frame_peek() exactly as the daemon does; every frame is decoded as a
 * Semd__Request and, when it decodes, packed again: the packed form must
 * decode, and pack to the same bytes (protobuf-c's output is canonical).
 * Prefixes of each frame must read as incomplete, whatever the split.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/frame.h"
#include "proto/semd.pb-c.h"
#include "tests/fuzz/fuzz.h"

/* Does m, or a message inside it at any depth, carry fields this protocol
 * version does not know (a DownMulti's Want as well as the Request)? */
static int has_unknown(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	unsigned int i;
	size_t k;

	if (m->n_unknown_fields > 0)
		return 1;
	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *at = (const char *)m + f->offset;

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(const void *)
			    ((const char *)m + f->quantifier_offset);
			ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)(const void *)at;

			for (k = 0; k < n; k++)
				if (has_unknown(v[k]))
					return 1;
		} else {
			const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)(const void *)at;

			/* a oneof's other members share the slot: only the set one */
			if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0 &&
			    *(const uint32_t *)(const void *)((const char *)m + f->quantifier_offset) !=
			    f->id)
				continue;
			if (sub != NULL && has_unknown(sub))
				return 1;
		}
	}
	return 0;
}

/* Does req carry fields this protocol version does not know, anywhere? */
static int has_unknown_fields(const Semd__Request *req)
{
	return has_unknown(&req->base);
}

/*
 * Decode one payload as a Request; if it decodes, pack it again. The round
 * trip is only checked without unknown fields: protobuf-c keeps those as
 * read, including some it would refuse to read back (a tag of field 0 in an
 * overlong varint), and the daemon never packs a Request anyway.
 */
static void fuzz_request(const uint8_t *p, size_t n)
{
	Semd__Request *req, *again;
	uint8_t *buf, *buf2;
	size_t m, m2;

	req = semd__request__unpack(NULL, n, p);
	if (req == NULL)
		return;
	FUZZ_ASSERT(req->op_case == SEMD__REQUEST__OP__NOT_SET ||
	    (req->op_case >= SEMD__REQUEST__OP_HELLO && req->op_case <= SEMD__REQUEST__OP_WHERE) ||
	    req->op_case == SEMD__REQUEST__OP_CLUSTER ||
	    req->op_case == SEMD__REQUEST__OP_SET_QUEUE ||
	    req->op_case == SEMD__REQUEST__OP_BACKUP ||
	    req->op_case == SEMD__REQUEST__OP_SESSIONS);
	m = semd__request__get_packed_size(req);
	buf = malloc(m + 1);
	FUZZ_ASSERT(buf != NULL);
	FUZZ_ASSERT(semd__request__pack(req, buf) == m);
	if (has_unknown_fields(req)) {
		free(buf);
		semd__request__free_unpacked(req, NULL);
		return;
	}
	again = semd__request__unpack(NULL, m, buf);
	FUZZ_ASSERT(again != NULL);
	FUZZ_ASSERT(again->id == req->id);
	FUZZ_ASSERT(again->op_case == req->op_case);
	m2 = semd__request__get_packed_size(again);
	FUZZ_ASSERT(m2 == m);
	buf2 = malloc(m2 + 1);
	FUZZ_ASSERT(buf2 != NULL);
	FUZZ_ASSERT(semd__request__pack(again, buf2) == m2);
	FUZZ_ASSERT(memcmp(buf, buf2, m) == 0);
	free(buf2);
	free(buf);
	semd__request__free_unpacked(again, NULL);
	semd__request__free_unpacked(req, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[FRAME_HDR];
	size_t off = 0, n = 0, n2;
	uint32_t announced;
	int rc;

	while (off < size) {
		rc = frame_peek(data + off, size - off, FRAME_MAX_DEFAULT, &n);
		if (size - off >= FRAME_HDR)
			announced = (uint32_t)data[off] << 24 | (uint32_t)data[off + 1] << 16 |
			    (uint32_t)data[off + 2] << 8 | data[off + 3];
		else
			announced = 0;
		if (rc < 0) {
			/* refused only when the header says more than the cap */
			FUZZ_ASSERT(size - off >= FRAME_HDR && announced > FRAME_MAX_DEFAULT);
			break;
		}
		if (rc == 0) {
			FUZZ_ASSERT(size - off < FRAME_HDR || size - off - FRAME_HDR < announced);
			break;
		}
		FUZZ_ASSERT(n == announced && n <= FRAME_MAX_DEFAULT);
		FUZZ_ASSERT(off + FRAME_HDR + n <= size);
		/* the same frame, arriving a byte short, is incomplete */
		FUZZ_ASSERT(frame_peek(data + off, FRAME_HDR + n - 1, FRAME_MAX_DEFAULT, &n2) == 0);
		FUZZ_ASSERT(frame_peek(data + off, FRAME_HDR - 1, FRAME_MAX_DEFAULT, &n2) == 0);
		/* and with a larger cap, it reads the same */
		FUZZ_ASSERT(frame_peek(data + off, size - off, FRAME_MAX_LIMIT, &n2) == 1 && n2 == n);
		frame_put_header(hdr, (uint32_t)n);
		FUZZ_ASSERT(memcmp(hdr, data + off, FRAME_HDR) == 0);
		fuzz_request(data + off + FRAME_HDR, n);
		off += FRAME_HDR + n;
	}
	/* the whole input as one unframed payload, too */
	fuzz_request(data, size);
	return 0;
}
