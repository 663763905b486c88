# SPDX-License-Identifier: BSD-2-Clause
# tests/cluster.mk: build fragment, included by the top Makefile.am
#
# The cluster under faults: three real semd nodes, a proxy in front of the
# peer ports to cut one off, clients that check what they saw.
check_PROGRAMS += tests/cluster/cluster_load
tests_cluster_cluster_load_SOURCES = tests/cluster/cluster_load.c
tests_cluster_cluster_load_LDADD = client/libsemclient.la $(PTHREAD_LIBS)
CLUSTER_SH_TESTS = tests/cluster/faults.sh tests/cluster/membership.sh \
	tests/cluster/peer-tls.sh tests/cluster/peer-names.sh \
	tests/cluster/down-failover.sh tests/cluster/reads.sh \
	tests/cluster/lease-faults.sh tests/cluster/health.sh \
	tests/cluster/prometheus.sh tests/cluster/paused-holder.sh \
	tests/cluster/fulldisk.sh
TESTS += $(CLUSTER_SH_TESTS)
EXTRA_DIST += $(CLUSTER_SH_TESTS) tests/cluster/peerproxy.py tests/cluster/proxied.sh

# sim: a 3/5-node cluster in simulated time, each node the daemon's own log
# core (libsemlog.a) on libraft's deterministic fixture, under faults, with
# simulated clients checking what they trusted.
check_PROGRAMS += tests/cluster/sim
tests_cluster_sim_SOURCES = tests/cluster/sim.c tests/cluster/sim_node.c \
	tests/cluster/sim_client.c tests/cluster/sim_idle.c tests/cluster/sim_read.c \
	tests/cluster/sim.h daemon/logging.c
tests_cluster_sim_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(OPENSSL_CFLAGS) \
	$(RAFT_CFLAGS)
tests_cluster_sim_LDADD = daemon/log/libsemlog.a daemon/state/libsemstate.a \
	proto/libsemproto.a core/libsemcore.a $(PROTOBUF_C_LIBS) $(OPENSSL_LIBS) \
	$(RAFT_LIBS) $(PTHREAD_LIBS)
TESTS += tests/cluster/sim

# test_port: the peer port between raft's I/O and libraft, on a stand-in io
# and on libraft's fixture (read barriers, compacted followers, transfers).
check_PROGRAMS += tests/cluster/test_port
tests_cluster_test_port_SOURCES = tests/cluster/test_port.c daemon/logging.c
tests_cluster_test_port_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(RAFT_CFLAGS)
tests_cluster_test_port_LDADD = daemon/log/libsemlog.a $(RAFT_LIBS) $(PTHREAD_LIBS)
TESTS += tests/cluster/test_port

# test_peer_addr: peer addresses (HOST:PORT with an IPv4, [IPv6] or DNS
# name), good and hostile.
check_PROGRAMS += tests/cluster/test_peer_addr
tests_cluster_test_peer_addr_SOURCES = tests/cluster/test_peer_addr.c daemon/log/peer_addr.c \
	tests/security/check.h
tests_cluster_test_peer_addr_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS)
tests_cluster_test_peer_addr_LDADD = $(OPENSSL_LIBS)
TESTS += tests/cluster/test_peer_addr
