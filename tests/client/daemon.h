/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/client/daemon.h - start the real semd for a C test: fork/exec
 * $top_builddir/semd on a private UNIX socket and 127.0.0.1:0, wait for its
 * ready file (bounded), read the bound addresses. Plus tiny test macros.
 */
#ifndef TESTS_CLIENT_DAEMON_H
#define TESTS_CLIENT_DAEMON_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/client/spawn.h"

static int t_failures, t_checks;

#define CHECK(cond, ...) do {						\
	t_checks++;							\
	if (!(cond)) {							\
		t_failures++;						\
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, "\n");					\
	}								\
} while (0)

#define CHECK_EQ(want, got) do {					\
	long long w_ = (long long)(want), g_ = (long long)(got);	\
	t_checks++;							\
	if (w_ != g_) {							\
		t_failures++;						\
		fprintf(stderr, "FAIL %s:%d: %s == %s: want %lld, got %lld (%s)\n", \
			__FILE__, __LINE__, #want, #got, w_, g_, semc_last_message()); \
	}								\
} while (0)

#define TEST_START(name) fprintf(stderr, "== %s\n", name)

struct tdaemon {
	pid_t pid;
	char dir[64];
	char unix_addr[300];
	char tcp_addr[300];
	char log[128];
};

/* Monotonic milliseconds. */
static inline long long t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleep ms milliseconds. */
static inline void t_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * SIGSTOP the daemon and wait (at most 2 s) until every one of its threads
 * has stopped: kill() returns before the other threads of a --threads
 * daemon take part in the group stop, and they can still answer meanwhile.
 */
static inline int tdaemon_sigstop(struct tdaemon *d)
{
	char path[64], state[128];
	struct dirent *e;
	int tries, running = 1;
	DIR *dir;
	FILE *f;

	if (kill(d->pid, SIGSTOP) != 0)
		return -1;
	for (tries = 0; tries < 200 && running; tries++) {
		snprintf(path, sizeof path, "/proc/%d/task", (int)d->pid);
		dir = opendir(path);
		if (dir == NULL)
			return -1;
		running = 0;
		while ((e = readdir(dir)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(state, sizeof state, "/proc/%d/task/%.20s/stat",
			    (int)d->pid, e->d_name);
			f = fopen(state, "r");
			/* "tid (comm) S ...": the state follows the last ')' */
			if (f != NULL && fgets(state, sizeof state, f) != NULL &&
			    strrchr(state, ')') != NULL &&
			    strrchr(state, ')')[2] != 'T')
				running = 1;
			if (f != NULL)
				fclose(f);
		}
		closedir(dir);
		if (running)
			t_sleep_ms(10);
	}
	return running ? -1 : 0;
}

/* Start semd in d->dir (created if empty) with extra args; 0 on success. */
static inline int tdaemon_start(struct tdaemon *d, const char *const *extra)
{
	const char *top = getenv("top_builddir");
	const char *threads = getenv("SEMD_TEST_THREADS");
	const char *durable = getenv("SEMD_TEST_DURABLE");
	char semd[512], sock[128], ready[128], data[160];
	const char *argv[32];
	int i, j, tries;

	if (d->dir[0] == '\0') {
		strcpy(d->dir, "/tmp/semc-test.XXXXXX");
		if (mkdtemp(d->dir) == NULL)
			return -1;
	}
	snprintf(semd, sizeof semd, "%s/semd", top ? top : ".");
	snprintf(sock, sizeof sock, "unix:%s/s.sock", d->dir);
	snprintf(ready, sizeof ready, "%s/ready", d->dir);
	snprintf(d->log, sizeof d->log, "%s/semd.log", d->dir);
	unlink(ready);
	i = t_semd_args(argv, semd, sock, "tcp:127.0.0.1:0", ready);
	if (threads != NULL && threads[0] != '\0') {
		argv[i++] = "--threads";
		argv[i++] = threads;
	}
	if (durable != NULL && durable[0] != '\0') {
		snprintf(data, sizeof data, "%s/data", d->dir);
		argv[i++] = "--data-dir";
		argv[i++] = data;
	}
	for (j = 0; extra != NULL && extra[j] != NULL && i < 30; j++)
		argv[i++] = extra[j];
	argv[i] = NULL;
	d->pid = t_spawn(semd, argv, d->log);
	if (d->pid < 0)
		return -1;
	/* the ready file appears once it accepts: at most 10 s */
	for (tries = 0; tries < 200; tries++) {
		struct stat st;

		if (stat(ready, &st) == 0 && st.st_size > 0)
			break;
		if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
			fprintf(stderr, "semd exited at start; see %s\n", d->log);
			return -1;
		}
		t_sleep_ms(50);
	}
	if (t_ready_read(ready, d->unix_addr, sizeof d->unix_addr, d->tcp_addr,
			 sizeof d->tcp_addr) != 0)
		return -1;
	return d->unix_addr[0] && d->tcp_addr[0] ? 0 : -1;
}

/* Stop semd with sig and reap it. */
static inline void tdaemon_stop(struct tdaemon *d, int sig)
{
	if (d->pid <= 0)
		return;
	kill(d->pid, sig);
	waitpid(d->pid, NULL, 0);
	d->pid = 0;
}

/* Stop semd, print its log if the test failed, remove the directory. */
static inline void tdaemon_cleanup(struct tdaemon *d)
{
	char cmd[256];

	tdaemon_stop(d, SIGTERM);
	if (t_failures > 0) {
		snprintf(cmd, sizeof cmd, "tail -n 40 %s >&2", d->log);
		if (system(cmd) != 0)
			fprintf(stderr, "(no daemon log)\n");
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", d->dir);
	if (d->dir[0] && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", d->dir);
}

#endif
