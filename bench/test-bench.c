/* bench/test-bench.c - unit tests of semd-benchmark's histogram and wire helpers. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "bench/hist.h"
#include "bench/wire.h"

static int failures;
static int checks;

#define TEST_START(s)	printf("# %s\n", (s))
#define EXPECT(cond) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		printf("not ok - %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	}								\
} while (0)
#define EXPECT_U64(want, got) do {					\
	uint64_t w_ = (want), g_ = (got);				\
	checks++;							\
	if (w_ != g_) {							\
		failures++;						\
		printf("not ok - %s:%d: %s: want %" PRIu64 ", got %" PRIu64 "\n", \
		    __FILE__, __LINE__, #got, w_, g_);			\
	}								\
} while (0)

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
	EXPECT(wire_put_ping(&b, 10, NULL, 0) == 0);

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
	    req->create->if_not_exists);
	semd__request__free_unpacked(req, NULL);

	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == 1);
	req = semd__request__unpack(NULL, len, p);
	EXPECT(req != NULL && req->op_case == SEMD__REQUEST__OP_PING);
	semd__request__free_unpacked(req, NULL);

	EXPECT(wire_next_frame(&b, FRAME_MAX_DEFAULT, &p, &len) == 0);
	EXPECT_U64(b.len, b.off);

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

int main(void)
{
	test_hist_buckets();
	test_hist_quantiles();
	test_addr();
	test_encode();
	test_reply_arena();
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
