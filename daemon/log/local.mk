# SPDX-License-Identifier: BSD-2-Clause
# daemon/log/ build fragment, included by the top Makefile.am
#
# libsemlog.a: the replicated log under the state machine (--data-dir):
# canonical raft on its own thread, the peer transports (TCP, TLS) and the
# guard around libraft (durable.h, its parts in durable-int.h) - linked by
# semd. It calls the state machine, and the server only through the
# struct durable_host it is given.
noinst_LIBRARIES += daemon/log/libsemlog.a
daemon_log_libsemlog_a_SOURCES = daemon/log/durable.h daemon/log/durable-int.h \
	daemon/log/durable.c daemon/log/durable_propose.c \
	daemon/log/durable_apply.c daemon/log/durable_cluster.c \
	daemon/log/durable_read.c \
	daemon/log/raftguard.c daemon/log/raftguard.h \
	daemon/log/peer_tls.c daemon/log/peer_tls.h \
	daemon/log/peer_addr.c daemon/log/peer_addr.h
daemon_log_libsemlog_a_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) \
	$(OPENSSL_CFLAGS) $(RAFT_CFLAGS)
