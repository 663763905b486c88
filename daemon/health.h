/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/health.h - is this semd ready for clients? The decision behind the
 * metrics listener's /readyz (and the semd_ready gauge), kept apart from
 * the HTTP side so that it reads, and is tested, as a table of cases.
 */
#ifndef SEMD_HEALTH_H
#define SEMD_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/log/semlog.h"

/* What the decision looks at. */
struct health_view {
	bool			stopping;	/* SIGTERM: draining */
	bool			durable;	/* --data-dir (else in memory) */
	struct semlog_health	log;		/* with durable: the log's view */
	uint32_t		max_lag;	/* ready-max-lag */
};

/*
 * Ready to serve clients? A short reason, one line starting with "ready:"
 * or "not ready:", is written to why (len bytes) either way.
 */
bool health_ready(const struct health_view *v, char *why, size_t len);

#endif
