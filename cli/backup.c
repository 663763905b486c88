/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli/backup.c - semctl backup FILE: a consistent copy of the
 * daemon's whole state (semc_backup()), written whole or not at all: into
 * a new file beside FILE, synced, then renamed over it. "-" writes to
 * standard output (not a terminal).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/semctl.h"

/* Report a failure of the file (exit 6). */
static int backup_sys_fail(const char *what, const char *path)
{
	char m[PATH_MAX + 128];

	snprintf(m, sizeof m, "%s %s: %s", what, path, strerror(errno));
	return fail_json(EX_ERROR_, "system", SEMC_E_SYSTEM, "backup", m, NULL);
}

/* Print what was written. */
static void backup_print(const char *path, const struct semc_backup_info *bi)
{
	char when[64];
	size_t i;

	if (!g.json) {
		fprintf(strcmp(path, "-") == 0 ? stderr : stdout,
			"backup of %" PRIu64 " bytes of state (as of %s) written to %s\n",
			bi->bytes, fmt_time(bi->wall_ms, when, sizeof when),
			strcmp(path, "-") == 0 ? "standard output" : esc(path));
		return;
	}
	printf("{\"ok\":true,\"file\":");
	json_str(path);
	printf(",\"bytes\":%" PRIu64 ",\"wall_ms\":%" PRIu64 ",\"sha256\":\"", bi->bytes,
	       bi->wall_ms);
	for (i = 0; i < sizeof bi->sha256; i++)
		printf("%02x", bi->sha256[i]);
	printf("\"}\n");
}

/* backup FILE */
int cmd_backup(struct cmd_args *a)
{
	const char *path = a->argv[0];
	struct semc_backup_info bi;
	char tmp[PATH_MAX];
	struct semc *c;
	int fd, r;

	if (strcmp(path, "-") == 0) {
		if (g.json)
			usage_fail("backup: - writes the backup to standard output, where "
				   "--json would go");
		if (isatty(STDOUT_FILENO))
			usage_fail("backup: standard output is a terminal: give a FILE");
		if ((r = client_open(&c, 0, "semctl backup")) != 0)
			return r;
		if ((r = call_end(c, semc_backup(c, STDOUT_FILENO, &bi), "backup")) != 0)
			return r;
		if (fflush(stdout) != 0)
			return backup_sys_fail("cannot write", "standard output");
		backup_print(path, &bi);
		return 0;
	}
	if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
		usage_fail("backup: the file name is too long");
	if ((r = client_open(&c, 0, "semctl backup")) != 0)
		return r;
	if ((fd = mkstemp(tmp)) < 0) {
		semc_free(c);
		return backup_sys_fail("cannot create a file beside", path);
	}
	r = semc_backup(c, fd, &bi);
	if (r != 0) {
		close(fd);
		unlink(tmp);
		return call_end(c, r, "backup");
	}
	semc_free(c);
	if (fchmod(fd, 0600) != 0 || fsync(fd) != 0 || close(fd) != 0) {
		r = backup_sys_fail("cannot write", tmp);
		unlink(tmp);
		return r;
	}
	if (rename(tmp, path) != 0) {
		r = backup_sys_fail("cannot rename the backup to", path);
		unlink(tmp);
		return r;
	}
	backup_print(path, &bi);
	return 0;
}
