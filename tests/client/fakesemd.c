/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/client/fakesemd.c - a hostile stand-in for semd on a UNIX socket:
 * every string it sends (principal, server, names, client names, hosts,
 * messages, counter names, the list cursor, watch events, holds) carries
 * terminal escapes, C1 controls, bidi overrides, zero-width characters and
 * invalid UTF-8, to check that semctl escapes what it prints (escape.sh).
 * A down (or multi-name down) of the name "deadlock" is answered DEADLOCK,
 * for semctl's exit code 7.
 *
 *   fakesemd SOCKET READYFILE   (serves connections one after the other,
 *                                until killed or 200 connections)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/frame.h"
#include "proto/semd.pb-c.h"
#include "tests/common/io.h"
#include "tests/common/req.h"

/* OSC (set the title), CSI (clear the screen), C1 CSI, RLO, LRI, ZWSP,
 * LSEP, BOM, DEL, a lone C1 byte and an invalid one. */
#define EVIL "x\x1b]0;pwned\x07\x1b[2J\xc2\x9b" "31m\xe2\x80\xae\xe2\x81\xa6\xe2\x80\x8b" \
	"\xe2\x80\xa8\xef\xbb\xbf\x7f\x9b\xff\nend"

/* Send one reply frame. */
static int send_reply(int fd, const Semd__Reply *rp)
{
	size_t len = semd__reply__get_packed_size(rp);
	uint8_t *buf = malloc(FRAME_HDR + len);
	int r = 0;

	if (buf == NULL)
		return -1;
	frame_put_header(buf, (uint32_t)len);
	semd__reply__pack(rp, buf + FRAME_HDR);
	if (write(fd, buf, FRAME_HDR + len) != (ssize_t)(FRAME_HDR + len))
		r = -1;
	free(buf);
	return r;
}

/* Answer one request with hostile strings everywhere. */
static int answer(int fd, const Semd__Request *rq)
{
	Semd__Reply rp = SEMD__REPLY__INIT;
	Semd__HelloReply hr = SEMD__HELLO_REPLY__INIT;
	Semd__Pong pong = SEMD__PONG__INIT;
	Semd__InfoReply in = SEMD__INFO_REPLY__INIT;
	Semd__Holder h = SEMD__HOLDER__INIT, *hs[1] = { &h };
	Semd__Waiter w = SEMD__WAITER__INIT, *ws[1] = { &w };
	Semd__ListReply lr = SEMD__LIST_REPLY__INIT;
	Semd__Summary su = SEMD__SUMMARY__INIT, *sus[1] = { &su };
	Semd__StatsReply sr = SEMD__STATS_REPLY__INIT;
	Semd__Counter ct = SEMD__COUNTER__INIT, *cts[1] = { &ct };
	Semd__HoldsReply hl = SEMD__HOLDS_REPLY__INIT;
	Semd__Reply ev = SEMD__REPLY__INIT;
	Semd__WatchEvent we = SEMD__WATCH_EVENT__INIT;
	/* the body of the reply to each op that gets one */
	const struct {
		Semd__Request__OpCase	op;
		Semd__Reply__BodyCase	body;
		ProtobufCMessage	*msg;
	} bodies[] = {
		{ SEMD__REQUEST__OP_HELLO, SEMD__REPLY__BODY_HELLO, &hr.base },
		{ SEMD__REQUEST__OP_PING, SEMD__REPLY__BODY_PONG, &pong.base },
		{ SEMD__REQUEST__OP_INFO, SEMD__REPLY__BODY_INFO, &in.base },
		{ SEMD__REQUEST__OP_LIST, SEMD__REPLY__BODY_LIST, &lr.base },
		{ SEMD__REQUEST__OP_STATS, SEMD__REPLY__BODY_STATS, &sr.base },
		{ SEMD__REQUEST__OP_HOLDS, SEMD__REPLY__BODY_HOLDS, &hl.base },
	};
	static uint8_t secret[32];
	const char *dname = NULL;
	size_t i;

	/* Every body there is, filled in; the op picks one. */
	hr.version = 1;
	hr.session = 1;
	hr.secret.data = secret;
	hr.secret.len = sizeof secret;
	hr.principal = EVIL;
	hr.server = EVIL;
	in.name = EVIL;
	in.limit = 2;
	h.permit_id = 1;
	h.token = 1;
	h.n = 1;
	h.client_name = h.host = h.principal = EVIL;
	w.request_id = 2;
	w.n = 1;
	w.seq = 1;
	w.client_name = w.host = w.principal = EVIL;
	in.n_holders = 1;
	in.holders = hs;
	in.n_waiters = 1;
	in.waiters = ws;
	in.holders_total = in.waiters_total = 1;
	su.name = EVIL;
	su.limit = 1;
	lr.n_entries = 1;
	lr.entries = sus;
	/* a cursor only once, or semctl would page forever */
	if (rq->op_case == SEMD__REQUEST__OP_LIST)
		lr.next = rq->list->after[0] == '\0' ? EVIL : "";
	ct.name = EVIL;
	ct.value = 1;
	sr.n_counters = 1;
	sr.counters = cts;
	hl.n_holds = 1;
	hl.holds = hs;
	hl.total = 1;
	if (rq->op_case == SEMD__REQUEST__OP_HOLDS)
		h.name = EVIL;		/* Info's holders have none */

	rp.id = rq->id;
	for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		if (bodies[i].op == rq->op_case) {
			req_oneof(&rp.base, bodies[i].body, bodies[i].msg);
			return send_reply(fd, &rp);
		}
	}
	if (rq->op_case == SEMD__REQUEST__OP_WATCH) {
		/* OK, then one event full of escapes */
		if (send_reply(fd, &rp) != 0)
			return -1;
		we.watch = rq->id;
		we.kind = SEMD__EVENT_KIND__EVENT_GRANT;
		we.name = we.principal = we.client_name = we.host = we.reason = EVIL;
		ev.body_case = SEMD__REPLY__BODY_WATCH_EVENT;
		ev.watch_event = &we;
		return send_reply(fd, &ev);
	}
	if (rq->op_case == SEMD__REQUEST__OP_DOWN)
		dname = rq->down->name;
	else if (rq->op_case == SEMD__REQUEST__OP_DOWN_MULTI && rq->down_multi->n_wants > 0)
		dname = rq->down_multi->wants[0]->name;
	rp.code = dname != NULL && strcmp(dname, "deadlock") == 0 ?
		  SEMD__CODE__DEADLOCK : SEMD__CODE__NOT_FOUND;
	rp.message = EVIL;
	return send_reply(fd, &rp);
}

/* Serve one connection until it closes. */
static void serve(int fd)
{
	uint8_t hdr[FRAME_HDR], *buf;
	Semd__Request *rq;
	uint32_t len;

	/* bounded by the client: it closes after its command */
	while (t_io_all(fd, hdr, sizeof hdr, false) == 0) {
		len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
		if (len > FRAME_MAX_LIMIT || (buf = malloc(len ? len : 1)) == NULL)
			return;
		if (t_io_all(fd, buf, len, false) != 0) {
			free(buf);
			return;
		}
		rq = semd__request__unpack(NULL, len, buf);
		free(buf);
		if (rq == NULL)
			return;
		if (answer(fd, rq) != 0) {
			semd__request__free_unpacked(rq, NULL);
			return;
		}
		semd__request__free_unpacked(rq, NULL);
	}
}

/* Listen on argv[1], write argv[2] when ready, serve. */
int main(int argc, char **argv)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int lfd, fd, i;
	FILE *f;

	if (argc != 3 || strlen(argv[1]) >= sizeof sun.sun_path) {
		fprintf(stderr, "usage: fakesemd SOCKET READYFILE\n");
		return 2;
	}
	memcpy(sun.sun_path, argv[1], strlen(argv[1]) + 1);
	unlink(argv[1]);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof sun) != 0 || listen(lfd, 8) != 0) {
		perror("fakesemd");
		return 1;
	}
	if ((f = fopen(argv[2], "w")) == NULL)
		return 1;
	fprintf(f, "unix:%s\n", argv[1]);
	fclose(f);
	for (i = 0; i < 200; i++) {
		if ((fd = accept(lfd, NULL, NULL)) < 0)
			continue;
		serve(fd);
		close(fd);
	}
	return 0;
}
