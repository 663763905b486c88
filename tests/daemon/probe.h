/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/daemon/probe.h - what the files of semd_probe share: a connection
 * speaking semd's protocol (semd_probe.c) and the load modes built on it
 * (probe_modes.c, probe_stress.c, probe_flood.c).
 */
#ifndef SEMD_TESTS_DAEMON_PROBE_H
#define SEMD_TESTS_DAEMON_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/semd.pb-c.h"
#include "tests/common/req.h"

#define WAIT_MS 10000

struct pconn {
	int		fd;
	uint8_t		buf[128 << 10];
	bool		slow;		/* write one byte at a time */
	size_t		len;
	uint64_t	next_id;
	bool		eof;
};

extern bool quiet;	/* p_print prints nothing */

/* semd_probe.c */
double now_ms(void);
const char *code_name(int c);
int p_connect(const char *addr);
int p_send(struct pconn *c, Semd__Request *req);
Semd__Reply *p_read(struct pconn *c, int ms);
int p_command(struct pconn *c, char *line);
int p_hello(struct pconn *c);
uint64_t p_send_next(struct pconn *c, struct req *q);
uint64_t p_down(struct pconn *c, const char *name, int64_t timeout);
int p_sync(struct pconn *c);
int p_up(struct pconn *c, const char *name);
void p_nofile(int n);
struct pconn **p_alloc_many(int n);
struct pconn **p_connect_many(const char *addr, int n);
struct pconn **p_open_many(const char *addr, int n);
void p_close_many(struct pconn **cs, int n);

/* Counts of reply codes and the first message of each, for the modes. */
struct tally {
	int	n[16];
	char	msg[16][160];
	int	none;		/* no reply: closed or timed out */
};

/* probe_modes.c, probe_stress.c, probe_flood.c: the modes of main() */
void tally_add(struct tally *t, const Semd__Reply *r);
void tally_print(const char *what, const struct tally *t);
int mode_fifo(const char *addr, int n);
int mode_many(const char *addr, int n);
int mode_burst(const char *addr, int n);
int mode_timeout(const char *addr, int ms);
int mode_sessions(const char *addr, int n, int lease_ms);
int mode_flood(const char *addr, int conns, int n, int hold_ms,
    const char *tmpl);
int mode_idle(const char *addr, int n, int hold_ms);
int mode_latency(const char *addr, int n, int gap_ms);
int mode_watchers(const char *addr, int nw, const char *name, int n);
int mode_stress(const char *addr, int n, int k, int ms, unsigned seed);
/* probe_flood.c */
int mode_watch_flood(const char *addr, int conns, int w, int ms,
    const char *stop);
int mode_unread(const char *addr, int conns, int n, int ms, const char *stop,
    const char *request);
int mode_fill_log(const char *addr, const char *name, int ms,
    const char *stop);

#endif
