# SPDX-License-Identifier: BSD-2-Clause
# core/ build fragment, included by the top Makefile.am
# libsemcore.a: the arch/ atomics and the generic semaphore. Built with
# -fPIC so that shared objects (libsemclient) can link it too; link with
# $(PTHREAD_LIBS).
noinst_LIBRARIES += core/libsemcore.a
core_libsemcore_a_SOURCES = core/semaphore.c
core_libsemcore_a_CFLAGS = $(AM_CFLAGS) $(LTO_CFLAGS) -fPIC
noinst_HEADERS += core/semaphore.h core/list.h core/strcopy.h core/hexdigit.h
