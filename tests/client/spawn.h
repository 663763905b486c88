/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tests/client/spawn.h - start a program for a C test (its output to a log,
 * killed when the test dies) with semd's usual arguments, and read the addresses semd wrote to its
 * ready file. Shared by tests/client/daemon.h and tests/daemon/crash_clients.c.
 */
#ifndef TESTS_CLIENT_SPAWN_H
#define TESTS_CLIENT_SPAWN_H

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

/* Put the start of a test semd's command line into argv: the program at
 * path listening on sock and tcp, every client allowed everything (TCP
 * clients are anonymous, by default allowed only to use names), the ready
 * file. Returns how many arguments it put. */
static inline int t_semd_args(const char **argv, const char *path, const char *sock,
			      const char *tcp, const char *ready)
{
	const char *const args[] = {
		path, "--listen", sock, "--listen", tcp,
		"--acl", "anonymous * all", "--ready-file", ready,
	};

	memcpy(argv, args, sizeof args);
	return (int)(sizeof args / sizeof args[0]);
}

/* Fork and exec path with argv, its output appended to log; the child
 * dies with the test. The child's pid, or -1. */
static inline pid_t t_spawn(const char *path, const char *const *argv, const char *log)
{
	pid_t pid = fork();

	if (pid == 0) {
		FILE *lf = fopen(log, "a");

		/* a test that crashes or is killed takes its daemon along */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (lf != NULL) {
			dup2(fileno(lf), 1);
			dup2(fileno(lf), 2);
		}
		execv(path, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Copy the unix: and tcp: lines of semd's ready file (the bound addresses)
 * to unix_addr and tcp_addr (left as they were when absent); 0, or -1 when
 * the file cannot be opened. */
static inline int t_ready_read(const char *ready, char *unix_addr, size_t unix_len,
			       char *tcp_addr, size_t tcp_len)
{
	char line[300];
	FILE *f;

	if ((f = fopen(ready, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "unix:", 5) == 0)
			snprintf(unix_addr, unix_len, "%s", line);
		else if (strncmp(line, "tcp:", 4) == 0)
			snprintf(tcp_addr, tcp_len, "%s", line);
	}
	fclose(f);
	return 0;
}

#endif
