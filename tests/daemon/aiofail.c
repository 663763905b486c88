/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/aiofail.c - preloaded into semd by tests/daemon/aio.sh: every
 * io_setup(2) fails with EAGAIN, as it does when other users hold the
 * host's kernel async I/O slots (fs.aio-max-nr); libraft calls it through
 * syscall(3). Every other system call goes through unchanged.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>

long syscall(long number, ...);

/* syscall(3) with io_setup refused; the rest passed to libc's. */
long syscall(long number, ...)
{
	static long (*libc_syscall)(long, ...);
	long a[6];
	va_list ap;
	int i;

	if (number == SYS_io_setup) {
		errno = EAGAIN;
		return -1;
	}
	/* Six arguments read: what x86-64 and arm64 pass in registers. */
	va_start(ap, number);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (libc_syscall == NULL)
		*(void **)&libc_syscall = dlsym(RTLD_NEXT, "syscall");
	if (libc_syscall == NULL) {
		errno = ENOSYS;
		return -1;
	}
	return libc_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
