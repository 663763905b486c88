# SPDX-License-Identifier: BSD-2-Clause
# tests/client.mk: build fragment, included by the top Makefile.am
#
# libsemclient and semctl against the real semd ($top_builddir/semd).
check_PROGRAMS += tests/client/test_unit tests/client/test_api tests/client/fakesemd
noinst_HEADERS += tests/client/daemon.h
tests_client_test_unit_SOURCES = tests/client/test_unit.c
tests_client_test_unit_LDADD = client/libsemclient.la
tests_client_test_api_SOURCES = tests/client/test_api.c
tests_client_test_api_LDADD = client/libsemclient.la $(PTHREAD_LIBS)
tests_client_fakesemd_SOURCES = tests/client/fakesemd.c
tests_client_fakesemd_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_client_fakesemd_LDADD = proto/libsemproto.a $(PROTOBUF_C_LIBS)
TESTS += tests/client/test_unit tests/client/test_api
TESTS += tests/client/semctl.sh
EXTRA_DIST += tests/client/semctl.sh
TESTS += tests/client/example.sh
EXTRA_DIST += tests/client/example.sh
TESTS += tests/client/tls.sh
EXTRA_DIST += tests/client/tls.sh
TESTS += tests/client/run-resume.sh
EXTRA_DIST += tests/client/run-resume.sh
TESTS += tests/client/holds.sh
EXTRA_DIST += tests/client/holds.sh tests/client/relay.py tests/client/cutoff.py \
	tests/client/ptyint.py
TESTS += tests/client/escape.sh
EXTRA_DIST += tests/client/escape.sh
TESTS += tests/client/features.sh
EXTRA_DIST += tests/client/features.sh tests/client/ptyrun.py
