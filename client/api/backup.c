/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/backup.c - semc_backup(): a consistent copy of the daemon's whole
 * state, read a chunk a request (Backup at offset 0 takes it, the next
 * offsets read it) and written as a backup file, which semd --restore
 * reads (its format: daemon/backup.h). The state is checked against the
 * daemon's SHA-256 of it before success is returned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "client/api/api.h"
#include "client/base/fdio.h"

static const uint8_t backup_magic[8] = { 'S', 'E', 'M', 'D', 'B', 'K', 'U', 'P' };
#define BACKUP_FORMAT		1u
#define BACKUP_HEADER_LEN	64u

/* Write all of p to fd: 0, or SEMC_E_SYSTEM. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
	if (fd_write_all(fd, p, n) == 0)
		return 0;
	return semc_fail(SEMC_E_SYSTEM, "writing the backup: %s",
			 errno != 0 ? strerror(errno) : "nothing written");
}

/* Little-endian v into p (size bytes). */
static void put_le(uint8_t *p, uint64_t v, unsigned int size)
{
	unsigned int i;

	for (i = 0; i < size; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The header of a backup of the first chunk's state. */
static int backup_header(int fd, const Semd__BackupChunk *ch)
{
	uint8_t h[BACKUP_HEADER_LEN] = { 0 };

	memcpy(h, backup_magic, sizeof backup_magic);
	put_le(h + 8, BACKUP_FORMAT, 4);
	put_le(h + 12, BACKUP_HEADER_LEN, 4);
	put_le(h + 16, ch->total, 8);
	put_le(h + 24, ch->wall_ms, 8);
	memcpy(h + 32, ch->sha256.data, 32);
	return write_all(fd, h, sizeof h);
}

/* Is the chunk the one asked for, of the same copy as the first? */
static bool chunk_fits(const Semd__Reply *rp, uint64_t off, const struct semc_backup_info *info)
{
	const Semd__BackupChunk *ch;

	if (rp->body_case != SEMD__REPLY__BODY_BACKUP)
		return false;
	ch = rp->backup;
	if (ch->offset != off || ch->sha256.len != 32 || ch->data.len > ch->total - off ||
	    (ch->data.len == 0 && off < ch->total))
		return false;
	return off == 0 || (ch->total == info->bytes &&
			    memcmp(ch->sha256.data, info->sha256, 32) == 0);
}

/* Write a backup of the daemon's whole state to fd, checked against its checksum. */
int semc_backup(struct semc *c, int fd, struct semc_backup_info *info)
{
	Semd__Request rq = SEMD__REQUEST__INIT;
	Semd__Backup op = SEMD__BACKUP__INIT;
	Semd__Reply *rp = NULL;
	struct semc_backup_info got = { 0 };
	uint8_t sha[32];
	unsigned int shalen = 0;
	EVP_MD_CTX *md;
	uint64_t off = 0;
	int r = 0;

	if (info != NULL)
		memset(info, 0, sizeof *info);
	if (c == NULL || fd < 0)
		return semc_fail(SEMC_E_ARG, "semc_backup: no handle or file");
	if ((md = EVP_MD_CTX_new()) == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(md);
		return semc_fail(SEMC_E_NOMEM, NULL);
	}
	rq.op_case = SEMD__REQUEST__OP_BACKUP;
	rq.backup = &op;
	/* bounded: every chunk brings at least a byte of a state of known size */
	do {
		op.offset = off;
		if ((r = semc_call(c, &rq, 0, &rp)) != 0)
			break;
		if (!chunk_fits(rp, off, &got)) {
			r = semc_fail(SEMC_E_PROTOCOL, "the backup's chunk at byte %llu is not "
				      "the one asked for", (unsigned long long)off);
			break;
		}
		if (off == 0) {
			got.bytes = rp->backup->total;
			got.wall_ms = rp->backup->wall_ms;
			memcpy(got.sha256, rp->backup->sha256.data, 32);
			if ((r = backup_header(fd, rp->backup)) != 0)
				break;
		}
		if (EVP_DigestUpdate(md, rp->backup->data.data, rp->backup->data.len) != 1) {
			r = semc_fail(SEMC_E_NOMEM, NULL);
			break;
		}
		if ((r = write_all(fd, rp->backup->data.data, rp->backup->data.len)) != 0)
			break;
		off += rp->backup->data.len;
		semd__reply__free_unpacked(rp, NULL);
		rp = NULL;
	} while (off < got.bytes);
	if (rp != NULL)
		semd__reply__free_unpacked(rp, NULL);
	if (r == 0 && (EVP_DigestFinal_ex(md, sha, &shalen) != 1 || shalen != 32 ||
		       memcmp(sha, got.sha256, 32) != 0))
		r = semc_fail(SEMC_E_PROTOCOL, "the backup does not match the daemon's "
			      "checksum (SHA-256): damaged on the way");
	EVP_MD_CTX_free(md);
	if (r == 0 && info != NULL)
		*info = got;
	return r;
}
