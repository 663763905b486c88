/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/backup.h - online backups and restores (backup.c): a Backup's copy
 * of the state answered in chunks on its connection, and a backup file read
 * back for semd --restore.
 *
 * A backup file (written by semctl backup, libsemclient's semc_backup()):
 *   "SEMDBKUP", u32 format (1), u32 header length (64), u64 snapshot
 *   length, u64 wall ms of the state, 32 bytes SHA-256 of the snapshot,
 *   then the snapshot (daemon/state/sm_snap_write.c: "SEMDSNAP", ...);
 *   integers little-endian.
 */
#ifndef SEMD_BACKUP_H
#define SEMD_BACKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/semd.pb-c.h"

struct conn;

#define BACKUP_MAGIC		"SEMDBKUP"
#define BACKUP_FORMAT		1u
#define BACKUP_HEADER_LEN	64u

/* A Backup being read on a connection (struct conn's backup). */
struct conn_backup {
	uint8_t		*snap;
	size_t		len;
	uint8_t		sha256[32];
	uint64_t	wall_ms;
};

/*
 * The sm_out backup effect, under the lock (any thread): keep the copy for
 * conn and answer its first chunk. snap is taken over.
 */
void backup_take_locked(void *ctx, void *conn, uint64_t id, uint8_t *snap,
    size_t len, uint64_t wall_ms);
/*
 * Under the lock, for a feed: a Backup for a later chunk (offset > 0) is
 * answered here from the connection's copy: true. Anything else: false.
 */
bool backup_chunk_locked(struct conn *c, const Semd__Request *req);
/* Free a connection's copy (NULL: nothing). */
void backup_free(struct conn_backup *b);
/*
 * Read a backup file and check it whole: its header, length and checksum
 * (not yet the state in it: sm_restore does). 0 with *snap (malloc'ed)
 * and *len, or a sysexits code with why in err: EX_NOINPUT when it cannot
 * be read, EX_DATAERR when it is damaged or no backup of semd's.
 */
int backup_file_load(const char *path, uint8_t **snap, size_t *len,
    char *err, size_t errlen);

#endif
