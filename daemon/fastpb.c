/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/fastpb.c - hand coding of the hot messages (see fastpb.h).
 *
 * It follows protobuf-c 1.x exactly: proto3 scalars are written when not
 * zero, strings when not empty, a oneof message member when its case is
 * set (even when empty), all in field-number order; a uint32 field takes
 * the low 32 bits of its varint, the last of repeated scalars wins.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/strcopy.h"
#include "daemon/fastpb.h"
#include "proto/frame.h"
#include "proto/pbwire.h"

/* Read a varint at *p (< end); false when cut short or over 10 bytes. */
static inline bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t x = 0;
	unsigned int i;

	if (q < end && *q < 0x80) {
		*v = *q;
		*p = q + 1;
		return true;
	}
	/* two and three bytes (ids, tokens) without the loop's tests */
	if (end - q >= 2 && q[1] < 0x80) {
		*v = (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
		*p = q + 2;
		return true;
	}
	if (end - q >= 3 && q[2] < 0x80) {
		*v = (uint64_t)(q[0] & 0x7f) | (uint64_t)(q[1] & 0x7f) << 7 |
		    (uint64_t)q[2] << 14;
		*p = q + 3;
		return true;
	}
	for (i = 0; i < 10 && q < end; i++, q++) {
		x |= (uint64_t)(*q & 0x7f) << (7 * i);
		if (!(*q & 0x80)) {
			*v = x;
			*p = q + 1;
			return true;
		}
	}
	return false;
}

/* Read a field's tag; false when it is not a plain tag. */
static inline bool get_tag(const uint8_t **p, const uint8_t *end,
    uint32_t *field, unsigned int *wt)
{
	uint64_t t;

	if (!get_varint(p, end, &t) || t > UINT32_MAX || (t >> 3) == 0)
		return false;
	*field = (uint32_t)(t >> 3);
	*wt = (unsigned int)(t & 7);
	return true;
}

/* Read a length-delimited field's bounds. */
static inline bool get_len(const uint8_t **p, const uint8_t *end,
    const uint8_t **data, size_t *len)
{
	uint64_t n;

	if (!get_varint(p, end, &n) || n > (uint64_t)(end - *p))
		return false;
	*data = *p;
	*len = (size_t)n;
	*p += n;
	return true;
}

/*
 * Copy a string field into buf (NUL-terminated); false when it does not fit
 * or holds a NUL byte (protobuf-c then decodes it and the caller refuses it
 * through fastpb_strings_clean()).
 */
static inline bool get_string(const uint8_t *data, size_t len, char *buf,
    size_t bufsize, size_t *used, char **out)
{
	char *s;

	if (bufsize - *used < len + 1)
		return false;
	s = buf + *used;
	if (!strcopy(s, data, len, false))
		return false;
	s[len] = '\0';
	*used += len + 1;
	*out = s;
	return true;
}

/*
 * A message of a string name = 1 and varints 2 .. nv + 1 (Down, Up): the
 * name into buf, field k's value into v[k - 2] (left alone when absent).
 * False on anything else, or a second name.
 */
static bool get_named(const uint8_t *p, const uint8_t *end, char *buf,
    size_t bufsize, char **name, uint64_t *v, uint32_t nv)
{
	const uint8_t *data;
	uint32_t field;
	unsigned int wt;
	size_t len, used = 0;
	bool have_name = false;

	while (p < end) {
		if (!get_tag(&p, end, &field, &wt))
			return false;
		if (field == 1 && wt == PB_WT_LEN && !have_name) {
			if (!get_len(&p, end, &data, &len) ||
			    !get_string(data, len, buf, bufsize, &used, name))
				return false;
			have_name = true;
		} else if (field >= 2 && field - 2 < nv && wt == PB_WT_VARINT) {
			if (!get_varint(&p, end, &v[field - 2]))
				return false;
		} else {
			return false;
		}
	}
	return true;
}

/*
 * Down { name = 1, n = 2, timeout_ms = 3, lease_ms = 4, limit = 5 }: out's
 * request.
 */
static bool get_down(struct fastpb_req *out, const uint8_t *p,
    const uint8_t *end, char *buf, size_t bufsize)
{
	Semd__Down *d = &out->op.down;
	uint64_t v[4] = { 0, 0, 0, 0 };

	*d = (Semd__Down)SEMD__DOWN__INIT;
	if (!get_named(p, end, buf, bufsize, &d->name, v, 4))
		return false;
	d->n = (uint32_t)v[0];
	d->timeout_ms = (int64_t)v[1];
	d->lease_ms = (uint32_t)v[2];
	d->limit = (uint32_t)v[3];
	out->req.op_case = SEMD__REQUEST__OP_DOWN;
	out->req.down = d;
	return true;
}

/* Up { name = 1, n = 2, permit_id = 3 }: out's request. */
static bool get_up(struct fastpb_req *out, const uint8_t *p,
    const uint8_t *end, char *buf, size_t bufsize)
{
	Semd__Up *u = &out->op.up;
	uint64_t v[2] = { 0, 0 };

	*u = (Semd__Up)SEMD__UP__INIT;
	if (!get_named(p, end, buf, bufsize, &u->name, v, 2))
		return false;
	u->n = (uint32_t)v[0];
	u->permit_id = v[1];
	out->req.op_case = SEMD__REQUEST__OP_UP;
	out->req.up = u;
	return true;
}

/* Ping { payload = 1 }: out's request; the payload stays in the frame. */
static bool get_ping(struct fastpb_req *out, const uint8_t *p,
    const uint8_t *end)
{
	Semd__Ping *g = &out->op.ping;
	const uint8_t *data = NULL;
	uint32_t field;
	unsigned int wt;
	size_t len = 0;

	*g = (Semd__Ping)SEMD__PING__INIT;
	/* No field, or one payload and nothing after it. */
	if (p < end && (!get_tag(&p, end, &field, &wt) || field != 1 ||
	    wt != PB_WT_LEN || !get_len(&p, end, &data, &len) || p != end))
		return false;
	if (len > 0) {
		g->payload.data = (uint8_t *)data;
		g->payload.len = len;
	}
	out->req.op_case = SEMD__REQUEST__OP_PING;
	out->req.ping = g;
	return true;
}

/*
 * A Down or Up as clients pack them, in one pass: the id first (if not 0),
 * then the op, alone, its length one byte; in it the name first, its length
 * one byte, then varints of the op's numbered fields in increasing order,
 * each once. False when the request is of another shape (the general path
 * below takes it then); when true, the general path would have decoded the
 * same.
 */
static bool get_usual(struct fastpb_req *out, const uint8_t *p,
    const uint8_t *end, char *buf, size_t bufsize)
{
	uint64_t id = 0, v[4] = { 0, 0, 0, 0 };
	const uint8_t *name;
	unsigned int op, f, last = 1, nv;
	size_t nlen, used = 0;
	char *s;

	if (p < end && *p == (1 << 3 | PB_WT_VARINT)) {
		p++;
		if (!get_varint(&p, end, &id))
			return false;
	}
	if (end - p < 4)
		return false;
	op = p[0] >> 3;
	if ((op != SEMD__REQUEST__OP_DOWN && op != SEMD__REQUEST__OP_UP) ||
	    (p[0] & 7) != PB_WT_LEN || p[1] >= 0x80 || (size_t)(end - p) != 2u + p[1] ||
	    p[2] != (1 << 3 | PB_WT_LEN) || p[3] >= 0x80 || (size_t)(end - p) < 4u + p[3])
		return false;
	nv = op == SEMD__REQUEST__OP_DOWN ? 4 : 2;
	nlen = p[3];
	name = p + 4;
	for (p += 4 + nlen; p < end; last = f) {
		f = (unsigned int)*p >> 3;
		if (*p >= 0x80 || (*p & 7) != PB_WT_VARINT || f <= last || f - 2 >= nv)
			return false;
		p++;
		if (!get_varint(&p, end, &v[f - 2]))
			return false;
	}
	if (!get_string(name, nlen, buf, bufsize, &used, &s))
		return false;
	out->req = (Semd__Request)SEMD__REQUEST__INIT;
	out->req.id = id;
	out->req.op_case = (Semd__Request__OpCase)op;
	if (op == SEMD__REQUEST__OP_DOWN) {
		out->op.down = (Semd__Down)SEMD__DOWN__INIT;
		out->op.down.name = s;
		out->op.down.n = (uint32_t)v[0];
		out->op.down.timeout_ms = (int64_t)v[1];
		out->op.down.lease_ms = (uint32_t)v[2];
		out->op.down.limit = (uint32_t)v[3];
		out->req.down = &out->op.down;
	} else {
		out->op.up = (Semd__Up)SEMD__UP__INIT;
		out->op.up.name = s;
		out->op.up.n = (uint32_t)v[0];
		out->op.up.permit_id = v[1];
		out->req.up = &out->op.up;
	}
	return true;
}

/* SEMD_FASTPB=0 in the environment: protobuf-c for everything (-1: unread). */
static _Atomic int fastpb_on = -1;

/* Is the hand coding on (SEMD_FASTPB is not 0)? */
bool fastpb_enabled(void)
{
	int on = atomic_load_explicit(&fastpb_on, memory_order_relaxed);

	if (on < 0) {
		const char *e = getenv("SEMD_FASTPB");

		on = e == NULL || strcmp(e, "0") != 0;
		atomic_store_explicit(&fastpb_on, on, memory_order_relaxed);
	}
	return on != 0;
}

/* Decode a Down, Up or Ping request of the usual shape. */
bool fastpb_request(struct fastpb_req *out, const uint8_t *p, size_t len,
    char *buf, size_t bufsize)
{
	const uint8_t *end = p + len, *data = NULL;
	uint32_t field, op = 0;
	unsigned int wt;
	uint64_t v;
	size_t dlen = 0;

	if (!fastpb_enabled())
		return false;
	if (get_usual(out, p, end, buf, bufsize))
		return true;
	out->req = (Semd__Request)SEMD__REQUEST__INIT;
	while (p < end) {
		if (!get_tag(&p, end, &field, &wt))
			return false;
		if (field == 1 && wt == PB_WT_VARINT) {
			if (!get_varint(&p, end, &v))
				return false;
			out->req.id = v;
		} else if ((field == SEMD__REQUEST__OP_DOWN ||
		    field == SEMD__REQUEST__OP_UP ||
		    field == SEMD__REQUEST__OP_PING) && wt == PB_WT_LEN && op == 0) {
			if (!get_len(&p, end, &data, &dlen))
				return false;
			op = field;
		} else {
			return false;
		}
	}
	switch (op) {
	case SEMD__REQUEST__OP_DOWN:
		return get_down(out, data, data + dlen, buf, bufsize);
	case SEMD__REQUEST__OP_UP:
		return get_up(out, data, data + dlen, buf, bufsize);
	case SEMD__REQUEST__OP_PING:
		return get_ping(out, data, data + dlen);
	default:
		return false;
	}
}

/* Walk one message's fields for fastpb_strings_clean(); depth bounds nesting. */
static bool strings_clean(const ProtobufCMessageDescriptor *d,
    const uint8_t *p, const uint8_t *end, unsigned int depth)
{
	const ProtobufCFieldDescriptor *fd;
	const uint8_t *data;
	uint32_t field;
	unsigned int wt;
	uint64_t v;
	size_t len;

	if (depth > 32)
		return false;
	while (p < end) {
		/* The decoder accepted the bytes: a malformed rest cannot be. */
		if (!get_tag(&p, end, &field, &wt))
			return true;
		switch (wt) {
		case PB_WT_VARINT:
			if (!get_varint(&p, end, &v))
				return true;
			break;
		case 1:		/* 64-bit */
		case 5:		/* 32-bit */
			len = wt == 1 ? 8 : 4;
			if ((size_t)(end - p) < len)
				return true;
			p += len;
			break;
		case PB_WT_LEN:
			if (!get_len(&p, end, &data, &len))
				return true;
			fd = protobuf_c_message_descriptor_get_field(d, field);
			if (fd == NULL)
				break;
			if (fd->type == PROTOBUF_C_TYPE_STRING &&
			    memchr(data, '\0', len) != NULL)
				return false;
			if (fd->type == PROTOBUF_C_TYPE_MESSAGE &&
			    !strings_clean(fd->descriptor, data, data + len, depth + 1))
				return false;
			break;
		default:
			return true;
		}
	}
	return true;
}

/* No string field of message d encoded in p[0..len) holds a NUL byte. */
bool fastpb_strings_clean(const ProtobufCMessageDescriptor *d,
    const uint8_t *p, size_t len)
{
	return strings_clean(d, p, p + len, 0);
}

/* Size of the body message's content (not its tag and length). */
static bool body_size(const Semd__Reply *r, size_t *size)
{
	switch (r->body_case) {
	case SEMD__REPLY__BODY_GRANT:
		if (r->grant == NULL)
			return false;
		*size = pb_uint_field_size(r->grant->permit_id) +
		    pb_uint_field_size(r->grant->token) +
		    pb_uint_field_size(r->grant->n) +
		    pb_uint_field_size(r->grant->waited_us);
		return true;
	case SEMD__REPLY__BODY_RELEASED:
		if (r->released == NULL)
			return false;
		*size = pb_uint_field_size(r->released->n);
		return true;
	case SEMD__REPLY__BODY_PONG:
		if (r->pong == NULL)
			return false;
		*size = r->pong->payload.len ?
		    1 + pb_varint_size(r->pong->payload.len) + r->pong->payload.len : 0;
		return true;
	default:
		return false;
	}
}

/* At most how many bytes fastpb_reply_pack() writes for r; false if not ours. */
bool fastpb_reply_bound(const Semd__Reply *r, size_t *bound)
{
	size_t n = 2 * 11;

	if (!fastpb_enabled())
		return false;
	/*
	 * Only id, code, message and the bodies below are written here: a
	 * reply with any other field set (a Watch's revision, COMPACTED's
	 * oldest revision, a key reused) is protobuf-c's.
	 */
	if (r->revision != 0 || r->oldest_revision != 0 || r->key_reused)
		return false;
	if (r->message != NULL && r->message[0] != '\0')
		n += 1 + 10 + strlen(r->message);
	switch (r->body_case) {
	case SEMD__REPLY__BODY__NOT_SET:
		break;
	case SEMD__REPLY__BODY_GRANT:
		if (r->grant == NULL)
			return false;
		n += 1 + 10 + 4 * 11;
		break;
	case SEMD__REPLY__BODY_RELEASED:
		if (r->released == NULL)
			return false;
		n += 1 + 10 + 11;
		break;
	case SEMD__REPLY__BODY_PONG:
		if (r->pong == NULL)
			return false;
		n += 1 + 10 + 1 + 10 + r->pong->payload.len;
		break;
	default:
		return false;
	}
	*bound = n;
	return true;
}

/*
 * Is the body surely under 128 bytes (*bound < 0x80), without packing it?
 * False when the body is not ours.
 */
static bool body_size_small(const Semd__Reply *r, size_t *bound)
{
	switch (r->body_case) {
	case SEMD__REPLY__BODY_GRANT:
		*bound = 4 * 11;
		return r->grant != NULL;
	case SEMD__REPLY__BODY_RELEASED:
		*bound = 11;
		return r->released != NULL;
	case SEMD__REPLY__BODY_PONG:
		if (r->pong == NULL)
			return false;
		*bound = r->pong->payload.len < 0x80 - 11 ?
		    r->pong->payload.len + 11 : 0x80;
		return true;
	default:
		return false;
	}
}

/* Pack a reply fastpb_reply_bound() accepted. */
size_t fastpb_reply_pack(const Semd__Reply *r, uint8_t *out)
{
	size_t n = 0, b, start, lenpos = SIZE_MAX;

	n += pb_put_uint_field(out + n, 1, r->id);
	n += pb_put_uint_field(out + n, 2, (uint64_t)(int64_t)r->code);
	if (r->message != NULL && r->message[0] != '\0') {
		b = strlen(r->message);
		out[n++] = 3 << 3 | PB_WT_LEN;
		n += pb_put_varint(out + n, b);
		memcpy(out + n, r->message, b);
		n += b;
	}
	if (r->body_case == SEMD__REPLY__BODY__NOT_SET || !body_size_small(r, &b))
		return n;
	out[n++] = (uint8_t)((unsigned)r->body_case << 3 | PB_WT_LEN);
	/* A body under 128 bytes: its one-byte length is known at the end. */
	if (b < 0x80) {
		lenpos = n++;
	} else {
		if (!body_size(r, &b))
			return n;
		n += pb_put_varint(out + n, b);
	}
	start = n;
	switch (r->body_case) {
	case SEMD__REPLY__BODY_GRANT:
		n += pb_put_uint_field(out + n, 1, r->grant->permit_id);
		n += pb_put_uint_field(out + n, 2, r->grant->token);
		n += pb_put_uint_field(out + n, 3, r->grant->n);
		n += pb_put_uint_field(out + n, 4, r->grant->waited_us);
		break;
	case SEMD__REPLY__BODY_RELEASED:
		n += pb_put_uint_field(out + n, 1, r->released->n);
		break;
	case SEMD__REPLY__BODY_PONG:
		if (r->pong->payload.len) {
			out[n++] = 1 << 3 | PB_WT_LEN;
			n += pb_put_varint(out + n, r->pong->payload.len);
			memcpy(out + n, r->pong->payload.data, r->pong->payload.len);
			n += r->pong->payload.len;
		}
		break;
	default:
		break;
	}
	if (lenpos != SIZE_MAX)
		out[lenpos] = (uint8_t)(n - start);
	return n;
}

/* Pack a usual reply as a whole frame at out (its length; 0: not one). */
size_t fastpb_reply_frame(const Semd__Reply *r, uint8_t *out)
{
	uint8_t *p = out + FRAME_HDR;	/* Reply's fields after the header */
	size_t b, len;

	if (r->revision != 0 || r->oldest_revision != 0 || r->key_reused ||
	    (r->message != NULL && r->message[0] != '\0') || !fastpb_enabled())
		return 0;
	p += pb_put_uint_field(p, 1, r->id);
	p += pb_put_uint_field(p, 2, (uint64_t)(int64_t)r->code);
	switch (r->body_case) {
	case SEMD__REPLY__BODY__NOT_SET:
		break;
	case SEMD__REPLY__BODY_GRANT:
		if (r->grant == NULL)
			return 0;
		*p++ = SEMD__REPLY__BODY_GRANT << 3 | PB_WT_LEN;
		b = pb_put_uint_field(p + 1, 1, r->grant->permit_id);
		b += pb_put_uint_field(p + 1 + b, 2, r->grant->token);
		b += pb_put_uint_field(p + 1 + b, 3, r->grant->n);
		b += pb_put_uint_field(p + 1 + b, 4, r->grant->waited_us);
		*p = (uint8_t)b;	/* at most 44: one byte */
		p += 1 + b;
		break;
	case SEMD__REPLY__BODY_RELEASED:
		if (r->released == NULL)
			return 0;
		*p++ = SEMD__REPLY__BODY_RELEASED << 3 | PB_WT_LEN;
		b = pb_put_uint_field(p + 1, 1, r->released->n);
		*p = (uint8_t)b;
		p += 1 + b;
		break;
	default:
		return 0;
	}
	/* The frame header: the length, big-endian, of at most 70 bytes. */
	len = (size_t)(p - out) - FRAME_HDR;
	out[0] = out[1] = out[2] = 0;
	out[3] = (uint8_t)len;
	return FRAME_HDR + len;
}

/* A watch event's reply from its event packed without the watch field. */
size_t fastpb_notice_pack(uint64_t watch, const uint8_t *ev, size_t len,
    uint8_t *out)
{
	size_t n = 0, w = pb_uint_field_size(watch);

	out[n++] = SEMD__REPLY__BODY_WATCH_EVENT << 3 | PB_WT_LEN;
	n += pb_put_varint(out + n, w + len);
	n += pb_put_uint_field(out + n, 1, watch);
	memcpy(out + n, ev, len);
	return n + len;
}

/* Is s a string proto3 leaves out (NULL or empty)? */
static bool pb_empty(const char *s)
{
	return s == NULL || s[0] == '\0';
}

/* Write a name = 1 field of nl bytes (none when empty, as protobuf-c). */
static size_t put_name(uint8_t *out, const char *name, size_t nl)
{
	if (nl == 0)
		return 0;
	out[0] = 1 << 3 | PB_WT_LEN;
	out[1] = (uint8_t)nl;
	memcpy(out + 2, name, nl);
	return 2 + nl;
}

/* Pack a Down or Up of the usual shape as protobuf-c would (fastpb.h). */
size_t fastpb_request_pack(const Semd__Request *rq, uint8_t *out, size_t room)
{
	uint8_t body[FASTPB_REQ_MAX];
	size_t n, nl, h;

	if (!fastpb_enabled())
		return 0;
	if (rq->op_case == SEMD__REQUEST__OP_DOWN && rq->down != NULL) {
		const Semd__Down *d = rq->down;

		if (!pb_empty(d->replace) || d->priority != 0 ||
		    !pb_empty(d->group) || !pb_empty(d->idempotency_key) ||
		    d->request_hash.len != 0 || d->name == NULL ||
		    (nl = strlen(d->name)) >= FASTPB_NAME_MAX)
			return 0;
		n = put_name(body, d->name, nl);
		n += pb_put_uint_field(body + n, 2, d->n);
		n += pb_put_uint_field(body + n, 3, (uint64_t)d->timeout_ms);
		n += pb_put_uint_field(body + n, 4, d->lease_ms);
		n += pb_put_uint_field(body + n, 5, d->limit);
	} else if (rq->op_case == SEMD__REQUEST__OP_UP && rq->up != NULL) {
		const Semd__Up *u = rq->up;

		if (u->name == NULL || (nl = strlen(u->name)) >= FASTPB_NAME_MAX)
			return 0;
		n = put_name(body, u->name, nl);
		n += pb_put_uint_field(body + n, 2, u->n);
		n += pb_put_uint_field(body + n, 3, u->permit_id);
	} else {
		return 0;
	}
	if (n >= 0x80 || room < 13 + n)
		return 0;
	h = pb_put_uint_field(out, 1, rq->id);
	out[h++] = (uint8_t)((unsigned)rq->op_case << 3 | PB_WT_LEN);
	out[h++] = (uint8_t)n;
	memcpy(out + h, body, n);
	return h + n;
}

/*
 * Decode a reply of the usual shape (fastpb.h): id, code, a message, and a
 * Grant, a Released or no body, each field once, in order.
 */
bool fastpb_reply_decode(struct fastpb_reply *out, const uint8_t *p,
    size_t len, char *msg, size_t msgsize)
{
	const uint8_t *end = p + len, *data, *q, *qe;
	uint32_t field, last = 0, f, flast;
	unsigned int wt;
	uint64_t v;
	size_t dlen, used = 0;

	if (!fastpb_enabled())
		return false;
	out->rep = (Semd__Reply)SEMD__REPLY__INIT;
	while (p < end) {
		if (!get_tag(&p, end, &field, &wt) || field <= last)
			return false;
		last = field;
		if ((field == 1 || field == 2) && wt == PB_WT_VARINT) {
			if (!get_varint(&p, end, &v))
				return false;
			if (field == 1)
				out->rep.id = v;
			else	/* an enum: the low 32 bits, as protobuf-c */
				out->rep.code = (Semd__Code)(int32_t)(uint32_t)v;
			continue;
		}
		if (wt != PB_WT_LEN || !get_len(&p, end, &data, &dlen))
			return false;
		if (field == 3) {
			if (!get_string(data, dlen, msg, msgsize, &used,
			    &out->rep.message))
				return false;
			continue;
		}
		if (field != SEMD__REPLY__BODY_GRANT &&
		    field != SEMD__REPLY__BODY_RELEASED)
			return false;
		out->rep.body_case = (Semd__Reply__BodyCase)field;
		if (field == SEMD__REPLY__BODY_GRANT) {
			out->grant = (Semd__Grant)SEMD__GRANT__INIT;
			out->rep.grant = &out->grant;
		} else {
			out->released = (Semd__Released)SEMD__RELEASED__INIT;
			out->rep.released = &out->released;
		}
		/* the body's varints, each once, in order */
		for (q = data, qe = data + dlen, flast = 0; q < qe; flast = f) {
			if (!get_tag(&q, qe, &f, &wt) || wt != PB_WT_VARINT ||
			    f <= flast || !get_varint(&q, qe, &v))
				return false;
			if (field == SEMD__REPLY__BODY_RELEASED) {
				if (f != 1)
					return false;
				out->released.n = (uint32_t)v;
				continue;
			}
			switch (f) {
			case 1:
				out->grant.permit_id = v;
				break;
			case 2:
				out->grant.token = v;
				break;
			case 3:
				out->grant.n = (uint32_t)v;
				break;
			case 4:
				out->grant.waited_us = v;
				break;
			default:
				return false;
			}
		}
	}
	return true;
}
