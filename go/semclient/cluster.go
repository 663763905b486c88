// SPDX-License-Identifier: BSD-2-Clause

package semclient

/*
#include "shim.h"
*/
import "C"

import "context"

// ClusterStatus is a cluster node's view, as ClusterStatus returns it.
type ClusterStatus struct {
	NodeID   uint64 // the node that answered
	State    string // leader, follower, candidate, unavailable
	Term     uint64
	LeaderID uint64 // 0: none known
	Leader   string // where clients reach the leader ("": unknown)
	Members  int
}

// ClusterStatus asks the first node of the client's addresses that
// answers (leader or not) for its view of the cluster.
func (c *Client) ClusterStatus(ctx context.Context) (*ClusterStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var st *ClusterStatus
	err := c.blocking("cluster-status", "", func() C.int {
		var cl *C.struct_semc_cluster
		r := C.semc_cluster_status(c.h, &cl)
		if r != 0 {
			return r
		}
		defer C.semc_cluster_free(cl)
		st = &ClusterStatus{NodeID: uint64(cl.node_id), State: C.GoString(cl.state),
			Term: uint64(cl.term), LeaderID: uint64(cl.leader_id), Leader: C.GoString(cl.leader),
			Members: int(cl.n_nodes)}
		return 0
	})
	return st, err
}
