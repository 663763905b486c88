// SPDX-License-Identifier: BSD-2-Clause

package semclient_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"semd/semclient"
)

// A durable daemon (--data-dir) restarted under a client with a lease:
// the names, a detached hold and the session's hold come back.
func TestDurableRestart(t *testing.T) {
	ctx := ctxT(t, 60*time.Second)
	dir := t.TempDir()
	port := portBase(t, 1)
	addr := fmt.Sprintf("tcp:127.0.0.1:%d", port)
	d := startSemd(t, dir, "durable", "--data-dir", filepath.Join(dir, "data"), "--listen", addr)
	c := dial(t, addr, semclient.WithLease(10*time.Second))
	if err := c.Create(ctx, "jobs", 2); err != nil {
		t.Fatal(err)
	}
	p, err := c.Semaphore("jobs").Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	det, err := c.Semaphore("jobs", semclient.HoldLease(30*time.Second)).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	d.stop(syscall.SIGTERM)
	d.start(t)
	info, err := c.Info(ctx, "jobs")
	if err != nil {
		d.dumpLog(t)
		t.Fatalf("info after the restart: %v", err)
	}
	if info.Limit != 2 || info.HoldersTotal != 2 {
		t.Fatalf("after the restart: %+v", info)
	}
	select {
	case <-p.Lost():
		t.Fatalf("the session's hold was lost across the restart: %v", p.Err())
	default:
	}
	if err := det.Renew(ctx, 20*time.Second); err != nil {
		t.Fatalf("renew of the detached hold: %v", err)
	}
	if err := p.Renew(ctx, 0); err != nil {
		t.Fatalf("renew of the session's hold: %v", err)
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	if err := det.Release(); err != nil {
		t.Fatal(err)
	}
	if info, err = c.Info(ctx, "jobs"); err != nil || info.Available != 2 {
		t.Fatalf("after the releases: %+v %v", info, err)
	}
}

// A 3-node cluster whose leader is killed while a Go holder holds the
// only permit and a Go waiter waits for it: the holder keeps its hold
// (the session is resumed on the new leader), gives it back, and the
// waiter gets it with a larger fencing token.
func TestClusterFailover(t *testing.T) {
	ctx := ctxT(t, 90*time.Second)
	dir := t.TempDir()
	base := portBase(t, 14)
	var boot, addrs string
	for i := 1; i <= 3; i++ {
		boot += fmt.Sprintf(",%d=127.0.0.1:%d", i, base+i)
		addrs += fmt.Sprintf(",tcp:127.0.0.1:%d", base+10+i)
	}
	boot, addrs = boot[1:], addrs[1:]
	// The peers prove a shared key (semd(8), CLUSTERS).
	key := filepath.Join(dir, "peer.key")
	if err := os.WriteFile(key, []byte("a peer key for the go tests, 32b"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := map[uint64]*daemon{}
	for i := 1; i <= 3; i++ {
		nodes[uint64(i)] = startSemd(t, dir, "n"+strconv.Itoa(i), "--peer-key", key,
			"--data-dir", filepath.Join(dir, "d"+strconv.Itoa(i)), "--node-id", strconv.Itoa(i),
			"--peer-listen", fmt.Sprintf("tcp:127.0.0.1:%d", base+i),
			"--listen", fmt.Sprintf("tcp:127.0.0.1:%d", base+10+i), "--bootstrap", boot)
	}
	status := dial(t, addrs)
	var leader uint64
	if !waitFor(15*time.Second, func() bool {
		st, err := status.ClusterStatus(ctx)
		if err == nil && st.LeaderID != 0 {
			leader = st.LeaderID
		}
		return leader != 0
	}) {
		t.Fatal("no leader elected")
	}
	holder := dial(t, addrs, semclient.WithLease(5*time.Second), semclient.WithClientName("holder"))
	waiter := dial(t, addrs, semclient.WithLease(5*time.Second), semclient.WithClientName("waiter"))
	if err := holder.Create(ctx, "c", 1); err != nil {
		t.Fatal(err)
	}
	p, err := holder.Semaphore("c").Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var got *semclient.Permit
	var gerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		got, gerr = waiter.Semaphore("c").Acquire(ctx, 1)
	}()
	if !waitFor(10*time.Second, func() bool {
		info, err := holder.Info(ctx, "c")
		return err == nil && info.WaitersTotal == 1
	}) {
		t.Fatal("the waiter never queued")
	}
	nodes[leader].stop(syscall.SIGKILL)
	t0 := time.Now()
	// The holder rides the failover out: a round trip on the new leader.
	if !waitFor(20*time.Second, func() bool { return p.Renew(ctx, 0) == nil }) {
		t.Fatalf("the holder's session did not come back: %v", p.Renew(ctx, 0))
	}
	t.Logf("leader %d killed; the holder was served again after %v", leader, time.Since(t0))
	select {
	case <-p.Lost():
		t.Fatalf("the hold was lost in the failover: %v", p.Err())
	default:
	}
	if got != nil {
		t.Fatal("the waiter was granted while the holder held the only permit")
	}
	if err := p.Release(); err != nil {
		t.Fatalf("release after the failover: %v", err)
	}
	wg.Wait()
	if gerr != nil {
		t.Fatalf("the waiter: %v", gerr)
	}
	if got.Token() <= p.Token() {
		t.Fatalf("the waiter's token %d is not above the holder's %d", got.Token(), p.Token())
	}
	if err := got.Release(); err != nil {
		t.Fatal(err)
	}
	q, err := holder.Semaphore("c").TryAcquire(1)
	if err != nil {
		t.Fatalf("the permit is not free after both releases: %v", err)
	}
	q.Release()
	if _, err := waiter.Semaphore("c").TryAcquire(2); !errors.Is(err, semclient.ErrWouldBlock) &&
		!errors.Is(err, semclient.ErrInvalid) {
		t.Fatalf("trydown of 2 with a limit of 1: %v", err)
	}
}
