/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/base/fdio.h - moving a whole buffer through a blocking descriptor,
 * again after EINTR: libsemclient's files (backup.c, tlssess.c) and the
 * test programs (tests/common/io.h) use it. Header-only: it links nothing.
 */
#ifndef SEMD_CLIENT_FDIO_H
#define SEMD_CLIENT_FDIO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

/*
 * Move exactly len bytes through fd: write buf out, or read into it.
 * 0 when all moved; -1 on an error (errno says which) or when a call
 * moved nothing (the end of input; errno 0).
 */
static inline int fd_io_all(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = out ? write(fd, p, len) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = 0;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write all of buf to fd: fd_io_all() out (it only reads buf). */
static inline int fd_write_all(int fd, const void *buf, size_t len)
{
	return fd_io_all(fd, (void *)buf, len, true);
}

#endif
