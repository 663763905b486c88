/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/metrics.h - the Prometheus text endpoint (GET /metrics), and
 * the health checks (GET /healthz, /readyz) on the same listener.
 *
 * A small HTTP server on the daemon's first event loop renders the state's
 * counters, gauges and histograms (sm_get_counters) and, for the semaphores
 * whose names start with a metrics-names prefix, per-semaphore gauges
 * (sm_sem_each_prefix). It reads the state under the state lock, as
 * conn.c does, so every loop's clients see consistent figures.
 */
#ifndef SEMD_METRICS_H
#define SEMD_METRICS_H

struct server;
struct metrics;

/*
 * Serve metrics on addr (tcp:HOST:PORT or tcp:[ADDR6]:PORT, port 0 for a
 * free port, or unix:PATH). Returns 0 with *out set, or a negative errno.
 */
int metrics_new(struct server *srv, const char *addr, struct metrics **out);
/* Close the endpoint. */
void metrics_free(struct metrics *m);
/* The bound address as HOST:PORT ([ADDR6]:PORT) or unix:PATH. */
const char *metrics_addr(const struct metrics *m);

#endif
