/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/common/req.h - requests for the test programs, built from the field
 * names of semd.proto through the protobuf-c descriptors:
 *
 *	struct req q;
 *	send(req_make(&q, 7, SEMD__REQUEST__OP_DOWN,
 *	    "name=%s n=%u timeout_ms=%" PRId64, name, n, timeout));
 *
 * The field list reads like a printf format, and is checked as one: each
 * "field=%conv" takes the arguments its conversion names, %s for a string,
 * %.*s for bytes (int length, then the data), %d/%u (with l, ll or j) for
 * numbers, bools and enums. A field the op's message does not have, or a
 * conversion that does not fit the field's type, stops the program.
 * Strings and bytes are not copied: the request points at the caller's.
 * req_op() makes a request whose message keeps its defaults; req_oneof()
 * sets the member of a oneof by its number (a request's op, a reply's body).
 */
#ifndef SEMD_TESTS_COMMON_REQ_H
#define SEMD_TESTS_COMMON_REQ_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/semd.pb-c.h"

#define REQ_MSG_MAX	256

/* A request and the message of its op, in one piece (do not copy it). */
struct req {
	Semd__Request	r;
	union {
		ProtobufCMessage	base;
		max_align_t		align;
		unsigned char		bytes[REQ_MSG_MAX];
	} m;
};

/* A field list req_set() cannot follow: a bug in the test. */
static inline void req_bad(const char *fmt, const char *why)
{
	fprintf(stderr, "req: \"%s\": %s\n", fmt, why);
	abort();
}

/* The next number of the arguments, as its conversion at *pp says. */
static inline uint64_t req_num(const char **pp, const char *fmt, va_list *ap)
{
	const char *p = *pp;
	int longs = 0;
	uint64_t v;

	for (; *p == 'l' || *p == 'j'; p++)
		longs += *p == 'j' ? 2 : 1;
	if (*p != 'd' && *p != 'i' && *p != 'u')
		req_bad(fmt, "not a conversion req_set() knows");
	if (*p == 'u')
		v = longs == 0 ? va_arg(*ap, unsigned) :
		    longs == 1 ? va_arg(*ap, unsigned long) :
		    (uint64_t)va_arg(*ap, unsigned long long);
	else
		v = (uint64_t)(longs == 0 ? va_arg(*ap, int) :
		    longs == 1 ? va_arg(*ap, long) : va_arg(*ap, long long));
	*pp = p + 1;
	return v;
}

/* Set one field of the op's message from the arguments; past its conversion. */
static inline const char *req_field(struct req *q, const char *p,
    const char *fmt, va_list *ap)
{
	const ProtobufCFieldDescriptor *f;
	char name[40], *at;
	size_t n = strcspn(p, "=");
	uint64_t v;

	if (p[n] != '=' || p[n + 1] != '%' || n >= sizeof(name))
		req_bad(fmt, "not a list of field=%conv");
	memcpy(name, p, n);
	name[n] = '\0';
	f = protobuf_c_message_descriptor_get_field_by_name(q->m.base.descriptor, name);
	if (f == NULL || f->label == PROTOBUF_C_LABEL_REPEATED)
		req_bad(fmt, "no such single field in the op's message");
	at = (char *)&q->m + f->offset;
	p += n + 2;
	if (strncmp(p, ".*s", 3) == 0 && f->type == PROTOBUF_C_TYPE_BYTES) {
		ProtobufCBinaryData *b = (ProtobufCBinaryData *)(void *)at;

		/* empty bytes stay at the default, {0, NULL} */
		b->len = (size_t)va_arg(*ap, int);
		b->data = (uint8_t *)(uintptr_t)va_arg(*ap, const char *);
		if (b->len == 0)
			b->data = NULL;
		return p + 3;
	}
	if (*p == 's' && f->type == PROTOBUF_C_TYPE_STRING) {
		*(char **)(void *)at = (char *)(uintptr_t)va_arg(*ap, const char *);
		return p + 1;
	}
	v = req_num(&p, fmt, ap);
	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)(void *)at = v != 0;
		break;
	case PROTOBUF_C_TYPE_ENUM:
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
		*(int32_t *)(void *)at = (int32_t)v;
		break;
	case PROTOBUF_C_TYPE_UINT32:
		*(uint32_t *)(void *)at = (uint32_t)v;
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
		*(int64_t *)(void *)at = (int64_t)v;
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		*(uint64_t *)(void *)at = v;
		break;
	default:
		req_bad(fmt, "a number for a field that is not one");
	}
	return p;
}

/* Set the fields of q's op message that fmt names, from the arguments. */
static inline void req_vset(struct req *q, const char *fmt, va_list ap)
{
	const char *p = fmt;
	va_list aq;

	va_copy(aq, ap);
	while (*p != '\0')
		p = *p == ' ' ? p + 1 : req_field(q, p, fmt, &aq);
	va_end(aq);
}

/* Set more fields of q's op message (after req_make()). */
__attribute__((format(printf, 2, 3)))
static inline void req_set(struct req *q, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	req_vset(q, fmt, ap);
	va_end(ap);
}

/*
 * Make sub the member numbered num (its field number, also its _case value)
 * of a oneof of msg, and that the member the oneof holds.
 */
static inline void req_oneof(ProtobufCMessage *msg, unsigned num,
    ProtobufCMessage *sub)
{
	const ProtobufCFieldDescriptor *f =
	    protobuf_c_message_descriptor_get_field(msg->descriptor, num);

	if (f == NULL || f->type != PROTOBUF_C_TYPE_MESSAGE || f->quantifier_offset == 0)
		req_bad("", "no such oneof member");
	*(ProtobufCMessage **)(void *)((char *)msg + f->offset) = sub;
	*(uint32_t *)(void *)((char *)msg + f->quantifier_offset) = num;
}

/* Make q request id of op (a SEMD__REQUEST__OP_ value), its message at its defaults. */
static inline Semd__Request *req_op(struct req *q, uint64_t id, int op)
{
	const ProtobufCFieldDescriptor *f =
	    protobuf_c_message_descriptor_get_field(&semd__request__descriptor, (unsigned)op);

	semd__request__init(&q->r);
	q->r.id = id;
	if (f == NULL || f->type != PROTOBUF_C_TYPE_MESSAGE || f->quantifier_offset == 0)
		req_bad("", "no such op");
	if (((const ProtobufCMessageDescriptor *)f->descriptor)->sizeof_message > sizeof(q->m))
		req_bad("", "the op's message is over REQ_MSG_MAX");
	protobuf_c_message_init(f->descriptor, &q->m);
	req_oneof(&q->r.base, (unsigned)op, &q->m.base);
	return &q->r;
}

/* req_op(), then the fields fmt names set from the arguments. */
__attribute__((format(printf, 4, 5)))
static inline Semd__Request *req_make(struct req *q, uint64_t id, int op,
    const char *fmt, ...)
{
	va_list ap;

	req_op(q, id, op);
	va_start(ap, fmt);
	req_vset(q, fmt, ap);
	va_end(ap);
	return &q->r;
}

#endif
