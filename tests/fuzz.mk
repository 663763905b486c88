# SPDX-License-Identifier: BSD-2-Clause
# tests/fuzz.mk: build fragment, included by the top Makefile.am
# Fuzz targets (tests/fuzz/fuzz_*.c) are built with libFuzzer by
# tests/fuzz/run.sh; here the same entry points are linked with a plain
# driver that replays the seed corpus, so `make check` runs every seed.

# The seed corpus generator; its output is committed in tests/fuzz/corpus/.
check_PROGRAMS += tests/fuzz/gen-corpus
tests_fuzz_gen_corpus_SOURCES = tests/fuzz/gen-corpus.c tests/fuzz/fuzz.h
tests_fuzz_gen_corpus_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_fuzz_gen_corpus_LDADD = daemon/state/libsemstate.a core/libsemcore.a proto/libsemproto.a \
	$(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)

check_PROGRAMS += tests/fuzz/replay-frame
tests_fuzz_replay_frame_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_frame.c tests/fuzz/fuzz.h
tests_fuzz_replay_frame_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_fuzz_replay_frame_LDADD = proto/libsemproto.a $(PROTOBUF_C_LIBS)

check_PROGRAMS += tests/fuzz/replay-dispatch
tests_fuzz_replay_dispatch_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_dispatch.c tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_sm.h
tests_fuzz_replay_dispatch_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_fuzz_replay_dispatch_LDADD = daemon/state/libsemstate.a core/libsemcore.a proto/libsemproto.a \
	$(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)

# The log: hostile entries for sm_apply, hostile snapshots for sm_restore.
check_PROGRAMS += tests/fuzz/replay-entry tests/fuzz/replay-snap
tests_fuzz_replay_entry_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_entry.c tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_sm.h
tests_fuzz_replay_entry_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_fuzz_replay_entry_LDADD = daemon/state/libsemstate.a core/libsemcore.a proto/libsemproto.a \
	$(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)
tests_fuzz_replay_snap_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_snap.c tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_sm.h
tests_fuzz_replay_snap_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_fuzz_replay_snap_LDADD = daemon/state/libsemstate.a core/libsemcore.a proto/libsemproto.a \
	$(PROTOBUF_C_LIBS) $(PTHREAD_LIBS)

# The HTTP front door's JSON mapping, both ways (daemon/http/http_json.c).
check_PROGRAMS += tests/fuzz/replay-http_json
tests_fuzz_replay_http_json_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_http_json.c \
	tests/fuzz/fuzz.h
tests_fuzz_replay_http_json_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_fuzz_replay_http_json_LDADD = daemon/http/libsemhttp.a proto/libsemproto.a \
	$(JANSSON_LIBS) $(PROTOBUF_C_LIBS)

# The HTTP front door's request reader (daemon/http/http_parse.c).
check_PROGRAMS += tests/fuzz/replay-http_parse
tests_fuzz_replay_http_parse_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_http_parse.c \
	tests/fuzz/fuzz.h
tests_fuzz_replay_http_parse_LDADD = daemon/http/libsemhttp.a

# A raft peer's stream: the wire checker, libraft's own decoder, the port.
check_PROGRAMS += tests/fuzz/replay-peer
tests_fuzz_replay_peer_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_peer.c \
	tests/fuzz/fuzz.h daemon/logging.c
tests_fuzz_replay_peer_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(RAFT_CFLAGS)
tests_fuzz_replay_peer_LDADD = daemon/log/libsemlog.a daemon/state/libsemstate.a \
	core/libsemcore.a proto/libsemproto.a $(PROTOBUF_C_LIBS) $(RAFT_LIBS) \
	$(PTHREAD_LIBS)

TESTS += tests/fuzz/replay-frame tests/fuzz/replay-dispatch tests/fuzz/replay-entry \
	tests/fuzz/replay-snap tests/fuzz/replay-http_json tests/fuzz/replay-http_parse \
	tests/fuzz/replay-peer \
	tests/fuzz/corpus-fresh.sh
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/corpus-fresh.sh tests/fuzz/corpus \
	tests/fuzz/http-json-seeds.py
