/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shim.c - trampolines from libsemclient's callbacks to the Go package.
 * The callbacks' arg is never a Go pointer: it is an integer key into the
 * package's table of calls, watches and clients.
 */
#include <malloc.h>
#include <poll.h>
#include <unistd.h>

#include "shim.h"
#include "_cgo_export.h"

static void done_tramp(struct semc *c, const struct semc_result *r, void *arg)
{
	(void)c;
	goSemcDone((struct semc_result *)r, (uintptr_t)arg);
}

static void event_tramp(struct semc *c, const struct semc_event *ev, void *arg)
{
	(void)c;
	goSemcEvent((struct semc_event *)ev, (uintptr_t)arg);
}

static void watch_tramp(struct semc *c, const struct semc_watch_event *ev, void *arg)
{
	(void)c;
	goSemcWatch((struct semc_watch_event *)ev, (uintptr_t)arg);
}

int64_t gsc_down_async(struct semc *c, const char *name, uint32_t n, int64_t timeout_ms,
		       uint32_t lease_ms, uint32_t create_limit, uintptr_t key)
{
	struct semc_down_opts o = { .n = n, .timeout_ms = timeout_ms, .lease_ms = lease_ms,
				    .create_limit = create_limit };

	return semc_down_ex_async(c, name, &o, done_tramp, (void *)key);
}

int64_t gsc_up_async(struct semc *c, const char *name, uint32_t n, uint64_t permit_id,
		     uintptr_t key)
{
	return semc_up_async(c, name, n, permit_id, done_tramp, (void *)key);
}

int64_t gsc_ping_async(struct semc *c, uintptr_t key)
{
	return semc_ping_async(c, done_tramp, (void *)key);
}

int64_t gsc_down_multi_async(struct semc *c, const struct semc_want *wants, size_t n,
			     int64_t timeout_ms, uint32_t lease_ms, uintptr_t key)
{
	return semc_down_multi_async(c, wants, n, timeout_ms, lease_ms, done_tramp, (void *)key);
}

int64_t gsc_watch(struct semc *c, const char *name, bool prefix, uintptr_t key)
{
	return semc_watch(c, name, prefix, watch_tramp, (void *)key);
}

int64_t gsc_down_policy_async(struct semc *c, const char *name, uint32_t n, int64_t timeout_ms,
			      uint32_t lease_ms, uint32_t create_limit, int priority,
			      const char *group, const char *replace, uintptr_t key)
{
	struct semc_down_opts o = { .n = n, .timeout_ms = timeout_ms, .lease_ms = lease_ms,
				    .create_limit = create_limit };
	struct semc_down_policy p = { .replace = replace, .priority = priority, .group = group };

	return semc_down_policy_async(c, name, &o, &p, done_tramp, (void *)key);
}

int64_t gsc_down_multi_policy_async(struct semc *c, const struct semc_want *wants, size_t n,
				    int64_t timeout_ms, uint32_t lease_ms, int priority,
				    uintptr_t key)
{
	struct semc_down_policy p = { .priority = priority };

	return semc_down_multi_policy_async(c, wants, n, timeout_ms, lease_ms, &p, done_tramp,
					    (void *)key);
}

int64_t gsc_watch_from(struct semc *c, const char *name, bool prefix, uint64_t from,
		       uintptr_t key)
{
	return semc_watch_from(c, name, prefix, from, watch_tramp, (void *)key);
}

void gsc_set_event_callback(struct semc *c, uintptr_t key)
{
	semc_set_event_callback(c, event_tramp, (void *)key);
}

int gsc_poll(struct semc *c, int wakefd, int maxms)
{
	struct pollfd p[2] = { { .fd = wakefd, .events = POLLIN }, { .fd = -1, .events = POLLIN } };
	int t = semc_timeout(c), fd = semc_fd(c);
	char buf[64];

	if (t < 0 || t > maxms)
		t = maxms;
	if (fd < 0 && t > 100)
		t = 100;	/* disconnected: semc_process() retries */
	p[1].fd = fd;
	if (poll(p, 2, t) > 0 && (p[0].revents & POLLIN)) {
		while (read(wakefd, buf, sizeof buf) > 0)
			;
	}
	return semc_process(c);
}

size_t gsc_heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}
