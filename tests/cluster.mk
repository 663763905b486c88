# SPDX-License-Identifier: BSD-2-Clause
# tests/cluster.mk: build fragment, included by the top Makefile.am
#
# The cluster under faults: three real semd nodes, a proxy in front of the
# peer ports to cut one off, clients that check what they saw.
check_PROGRAMS += tests/cluster/cluster_load
tests_cluster_cluster_load_SOURCES = tests/cluster/cluster_load.c
tests_cluster_cluster_load_LDADD = client/libsemclient.la $(PTHREAD_LIBS)
CLUSTER_SH_TESTS = tests/cluster/faults.sh
TESTS += $(CLUSTER_SH_TESTS)
EXTRA_DIST += $(CLUSTER_SH_TESTS) tests/cluster/peerproxy.py
