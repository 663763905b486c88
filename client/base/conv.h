/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/base/conv.h - the tables that make libsemclient's structs from the
 * daemon's messages (result.c): a struct semc_conv lists the fields of a
 * struct, each a struct conv_field that says what kind of field it is and
 * where it is in the struct and in the message (offsetof, checked against
 * the field's size at compile time). semc_conv_fill() fills a struct from
 * its message by the table.
 */
#ifndef SEMD_CLIENT_CONV_H
#define SEMD_CLIENT_CONV_H

#include <stdbool.h>
#include <stddef.h>

#include "client/base/base.h"

/* What kind of field a struct conv_field fills. */
enum conv_kind {
	CONV_END,	/* the end of a table */
	CONV_COPY,	/* a number of the same type on both sides: size bytes */
	CONV_BOOL,	/* a bool from a protobuf_c_boolean */
	CONV_MODE,	/* an enum semc_mode from a Semd__Mode */
	CONV_STR,	/* a string, copied (NULL: "") */
	CONV_TOTAL,	/* a size_t from a uint32_t, at least the count at src_n
			 * when there is one (src_n 0: none) */
	CONV_ARRAY,	/* an array of the elements of a repeated field (count at
			 * dst_n, from src_n), each made by sub, size bytes each */
	CONV_SUB,	/* a struct inside the result, made by sub from the same
			 * message */
};

/* One field of a result: offsets in the result and in the message. */
struct conv_field {
	enum conv_kind kind;
	size_t dst, src;
	size_t size;		/* CONV_COPY: of the number; CONV_ARRAY: of an element */
	size_t dst_n, src_n;	/* CONV_ARRAY, CONV_TOTAL: offsets of the counts */
	const struct semc_conv *sub;
};

/* How a result (or an element of one) is made. */
struct semc_conv {
	size_t size;				/* of the struct */
	const struct conv_field *fields;	/* up to a CONV_END */
	/* a result: the body of the reply it is made from, and where that
	 * body is in Semd__Reply */
	Semd__Reply__BodyCase body;
	size_t body_off;
};

/* offsetof(T, f), a compile-time error unless T's f is as large as x. */
#define OFF(T, f, x)	\
	(offsetof(T, f) + 0 * sizeof(char[sizeof(((T *)0)->f) == sizeof(x) ? 1 : -1]))

/* The fields of a struct D made from the field of the same name of a
 * message S, one macro a kind of struct conv_field (F_SIZE: CONV_TOTAL with
 * no count; F_ARRAY: the array df and its count dn of D from the repeated
 * field sf, count sn, of S). */
#define F_COPY(D, S, f)	\
	{ .kind = CONV_COPY, .dst = offsetof(D, f), .src = OFF(S, f, ((D *)0)->f),	\
	  .size = sizeof(((D *)0)->f) }
#define F_BOOL(D, S, f)	\
	{ .kind = CONV_BOOL, .dst = OFF(D, f, bool), .src = OFF(S, f, protobuf_c_boolean) }
#define F_MODE(D, S, f)	\
	{ .kind = CONV_MODE, .dst = OFF(D, f, enum semc_mode), .src = OFF(S, f, Semd__Mode) }
#define F_STR(D, S, f)	\
	{ .kind = CONV_STR, .dst = OFF(D, f, char *), .src = OFF(S, f, char *) }
#define F_TOTAL(D, S, f, sn)	\
	{ .kind = CONV_TOTAL, .dst = OFF(D, f, size_t), .src = OFF(S, f, uint32_t),	\
	  .src_n = OFF(S, sn, size_t) }
#define F_SIZE(D, S, f)	\
	{ .kind = CONV_TOTAL, .dst = OFF(D, f, size_t), .src = OFF(S, f, uint32_t) }
#define F_ARRAY(D, S, dn, df, sn, sf, elem)						\
	{ .kind = CONV_ARRAY, .dst = offsetof(D, df), .src = offsetof(S, sf),		\
	  .size = sizeof(*((D *)0)->df), .dst_n = OFF(D, dn, size_t),			\
	  .src_n = OFF(S, sn, size_t), .sub = elem }
#define F_SUB(D, S, f, elem)	{ .kind = CONV_SUB, .dst = offsetof(D, f), .sub = elem }

/* How a struct T is made: the table of its fields; a result's, made from
 * the body member of a reply (SEMD__REPLY__BODY_bc). */
#define CONV(T, ...)	\
	{ .size = sizeof(T), .fields = (const struct conv_field[]){ __VA_ARGS__, { .kind = CONV_END } } }
#define RESULT(T, bc, member, ...)							\
	{ .size = sizeof(T), .body = SEMD__REPLY__BODY_##bc,				\
	  .body_off = offsetof(Semd__Reply, member),					\
	  .fields = (const struct conv_field[]){ __VA_ARGS__, { .kind = CONV_END } } }

int semc_conv_fill(const struct semc_conv *cv, void *dst, const void *src);

#endif
