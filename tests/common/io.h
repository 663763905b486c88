/* SPDX-License-Identifier: BSD-2-Clause */
/* tests/common/io.h - blocking whole-buffer reads and writes for the test programs. */
#ifndef SEMD_TESTS_COMMON_IO_H
#define SEMD_TESTS_COMMON_IO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

/*
 * Move exactly len bytes through fd: write buf out, or read into it.
 * 0 when all moved; -1 on an error or at the end of input.
 */
static inline int t_io_all(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = out ? write(fd, p, len) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

#endif
