/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/datadir.h - the log's data directory: raft_uv's files
 * (segments, metadata, snapshots) and semd.meta, which says whose they are:
 * a format line and the node id. A directory with files but no semd.meta,
 * or another node's, is refused (EX_CONFIG), as is one raft cannot load;
 * so is one that was cut off or lost its metadata, with a message that
 * says so before raft reads it.
 */
#ifndef SEMD_LOG_DATADIR_H
#define SEMD_LOG_DATADIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The open segments raft_uv writes, made whole (preallocated). */
#define SEMLOG_SEGMENT_SIZE	(8u << 20)

/*
 * Check (or make) dir for node id: 0 with *fresh (a new log: bootstrap it),
 * or a sysexits code with why in err. seeding: a --restore seed is coming
 * (only an empty directory takes one; it is marked until its state is in
 * the log: semlog_dir_seeded). mark gets the mark's path (marklen bytes).
 */
int semlog_dir_prepare(const char *dir, uint64_t id, bool seeding,
    bool *fresh, char *mark, size_t marklen, char *err, size_t errlen);
/* The seed is in the log: its mark goes. */
void semlog_dir_seeded(const char *mark);

#endif
