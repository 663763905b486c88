/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/failover-probe.c - clients of a semd cluster that write down when
 * each grant arrived, for bench/cluster-failover.py.
 *
 *   failover-probe -s ADDRS [-c CLIENTS] [-d SECONDS] [-T REPLY_TIMEOUT_MS]
 *                  [-L LEASE_MS] [-n NAME]
 *
 * Each client thread has its own handle (ADDRS: the cluster's addresses,
 * the library's failover) and repeats down (timeout 5 s) + up on NAME
 * (created with limit CLIENTS: no client waits for another). At the end it
 * prints one line per granted down, "G client send_ns recv_ns" in
 * CLOCK_REALTIME nanoseconds, and one per failed call, "E client send_ns
 * recv_ns code", so that the script can measure from the moment it killed
 * the leader.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/semclient.h"

#define MAX_CLIENTS	64
#define MAX_EVENTS	(1u << 20)

struct event {
	int64_t	send_ns;
	int64_t	recv_ns;
	int	code;
};

struct client {
	pthread_t	thread;
	struct event	*ev;
	int		idx;
	unsigned int	nev;
};

static const char *addrs, *name = "bench:failover";
static int nclients = 4, seconds = 20, reply_timeout = 1000, lease_ms = 10000;
static struct client clients[MAX_CLIENTS];

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void record(struct client *cl, int64_t send, int code)
{
	if (cl->nev < MAX_EVENTS)
		cl->ev[cl->nev++] = (struct event){ send, now_ns(), code };
}

/* With $FAILOVER_PROBE_TRACE set: the connection's events and failed ups
 * on stderr, with the wall time in ns (for a run that went wrong). */
static void on_event(struct semc *c, const struct semc_event *ev, void *arg)
{
	const struct client *cl = arg;

	(void)c;
	fprintf(stderr, "V %d %" PRId64 " type %d error %d permit %llu %s\n", cl->idx,
	    now_ns(), (int)ev->type, ev->error, (unsigned long long)ev->permit_id,
	    ev->message != NULL ? ev->message : "");
}

static void *run(void *arg)
{
	struct client *cl = arg;
	struct semc_down_opts o = { 0 };
	struct semc_grant g;
	struct semc *c = semc_new();
	int64_t end = now_ns() + (int64_t)seconds * 1000000000, t;
	int r;

	if (c == NULL || semc_set_address(c, addrs) != 0) {
		fprintf(stderr, "failover-probe: bad address list\n");
		exit(2);
	}
	semc_set_client_name(c, "failover-probe");
	semc_set_lease(c, (uint32_t)lease_ms);
	semc_set_timeout(c, reply_timeout);
	if (getenv("FAILOVER_PROBE_TRACE") != NULL)
		semc_set_event_callback(c, on_event, cl);
	while ((r = semc_connect(c, 5000)) != 0 && now_ns() < end)
		usleep(10000);
	if (r != 0) {
		fprintf(stderr, "failover-probe: cannot connect: %s\n",
		    semc_strerror(r));
		exit(2);
	}
	o.n = 1;
	o.timeout_ms = 5000;
	o.create_limit = (uint32_t)nclients;
	while (now_ns() < end) {
		t = now_ns();
		r = semc_down_ex(c, name, &o, &g);
		record(cl, t, r);
		if (r == 0 && (r = semc_up(c, name, 1, g.permit_id, NULL)) != 0 &&
		    getenv("FAILOVER_PROBE_TRACE") != NULL)
			fprintf(stderr, "U %d %" PRId64 " permit %llu error %d %s\n", cl->idx,
			    now_ns(), (unsigned long long)g.permit_id, r, semc_last_message());
		else
			usleep(1000);
	}
	semc_free(c);
	return NULL;
}

int main(int argc, char **argv)
{
	int opt, i;

	while ((opt = getopt(argc, argv, "s:c:d:T:L:n:")) != -1) {
		switch (opt) {
		case 's': addrs = optarg; break;
		case 'c': nclients = atoi(optarg); break;
		case 'd': seconds = atoi(optarg); break;
		case 'T': reply_timeout = atoi(optarg); break;
		case 'L': lease_ms = atoi(optarg); break;
		case 'n': name = optarg; break;
		default:
			fprintf(stderr, "usage: failover-probe -s ADDRS [-c CLIENTS] "
			    "[-d SECONDS] [-T REPLY_TIMEOUT_MS] [-L LEASE_MS] "
			    "[-n NAME]\n");
			return 2;
		}
	}
	if (addrs == NULL || nclients < 1 || nclients > MAX_CLIENTS ||
	    seconds < 1 || reply_timeout < 1) {
		fprintf(stderr, "failover-probe: -s ADDRS is required; 1-%d clients\n",
		    MAX_CLIENTS);
		return 2;
	}
	for (i = 0; i < nclients; i++) {
		clients[i].idx = i;
		clients[i].ev = malloc(MAX_EVENTS * sizeof *clients[i].ev);
		if (clients[i].ev == NULL ||
		    pthread_create(&clients[i].thread, NULL, run, &clients[i]) != 0) {
			fprintf(stderr, "failover-probe: out of resources\n");
			return 2;
		}
	}
	for (i = 0; i < nclients; i++)
		pthread_join(clients[i].thread, NULL);
	for (i = 0; i < nclients; i++) {
		for (unsigned int k = 0; k < clients[i].nev; k++) {
			const struct event *e = &clients[i].ev[k];

			if (e->code == 0)
				printf("G %d %" PRId64 " %" PRId64 "\n", i, e->send_ns,
				    e->recv_ns);
			else
				printf("E %d %" PRId64 " %" PRId64 " %d\n", i,
				    e->send_ns, e->recv_ns, e->code);
		}
		free(clients[i].ev);
	}
	return 0;
}
