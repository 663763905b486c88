# daemon/ build fragment, included by the top Makefile.am
#
# libsemstate.a: the semaphore table and sessions, no I/O (state.c) - linked
# by semd, by tests/daemon/test_state and by the dispatch fuzzer (-fPIC).
noinst_LIBRARIES += daemon/libsemstate.a
daemon_libsemstate_a_SOURCES = daemon/state.c daemon/state.h \
	daemon/hmap.c daemon/hmap.h
daemon_libsemstate_a_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) -fPIC
