// SPDX-License-Identifier: BSD-2-Clause

package semclient_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"semd/semclient"
)

// waiters waits until name has n waiters in line.
func waiters(t *testing.T, ctx context.Context, c *semclient.Client, name string, n int) {
	t.Helper()
	if !waitFor(10*time.Second, func() bool {
		in, err := c.Info(ctx, name)
		return err == nil && in.WaitersTotal == n
	}) {
		t.Fatalf("%s: not %d waiters", name, n)
	}
}

type acquired struct {
	p   *semclient.Permit
	err error
}

// acquireAsync acquires in a goroutine; the channel gets the outcome.
func acquireAsync(ctx context.Context, s *semclient.Semaphore) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		p, err := s.Acquire(ctx, 1)
		ch <- acquired{p, err}
	}()
	return ch
}

func TestQueueFull(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	c := dial(t, shared.Unix)
	name := uniq(t)
	if err := c.Create(ctx, name, 1, semclient.WithMaxWaiters(1)); err != nil {
		t.Fatal(err)
	}
	held, err := c.Semaphore(name).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	first := acquireAsync(ctx, c.Semaphore(name))
	waiters(t, ctx, c, name, 1)
	if in, _ := c.Info(ctx, name); in.MaxWaiters != 1 {
		t.Fatalf("max waiters %d", in.MaxWaiters)
	}
	if _, err := c.Semaphore(name).Acquire(ctx, 1); !errors.Is(err, semclient.ErrQueueFull) {
		t.Fatalf("a down beyond max-waiters: %v", err)
	}
	if err := c.SetQueue(ctx, name, 0); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Semaphore(name).Acquire(short, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unbounded line: %v", err)
	}
	held.Release()
	r := <-first
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.p.Release()
}

func TestReplaceAndPriority(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	c := dial(t, shared.Unix)
	name := created(t, ctx, c, 1)
	held, err := c.Semaphore(name).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	old := acquireAsync(ctx, c.Semaphore(name, semclient.WithReplace("job")))
	waiters(t, ctx, c, name, 1)
	low := acquireAsync(ctx, c.Semaphore(name, semclient.WithReplace("job"),
		semclient.WithPriority(-2)))
	if r := <-old; !errors.Is(r.err, semclient.ErrReplaced) {
		t.Fatalf("the replaced acquire: %v", r.err)
	}
	waiters(t, ctx, c, name, 1)
	high := acquireAsync(ctx, c.Semaphore(name, semclient.WithPriority(semclient.PriorityMax)))
	waiters(t, ctx, c, name, 2)
	in, err := c.Info(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	classes := map[int]string{}
	for _, w := range in.Waiters {
		classes[w.Priority] = w.Replace
	}
	if k, ok := classes[-2]; len(classes) != 2 || !ok || k != "job" || classes[semclient.PriorityMax] != "" {
		t.Fatalf("the waiters' classes: %+v", in.Waiters)
	}
	held.Release()
	r := <-high // the higher class first, though it came later
	if r.err != nil {
		t.Fatal(r.err)
	}
	select {
	case r := <-low:
		t.Fatalf("the lower class was granted first: %+v", r)
	default:
	}
	r.p.Release()
	if r = <-low; r.err != nil {
		t.Fatal(r.err)
	}
	r.p.Release()
	if _, err := c.Semaphore(name, semclient.WithPriority(semclient.PriorityMax+1)).TryAcquire(1); !errors.Is(err, semclient.ErrArgument) {
		t.Fatalf("priority out of range: %v", err)
	}
	other := created(t, ctx, c, 1)
	ps, err := c.AcquireMultiPriority(ctx, 3, semclient.Want{Name: name}, semclient.Want{Name: other})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		p.Release()
	}
}

func TestShares(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	c := dial(t, shared.Unix)
	name := uniq(t)
	err := c.Create(ctx, name, 4, semclient.WithShares(semclient.ShareKey, map[string]int{"a": 3, "b": 1}))
	if err != nil {
		t.Fatal(err)
	}
	pa, err := c.Semaphore(name, semclient.WithGroup("a")).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	in, err := c.Info(ctx, name)
	pa.Release()
	if err != nil {
		t.Fatal(err)
	}
	if in.Share != semclient.ShareKey {
		t.Fatalf("share %v", in.Share)
	}
	found := false
	for _, g := range in.Groups {
		if g.Name == "a" {
			found = g.Weight == 3 && g.Held == 1
		}
	}
	if !found {
		t.Fatalf("groups %+v", in.Groups)
	}
}

func TestBackup(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	c := dial(t, shared.Unix)
	created(t, ctx, c, 2)
	f, err := os.Create(filepath.Join(t.TempDir(), "b.bkp"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bi, err := c.Backup(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(data)) != 64+bi.Bytes || !bytes.HasPrefix(data, []byte("SEMDBKUP")) {
		t.Fatalf("backup of %d bytes, %+v", len(data), bi)
	}
	if sha256.Sum256(data[64:]) != bi.SHA256 {
		t.Fatal("the backup's checksum differs")
	}
}

// nextEvent is the next event of evs within 10 s.
func nextEvent(t *testing.T, evs <-chan semclient.Event) semclient.Event {
	t.Helper()
	select {
	case ev := <-evs:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return semclient.Event{}
}

func TestWatchFrom(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	c := dial(t, shared.Unix)
	name := created(t, ctx, c, 1)
	evs, err := c.Watch(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []int{2, 3} {
		if err := c.SetLimit(ctx, name, l); err != nil {
			t.Fatal(err)
		}
	}
	first, second := nextEvent(t, evs), nextEvent(t, evs)
	if first.Kind != semclient.EventLimit || second.Revision != first.Revision+1 {
		t.Fatalf("events %+v %+v", first, second)
	}
	again, err := c.WatchFrom(ctx, name, first.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, again); ev.Revision != first.Revision || ev.Limit != 2 {
		t.Fatalf("replayed %+v", ev)
	}
	if ev := nextEvent(t, again); ev.Revision != second.Revision {
		t.Fatalf("replayed %+v", ev)
	}
}

func TestWatchFromCompacted(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	d := startSemdListen(t, t.TempDir(), "small", "--watch-history", "4096")
	c := dial(t, d.Unix)
	name := created(t, ctx, c, 1)
	for i := 0; i < 200; i++ {
		if err := c.SetLimit(ctx, name, 1+i%5); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.WatchFrom(ctx, name, 1); !errors.Is(err, semclient.ErrCompacted) {
		t.Fatalf("watch from a compacted revision: %v", err)
	}
}

func TestParentDeadlock(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	parent := dial(t, shared.Unix)
	held, err := parent.Semaphore(uniq(t), semclient.CreateLimit(1)).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	name := held.Name()
	s, err := parent.Session()
	if err != nil {
		t.Fatal(err)
	}
	link := parent.SessionLink()
	if link == 0 {
		t.Fatal("no session link")
	}
	child := dial(t, shared.Unix, semclient.WithParent(semclient.Parent{Session: s.ID, Link: link}))
	// the parent waits for its child, which would wait for the parent's hold
	if _, err := child.Semaphore(name).Acquire(ctx, 1); !errors.Is(err, semclient.ErrDeadlock) {
		t.Fatalf("a child waiting for its parent's hold: %v", err)
	}
}

// A WatchFrom watch resumes after a restart of a durable daemon: the
// events made while it was away are replayed, without a gap, whether an
// event came before the restart or none did (then it resumes after the
// daemon's last revision when it began, not live with a gap).
func TestWatchFromResumes(t *testing.T) {
	for _, before := range []bool{true, false} {
		t.Run(fmt.Sprintf("event-before=%v", before), func(t *testing.T) { watchResumes(t, before) })
	}
}

func watchResumes(t *testing.T, before bool) {
	ctx := ctxT(t, 60*time.Second)
	dir := t.TempDir()
	addr := fmt.Sprintf("tcp:127.0.0.1:%d", portBase(t, 1))
	d := startSemd(t, dir, "wdur", "--data-dir", filepath.Join(dir, "data"), "--listen", addr)
	w := dial(t, addr, semclient.WithLease(10*time.Second))
	c := dial(t, addr)
	name := created(t, ctx, c, 1)
	evs, err := w.WatchFrom(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	var first semclient.Event // the event before the restart (none: 0)
	if before {
		if err := c.SetLimit(ctx, name, 2); err != nil {
			t.Fatal(err)
		}
		first = nextEvent(t, evs)
	}
	d.stop(syscall.SIGTERM)
	d.start(t)
	if err := c.SetLimit(ctx, name, 3); err != nil {
		t.Fatal(err)
	}
	last := first.Revision
	for _, l := range []int{3, 4} {
		ev := nextEvent(t, evs)
		if ev.Kind != semclient.EventLimit || ev.Limit != l || ev.Revision <= last {
			t.Fatalf("after the restart: %+v (before it %+v)", ev, first)
		}
		last = ev.Revision
		if l == 3 {
			if err := c.SetLimit(ctx, name, 4); err != nil {
				t.Fatal(err)
			}
		}
	}
}
