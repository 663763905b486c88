# SPDX-License-Identifier: BSD-2-Clause
# arch/ build fragment, included by the top Makefile.am
# arch/ is header-only (inline atomics, spinlock, futex); core/libsemcore.a
# carries it.
noinst_HEADERS += arch/arch.h arch/x86_64.h arch/aarch64.h arch/generic.h \
	arch/spinlock.h arch/futex.h
