/* SPDX-License-Identifier: BSD-2-Clause */
/* tests/common/io.h - blocking whole-buffer reads and writes for the test programs. */
#ifndef SEMD_TESTS_COMMON_IO_H
#define SEMD_TESTS_COMMON_IO_H

#include <stdbool.h>
#include <stddef.h>

#include "client/base/fdio.h"

/*
 * Move exactly len bytes through fd: write buf out, or read into it.
 * 0 when all moved; -1 on an error or at the end of input.
 */
static inline int t_io_all(int fd, void *buf, size_t len, bool out)
{
	return fd_io_all(fd, buf, len, out);
}

#endif
