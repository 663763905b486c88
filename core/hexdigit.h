/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * core/hexdigit.h - the value of a hexadecimal digit: for the HTTP reader's
 * chunk sizes and the ACL's escaped names alike.
 */
#ifndef SEMD_CORE_HEXDIGIT_H
#define SEMD_CORE_HEXDIGIT_H

/* The value of the hex digit c (either case), or -1. */
static inline int hexdigit_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
