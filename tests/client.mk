# SPDX-License-Identifier: BSD-2-Clause
# tests/client.mk: build fragment, included by the top Makefile.am
#
# libsemclient and semctl against the real semd ($top_builddir/semd).
check_PROGRAMS += tests/client/test_unit tests/client/test_api tests/client/test_api_sessions \
	tests/client/test_downs tests/client/fakesemd
noinst_HEADERS += tests/client/daemon.h tests/client/spawn.h tests/client/api.h
tests_client_test_unit_LDADD = client/libsemclient.la
tests_client_test_api_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_client_test_api_LDADD = client/libsemclient.la proto/libsemproto.a \
	$(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)
tests_client_test_api_sessions_CFLAGS = $(tests_client_test_api_CFLAGS)
tests_client_test_api_sessions_LDADD = $(tests_client_test_api_LDADD)
tests_client_test_downs_CFLAGS = $(tests_client_test_api_CFLAGS)
tests_client_test_downs_LDADD = $(tests_client_test_api_LDADD)
tests_client_fakesemd_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_client_fakesemd_LDADD = proto/libsemproto.a $(PROTOBUF_C_LIBS)
TESTS += tests/client/test_unit tests/client/test_api tests/client/test_api_sessions \
	tests/client/test_downs
CLIENT_SH_TESTS = tests/client/semctl.sh tests/client/example.sh \
	tests/client/tls.sh tests/client/run-resume.sh tests/client/holds.sh \
	tests/client/escape.sh tests/client/features.sh tests/client/down-resume.sh \
	tests/client/contract.sh tests/client/nested.sh tests/client/completion.sh \
	tests/client/promises.sh tests/client/abi.sh
TESTS += $(CLIENT_SH_TESTS)
EXTRA_DIST += $(CLIENT_SH_TESTS) tests/client/abi.txt tests/client/relay.py \
	tests/client/cutoff.py tests/client/ptyint.py tests/client/ptyrun.py
