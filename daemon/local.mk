# SPDX-License-Identifier: BSD-2-Clause
# daemon/ build fragment, included by the top Makefile.am
#
# daemon/ is the shell; the state machine is in daemon/state/ (its
# fragment: daemon/state/local.mk), the replicated log in daemon/log/
# (daemon/log/local.mk).
#
# semd: the daemon. The libevent shell around the state, one way up: server
# (loops, lock), conn (connections, over xprt transports) and the feed that
# hands their requests to the state (feed.h: straight, or through the log),
# then listen, access and metrics, then main.
sbin_PROGRAMS += semd
semd_SOURCES = daemon/main.c \
	daemon/server.c daemon/server_config.c daemon/server.h daemon/server-int.h \
	daemon/conn.c daemon/conn_accept.c daemon/conn_io.c daemon/conn_input.c \
	daemon/conn_req.c daemon/conn_reply.c daemon/conn.h daemon/conn-int.h \
	daemon/feed.h daemon/feed_memory.c daemon/feed_log.c \
	daemon/backup.c daemon/backup.h \
	daemon/xprt.c daemon/xprt.h \
	daemon/alloccount.c daemon/fastpb.c daemon/fastpb.h \
	daemon/metrics.c daemon/metrics.h daemon/health.c daemon/health.h \
	daemon/listen.c daemon/listen.h daemon/logging.c daemon/logging.h \
	daemon/config.c daemon/config.h \
	daemon/access.c daemon/access.h daemon/tlsconf.c daemon/tlsconf.h
semd_CFLAGS = $(AM_CFLAGS) $(LTO_CFLAGS) $(LIBEVENT_CFLAGS) $(PROTOBUF_C_CFLAGS) $(SYSTEMD_CFLAGS) \
	$(OPENSSL_CFLAGS) $(RAFT_CFLAGS)
semd_LDFLAGS = $(SAN_CFLAGS) $(LTO_LDFLAGS)
semd_LDADD = daemon/log/libsemlog.a daemon/state/libsemstate.a \
	security/libsemsec.a proto/libsemproto.a \
	core/libsemcore.a \
	$(LIBEVENT_LIBS) $(PROTOBUF_C_LIBS) $(SYSTEMD_LIBS) $(OPENSSL_LIBS) \
	$(RAFT_LIBS) $(PTHREAD_LIBS)
