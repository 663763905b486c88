# SPDX-License-Identifier: BSD-2-Clause
# daemon/log/ build fragment, included by the top Makefile.am
#
# libsemlog.a: the log under the state machine (--data-dir; semlog.h): its
# core (core.h: no thread, no libuv, no clock of its own; the cluster
# simulation runs it too), the log thread around it (thread.c), the peer
# port between raft's I/O and libraft (port.h), the peer transports and the
# data directory - linked by semd. It calls the state machine, and the
# server only through the struct semlog_host it is given.
noinst_LIBRARIES += daemon/log/libsemlog.a
daemon_log_libsemlog_a_SOURCES = daemon/log/semlog.h \
	daemon/log/core.h daemon/log/core-int.h daemon/log/core.c \
	daemon/log/core_propose.c daemon/log/core_apply.c \
	daemon/log/core_read.c daemon/log/core_lead.c \
	daemon/log/port.c daemon/log/port.h \
	daemon/log/peer_wire.c daemon/log/peer_wire.h \
	daemon/log/thread.c daemon/log/datadir.c daemon/log/datadir.h \
	daemon/log/peer_net.c daemon/log/peer_net.h \
	daemon/log/peer_addr.c daemon/log/peer_addr.h
daemon_log_libsemlog_a_CFLAGS = $(AM_CFLAGS) $(LTO_CFLAGS) $(PROTOBUF_C_CFLAGS) \
	$(OPENSSL_CFLAGS) $(RAFT_CFLAGS)
