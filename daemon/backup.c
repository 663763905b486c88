/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/backup.c - online backups (see backup.h). A Backup at offset 0
 * reaches the state machine as any request (through the feed: at once in
 * memory, once applied with a log), which hands a copy of the whole state
 * to backup_take_locked(); it is kept on the connection and answered a
 * chunk a request (the client asks for the next offset), so that no reply
 * outgrows the client's max-output and a big state is never staged at
 * once. The copy goes when it has been read to the end, at the next
 * offset 0, or with the connection. And a backup file read back whole and
 * checked, for semd --restore.
 */
#include <config.h>	/* autoconf's, not daemon/config.h */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "daemon/backup.h"
#include "daemon/conn-int.h"
#include "daemon/logging.h"

#define BACKUP_CHUNK_MAX	(256u * 1024u)	/* a reply's bytes of state */
#define BACKUP_FILE_MAX		(4ull << 30)	/* a state of 4 GiB at most */

/* The SHA-256 of len bytes at p into out: 0, or -1. */
static int backup_sha256(const uint8_t *p, size_t len, uint8_t out[32])
{
	unsigned int n = 0;

	if (EVP_Digest(p, len, out, &n, EVP_sha256(), NULL) != 1 || n != 32)
		return -1;
	return 0;
}

/* A chunk's size: a quarter of max-output, 1 KiB to BACKUP_CHUNK_MAX. */
static size_t backup_chunk_size(const struct conn *c)
{
	size_t n = SRV_LIVE(c->srv, max_output) / 4;

	if (n > BACKUP_CHUNK_MAX)
		n = BACKUP_CHUNK_MAX;
	return n < 1024 ? 1024 : n;
}

/* Free a connection's copy of the state (NULL: nothing). */
void backup_free(struct conn_backup *b)
{
	if (b == NULL)
		return;
	free(b->snap);
	free(b);
}

/* Answer request id with the chunk of c's copy from offset on; the copy
 * goes once its end is sent. */
static void backup_send_locked(struct conn *c, uint64_t id, uint64_t offset)
{
	struct conn_backup *b = c->backup;
	Semd__Reply r = SEMD__REPLY__INIT;
	Semd__BackupChunk ch = SEMD__BACKUP_CHUNK__INIT;
	size_t n = backup_chunk_size(c);

	if (n > b->len - offset)
		n = b->len - offset;
	ch.total = b->len;
	ch.offset = offset;
	ch.data.data = b->snap + offset;
	ch.data.len = n;
	ch.sha256.data = b->sha256;
	ch.sha256.len = sizeof b->sha256;
	ch.wall_ms = b->wall_ms;
	r.id = id;
	r.body_case = SEMD__REPLY__BODY_BACKUP;
	r.backup = &ch;
	conn_reply_locked(NULL, c, &r);
	if (offset + n == b->len) {
		backup_free(b);
		c->backup = NULL;
	}
}

/* The sm_out backup effect: keep the copy on conn, answer its first chunk. */
void backup_take_locked(void *ctx, void *conn, uint64_t id, uint8_t *snap,
    size_t len, uint64_t wall_ms)
{
	struct conn *c = conn;
	struct conn_backup *b;

	(void)ctx;
	backup_free(c->backup);
	c->backup = NULL;
	if ((b = calloc(1, sizeof *b)) == NULL ||
	    backup_sha256(snap, len, b->sha256) != 0) {
		free(b);
		free(snap);
		conn_reply_code_locked(c, id, SEMD__CODE__RESOURCE_EXHAUSTED,
		    "out of memory taking the backup");
		return;
	}
	b->snap = snap;
	b->len = len;
	b->wall_ms = wall_ms;
	c->backup = b;
	log_notice("%s: backup of %zu bytes of state taken", c->peer, len);
	backup_send_locked(c, id, 0);
}

/* A Backup for a later chunk: answered from c's copy (true). */
bool backup_chunk_locked(struct conn *c, const Semd__Request *req)
{
	uint64_t off;

	if (req->op_case != SEMD__REQUEST__OP_BACKUP || req->backup->offset == 0)
		return false;
	off = req->backup->offset;
	if (c->backup == NULL || off >= c->backup->len) {
		conn_reply_code_locked(c, req->id, SEMD__CODE__INVALID_ARGUMENT,
		    c->backup == NULL ? "no backup is being read on this "
		    "connection: ask for offset 0 first" :
		    "the offset is past the backup's end");
		return true;
	}
	backup_send_locked(c, req->id, off);
	return true;
}

/* Little-endian integers of a header. */
static uint64_t le(const uint8_t *p, unsigned int size)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < size; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Read all of fd (size bytes) into a new buffer: 0, or -errno. */
static int read_whole(int fd, size_t size, uint8_t **out)
{
	uint8_t *p = malloc(size > 0 ? size : 1);
	size_t off = 0;
	ssize_t n;

	*out = NULL;
	if (p == NULL)
		return -ENOMEM;
	while (off < size) {
		n = read(fd, p + off, size - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(p);
			return n < 0 ? -errno : -EIO;
		}
		off += (size_t)n;
	}
	*out = p;
	return 0;
}

/* Read a backup file whole and check it (backup.h). */
int backup_file_load(const char *path, uint8_t **snap, size_t *len,
    char *err, size_t errlen)
{
	uint8_t *p = NULL, sha[32];
	uint64_t n;
	struct stat st;
	int fd, r;

	*snap = NULL;
	*len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "cannot read the backup %s: %s", path,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return EX_NOINPUT;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)BACKUP_HEADER_LEN ||
	    (uint64_t)st.st_size > BACKUP_FILE_MAX) {
		close(fd);
		snprintf(err, errlen, "%s is no backup of semd (%s)", path,
		    !S_ISREG(st.st_mode) ? "not a file" : "too short or too big");
		return EX_DATAERR;
	}
	r = read_whole(fd, (size_t)st.st_size, &p);
	close(fd);
	if (r != 0 || p == NULL) {
		snprintf(err, errlen, "cannot read the backup %s: %s", path,
		    strerror(-r));
		return EX_NOINPUT;
	}
	n = le(p + 16, 8);
	if (memcmp(p, BACKUP_MAGIC, 8) != 0) {
		snprintf(err, errlen, "%s is no backup of semd (it does not "
		    "begin with %s)", path, BACKUP_MAGIC);
	} else if (le(p + 8, 4) != BACKUP_FORMAT ||
	    le(p + 12, 4) != BACKUP_HEADER_LEN) {
		snprintf(err, errlen, "%s is a backup of format %u, header %u "
		    "bytes: this semd reads format %u", path,
		    (unsigned)le(p + 8, 4), (unsigned)le(p + 12, 4),
		    BACKUP_FORMAT);
	} else if (n != (uint64_t)st.st_size - BACKUP_HEADER_LEN) {
		snprintf(err, errlen, "%s is damaged: its header says %llu bytes "
		    "of state, it has %llu (cut short, or added to)", path,
		    (unsigned long long)n, (unsigned long long)(st.st_size -
		    BACKUP_HEADER_LEN));
	} else if (backup_sha256(p + BACKUP_HEADER_LEN, (size_t)n, sha) != 0 ||
	    memcmp(sha, p + 32, sizeof sha) != 0) {
		snprintf(err, errlen, "%s is damaged: its checksum (SHA-256) "
		    "does not match its state", path);
	} else {
		memmove(p, p + BACKUP_HEADER_LEN, (size_t)n);
		*snap = p;
		*len = (size_t)n;
		return 0;
	}
	free(p);
	return EX_DATAERR;
}
