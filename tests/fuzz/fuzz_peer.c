/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/fuzz_peer.c - hostile bytes from a raft peer, through the
 * whole path a peer's stream takes in semd: the wire checker
 * (daemon/log/peer_wire.c), then libraft 0.22's own decoder (raft_uv's
 * receive path, the real one, on a socketpair), then the peer port's checks
 * of each message (semlog_port_check, with sm_entry_check for entries).
 *
 * The input's first byte sets the size of the pieces the rest is fed in
 * (1 to 256 bytes), the rest is the stream after the handshake. What the
 * checker passes (until it refuses, as the transport does) is written to
 * raft_uv's end; then the stream ends. libraft is not instrumented, so its
 * heap is one that puts every block against a page nobody may read: a read
 * past a header or an entry count larger than the bytes is a crash here.
 * And libraft decodes exactly the messages the checker counted whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "daemon/log/peer_wire.h"
#include "daemon/log/port.h"
#include "daemon/state/state.h"
#include "tests/fuzz/fuzz.h"

#define RUN_MAX		100000	/* loop turns for raft to read and close */

/* --- a heap whose blocks end at a page nobody may read ---------------------- */

struct guard_hdr {
	void	*map;
	size_t	maplen;
	size_t	size;
	size_t	pad;
};

static size_t page;
static void *watched;		/* its free means raft closed our stream */
static bool watched_freed;

/* size bytes ending 0-7 bytes before a PROT_NONE page. */
static void *guard_malloc(void *data, size_t size)
{
	size_t body = (size + 7) & ~(size_t)7, len;
	struct guard_hdr *h;
	uint8_t *map, *p;

	(void)data;
	len = (body + sizeof *h + page - 1) / page * page;
	map = mmap(NULL, len + page, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	FUZZ_ASSERT(mprotect(map + len, page, PROT_NONE) == 0);
	p = map + len - body;
	h = (struct guard_hdr *)(void *)(p - sizeof *h);
	h->map = map;
	h->maplen = len + page;
	h->size = size;
	return p;
}

/* Free a guarded block: its whole mapping goes. */
static void guard_free(void *data, void *ptr)
{
	struct guard_hdr *h;

	(void)data;
	if (ptr == NULL)
		return;
	if (ptr == watched)
		watched_freed = true;
	h = (struct guard_hdr *)(void *)((uint8_t *)ptr - sizeof *h);
	munmap(h->map, h->maplen);
}

/* A zeroed guarded block of n * size bytes. */
static void *guard_calloc(void *data, size_t n, size_t size)
{
	void *p;

	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	if ((p = guard_malloc(data, n * size)) != NULL)
		memset(p, 0, n * size);
	return p;
}

/* A guarded block of size bytes with what ptr held. */
static void *guard_realloc(void *data, void *ptr, size_t size)
{
	struct guard_hdr *h;
	void *p;

	if (ptr == NULL)
		return guard_malloc(data, size);
	h = (struct guard_hdr *)(void *)((uint8_t *)ptr - sizeof *h);
	if ((p = guard_malloc(data, size)) == NULL)
		return NULL;
	memcpy(p, ptr, h->size < size ? h->size : size);
	guard_free(data, ptr);
	return p;
}

/* A guarded block of size bytes aligned to align. */
static void *guard_aligned(void *data, size_t align, size_t size)
{
	void *p = NULL;

	(void)data;
	return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

/* Free an aligned guarded block. */
static void guard_aligned_free(void *data, size_t align, void *ptr)
{
	(void)data;
	(void)align;
	free(ptr);
}

static struct raft_heap guard_heap = {
	.malloc = guard_malloc, .free = guard_free, .calloc = guard_calloc,
	.realloc = guard_realloc, .aligned_alloc = guard_aligned,
	.aligned_free = guard_aligned_free,
};

/* --- raft_uv's receive path on a transport of our own ------------------------ */

static uv_loop_t loop;
static struct raft_io io;
static struct raft_uv_transport transport;
static raft_uv_accept_cb accept_cb;
static struct raft_configuration conf;
static char dir[] = "/tmp/fuzz_peer.XXXXXX";
static unsigned long decoded;

/* The stand-in transport: nothing to set up. */
static int tr_init(struct raft_uv_transport *t, raft_id id, const char *a)
{
	(void)t;
	(void)id;
	(void)a;
	return 0;
}

/* Keep raft_uv's accept callback: the target hands it the stream. */
static int tr_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	(void)t;
	accept_cb = cb;
	return 0;
}

/* Nobody to connect to. */
static int tr_connect(struct raft_uv_transport *t, struct raft_uv_connect *req,
    raft_id id, const char *a, raft_uv_connect_cb cb)
{
	(void)t;
	(void)req;
	(void)id;
	(void)a;
	(void)cb;
	return RAFT_NOCONNECTION;
}

/* Closed at once. */
static void tr_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	if (cb != NULL)
		cb(t);
}

/* raft_uv's tick: nothing to do. */
static void tick_cb(struct raft_io *i)
{
	(void)i;
}

/* semd's check of a RAFT_COMMAND entry. */
static int entry_ok(void *arg, const void *buf, size_t len, char *why,
    size_t whylen)
{
	(void)arg;
	return sm_entry_check(buf, len, why, whylen);
}

/* A message libraft decoded: the port's checks, then freed as raft would. */
static void recv_cb(struct raft_io *i, struct raft_message *m)
{
	struct semlog_port_rules r = { .conf = &conf, .self = 1, .term = 5,
	    .entry_ok = entry_ok };
	char why[400];
	void *freed = NULL;

	(void)i;
	decoded++;
	(void)semlog_port_check(&r, m, why, sizeof why);
	if (m->type == RAFT_APPEND_ENTRIES) {
		for (unsigned k = 0; k < m->append_entries.n_entries; k++) {
			void *b = m->append_entries.entries[k].batch;

			if (b != NULL && b != freed)
				raft_free(b);
			freed = b;
		}
		raft_free(m->append_entries.entries);
	} else if (m->type == RAFT_INSTALL_SNAPSHOT) {
		raft_configuration_close(&m->install_snapshot.conf);
		raft_free(m->install_snapshot.data.base);
	}
}

/* Remove raft_uv's directory at exit (it leaves nothing in it). */
static void cleanup(void)
{
	rmdir(dir);
}

/* Once: the loop, raft_uv on a directory of its own, started. */
static void setup(void)
{
	char addr[32];

	page = (size_t)sysconf(_SC_PAGESIZE);
	raft_heap_set(&guard_heap);
	FUZZ_ASSERT(uv_loop_init(&loop) == 0);
	FUZZ_ASSERT(mkdtemp(dir) != NULL);
	transport = (struct raft_uv_transport){ .version = 1, .init = tr_init,
	    .listen = tr_listen, .connect = tr_connect, .close = tr_close };
	FUZZ_ASSERT(raft_uv_init(&io, &loop, dir, &transport) == 0);
	FUZZ_ASSERT(io.init(&io, 1, "127.0.0.1:9001") == 0);
	FUZZ_ASSERT(io.start(&io, 1u << 30, tick_cb, recv_cb) == 0);
	FUZZ_ASSERT(accept_cb != NULL);
	raft_configuration_init(&conf);
	for (unsigned i = 1; i <= 3; i++) {
		snprintf(addr, sizeof addr, "127.0.0.1:900%u", i);
		FUZZ_ASSERT(raft_configuration_add(&conf, i, addr,
		    RAFT_VOTER) == 0);
	}
	atexit(cleanup);
}

/* What the checker passes, collected. */
struct sink {
	uint8_t	*p;
	size_t	len, cap;
};

/* Collect the bytes the checker passes. */
static int sink_emit(void *arg, const uint8_t *p, size_t n)
{
	struct sink *s = arg;

	if (s->len + n > s->cap) {
		size_t cap = (s->len + n) * 2;
		uint8_t *q = realloc(s->p, cap);

		if (q == NULL)
			return -1;
		s->p = q;
		s->cap = cap;
	}
	memcpy(s->p + s->len, p, n);
	s->len += n;
	return 0;
}

/* Write the bytes to raft_uv's end, end the stream, let raft close it. */
static void deliver(const uint8_t *p, size_t len)
{
	uv_pipe_t *stream = raft_malloc(sizeof *stream);
	size_t off = 0;
	ssize_t n;
	int sv[2], turns = 0;

	FUZZ_ASSERT(stream != NULL);
	FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	FUZZ_ASSERT(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	FUZZ_ASSERT(uv_pipe_init(&loop, stream, 0) == 0);
	FUZZ_ASSERT(uv_pipe_open(stream, sv[1]) == 0);
	watched = stream;
	watched_freed = false;
	accept_cb(&transport, 2, "127.0.0.1:9002", (uv_stream_t *)stream);
	while (off < len && !watched_freed && turns++ < RUN_MAX) {
		n = send(sv[0], p + off, len - off, MSG_NOSIGNAL);
		if (n > 0)
			off += (size_t)n;
		else
			FUZZ_ASSERT(errno == EAGAIN);
		uv_run(&loop, UV_RUN_NOWAIT);
	}
	/* libraft never gives up on what the checker passed. */
	FUZZ_ASSERT(off == len && !watched_freed);
	shutdown(sv[0], SHUT_WR);
	while (!watched_freed && turns++ < RUN_MAX)
		uv_run(&loop, UV_RUN_NOWAIT);
	FUZZ_ASSERT(watched_freed);
	close(sv[0]);
}

/* One input: its first byte the size of the pieces the rest comes in. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct peer_wire w;
	struct sink out = { 0 };
	size_t piece, off, k;
	char why[300];

	if (!ready) {
		setup();
		ready = true;
	}
	if (size < 1)
		return 0;
	piece = (size_t)data[0] + 1;
	peer_wire_init(&w);
	for (off = 1; off < size; off += k) {
		k = size - off < piece ? size - off : piece;
		if (peer_wire_feed(&w, data + off, k, sink_emit, &out, why,
		    sizeof why) != 0)
			break;
	}
	decoded = 0;
	deliver(out.p, out.len);
	/* libraft read the messages the checker passed whole, no other. */
	FUZZ_ASSERT(decoded == w.messages);
	peer_wire_free(&w);
	free(out.p);
	return 0;
}
