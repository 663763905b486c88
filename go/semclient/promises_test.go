// SPDX-License-Identifier: BSD-2-Clause

package semclient_test

// The daemon's promises kept up to the caller (issue 34): grants made
// together return from Acquire in FIFO (token) order; a cancel that
// crosses a signal-mode grant loses no permit; a lease longer than the
// daemon's max-lease is refused before the acquire queues; Validate,
// List, Holds, rate names, posts and parts of holds; the daemon's ranges.

import (
	"context"
	"errors"
	"math/rand"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"semd/semclient"
)

// Four goroutines wait on a limit-4 name held whole; one release of 4
// grants them all in one reply batch: their Acquires return in the order
// of their tokens (the callbacks of one read ran newest first, and the
// goroutine made ready last runs first). Each Acquire returns only after
// the one granted before it returned; what a goroutine does after that is
// the scheduler's, so the order is looked at on one P, where a goroutine
// runs on until it blocks, as asyncio's tasks do: there it is exact.
func TestFIFOSimultaneousGrants(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx := ctxT(t, 60*time.Second)
	c, h := dial(t, shared.Unix), dial(t, shared.Unix)
	name := created(t, ctx, h, 4)
	sem := c.Semaphore(name)
	for round := 0; round < 20; round++ {
		held, err := h.Semaphore(name).Acquire(ctx, 4)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var returned []uint64
		var wg sync.WaitGroup
		permits := make(chan *semclient.Permit, 4)
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := sem.Acquire(ctx, 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				returned = append(returned, p.Token())
				mu.Unlock()
				permits <- p
			}()
			waiters(t, ctx, h, name, i+1)
		}
		if err := held.Release(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(permits)
		if !sort.SliceIsSorted(returned, func(i, j int) bool { return returned[i] < returned[j] }) {
			t.Fatalf("round %d: Acquires returned with tokens %v, not in grant order", round, returned)
		}
		for p := range permits {
			p.Release()
		}
	}
}

// 1,000 signal-mode acquires, most given up by short deadlines while the
// permits are taken and posted around them: a grant that crosses its
// cancel has no permit id and goes back by count (it was dropped: 400
// acquires lost 90-109 posts).
func TestCancelSignalAcquiresUnderLoad(t *testing.T) {
	ctx := ctxT(t, 120*time.Second)
	c, c2 := dial(t, shared.Unix), dial(t, shared.TCP)
	name := uniq(t)
	const limit = 4
	if err := c.Create(ctx, name, limit, semclient.WithMode(semclient.ModeSignal)); err != nil {
		t.Fatal(err)
	}
	var tries, got atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		cl := c
		if i%2 == 1 {
			cl = c2
		}
		wg.Add(1)
		go func(cl *semclient.Client, seed int64) {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(seed))
			sem := cl.Semaphore(name)
			for tries.Add(1) <= 1000 {
				d := []time.Duration{0, 500 * time.Microsecond, 2 * time.Millisecond}[rnd.Intn(3)]
				actx, cancel := context.WithTimeout(ctx, d)
				p, err := sem.Acquire(actx, 1)
				cancel()
				if err != nil {
					continue
				}
				got.Add(1)
				if _, err := sem.Release(ctx, p.N()); err != nil { // the post that gives it back
					t.Error(err)
					return
				}
			}
		}(cl, int64(i))
	}
	wg.Wait()
	if got.Load() == 0 {
		t.Fatal("no acquire was granted")
	}
	if !waitFor(5*time.Second, func() bool {
		in, err := c.Info(ctx, name)
		return err == nil && in.Available == limit && in.WaitersTotal == 0
	}) {
		in, _ := c.Info(ctx, name)
		t.Fatalf("after %d grants: %d of %d free, %d waiting", got.Load(), in.Available, limit,
			in.WaitersTotal)
	}
}

// semd --max-lease 3s: HoldLease(10s) is refused before the acquire
// queues (it was cut to 3 s: Lost never fired while the hold was gone).
func TestLeaseLongerThanMaxLease(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	d := startSemdListen(t, t.TempDir(), "short", "--max-lease", "3s")
	c, h := dial(t, d.Unix), dial(t, d.TCP)
	name := created(t, ctx, h, 1)
	held, err := h.Semaphore(name).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := c.Info(ctx, name)
	t0 := time.Now()
	_, err = c.Semaphore(name, semclient.HoldLease(10*time.Second)).Acquire(ctx, 1)
	if !errors.Is(err, semclient.ErrInvalid) || !strings.Contains(err.Error(), "max-lease") {
		t.Fatalf("HoldLease(10s), max-lease 3s: %v, want ErrInvalid", err)
	}
	if time.Since(t0) > 2*time.Second {
		t.Fatalf("refused after %v: it waited its turn", time.Since(t0))
	}
	if in2, _ := c.Info(ctx, name); in2.LastToken != in.LastToken || in2.WaitersTotal != 0 {
		t.Fatalf("a token was taken or a waiter left: %+v", in2)
	}
	held.Release()
	p, err := c.Semaphore(name, semclient.HoldLease(3*time.Second)).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Renew(ctx, 10*time.Second); !errors.Is(err, semclient.ErrInvalid) {
		t.Fatalf("Renew(10s): %v, want ErrInvalid", err)
	}
	p.Release()
}

// Validate, List, Holds, rate names, a post to a signal-mode name, a part
// of a hold, Create's IfNotExists with another limit, the daemon's ranges.
func TestNamesRatesAndParts(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	c := dial(t, shared.Unix)
	prefix := uniq(t)
	own, sig, rate := prefix+"/own", prefix+"/sig", prefix+"/rate"
	if err := c.Create(ctx, own, 4); err != nil {
		t.Fatal(err)
	}
	// IfNotExists: the same limit passes, another does not
	if err := c.Create(ctx, own, 4, semclient.IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, own, 5, semclient.IfNotExists()); !errors.Is(err, semclient.ErrExists) ||
		!strings.Contains(err.Error(), "limit 4") {
		t.Fatalf("IfNotExists with limit 5 on a name of 4: %v", err)
	}
	p, err := c.Semaphore(own).Acquire(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Validate(ctx, own, p.Token()); err != nil || !ok {
		t.Fatalf("Validate: %v %v", ok, err)
	}
	if err := p.ReleaseN(1); err != nil || p.N() != 2 {
		t.Fatalf("ReleaseN(1): %v, N %d", err, p.N())
	}
	if in, _ := c.Info(ctx, own); in.Available != 2 || in.Holders[0].N != 2 {
		t.Fatalf("after ReleaseN(1): %+v", in)
	}
	q, err := c.Semaphore(own).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ReleaseN(1); !errors.Is(err, semclient.ErrArgument) {
		t.Fatalf("ReleaseN of an older hold: %v, want ErrArgument", err)
	}
	holds, err := c.Holds(ctx, "")
	if err != nil || len(holds) < 2 {
		t.Fatalf("Holds: %v %v", holds, err)
	}
	if n, err := c.Semaphore(own).Release(ctx, 2); err != nil || n != 2 || p.N() != 1 || q.N() != 0 {
		t.Fatalf("Release(2): %d %v; p.N %d q.N %d", n, err, p.N(), q.N())
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Validate(ctx, own, p.Token()); ok {
		t.Fatal("a released token is still valid")
	}
	// a signal-mode name: posts
	if err := c.Create(ctx, sig, 4, semclient.WithMode(semclient.ModeSignal),
		semclient.WithInitial(0)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Semaphore(sig).Release(ctx, 3); err != nil || n != 3 {
		t.Fatalf("post 3: %d %v", n, err)
	}
	if _, err := c.Semaphore(sig).Acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	// a rate-only name
	r, err := semclient.ParseRate("5/s")
	if err != nil || r.Tokens != 5 || r.Per != time.Second {
		t.Fatalf("ParseRate: %+v %v", r, err)
	}
	if err := c.Create(ctx, rate, 0, semclient.WithRate(r)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Semaphore(rate).Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	in, err := c.Info(ctx, rate)
	if err != nil || in.Mode != semclient.ModeRate || in.Rate.Tokens != 5 || in.Tokens > 3.5 {
		t.Fatalf("rate name: %+v %v", in, err)
	}
	if err := c.SetRate(ctx, rate, semclient.Rate{Tokens: 10, Per: time.Minute}); err != nil {
		t.Fatal(err)
	}
	list, err := c.List(ctx, prefix+"/")
	if err != nil || len(list) != 3 || list[0].Name != own || list[1].Mode != semclient.ModeRate {
		t.Fatalf("List: %+v %v", list, err)
	}
	// the daemon's ranges, before any request
	for _, f := range []func() error{
		func() error { _, err := c.Semaphore(own).Acquire(ctx, semclient.LimitMax+1); return err },
		func() error { _, err := c.Semaphore(own).Acquire(ctx, 0); return err },
		func() error { return c.Create(ctx, prefix+"/x", -1) },
		func() error { return c.Create(ctx, prefix+"/x", semclient.LimitMax+1) },
		func() error {
			return c.Create(ctx, prefix+"/x", 2, semclient.WithShares(semclient.ShareKey,
				map[string]int{"a": 1001}))
		},
		func() error {
			_, err := c.Semaphore(own, semclient.WithPriority(8)).Acquire(ctx, 1)
			return err
		},
		func() error { return c.SetRate(ctx, rate, semclient.Rate{Tokens: 1, Per: 48 * time.Hour}) },
	} {
		if err := f(); !errors.Is(err, semclient.ErrArgument) {
			t.Fatalf("out of range: %v, want ErrArgument", err)
		}
	}
}
