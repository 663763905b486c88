/* SPDX-License-Identifier: BSD-2-Clause */
/* bench/test_bench.c - unit tests of semd-benchmark's histogram and wire helpers. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "bench/hist.h"
#include "bench/wire.h"
#include "tests/common/rnd_value.h"

static int failures;
static int checks;

#define TEST_START(s)	printf("# %s\n", (s))
/* Count one check, and a failure when it failed; returns ok. */
static bool tally(bool ok)
{
	checks++;
	if (!ok)
		failures++;
	return ok;
}

#define EXPECT(cond) do {						\
	if (!tally(cond))						\
		printf("not ok - %s:%d: %s\n", __FILE__, __LINE__, #cond); \
} while (0)

/* Check that got (the expression what, at line) is want. */
static void expect_u64(uint64_t want, uint64_t got, int line, const char *what)
{
	if (!tally(want == got))
		printf("not ok - %s:%d: %s: want %" PRIu64 ", got %" PRIu64 "\n",
		    __FILE__, line, what, want, got);
}
#define EXPECT_U64(want, got) expect_u64((want), (got), __LINE__, #got)

/* Every bucket's range is contiguous with the next and holds its values. */
static void test_hist_buckets(void)
{
	unsigned i;
	uint64_t v;

	TEST_START("histogram buckets tile the value range");
	for (i = 0; i + 1 < HIST_BUCKETS; i++) {
		if (hist_highest(i) + 1 != hist_lowest(i + 1)) {
			EXPECT_U64(hist_highest(i) + 1, hist_lowest(i + 1));
			return;
		}
	}
	EXPECT_U64(UINT64_MAX, hist_highest(HIST_BUCKETS - 1));
	for (v = 1; v < (1ull << 40); v = v * 3 + 1) {
		i = hist_index(v);
		EXPECT(i < HIST_BUCKETS);
		EXPECT(hist_lowest(i) <= v && v <= hist_highest(i));
		/* relative width of a bucket is at most 1/64 */
		EXPECT((hist_highest(i) - hist_lowest(i)) * 64 <= hist_lowest(i) || v < HIST_SUB);
	}
	EXPECT_U64(HIST_BUCKETS - 1, hist_index(UINT64_MAX));
}

/* Quantiles of a known distribution are within the bucket precision. */
static void test_hist_quantiles(void)
{
	static struct hist h, a, b;
	uint64_t v, q;

	TEST_START("histogram quantiles of 1..100000");
	hist_init(&h);
	EXPECT_U64(0, hist_quantile(&h, 0.5));
	for (v = 1; v <= 100000; v++)
		hist_record(&h, v);
	EXPECT_U64(100000, h.count);
	EXPECT_U64(1, h.min);
	EXPECT_U64(100000, h.max);
	q = hist_quantile(&h, 0.5);
	EXPECT(q >= 50000 && q <= 50000 + 50000 / 64 + 1);
	q = hist_quantile(&h, 0.99);
	EXPECT(q >= 99000 && q <= 99000 + 99000 / 64 + 1);
	q = hist_quantile(&h, 0.999);
	EXPECT(q >= 99900 && q <= 100000);
	EXPECT_U64(100000, hist_quantile(&h, 1.0));
	EXPECT_U64(1, hist_quantile(&h, 0.0));
	EXPECT(hist_mean(&h) > 50000.4 && hist_mean(&h) < 50000.6);

	TEST_START("merged histograms equal one histogram of everything");
	hist_init(&a);
	hist_init(&b);
	for (v = 1; v <= 100000; v++)
		hist_record(v % 2 ? &a : &b, v);
	hist_merge(&a, &b);
	EXPECT_U64(h.count, a.count);
	EXPECT_U64(h.min, a.min);
	EXPECT_U64(h.max, a.max);
	EXPECT(memcmp(h.buckets, a.buckets, sizeof(h.buckets)) == 0);
	EXPECT_U64(hist_quantile(&h, 0.99), hist_quantile(&a, 0.99));
}

/* Addresses parse into the right socket addresses. */
static void test_addr(void)
{
	struct wire_addr a;
	char err[256];
	struct sockaddr_in *sin = (struct sockaddr_in *)&a.ss;
	struct sockaddr_un *sun = (struct sockaddr_un *)&a.ss;

	TEST_START("address parsing");
	EXPECT(wire_addr_parse("unix:/tmp/x.sock", &a, err, sizeof(err)) == 0);
	EXPECT(a.is_unix && sun->sun_family == AF_UNIX && strcmp(sun->sun_path, "/tmp/x.sock") == 0);
	EXPECT(wire_addr_parse("tcp:127.0.0.1:4242", &a, err, sizeof(err)) == 0);
	EXPECT(!a.is_unix && sin->sin_family == AF_INET && ntohs(sin->sin_port) == 4242);
	EXPECT(sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	EXPECT(wire_addr_parse("tcp:[::1]:80", &a, err, sizeof(err)) == 0);
	EXPECT(a.ss.ss_family == AF_INET6);
	EXPECT(wire_addr_parse("tls:localhost:7386", &a, err, sizeof(err)) == 0);
	EXPECT(a.is_tls && !a.is_unix && strcmp(a.host, "localhost") == 0);
	EXPECT(wire_addr_parse("tcp:127.0.0.1:7385", &a, err, sizeof(err)) == 0 && !a.is_tls);
	EXPECT(wire_addr_parse("tls:[::1]", &a, err, sizeof(err)) == -EINVAL);
	EXPECT(wire_addr_parse("tcp:127.0.0.1", &a, err, sizeof(err)) == -EINVAL);
	EXPECT(wire_addr_parse("tcp::80", &a, err, sizeof(err)) == -EINVAL);
	EXPECT(wire_addr_parse("unix:", &a, err, sizeof(err)) == -EINVAL);
	EXPECT(wire_addr_parse("udp:1.2.3.4:5", &a, err, sizeof(err)) == -EINVAL);
}

/* Requests encode as frames that decode back to the same fields. */
static void test_encode(void)
{
	struct wbuf b = { 0 };
	const uint8_t *p;
	size_t len;
	Semd__Request *req;
	int rc;

	TEST_START("requests are framed and decode back");
	EXPECT(wire_put_hello(&b, 1, "semd-benchmark") == 0);
	EXPECT(wire_put_down(&b, 7 << 16 | 3, "jobs/a", -1) == 0);
	EXPECT(wire_put_up(&b, 8 << 16 | 3, "jobs/a", 0) == 0);
	EXPECT(wire_put_create(&b, 9, "jobs/b", 5, 1) == 0);
	EXPECT(wire_put_create_share(&b, 10, "jobs/c", 1) == 0);
	EXPECT(wire_put_ping(&b, 11, NULL, 0) == 0);

	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == 1);
	req = semd__request__unpack(NULL, len, p);
	EXPECT(req != NULL && req->id == 1 && req->op_case == SEMD__REQUEST__OP_HELLO &&
	    req->hello->version == 1 && strcmp(req->hello->client_name, "semd-benchmark") == 0);
	semd__request__free_unpacked(req, NULL);

	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == 1);
	req = semd__request__unpack(NULL, len, p);
	EXPECT(req != NULL && req->id == (7 << 16 | 3) && req->op_case == SEMD__REQUEST__OP_DOWN &&
	    strcmp(req->down->name, "jobs/a") == 0 && req->down->n == 1 && req->down->timeout_ms == -1);
	semd__request__free_unpacked(req, NULL);

	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == 1);
	req = semd__request__unpack(NULL, len, p);
	EXPECT(req != NULL && req->op_case == SEMD__REQUEST__OP_UP && req->up->n == 1 &&
	    req->up->permit_id == 0);
	semd__request__free_unpacked(req, NULL);

	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == 1);
	req = semd__request__unpack(NULL, len, p);
	EXPECT(req != NULL && req->op_case == SEMD__REQUEST__OP_CREATE && req->create->limit == 5 &&
	    req->create->if_not_exists && req->create->share == SEMD__SHARE_BY__SHARE_NONE);
	semd__request__free_unpacked(req, NULL);

	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == 1);
	req = semd__request__unpack(NULL, len, p);
	EXPECT(req != NULL && req->op_case == SEMD__REQUEST__OP_CREATE && req->create->limit == 1 &&
	    req->create->if_not_exists && req->create->share == SEMD__SHARE_BY__SHARE_KEY &&
	    req->create->n_weights == 0);
	semd__request__free_unpacked(req, NULL);

	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == 1);
	req = semd__request__unpack(NULL, len, p);
	EXPECT(req != NULL && req->op_case == SEMD__REQUEST__OP_PING);
	semd__request__free_unpacked(req, NULL);

	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == 0);
	EXPECT_U64(b.len, b.off);

	TEST_START("a group longer than the protocol's 64 characters is refused");
	b.off = b.len = 0;
	EXPECT(wire_put_down_in(&b, 12, "x", -1, 0,
	    "g1234567890123456789012345678901234567890123456789012345678901234") == -EINVAL);
	EXPECT_U64(b.len, 0);

	TEST_START("a frame split in two parts is only cut when whole");
	b.off = b.len = 0;
	EXPECT(wire_put_down(&b, 5, "x", 0) == 0);
	len = b.len;
	b.len = len - 1;
	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == 0);
	b.len++;
	rc = wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len);
	EXPECT(rc == 1);

	TEST_START("an oversized header is refused");
	b.off = b.len = 0;
	EXPECT(wbuf_reserve(&b, 8) == 0);
	frame_put_header(b.p, FRAME_MAX_DEFAULT + 1);
	b.len = 8;
	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == -EMSGSIZE);
	wbuf_free(&b);
}

/* Replies decode into the arena and counters are found by name. */
static void test_reply_arena(void)
{
	struct wire_arena a;
	Semd__Reply rep = SEMD__REPLY__INIT, *got;
	Semd__StatsReply st = SEMD__STATS_REPLY__INIT;
	Semd__Counter c1 = SEMD__COUNTER__INIT, c2 = SEMD__COUNTER__INIT;
	Semd__Counter *cs[2] = { &c1, &c2 };
	uint8_t buf[256];
	size_t n;
	uint64_t v = 0;
	int round;

	TEST_START("replies decode into the arena, which rewinds");
	EXPECT(wire_arena_init(&a, 4096) == 0);
	c1.name = "semaphores";
	c1.value = 3;
	c2.name = "memory_bytes";
	c2.value = 123456;
	st.n_counters = 2;
	st.counters = cs;
	rep.id = 42;
	rep.code = SEMD__CODE__OK;
	rep.body_case = SEMD__REPLY__BODY_STATS;
	rep.stats = &st;
	n = semd__reply__pack(&rep, buf);
	for (round = 0; round < 3; round++) {
		got = wire_reply_unpack(&a, buf, n);
		EXPECT(got != NULL && got->id == 42);
		EXPECT((uint8_t *)got >= a.base && (uint8_t *)got < a.base + a.cap);
		EXPECT(wire_stats_get(got, "memory_bytes", &v) == 1);
		EXPECT_U64(123456, v);
		EXPECT(wire_stats_get(got, "nope", &v) == 0);
		wire_reply_done(&a, got);
		EXPECT_U64(0, a.used);
	}
	TEST_START("garbage does not decode");
	memset(buf, 0xff, 16);
	EXPECT(wire_reply_unpack(&a, buf, 16) == NULL);
	wire_arena_free(&a);

	TEST_START("a reply bigger than the arena falls back to malloc");
	EXPECT(wire_arena_init(&a, 64) == 0);
	got = wire_reply_unpack(&a, buf, semd__reply__pack(&rep, buf));
	EXPECT(got != NULL && wire_stats_get(got, "semaphores", &v) == 1 && v == 3);
	wire_reply_done(&a, got);
	wire_arena_free(&a);
	EXPECT(strcmp(wire_code_name(SEMD__CODE__WOULD_BLOCK), "WOULD_BLOCK") == 0);
}

/* Frame a Request packed by protobuf-c, for comparison. */
static void ref_frame(struct wbuf *b, const Semd__Request *req)
{
	EXPECT(wire_put_request(b, req) == 0);
}

/* The hand-encoded Ping, Down and Up are byte for byte protobuf-c's. */
static void test_hot_encoding(void)
{
	struct wbuf mine = { 0 }, ref = { 0 };
	Semd__Request req;
	Semd__Down down;
	Semd__Up up;
	Semd__Ping ping;
	char name[300], group[WIRE_GROUP_MAX + 1];
	uint8_t payload[40];
	int i, k, differ = 0;
	size_t n;

	TEST_START("hand-encoded Ping, Down (with priority, group) and Up equal protobuf-c's packing");
	for (i = 0; i < 3000; i++) {
		uint64_t id = rnd_value(), permit = rnd_value();
		int64_t timeout = (int64_t)rnd_value();

		n = rnd() % 4 == 0 ? 0 : rnd() % (rnd() % 2 ? 20 : sizeof(name) - 1);
		for (k = 0; k < (int)n; k++)
			name[k] = (char)('a' + rnd() % 26);
		name[n] = '\0';
		if (rnd() % 2 && timeout != INT64_MIN)	/* -INT64_MIN overflows */
			timeout = -timeout;
		mine.off = mine.len = ref.off = ref.len = 0;

		semd__request__init(&req);
		req.id = id;
		/* The Down and the Up both take one permit of name. */
		semd__down__init(&down);
		semd__up__init(&up);
		down.name = up.name = name;
		down.n = up.n = 1;
		down.timeout_ms = timeout;
		up.permit_id = permit;
		switch (i % 3) {
		case 0:
			req.op_case = SEMD__REQUEST__OP_DOWN;
			req.down = &down;
			if (rnd() % 2) {
				EXPECT(wire_put_down(&mine, id, name, timeout) == 0);
				break;
			}
			/* a class of -8..7 (0: none), a group of 0..64 characters */
			down.priority = (int32_t)(rnd() % 16) - 8;
			n = rnd() % (WIRE_GROUP_MAX + 1);
			for (k = 0; k < (int)n; k++)
				group[k] = (char)('a' + rnd() % 26);
			group[n] = '\0';
			down.group = group;
			EXPECT(wire_put_down_in(&mine, id, name, timeout, down.priority, group) == 0);
			break;
		case 1:
			req.op_case = SEMD__REQUEST__OP_UP;
			req.up = &up;
			EXPECT(wire_put_up(&mine, id, name, permit) == 0);
			break;
		default:
			semd__ping__init(&ping);
			n = rnd() % 3 ? 0 : rnd() % sizeof(payload);
			for (k = 0; k < (int)n; k++)
				payload[k] = (uint8_t)rnd();
			ping.payload.data = payload;
			ping.payload.len = n;
			req.op_case = SEMD__REQUEST__OP_PING;
			req.ping = &ping;
			EXPECT(wire_put_ping(&mine, id, n ? payload : NULL, n) == 0);
			break;
		}
		ref_frame(&ref, &req);
		if (mine.len != ref.len || memcmp(mine.p, ref.p, ref.len) != 0) {
			if (differ++ < 3)
				printf("not ok - case %d (op %d, id %llu): %zu bytes vs protobuf-c's %zu\n",
				    i, req.op_case, (unsigned long long)id, mine.len, ref.len);
		}
	}
	tally(differ == 0);
	wbuf_free(&mine);
	wbuf_free(&ref);
}

/* wire_reply_peek reads what protobuf-c packed, and refuses cut messages. */
static void test_reply_peek(void)
{
	Semd__Reply rep;
	Semd__Grant grant;
	Semd__Pong pong;
	Semd__Released rel;
	struct wire_reply_min m;
	uint8_t buf[512], pay[16];
	char msg[64];
	size_t n, cut;
	int i, k, wrong = 0, crashes_would_show = 0;

	TEST_START("hand-decoded replies agree with protobuf-c");
	for (i = 0; i < 3000; i++) {
		semd__reply__init(&rep);
		rep.id = rnd_value();
		rep.code = (Semd__Code)(rnd() % 14);
		n = rnd() % 3 ? 0 : rnd() % (sizeof(msg) - 1);
		for (k = 0; k < (int)n; k++)
			msg[k] = (char)('A' + rnd() % 26);
		msg[n] = '\0';
		rep.message = msg;
		switch (rnd() % 4) {
		case 0:
			semd__grant__init(&grant);
			grant.permit_id = rnd_value();
			grant.token = rnd_value();
			grant.n = (uint32_t)rnd_value();
			grant.waited_us = rnd_value();
			rep.body_case = SEMD__REPLY__BODY_GRANT;
			rep.grant = &grant;
			break;
		case 1:
			semd__pong__init(&pong);
			pong.payload.data = pay;
			pong.payload.len = rnd() % sizeof(pay);
			rep.body_case = SEMD__REPLY__BODY_PONG;
			rep.pong = &pong;
			break;
		case 2:
			semd__released__init(&rel);
			rel.n = (uint32_t)rnd_value();
			rep.body_case = SEMD__REPLY__BODY_RELEASED;
			rep.released = &rel;
			break;
		default:
			break;
		}
		n = semd__reply__pack(&rep, buf);
		if (wire_reply_peek(buf, n, &m) != 0 || m.id != rep.id || m.code != (int)rep.code ||
		    m.has_grant != (rep.body_case == SEMD__REPLY__BODY_GRANT) ||
		    (m.has_grant && m.permit != grant.permit_id) ||
		    m.msglen != strlen(msg) || memcmp(m.msg, msg, m.msglen) != 0) {
			if (wrong++ < 3)
				printf("not ok - reply %d decoded differently\n", i);
		}
		/* every cut of it is refused or reads within bounds (ASan watches) */
		for (cut = 0; cut < n; cut++)
			crashes_would_show += wire_reply_peek(buf, cut, &m) == 0;
	}
	tally(wrong == 0);
	(void)crashes_would_show;
	TEST_START("malformed replies are refused");
	EXPECT(wire_reply_peek((const uint8_t *)"\x08", 1, &m) == -1);	/* cut varint */
	EXPECT(wire_reply_peek((const uint8_t *)"\x00\x01", 2, &m) == -1);	/* field 0 */
	EXPECT(wire_reply_peek((const uint8_t *)"\x2a\x05\x08", 3, &m) == -1);	/* grant cut */
	EXPECT(wire_reply_peek((const uint8_t *)"\x0b\x0c", 2, &m) == -1);	/* group */
	EXPECT(wire_reply_peek((const uint8_t *)"\x08\x07\x10\x02", 4, &m) == 0 &&
	    m.id == 7 && m.code == 2 && !m.has_grant);
}

int main(void)
{
	rng = 88172645463325252ull;	/* the random tests' fixed sequence */
	test_hist_buckets();
	test_hist_quantiles();
	test_addr();
	test_encode();
	test_reply_arena();
	test_hot_encoding();
	test_reply_peek();
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
