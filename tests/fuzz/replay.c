/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/fuzz/replay.c - run a fuzz target's entry point over files, without
 * libFuzzer: `replay-X [DIR|FILE...]`. With no argument it replays
 * $top_srcdir/tests/fuzz/corpus/<target>/ (target from argv[0]), so
 * `make check` exercises every seed with the normal compiler on every run.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

#define REPLAY_MAX	(1u << 20)

/* Feed one file to the target. Returns 0, or -1 if it can not be read. */
static int replay_file(const char *path)
{
	static uint8_t buf[REPLAY_MAX];
	FILE *f;
	size_t n;

	f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 0;
}

/* Feed every regular file of dir (or dir itself when it is a file). */
static int replay_path(const char *path, unsigned *count)
{
	char sub[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	d = opendir(path);
	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (stat(sub, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		(*count)++;
		if (replay_file(sub) != 0)
			rc = -1;
	}
	closedir(d);
	return rc;
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX];
	const char *top = getenv("top_srcdir"), *base, *target;
	unsigned count = 0;
	int i, rc = 0;

	if (argc > 1) {
		for (i = 1; i < argc; i++)
			if (replay_path(argv[i], &count) != 0)
				rc = 1;
	} else {
		/* replay-frame -> corpus/fuzz_frame */
		base = strrchr(argv[0], '/');
		base = base != NULL ? base + 1 : argv[0];
		target = strncmp(base, "replay-", 7) == 0 ? base + 7 : base;
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/fuzz_%s", top != NULL ? top : ".", target);
		if (replay_path(dir, &count) != 0)
			rc = 1;
	}
	if (count == 0) {
		fprintf(stderr, "replay: no input files found\n");
		rc = 1;
	}
	printf("replayed %u inputs%s\n", count, rc ? " (with errors)" : "");
	return rc;
}
