# SPDX-License-Identifier: BSD-2-Clause
# daemon/ build fragment, included by the top Makefile.am
#
# libsemstate.a: the state machine - the semaphore table and sessions, no
# I/O (state.h, its parts in sm_*.c, see sm-int.h) - linked by semd, by
# tests/daemon/test_state and by the dispatch fuzzer (-fPIC).
noinst_LIBRARIES += daemon/libsemstate.a
daemon_libsemstate_a_SOURCES = daemon/state.h daemon/sm-int.h \
	daemon/sm_mem.c daemon/sm_bytes.c daemon/sm_index.c daemon/sm_timer.c daemon/sm_reply.c \
	daemon/sm_principal.c daemon/sm_sem.c daemon/sm_session.c \
	daemon/sm_multi.c daemon/sm_rate.c daemon/sm_deadlock.c \
	daemon/sm_watch.c daemon/sm_holds.c \
	daemon/sm_ops.c daemon/sm_ops_name.c daemon/sm_ops_permit.c \
	daemon/sm_stats.c daemon/sm_check.c daemon/sm_snap_write.c \
	daemon/sm_snap_read.c \
	daemon/sm_entry.c \
	daemon/hmap.c daemon/hmap.h
daemon_libsemstate_a_SOURCES += daemon/ordidx.c daemon/ordidx.h
daemon_libsemstate_a_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) -fPIC

# semd: the daemon. The libevent shell around the state, one way up: server
# (loops, lock), conn (connections, over xprt transports), then listen,
# access and metrics, then main.
sbin_PROGRAMS += semd
semd_SOURCES = daemon/main.c \
	daemon/server.c daemon/server_config.c daemon/server.h daemon/server-int.h \
	daemon/conn.c daemon/conn_accept.c daemon/conn_io.c daemon/conn_req.c \
	daemon/conn_reply.c daemon/conn.h daemon/conn-int.h \
	daemon/xprt.c daemon/xprt.h \
	daemon/alloccount.c daemon/fastpb.c daemon/fastpb.h \
	daemon/metrics.c daemon/metrics.h daemon/health.c daemon/health.h \
	daemon/listen.c daemon/listen.h daemon/log.c daemon/log.h \
	daemon/config.c daemon/config.h \
	daemon/access.c daemon/access.h daemon/tlsconf.c daemon/tlsconf.h \
	daemon/durable.c daemon/durable.h daemon/durable-int.h \
	daemon/durable_propose.c daemon/durable_apply.c daemon/durable_cluster.c \
	daemon/raftguard.c daemon/raftguard.h \
	daemon/peer_tls.c daemon/peer_tls.h
semd_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) $(PROTOBUF_C_CFLAGS) $(SYSTEMD_CFLAGS) \
	$(OPENSSL_CFLAGS) $(RAFT_CFLAGS)
semd_LDADD = daemon/libsemstate.a security/libsemsec.a proto/libsemproto.a \
	core/libsemcore.a \
	$(LIBEVENT_LIBS) $(PROTOBUF_C_LIBS) $(SYSTEMD_LIBS) $(OPENSSL_LIBS) \
	$(RAFT_LIBS) $(PTHREAD_LIBS)
