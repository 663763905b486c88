/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/fuzz_dispatch.c - requests from several clients, fed into the
 * daemon's state machine (daemon/state/state.h) with a fake clock.
 *
 * The input is a script (see fuzz.h): framed requests from FUZZ_CLIENTS
 * connections, clock advances, and disconnects. Frames are cut and decoded
 * as the I/O layer does: an oversized or undecodable frame is a protocol
 * error and closes that connection. After every step sm_check() must hold;
 * every reply must go to an open connection and pack into a frame the
 * client can read. Inputs of odd length end with a shutdown, which must
 * leave no waiter. At the end every connection closes and the clock passes
 * every lease: nothing may be left held, waiting or in a session.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/state/state.h"
#include "proto/frame.h"
#include "proto/semd.pb-c.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_sm.h"

#define FUZZ_LEASE_MAX_MS	60000u

struct fz {
	struct sm		*sm;
	struct sm_client	*cl[FUZZ_CLIENTS];
	int			 tag[FUZZ_CLIENTS];	/* the conn pointers */
	int			 open[FUZZ_CLIENTS];
	int			 want_close[FUZZ_CLIENTS];
	unsigned		 opened;
	uint64_t		 now;
};

/* The close effect: the daemon closes that connection after the call. */
static void fz_close_req(void *ctx, void *conn)
{
	struct fz *f = ctx;
	int *tag = conn;

	FUZZ_ASSERT(tag >= f->tag && tag < f->tag + FUZZ_CLIENTS);
	FUZZ_ASSERT(f->open[tag - f->tag]);
	f->want_close[tag - f->tag] = 1;
}

/*
 * The access layer's decisions: odd slots are ordinary users with small
 * per-principal caps (ownership and quotas are exercised), even slots
 * administrators without caps.
 */
static const struct sm_caller fz_user = { 0, { 3, 6, 4, 3 } };

/* A reply: to an open connection, and it packs into a readable frame. */
static void fz_reply(void *ctx, void *conn, const Semd__Reply *r)
{
	struct fz *f = ctx;
	int *tag = conn;

	FUZZ_ASSERT(tag >= f->tag && tag < f->tag + FUZZ_CLIENTS);
	FUZZ_ASSERT(f->open[tag - f->tag]);
	fsm_reply(ctx, conn, r);
}

/* Open connection k (a new client in slot k). */
static void fz_open(struct fz *f, unsigned k)
{
	uint8_t secret[SM_SECRET_LEN];

	memset(secret, 0, sizeof(secret));
	secret[0] = (uint8_t)k;
	secret[1] = (uint8_t)f->opened;
	secret[2] = (uint8_t)(f->opened >> 8);
	f->opened++;
	f->open[k] = 1;
	f->cl[k] = sm_client_open(f->sm, f->opened, &f->tag[k],
	    k % 2 ? "uid:1000" : "uid:1001",
	    secret, k % 3 == 0 ? SM_CLIENT_LOCAL : 0, f->now);
	FUZZ_ASSERT(f->cl[k] != NULL);
}

/* Close connection k. */
static void fz_close(struct fz *f, unsigned k)
{
	if (!f->open[k])
		return;
	sm_client_close(f->sm, f->cl[k], f->now);
	f->cl[k] = NULL;
	f->open[k] = 0;
}

/* Every invariant of the state holds. */
static void fz_check(struct fz *f)
{
	char err[512];

	if (sm_check(f->sm, err, sizeof(err)) != 0) {
		fprintf(stderr, "sm_check: %s\n", err);
		abort();
	}
}

/* Close (and open again) the connections the state machine closed. */
static void fz_closes(struct fz *f)
{
	unsigned k;

	for (k = 0; k < FUZZ_CLIENTS; k++) {
		if (f->want_close[k]) {
			f->want_close[k] = 0;
			fz_close(f, k);
			fz_open(f, k);
		}
	}
}

/* Fire every deadline due at f->now. */
static void fz_tick(struct fz *f)
{
	if (sm_next_deadline(f->sm) <= f->now)
		sm_tick(f->sm, f->now);
	FUZZ_ASSERT(sm_next_deadline(f->sm) > f->now);
	fz_closes(f);
}

/* One frame for client k at data: returns bytes used, 0 at the end. */
static size_t fz_frame(struct fz *f, unsigned k, const uint8_t *data, size_t size)
{
	Semd__Request *req;
	size_t n = 0;
	int rc;

	rc = frame_peek(data, size, FRAME_MAX_DEFAULT, &n);
	if (rc < 0) {
		/* the rest of the stream can not be framed: the daemon closes */
		sm_protocol_error(f->sm, f->cl[k], "frame too large");
		fz_close(f, k);
		fz_open(f, k);
		return 0;
	}
	if (rc == 0)
		return 0;	/* truncated: the daemon would wait for more */
	req = semd__request__unpack(NULL, n, data + FRAME_HDR);
	if (req == NULL) {
		sm_protocol_error(f->sm, f->cl[k], "undecodable request");
		fz_close(f, k);
		fz_open(f, k);
	} else {
		rc = sm_request(f->sm, f->cl[k], req, k % 2 ? &fz_user : NULL,
		    f->now);
		semd__request__free_unpacked(req, NULL);
		FUZZ_ASSERT(rc == SM_OK || rc == SM_CLOSE);
		if (rc == SM_CLOSE || f->want_close[k]) {
			f->want_close[k] = 0;
			fz_close(f, k);
			fz_open(f, k);
		}
	}
	return FRAME_HDR + n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sm_config cfg;
	struct sm_counters cnt;
	struct sm_out out;
	struct fz f;
	size_t off = 0, used;
	unsigned k, kind;
	uint8_t c, b;

	memset(&f, 0, sizeof(f));
	sm_config_defaults(&cfg);
	cfg.max_semaphores = 64;
	cfg.max_sessions = 16;
	cfg.max_waiters_per_session = 8;
	cfg.max_holds_per_session = 8;
	cfg.max_lease_ms = FUZZ_LEASE_MAX_MS;
	cfg.wall_ms = 1700000000000ull;
	memset(cfg.hash_key, 0x5a, sizeof(cfg.hash_key));
	cfg.server = "semd fuzz";
	out.reply = fz_reply;
	out.close = fz_close_req;
	out.note = NULL;
	out.ctx = &f;
	f.now = 1000;
	f.sm = sm_new(&cfg, &out, f.now);
	FUZZ_ASSERT(f.sm != NULL);
	for (k = 0; k < FUZZ_CLIENTS; k++)
		fz_open(&f, k);
	fz_check(&f);

	while (off < size) {
		c = data[off++];
		k = c & (FUZZ_CLIENTS - 1);
		kind = (unsigned)(c >> 2) & 7;
		if (kind == FUZZ_OP_TICK) {
			b = off < size ? data[off++] : 1;
			f.now += (uint64_t)b * b;
			fz_tick(&f);
		} else if (kind == FUZZ_OP_RECONNECT) {
			fz_close(&f, k);
			fz_open(&f, k);
		} else {
			used = fz_frame(&f, k, data + off, size - off);
			if (used == 0)
				off = size;
			off += used;
		}
		fz_check(&f);
	}

	/* inputs of odd length end with a shutdown: every waiter is answered */
	if (size % 2 == 1) {
		sm_shutdown(f.sm, f.now);
		fz_check(&f);
		sm_get_counters(f.sm, &cnt);
		FUZZ_ASSERT(cnt.waiters == 0);
	}
	/* everyone leaves; after every lease, nothing is left behind */
	for (k = 0; k < FUZZ_CLIENTS; k++)
		fz_close(&f, k);
	fz_check(&f);
	f.now += 2ull * FUZZ_LEASE_MAX_MS + 1;
	fz_tick(&f);
	fz_check(&f);
	sm_get_counters(f.sm, &cnt);
	FUZZ_ASSERT(cnt.clients == 0);
	FUZZ_ASSERT(cnt.sessions == 0);
	FUZZ_ASSERT(cnt.holders == 0);
	FUZZ_ASSERT(cnt.waiters == 0);
	sm_free(f.sm);
	return 0;
}
