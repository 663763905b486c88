# SPDX-License-Identifier: BSD-2-Clause
# tests/daemon.mk: build fragment, included by the top Makefile.am
#
# The state machine driven directly, with fake time (tests/daemon/test_state.h):
# one program for each part of daemon/state/, requests and captured replies -
# test_state_sem (semaphores, holds, the name and permit operations),
# test_state_session (sessions, leases, retries, notices, caps, shutdown),
# test_state_list (List), test_state_random (random operations against a
# model), test_state_rate (token buckets), test_state_multi (DownMulti,
# gated waiters, deadlocks), test_state_watch (watches, Renew, Holds, Where),
# test_state_read (reads off the log: sm_read changes nothing),
# test_state_idem (idempotency keys, kept with what their down made);
# test_replay: the same log on differently seeded state machines (and one
#   restored from a snapshot) gives the same replies and snapshots;
# test_metrics: the state's histograms and reply counters.
STATE_PART_TESTS = tests/daemon/test_state_sem tests/daemon/test_state_session \
	tests/daemon/test_state_list tests/daemon/test_state_random \
	tests/daemon/test_state_rate tests/daemon/test_state_multi \
	tests/daemon/test_state_watch tests/daemon/test_state_read \
	tests/daemon/test_state_queue \
	tests/daemon/test_state_share tests/daemon/test_state_idem
STATE_TESTS = $(STATE_PART_TESTS) tests/daemon/test_replay tests/daemon/test_metrics
STATE_TEST_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
STATE_TEST_LIBS = daemon/state/libsemstate.a proto/libsemproto.a core/libsemcore.a \
	$(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)
check_PROGRAMS += $(STATE_TESTS)
TESTS += $(STATE_TESTS)
noinst_HEADERS += tests/daemon/test_state.h
tests_daemon_test_state_sem_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_sem_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_state_session_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_session_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_state_list_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_list_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_state_random_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_random_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_state_rate_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_rate_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_state_multi_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_multi_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_state_watch_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_watch_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_state_read_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_read_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_state_queue_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_queue_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_state_share_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_share_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_state_idem_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_state_idem_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_replay_SOURCES = tests/daemon/test_replay.c daemon/fastpb.c
tests_daemon_test_replay_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_replay_LDADD = $(STATE_TEST_LIBS)
tests_daemon_test_metrics_CFLAGS = $(STATE_TEST_CFLAGS)
tests_daemon_test_metrics_LDADD = $(STATE_TEST_LIBS)

# test_health: readiness (/readyz) decided for every kind of node.
check_PROGRAMS += tests/daemon/test_health
TESTS += tests/daemon/test_health
tests_daemon_test_health_SOURCES = tests/daemon/test_health.c daemon/health.c \
	daemon/health.h
tests_daemon_test_health_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)

# test_hmap: the hash table and SipHash; test_ordidx: the ordered name index
# against a sorted model.
check_PROGRAMS += tests/daemon/test_hmap tests/daemon/test_ordidx
TESTS += tests/daemon/test_hmap tests/daemon/test_ordidx
tests_daemon_test_hmap_LDADD = daemon/state/libsemstate.a
tests_daemon_test_ordidx_LDADD = daemon/state/libsemstate.a

# semd_probe: a protocol client for the shell tests below.
check_PROGRAMS += tests/daemon/semd_probe
tests_daemon_semd_probe_SOURCES = tests/daemon/semd_probe.c \
	tests/daemon/probe_modes.c tests/daemon/probe_stress.c \
	tests/daemon/probe_flood.c tests/daemon/probe.h
tests_daemon_semd_probe_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_daemon_semd_probe_LDADD = proto/libsemproto.a $(PROTOBUF_C_LIBS)

# Shell tests against a real semd on private sockets (tests/lib.sh);
# allocs.sh: no heap allocation per down/up on an existing name
# (--enable-alloc-count builds; skipped in others); metrics.sh: the
# Prometheus endpoint, scraped; probes.sh: /healthz and /readyz answer
# while slow clients crowd the metrics listener; quotas.sh: one principal's
# watches and unread replies are bounded; fulldisk.sh: a full data disk
# (issue 35, item 3: writes refused at once, reads and keepalives served,
# back without a restart); aio.sh: no kernel AIO slots left (item 6).
DAEMON_SH_TESTS = tests/daemon/ops.sh tests/daemon/sessions.sh \
	tests/daemon/load.sh tests/daemon/frames.sh tests/daemon/config.sh \
	tests/daemon/activation.sh tests/daemon/hostile.sh tests/daemon/privs.sh \
	tests/daemon/acl.sh tests/daemon/tls.sh tests/daemon/tls-resume.sh \
	tests/daemon/tls-threads.sh tests/daemon/durable.sh \
	tests/daemon/rates.sh tests/daemon/multi.sh tests/daemon/watch.sh \
	tests/daemon/allocs.sh tests/daemon/metrics.sh tests/daemon/logjson.sh \
	tests/daemon/logdisk.sh tests/daemon/backup.sh tests/daemon/watch-resume.sh \
	tests/daemon/probes.sh tests/daemon/quotas.sh tests/daemon/fulldisk.sh \
	tests/daemon/aio.sh
TESTS += $(DAEMON_SH_TESTS)
EXTRA_DIST += $(DAEMON_SH_TESTS)

# aio.sh's shim: io_setup(2) refused, preloaded into semd.
check_LTLIBRARIES += tests/daemon/aiofail.la
tests_daemon_aiofail_la_SOURCES = tests/daemon/aiofail.c
tests_daemon_aiofail_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere

# The hand coder of the hot messages agrees with protobuf-c.
check_PROGRAMS += tests/daemon/test_fastpb
tests_daemon_test_fastpb_SOURCES = tests/daemon/test_fastpb.c daemon/fastpb.c \
	daemon/fastpb.h
tests_daemon_test_fastpb_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_daemon_test_fastpb_LDADD = proto/libsemproto.a $(PROTOBUF_C_LIBS)
TESTS += tests/daemon/test_fastpb

# crash.sh: kill -9 during a stream of grants from many clients, restart,
# repeated (crash_clients checks the clients' records); a cut-off data
# directory is refused.
check_PROGRAMS += tests/daemon/crash_clients
tests_daemon_crash_clients_LDADD = client/libsemclient.la $(PTHREAD_LIBS)
TESTS += tests/daemon/crash.sh
EXTRA_DIST += tests/daemon/crash.sh
