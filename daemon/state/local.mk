# SPDX-License-Identifier: BSD-2-Clause
# daemon/state/ build fragment, included by the top Makefile.am
#
# libsemstate.a: the state machine - the semaphore table and sessions, no
# I/O, no clock (state.h, its parts in sm_*.c, see sm-int.h) - linked by
# semd, by the state tests, the simulation and the fuzzers (-fPIC).
noinst_LIBRARIES += daemon/state/libsemstate.a
daemon_state_libsemstate_a_SOURCES = daemon/state/state.h daemon/state/sm-int.h \
	daemon/state/sm-snap.h \
	daemon/state/sm_mem.c daemon/state/sm_bytes.c daemon/state/sm_index.c \
	daemon/state/sm_timer.c daemon/state/sm_reply.c daemon/state/sm_principal.c \
	daemon/state/sm_effect.c daemon/state/sm_evring.c daemon/state/sm_evrec.c \
	daemon/state/sm_memo.c daemon/state/sm_idem.c daemon/state/sm_watch.c \
	daemon/state/sm_rate.c \
	daemon/state/sm_sem.c daemon/state/sm_wait.c daemon/state/sm_deadlock.c \
	daemon/state/sm_family.c \
	daemon/state/sm_queue.c daemon/state/sm_share.c \
	daemon/state/sm_session.c \
	daemon/state/sm_need.c daemon/state/sm_down.c daemon/state/sm_multi.c \
	daemon/state/sm_ops_permit.c daemon/state/sm_ops_name.c \
	daemon/state/sm_holds.c daemon/state/sm_stats.c daemon/state/sm_optab.c \
	daemon/state/sm_settle.c \
	daemon/state/sm_ops.c daemon/state/sm_time.c daemon/state/sm_client.c \
	daemon/state/sm_entry.c daemon/state/sm_snap_write.c \
	daemon/state/sm_snap_read.c daemon/state/sm_snap_sections.c daemon/state/sm_check.c \
	daemon/state/hmap.c daemon/state/hmap.h \
	daemon/state/ordidx.c daemon/state/ordidx.h
daemon_state_libsemstate_a_CFLAGS = $(AM_CFLAGS) $(LTO_CFLAGS) $(PROTOBUF_C_CFLAGS) -fPIC
