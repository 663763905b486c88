/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client/api/cluster.c - clusters: the status the first daemon that answers
 * gives (no session needed), and the changes the leader makes (a node
 * added, removed, or handed the leadership).
 */
#include <stdio.h>
#include <unistd.h>

#include "client/api/api.h"

/* What a status brings back. */
static const struct semc_op_reply reply_cluster =
	{ SEMD__REPLY__BODY_CLUSTER, &semc_cluster_conv, NULL };

/* The status the first daemon that answers gives. */
int semc_cluster_status(struct semc *c, struct semc_cluster **out)
{
	Semd__Reply *rp = NULL;
	int r;

	*out = NULL;
	semc_clear_message();
	if ((r = semc_cluster_status_raw(c, &rp, 0)) != 0)
		return r;
	return semc_op_finish(semc_reply_error(rp), rp, &reply_cluster, out);
}

/* A change of the cluster, made by the leader. */
static int cluster_change(struct semc *c, int action, uint64_t node_id,
			  const char *address)
{
	Semd__Cluster op = SEMD__CLUSTER__INIT;

	op.action = action;
	op.node_id = node_id;
	op.address = (char *)(address ? address : "");
	/* A configuration change waits for the new node to catch up. */
	return semc_op_call(c, &op.base, 30000, &semc_reply_none, NULL);
}

/* Add a node to the cluster as a voter (by the leader). */
int semc_cluster_add(struct semc *c, uint64_t node_id, const char *address)
{
	if (node_id == 0 || address == NULL || *address == '\0')
		return semc_fail(SEMC_E_ARG, "a node id and its peer address are needed");
	return cluster_change(c, SEMD__CLUSTER__ACTION__ADD, node_id, address);
}

/* Take a node out of the cluster (by the leader). */
int semc_cluster_remove(struct semc *c, uint64_t node_id)
{
	if (node_id == 0)
		return semc_fail(SEMC_E_ARG, "a node id is needed");
	return cluster_change(c, SEMD__CLUSTER__ACTION__REMOVE, node_id, NULL);
}

/* The leader's id as the cluster says (0: none known or no answer). */
static uint64_t cluster_leader(struct semc *c)
{
	struct semc_cluster *cl = NULL;
	uint64_t id = 0;

	if (semc_cluster_status(c, &cl) == 0)
		id = cl->leader_id;
	semc_cluster_free(cl);
	return id;
}

/*
 * The old leader steps down as the transfer ends, and may drop its clients
 * before its answer goes out: a lost answer is a success if the leadership
 * went where it was asked (any other voter for 0) within a few seconds.
 */
int semc_cluster_transfer(struct semc *c, uint64_t node_id)
{
	uint64_t before = cluster_leader(c), now;
	char msg[256];
	int r, i;

	r = cluster_change(c, SEMD__CLUSTER__ACTION__TRANSFER, node_id, NULL);
	if (r != SEMC_E_DISCONNECTED && r != SEMC_E_UNAVAILABLE && r != SEMC_E_NO_REPLY)
		return r;
	snprintf(msg, sizeof msg, "%s", semc_last_message());
	for (i = 0; i < 30; i++) {
		now = cluster_leader(c);
		if (now != 0 && (node_id != 0 ? now == node_id : now != before)) {
			semc_clear_message();
			return 0;
		}
		usleep(100000);
	}
	return semc_fail(r, "%s", msg);
}
