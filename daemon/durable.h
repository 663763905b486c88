/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/durable.h - --data-dir: every change of the state is an entry of a
 * raft log (canonical raft on libuv, one voter) and is applied only once
 * committed; the reply goes out after.
 *
 * Raft lives on a thread of its own (no raft call is thread-safe). The
 * event loops hand it commands (struct sm_batch: opens, requests with the
 * access decision, closes) through durable_submit(); it stamps them with
 * the state time and proposes them, all that came in meanwhile as one
 * entry (group commit), and applies committed entries to the state machine
 * under the state lock. Replies then reach the connections through their
 * loops' mailboxes, as a grant across loops does. Deadlines fire through
 * an empty entry proposed when the earliest one is due.
 *
 * State time is log time: it continues from the last entry after a restart
 * (the downtime does not count against any lease), and a restart adds a
 * grace to every lease on top (RESTART entry).
 */
#ifndef SEMD_DURABLE_H
#define SEMD_DURABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/state.h"

struct server;
struct durable;

/*
 * Check (or make) the data directory and start the raft thread: replay the
 * log, take the state over, append the restart entry. Returns 0 once the
 * state is ready to serve, or a sysexits code with the reason in err:
 * EX_CONFIG for a damaged or foreign data directory, EX_CANTCREAT or
 * EX_IOERR when it cannot be used.
 */
int durable_start(struct server *srv, char *err, size_t errlen);
/* Stop the raft thread (entries not committed yet are dropped). */
void durable_stop(struct server *srv);
/* Hand a batch of commands to the log (any thread); the batch is emptied. */
void durable_submit(struct server *srv, struct sm_batch *b);
/* Propose the settings that decide answers (after a reload). */
void durable_config(struct server *srv, const struct sm_config *cfg);
/*
 * A client id unique in this log: the node id in the top 16 bits and a
 * counter (ids start again after a restart, which closes every client).
 */
uint64_t durable_client_id(struct server *srv);
/* The node's cluster figures for Stats (sm_config.local_counters). */
void durable_counters(void *arg, struct sm_local_counters *out);
/* Is this node the leader, serving clients? (any thread) */
bool durable_serving(struct server *srv);
/* The leader as this node knows it: its id (0: none), its client address. */
uint64_t durable_leader(struct server *srv, char *addr, size_t len);
/*
 * The cluster status as a Reply body (r->cluster, freed with
 * semd__cluster_status__free_unpacked); -ENOMEM.
 */
int durable_status(struct server *srv, Semd__Reply *r, uint8_t **buf);
/* Start ADD, REMOVE or TRANSFER; client cid's request req_id is answered later. */
int durable_cluster_change(struct server *srv, uint64_t cid, uint64_t req_id,
    const Semd__Cluster *cl);
struct raft_configuration;
/* Parse --bootstrap "ID=HOST:PORT,...". 0, or -1 with err filled. */
int durable_parse_bootstrap(const char *spec, struct raft_configuration *conf,
    char *err, size_t errlen);

#endif
