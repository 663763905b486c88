/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shim.h - the C side of the Go package: trampolines that turn
 * libsemclient's callbacks (a void *arg) into calls of exported Go
 * functions with an integer key, and the poller's one turn.
 */
#ifndef SEMCLIENT_GO_SHIM_H
#define SEMCLIENT_GO_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <semclient.h>

int64_t gsc_down_async(struct semc *c, const char *name, uint32_t n, int64_t timeout_ms,
		       uint32_t lease_ms, uint32_t create_limit, uintptr_t key);
int64_t gsc_up_async(struct semc *c, const char *name, uint32_t n, uint64_t permit_id,
		     uintptr_t key);
int64_t gsc_ping_async(struct semc *c, uintptr_t key);
int64_t gsc_down_multi_async(struct semc *c, const struct semc_want *wants, size_t n,
			     int64_t timeout_ms, uint32_t lease_ms, uintptr_t key);
int64_t gsc_watch(struct semc *c, const char *name, bool prefix, uintptr_t key);
int64_t gsc_down_policy_async(struct semc *c, const char *name, uint32_t n, int64_t timeout_ms,
			      uint32_t lease_ms, uint32_t create_limit, int priority,
			      const char *group, const char *replace, uintptr_t key);
int64_t gsc_down_multi_policy_async(struct semc *c, const struct semc_want *wants, size_t n,
				    int64_t timeout_ms, uint32_t lease_ms, int priority,
				    uintptr_t key);
int64_t gsc_watch_from(struct semc *c, const char *name, bool prefix, uint64_t from,
		       uintptr_t key);
void gsc_set_event_callback(struct semc *c, uintptr_t key);
/* One turn of the poller: wait for the socket (or wakefd) at most maxms,
 * then semc_process(). */
int gsc_poll(struct semc *c, int wakefd, int maxms);
/* Bytes of C heap in use (glibc mallinfo2), for the leak tests. */
size_t gsc_heap_in_use(void);

#endif
