# tests/daemon.mk: build fragment, included by the top Makefile.am
#
# test_state: the state machine driven directly (fake time, captured replies).
check_PROGRAMS += tests/daemon/test_state
tests_daemon_test_state_SOURCES = tests/daemon/test_state.c
tests_daemon_test_state_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_daemon_test_state_LDADD = daemon/libsemstate.a proto/libsemproto.a \
	core/libsemcore.a $(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)
TESTS += tests/daemon/test_state
