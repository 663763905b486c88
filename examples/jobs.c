/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * examples/jobs.c - a distributed job limited through semd.
 *
 * W worker processes (they could as well run on W hosts) each do T tasks;
 * every task needs one permit of the shared semaphore NAME, whose limit K
 * caps how many tasks run at once across all workers (a database that takes
 * K connections, a licence server with K seats...). The fencing token that
 * comes with each permit is what a worker would hand to the protected
 * resource, which can ask semd whether it is still valid.
 *
 * The parent only watches: each worker writes '+' to a pipe once it holds
 * its permit and '-' just before giving it back, so the parent can count how
 * many tasks are inside at any moment and check that it never exceeds K.
 *
 *   jobs [-s ADDR] [-n NAME] [-w WORKERS] [-k LIMIT] [-t TASKS] [-d MS]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <semclient.h>

struct job {
	const char *server;	/* NULL: $SEMD_SERVER or the default */
	const char *name;
	int workers;
	unsigned limit;
	int tasks;
	int work_ms;
};

/* Connect a new handle, or print why not. */
static struct semc *job_connect(const struct job *j, const char *who)
{
	struct semc *c = semc_new();

	if (c == NULL)
		return NULL;
	if (j->server != NULL && semc_set_address(c, j->server) != 0)
		goto fail;
	semc_set_client_name(c, who);
	if (semc_connect(c, 5000) != 0)
		goto fail;
	return c;
fail:
	fprintf(stderr, "%s: %s\n", who, semc_last_message());
	semc_free(c);
	return NULL;
}

/* Sleep for ms milliseconds: the "work". */
static void job_work(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* One worker process: T tasks, each inside one permit. */
static int job_worker(const struct job *j, int id, int out)
{
	struct semc_grant g;
	struct semc *c;
	char who[32];
	bool valid;
	int t, r;

	snprintf(who, sizeof who, "jobs-worker-%d", id);
	if ((c = job_connect(j, who)) == NULL)
		return 1;
	for (t = 0; t < j->tasks; t++) {
		r = semc_down(c, j->name, 1, 30000, 0, &g);
		if (r != 0) {
			fprintf(stderr, "%s: down: %s\n", who, semc_last_message());
			semc_free(c);
			return 1;
		}
		if (write(out, "+", 1) != 1)
			break;
		/* the protected resource would check the token like this */
		if (semc_validate(c, j->name, g.token, &valid) != 0 || !valid)
			fprintf(stderr, "%s: token %" PRIu64 " not valid?\n", who, g.token);
		job_work(j->work_ms);
		if (write(out, "-", 1) != 1)
			break;
		if (semc_up(c, j->name, 0, g.permit_id, NULL) != 0) {
			fprintf(stderr, "%s: up: %s\n", who, semc_last_message());
			semc_free(c);
			return 1;
		}
	}
	semc_free(c);
	return 0;
}

/* Parse a positive integer option. */
static int job_int(const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end != '\0' || v < 1 || v > 100000) {
		fprintf(stderr, "jobs: %s must be a number from 1 to 100000\n", what);
		exit(2);
	}
	return (int)v;
}

/* Set the semaphore up, run the workers, check the limit held. */
int main(int argc, char **argv)
{
	struct job j = { NULL, "examples/jobs", 4, 2, 5, 20 };
	struct semc *c;
	int fd[2], ch, i, inside = 0, most = 0, entered = 0, failed = 0, status;
	char buf[256];
	ssize_t n;

	while ((ch = getopt(argc, argv, "s:n:w:k:t:d:h")) != -1) {
		switch (ch) {
		case 's': j.server = optarg; break;
		case 'n': j.name = optarg; break;
		case 'w': j.workers = job_int(optarg, "-w"); break;
		case 'k': j.limit = (unsigned)job_int(optarg, "-k"); break;
		case 't': j.tasks = job_int(optarg, "-t"); break;
		case 'd': j.work_ms = job_int(optarg, "-d"); break;
		default:
			fprintf(stderr, "usage: jobs [-s ADDR] [-n NAME] [-w WORKERS] [-k LIMIT]"
				" [-t TASKS] [-d MS]\n");
			return ch == 'h' ? 0 : 2;
		}
	}
	/* the coordinator makes sure the semaphore exists with limit K */
	if ((c = job_connect(&j, "jobs")) == NULL)
		return 3;
	if (semc_create(c, j.name, j.limit, SEMC_MODE_OWNED, true) != 0 ||
	    semc_set_limit(c, j.name, j.limit) != 0) {
		fprintf(stderr, "jobs: %s: %s\n", j.name, semc_last_message());
		semc_free(c);
		return 3;
	}
	semc_free(c);

	if (pipe(fd) != 0)
		return 1;
	for (i = 0; i < j.workers; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			close(fd[0]);
			_exit(job_worker(&j, i, fd[1]));
		}
		if (pid < 0)
			failed++;
	}
	close(fd[1]);
	/* ends when every worker has closed its end of the pipe */
	while ((n = read(fd[0], buf, sizeof buf)) > 0) {
		for (i = 0; i < n; i++) {
			inside += buf[i] == '+' ? 1 : -1;
			entered += buf[i] == '+';
			if (inside > most)
				most = inside;
		}
	}
	close(fd[0]);
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	printf("%d workers ran %d tasks, at most %d at once (limit %u)\n", j.workers, entered,
	       most, j.limit);
	if (failed > 0 || entered != j.workers * j.tasks) {
		fprintf(stderr, "jobs: %d worker(s) failed\n", failed);
		return 1;
	}
	if (most > (int)j.limit) {
		fprintf(stderr, "jobs: the limit was exceeded\n");
		return 1;
	}
	return 0;
}
