# SPDX-License-Identifier: BSD-2-Clause
# bench/ build fragment, included by the top Makefile.am
# semd-benchmark: the load generator and latency meter (installed).
bin_PROGRAMS += semd-benchmark
semd_benchmark_SOURCES = bench/semd-benchmark.c bench/engine.c bench/run.c bench/bench.h \
	bench/wire.c bench/wire.h bench/wire_http.c bench/wire_http.h bench/hist.c bench/hist.h
semd_benchmark_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(OPENSSL_CFLAGS) -pthread
semd_benchmark_LDADD = proto/libsemproto.a security/libsemsec.a $(PROTOBUF_C_LIBS) \
	$(OPENSSL_LIBS) $(PTHREAD_LIBS)

# Unit tests of the histogram and the wire helpers.
check_PROGRAMS += bench/test_bench
bench_test_bench_SOURCES = bench/test_bench.c bench/wire.c bench/hist.c \
	tests/common/rnd_value.h
bench_test_bench_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(OPENSSL_CFLAGS)
bench_test_bench_LDADD = proto/libsemproto.a security/libsemsec.a $(PROTOBUF_C_LIBS) $(OPENSSL_LIBS)
TESTS += bench/test_bench

# semd-benchmark against a private semd: every test, briefly.
TESTS += bench/test-benchmark.sh bench/test-benchmark-tls.sh
EXTRA_DIST += bench/test-benchmark.sh bench/test-benchmark-tls.sh

# make bench: a private semd and the standard suite, one table.
EXTRA_DIST += bench/suite.sh bench/ab.sh bench/compare.sh bench/snapshot.sh bench/allocs.sh bench/README.md \
	bench/drv_semd.c bench/lib.sh bench/drv_semdhttp.c bench/http-compare.sh
bench: all
	top_builddir='$(abs_top_builddir)' $(SHELL) $(top_srcdir)/bench/suite.sh
.PHONY: bench

# failover-probe: clients that write down when their grants arrive, for
# bench/cluster-failover.py (leader failover of a 3-node cluster).
noinst_PROGRAMS += failover-probe
failover_probe_SOURCES = bench/failover-probe.c
failover_probe_LDADD = client/libsemclient.la $(PTHREAD_LIBS)
EXTRA_DIST += bench/cluster-failover.py bench/cluster.sh bench/tls.sh \
	bench/go-bench.sh bench/go-etcd/main.go

# session-flood: many idle sessions with a lease, pinging as libsemclient's
# keepalive does, for bench/session-flood.sh (what idle sessions cost).
noinst_PROGRAMS += session-flood
session_flood_SOURCES = bench/session-flood.c bench/wire.c bench/wire.h
session_flood_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(OPENSSL_CFLAGS)
session_flood_LDADD = proto/libsemproto.a security/libsemsec.a $(PROTOBUF_C_LIBS) \
	$(OPENSSL_LIBS)
EXTRA_DIST += bench/session-flood.sh

# sm-deadlock: the deadlock search's cost with 100,000 waiters (the state
# machine driven directly), for the figures of doc/features.md.
noinst_PROGRAMS += sm-deadlock
sm_deadlock_SOURCES = bench/sm-deadlock.c bench/sm-bench.h
sm_deadlock_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
sm_deadlock_LDADD = daemon/state/libsemstate.a proto/libsemproto.a core/libsemcore.a \
	$(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)

# sm-handoff: a queued down and a hand-off with 10,000 waiters, plain, with
# priorities and with fair shares (the state machine driven directly).
noinst_PROGRAMS += sm-handoff
sm_handoff_SOURCES = bench/sm-handoff.c bench/sm-bench.h
sm_handoff_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
sm_handoff_LDADD = daemon/state/libsemstate.a proto/libsemproto.a core/libsemcore.a \
	$(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)
