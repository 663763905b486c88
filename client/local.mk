# SPDX-License-Identifier: BSD-2-Clause
# client/ build fragment, included by the top Makefile.am
#
# libsemclient: -version-info CURRENT:REVISION:AGE gives the SONAME
# libsemclient.so.(CURRENT-AGE). We started at 1:0:0, so the SONAME is
# libsemclient.so.1 (Debian package libsemclient1); 2:0:1 added the
# functions of symbol version LIBSEMCLIENT_1.1, 3:0:2 those of
# LIBSEMCLIENT_1.2, 4:0:3 those of LIBSEMCLIENT_1.3, 5:0:4 those of
# LIBSEMCLIENT_1.4 and 1.5, 6:0:5 those of LIBSEMCLIENT_1.6. Rules: a
# compatible addition bumps CURRENT and AGE (SONAME stays .so.1); an
# incompatible change bumps CURRENT and resets AGE to 0 (SONAME .so.2); a
# fix only bumps REVISION.
# Only the functions of semclient.h are exported (client/libsemclient.map,
# symbol version LIBSEMCLIENT_1).
lib_LTLIBRARIES += client/libsemclient.la
include_HEADERS += client/semclient.h
noinst_HEADERS += client/handle.h client/base/base.h client/base/conv.h client/base/fdio.h \
	client/session/session.h client/engine/engine.h client/api/api.h
client_libsemclient_la_SOURCES = \
	client/base/error.c client/base/util.c client/base/addr.c client/base/result.c client/base/xprt.c client/base/tls.c \
	client/base/tlssess.c \
	client/session/holds.c client/session/requests.c client/session/watchers.c \
	client/session/events.c client/session/dispatch.c client/session/session.c \
	client/session/trust.c \
	client/engine/write.c client/engine/read.c client/engine/connect.c client/engine/loop.c \
	client/engine/call.c \
	client/api/handle.c client/api/op.c client/api/ops.c client/api/down.c \
	client/api/cluster.c client/api/watch.c client/api/backup.c \
	proto/frame.c
nodist_client_libsemclient_la_SOURCES = proto/semd.pb-c.c proto/semd.pb-c.h
client_libsemclient_la_CFLAGS = $(AM_CFLAGS) $(LTO_CFLAGS) $(PROTOBUF_C_CFLAGS) $(OPENSSL_CFLAGS)
client_libsemclient_la_LDFLAGS = $(SAN_CFLAGS) $(LTO_LDFLAGS) -version-info 6:0:5 -no-undefined \
	-Wl,--version-script=$(top_srcdir)/client/libsemclient.map
EXTRA_client_libsemclient_la_DEPENDENCIES = client/libsemclient.map
# security/libsemtls.la: the TLS module the daemon uses too (security/tls.c)
client_libsemclient_la_LIBADD = security/libsemtls.la $(PROTOBUF_C_LIBS) $(OPENSSL_LIBS) \
	$(PTHREAD_LIBS)
pkgconfig_DATA += client/semclient.pc
DISTCLEANFILES += client/semclient.pc client/semclient-uninstalled.pc
EXTRA_DIST += client/semclient.pc.in client/semclient-uninstalled.pc.in \
	client/libsemclient.map

# examples/: a distributed job whose workers share a limit through semd.
noinst_PROGRAMS += examples/jobs
examples_jobs_SOURCES = examples/jobs.c
examples_jobs_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/client
examples_jobs_LDADD = client/libsemclient.la

# The library's manual page.
dist_man_MANS += doc/semclient.3
