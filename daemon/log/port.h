/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/port.h - the peer port: the one place between a struct raft_io
 * (raft_uv on the log thread, or libraft's in-memory fixture in the
 * simulation) and libraft. It wraps the io's calls, all of them declared
 * public by raft.h, and sees:
 *
 *  - every message from a peer before libraft does (port_admit() in port.c):
 *    what it says is checked (semlog_port_check: terms, the sender,
 *    entries semd could not apply), and entries a follower compacted away
 *    are cut off, which libraft would append at the wrong place;
 *  - every tick and every completion of an append or a snapshot write, after
 *    which it tells its owner that raft moved (semlog_port_set_step: the log
 *    follows leadership from there, as libraft's internal step_cb would);
 *  - what the log holds, from the io's own calls (load, bootstrap, append,
 *    truncate, snapshot_put): the latest configuration, committed or not -
 *    what libraft acts on, which it gives no function to read - and the last
 *    snapshot;
 *  - the disk work, for the metrics: how long appends take, snapshots
 *    written and failed.
 *
 * It also gives a leader its read barrier (raft's ReadIndex, which libraft
 * has no call for): semlog_port_probe sends every other voter an
 * AppendEntries of its own whose previous index no log has (2^62 plus the
 * round). A follower of the leader's term takes it as from its leader and
 * rejects it, echoing that index as "rejected" (libraft 0.22's
 * recvAppendEntries: the log-matching check fails before anything of the
 * follower's changes but its election timer and the leader it knows). The
 * port keeps those answers from libraft and counts them: a round answered by
 * a majority of voters in the term it was sent in proves that the node led
 * when every answer was given, so after the round was sent.
 *
 * Everything but the figures (semlog_port_heard, semlog_port_stats) runs on
 * the thread that runs raft.
 */
#ifndef SEMD_LOG_PORT_H
#define SEMD_LOG_PORT_H

#include <stdint.h>

#include <raft.h>

#include "daemon/log/semlog.h"

struct semlog_port;

/*
 * Wrap io (before raft_init(); io->data becomes the struct raft, as raft_init
 * sets it) for the node self. NULL without memory, or when SEMLOG_PORT_MAX
 * ios are wrapped at once in the process.
 */
#define SEMLOG_PORT_MAX	8
struct semlog_port *semlog_port_new(struct raft_io *io, raft_id self);
/*
 * Free p once raft is closed and its io completed everything (NULL:
 * nothing). The io is not touched: it may be gone (the fixture frees its
 * own), and is not to be used again.
 */
void semlog_port_free(struct semlog_port *p);
/* fn(arg) runs after raft handled a tick, a message or a completion. */
void semlog_port_set_step(struct semlog_port *p, void (*fn)(void *arg),
    void *arg);
/* Time the appends by this clock (microseconds); none: they are not timed. */
void semlog_port_set_clock(struct semlog_port *p,
    uint64_t (*now_us)(void *arg), void *arg);

/*
 * The log's latest configuration (committed or not: raft's current one), as
 * the io stored it; n == 0 before anything is loaded. Valid until the next
 * call into raft.
 */
const struct raft_configuration *semlog_port_configuration(
    const struct semlog_port *p);
/* A number that changes whenever the configuration may have. */
uint64_t semlog_port_configuration_gen(const struct semlog_port *p);

/*
 * The highest leader commit index heard in an AppendEntries, and the
 * highest last index of an InstallSnapshot (0: none yet). Any thread.
 */
void semlog_port_heard(const struct semlog_port *p, uint64_t *leader_commit,
    uint64_t *snapshot_index);
/* AppendEntries cut to start at the last snapshot so far (port.c). */
unsigned long semlog_port_trimmed(const struct semlog_port *p);
/* InstallSnapshot messages dropped while a snapshot was written (port.c). */
unsigned long semlog_port_installs_dropped(const struct semlog_port *p);
/*
 * How long the oldest append not yet written has waited (0: none waits;
 * raft's thread): a full disk shows here, as raft_uv retries the write.
 */
uint64_t semlog_port_append_wait_us(const struct semlog_port *p);
/*
 * What the port checks of a peer's message before raft has it (libraft's
 * decoder has read it from a stream peer_wire checked): a message that
 * fails is dropped, as if lost, and counted (semlog_port_refused) - raft
 * survives any message lost. The rules, for the node's configuration conf
 * (n == 0: a node not yet in a cluster takes a leader's first messages
 * from anyone), its id self and its current term:
 *  - terms below SEMLOG_TERM_MAX and at most SEMLOG_TERM_JUMP above the
 *    node's (elections make one term each), an entry's and the previous
 *    entry's at most the message's, indexes below 2^63;
 *  - a member of conf from its address there (in TLS, the address its
 *    certificate names: ids are bound to certificates);
 *  - a RequestVote (or pre-vote) or TimeoutNow only from another voter of
 *    conf, whose RequestVote names itself the candidate; an AppendEntries
 *    or InstallSnapshot from a member of conf, or from a leader of a term
 *    not below the node's (one a lagging node may not know yet); answers
 *    from a member;
 *  - entries libraft and semd can apply: a RAFT_CHANGE that libraft's
 *    decoder reads within its bytes (peer_wire_conf_ok), a RAFT_COMMAND
 *    that entry_ok takes (semd's: sm_entry_check; NULL: any).
 * True when m may go on; else false, why says.
 */
#define SEMLOG_TERM_MAX		((uint64_t)1 << 48)
#define SEMLOG_TERM_JUMP	((uint64_t)1 << 20)
struct semlog_port_rules {
	const struct raft_configuration *conf;
	raft_id		self;
	raft_term	term;
	int		(*entry_ok)(void *arg, const void *buf, size_t len,
			    char *why, size_t whylen);
	void		*arg;
};
bool semlog_port_check(const struct semlog_port_rules *r,
    const struct raft_message *m, char *why, size_t whylen);
/* The check of RAFT_COMMAND entries (NULL: any); before raft starts. */
void semlog_port_set_entry_check(struct semlog_port *p,
    int (*entry_ok)(void *arg, const void *buf, size_t len, char *why,
    size_t whylen), void *arg);
/* Messages dropped by the checks so far (any thread). */
unsigned long semlog_port_refused(const struct semlog_port *p);

/* The disk work so far (zeros for NULL). Any thread. */
void semlog_port_stats(const struct semlog_port *p, struct semlog_io_stats *out);

/*
 * Read barriers (a leader; raft's thread). A round goes to every other voter
 * of the configuration; it is confirmed once answered, in the term it was
 * sent in, by a majority of the voters (the node counts itself: a lone voter
 * confirms at once). semlog_port_probe sends a new round: its number (they
 * only grow), or 0 when the node does not lead or has no memory.
 */
uint64_t semlog_port_probe(struct semlog_port *p);
/* The highest round confirmed in the node's current term (0: none). */
uint64_t semlog_port_confirmed(const struct semlog_port *p);
/* Probes' previous indexes are above this index, which no log reaches. */
#define SEMLOG_PROBE_BASE	((uint64_t)1 << 62)

#endif
