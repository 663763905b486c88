/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon/log/datadir.c - the log's data directory checked, made and marked
 * (datadir.h).
 */
#include <config.h>	/* autoconf's */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "daemon/log/datadir.h"
#include "daemon/logging.h"

#define META_NAME	"semd.meta"
#define META_FORMAT	"semd-data 1"
/* There while a --restore's seed is not in the log yet. */
#define SEED_MARK	"restore.pending"

/* Does the directory have any entry but . and ..? 1 empty, 0 not, -errno. */
static int dir_empty(const char *dir)
{
	struct dirent *e;
	DIR *dp = opendir(dir);
	int empty = 1;

	if (dp == NULL)
		return -errno;
	while ((e = readdir(dp)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			empty = 0;
			break;
		}
	}
	closedir(dp);
	return empty;
}

/* fsync a directory (its entries made durable; best effort). */
static void dir_sync(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
}

/* Write semd.meta for a new directory (atomically, synced). */
static int meta_write(const char *dir, uint64_t id, char *err, size_t errlen)
{
	char path[4096], tmp[4096], text[128];
	int fd, n;

	snprintf(path, sizeof path, "%s/%s", dir, META_NAME);
	snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, META_NAME);
	n = snprintf(text, sizeof text, "%s\nnode %llu\n", META_FORMAT,
	    (unsigned long long)id);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, (size_t)n) != n || fsync(fd) != 0 ||
	    close(fd) != 0 || rename(tmp, path) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return EX_CANTCREAT;
	}
	dir_sync(dir);
	return 0;
}

/* Check semd.meta: ours, this node's. */
static int meta_check(const char *dir, uint64_t id, char *err, size_t errlen)
{
	char path[4096], text[256], want[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, META_NAME);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s is not a semd data directory (no %s; "
		    "it has other files): give an empty or a semd directory",
		    dir, META_NAME);
		return EX_CONFIG;
	}
	n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return EX_IOERR;
	}
	text[n] = '\0';
	snprintf(want, sizeof want, "%s\nnode %llu\n", META_FORMAT,
	    (unsigned long long)id);
	if (strcmp(text, want) != 0) {
		snprintf(err, errlen, "%s belongs to another node or format "
		    "(%s says \"%.60s\")", dir, META_NAME, text);
		return EX_CONFIG;
	}
	return 0;
}

/*
 * raft_uv makes every open segment whole (SEMLOG_SEGMENT_SIZE,
 * preallocated), so a crash leaves zeros after the last write, which it
 * reads as the end. A shorter file was cut by something else: refuse it
 * with a message that says so (libraft 0.15 crashed reading one).
 */
static int segments_check(const char *dir, char *err, size_t errlen)
{
	char path[4096];
	struct dirent *e;
	struct stat st;
	DIR *dp = opendir(dir);
	int r = 0;

	if (dp == NULL)
		return 0;
	while ((e = readdir(dp)) != NULL && r == 0) {
		if (strncmp(e->d_name, "open-", 5) != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0 && st.st_size > 0 &&
		    ((size_t)st.st_size < SEMLOG_SEGMENT_SIZE ||
		    st.st_size % 4096 != 0)) {
			snprintf(err, errlen, "%s is %lld bytes, not a whole "
			    "segment: the data directory was cut off (damaged); "
			    "restore it from a copy", path, (long long)st.st_size);
			r = EX_CONFIG;
		}
	}
	closedir(dp);
	return r;
}

/*
 * raft_uv keeps the term and vote in metadata1 and metadata2 (written whole
 * with O_SYNC; it ignores a short one as a write torn by a crash and takes
 * the other). With neither whole, it would take the directory for a new
 * server while its log is there (libraft 0.15 then hung): refuse that. A
 * directory with nothing but semd.meta is one whose first start stopped
 * before raft wrote anything: *fresh, it is bootstrapped.
 */
static int metadata_check(const char *dir, bool *fresh, char *err,
    size_t errlen)
{
	char path[4096];
	struct dirent *e;
	struct stat st;
	DIR *dp = opendir(dir);
	int whole = 0, others = 0;

	*fresh = false;
	if (dp == NULL)
		return 0;
	while ((e = readdir(dp)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, META_NAME) == 0)
			continue;
		others++;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if ((strcmp(e->d_name, "metadata1") == 0 ||
		    strcmp(e->d_name, "metadata2") == 0) &&
		    stat(path, &st) == 0 && st.st_size == 32)
			whole++;
	}
	closedir(dp);
	if (others == 0) {
		*fresh = true;
		return 0;
	}
	if (whole == 0) {
		snprintf(err, errlen, "%s has a log but no whole metadata1 or "
		    "metadata2 (the term and vote): the data directory is "
		    "damaged; restore it from a copy", dir);
		return EX_CONFIG;
	}
	return 0;
}

/*
 * --restore seeds an empty data directory only; a directory whose seed did
 * not reach its log (SEED_MARK is there: semd stopped first) has no state to
 * serve, and is refused until emptied and seeded again.
 */
static int seed_check(const char *dir, bool empty, bool seeding, char *err,
    size_t errlen)
{
	char path[4096];
	struct stat st;

	if (seeding && !empty) {
		snprintf(err, errlen, "--restore seeds an empty data directory "
		    "only, and %s is not empty: give a new one", dir);
		return EX_CANTCREAT;
	}
	snprintf(path, sizeof path, "%s/%s", dir, SEED_MARK);
	if (!seeding && lstat(path, &st) == 0) {
		snprintf(err, errlen, "the restore into %s did not finish (semd "
		    "stopped before the backup's state was in the log): empty "
		    "the directory and run semd --restore again", dir);
		return EX_CONFIG;
	}
	return 0;
}

/* Mark dir as seeded but not yet restored (SEED_MARK, made durable). */
static int seed_mark(const char *dir, char *err, size_t errlen)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, SEED_MARK);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || fsync(fd) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", path,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return EX_CANTCREAT;
	}
	close(fd);
	dir_sync(dir);
	return 0;
}

/* Check or make dir (datadir.h): its files, its owner, a seed. */
int semlog_dir_prepare(const char *dir, uint64_t id, bool seeding,
    bool *fresh, char *mark, size_t marklen, char *err, size_t errlen)
{
	struct stat st;
	bool bare = false;
	int r, empty;

	*fresh = false;
	snprintf(mark, marklen, "%s/%s", dir, SEED_MARK);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create the data directory %s: %s",
		    dir, strerror(errno));
		return EX_CANTCREAT;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a directory", dir);
		return EX_CONFIG;
	}
	if ((empty = dir_empty(dir)) < 0) {
		snprintf(err, errlen, "cannot read %s: %s", dir, strerror(-empty));
		return EX_CANTCREAT;
	}
	if ((r = seed_check(dir, empty, seeding, err, errlen)) != 0)
		return r;
	if (empty && (r = meta_write(dir, id, err, errlen)) != 0)
		return r;
	if (seeding && (r = seed_mark(dir, err, errlen)) != 0)
		return r;
	if (!empty && ((r = meta_check(dir, id, err, errlen)) != 0 ||
	    (r = metadata_check(dir, &bare, err, errlen)) != 0 ||
	    (r = segments_check(dir, err, errlen)) != 0))
		return r;
	*fresh = empty || bare;
	return 0;
}

/* The seed is in the log: its mark goes. */
void semlog_dir_seeded(const char *mark)
{
	if (unlink(mark) != 0 && errno != ENOENT)
		log_warn("log: cannot remove %s: %s", mark, strerror(errno));
}
