// SPDX-License-Identifier: BSD-2-Clause

package semclient_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"semd/semclient"
)

// shared is the in-memory daemon most tests use (started by TestMain).
var shared *daemon

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "semclient-go.")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mt := &mainTB{}
	shared = startSemdListen(mt, dir, "shared")
	// The example dials "" ($SEMD_SERVER).
	os.Setenv("SEMD_SERVER", shared.Unix)
	rc := m.Run()
	mt.run()
	os.RemoveAll(dir)
	os.Exit(rc)
}

func dial(tb testing.TB, addr string, opts ...semclient.Option) *semclient.Client {
	tb.Helper()
	c, err := semclient.Dial(ctxT(tb, 10*time.Second), addr, opts...)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// uniq makes a name of its own for each test.
func uniq(t testing.TB) string { return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()) }

// created makes a name of the test's own with limit permits, through c.
func created(t testing.TB, ctx context.Context, c *semclient.Client, limit int) string {
	t.Helper()
	name := uniq(t)
	if err := c.Create(ctx, name, limit); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestAcquireRelease(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	c := dial(t, shared.Unix)
	name := created(t, ctx, c, 2)
	if err := c.Create(ctx, name, 2); !errors.Is(err, semclient.ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	if err := c.Create(ctx, name, 2, semclient.IfNotExists()); err != nil {
		t.Fatalf("create if not exists: %v", err)
	}
	s := c.Semaphore(name)
	p1, err := s.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := s.TryAcquire(1)
	if err != nil {
		t.Fatal(err)
	}
	if p2.Token() <= p1.Token() || p1.PermitID() == 0 || p1.Name() != name || p1.N() != 1 {
		t.Fatalf("tokens %d then %d, permit %d", p1.Token(), p2.Token(), p1.PermitID())
	}
	if _, err := s.TryAcquire(1); !errors.Is(err, semclient.ErrWouldBlock) {
		t.Fatalf("third trydown: %v, want ErrWouldBlock", err)
	}
	var e *semclient.Error
	if _, err := s.TryAcquire(1); !errors.As(err, &e) || e.Name != name || e.Op != "acquire" {
		t.Fatalf("error %#v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Limit != 2 || info.Available != 0 || len(info.Holders) != 2 || info.HoldersTotal != 2 {
		t.Fatalf("info %+v", info)
	}
	if err := p1.Release(); err != nil {
		t.Fatal(err)
	}
	if err := p1.Release(); err != nil {
		t.Fatalf("second release: %v, want nil (idempotent)", err)
	}
	if err := p2.Release(); err != nil {
		t.Fatal(err)
	}
	if info, err = s.Info(ctx); err != nil || info.Available != 2 {
		t.Fatalf("after releases: %+v %v", info, err)
	}
	if err := c.SetLimit(ctx, name, 5); err != nil {
		t.Fatal(err)
	}
	if info, err = s.Info(ctx); err != nil || info.Limit != 5 {
		t.Fatalf("after set-limit: %+v %v", info, err)
	}
	if _, err := c.Info(ctx, name+"-missing"); !errors.Is(err, semclient.ErrNotFound) {
		t.Fatalf("info of a missing name: %v, want ErrNotFound", err)
	}
	if err := c.SetLimit(ctx, name+"-missing", 3); !errors.Is(err, semclient.ErrNotFound) {
		t.Fatalf("set-limit of a missing name: %v", err)
	}
	if _, err := s.Acquire(ctx, 0); !errors.Is(err, semclient.ErrArgument) {
		t.Fatalf("acquire 0: %v", err)
	}
	// CreateLimit creates a missing name on the first acquire.
	p, err := c.Semaphore(name+"-auto", semclient.CreateLimit(3)).Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if info, err = c.Info(ctx, name+"-auto"); err != nil || info.Limit != 3 || info.Available != 1 {
		t.Fatalf("auto-created: %+v %v", info, err)
	}
	p.Release()
	if err := c.Delete(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Info(ctx, name); !errors.Is(err, semclient.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if s, err := c.Session(); err != nil || s.ID == 0 || s.Server == "" {
		t.Fatalf("session %+v %v", s, err)
	}
	if d, err := c.Ping(ctx); err != nil || d <= 0 {
		t.Fatalf("ping %v %v", d, err)
	}
}

// An Acquire whose context ends returns ctx.Err() and leaves no waiter.
func TestCancelFreesWaiter(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	holder, waiter := dial(t, shared.Unix), dial(t, shared.TCP)
	name := created(t, ctx, holder, 1)
	p, err := holder.Semaphore(name).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A deadline.
	dctx, dcancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer dcancel()
	t0 := time.Now()
	_, err = waiter.Semaphore(name).Acquire(dctx, 1)
	if err != context.DeadlineExceeded {
		t.Fatalf("acquire: %v, want context.DeadlineExceeded", err)
	}
	if el := time.Since(t0); el < 150*time.Millisecond {
		t.Fatalf("returned after %v, before the deadline", el)
	}
	info, err := holder.Info(ctx, name)
	if err != nil || info.WaitersTotal != 0 {
		t.Fatalf("waiters after the deadline: %+v %v", info, err)
	}
	// An explicit cancel, once the waiter is seen in line.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := waiter.Semaphore(name).Acquire(cctx, 1); errc <- err }()
	if !waitFor(5*time.Second, func() bool {
		info, err := holder.Info(ctx, name)
		return err == nil && info.WaitersTotal == 1
	}) {
		t.Fatal("the waiter never queued")
	}
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("acquire: %v, want context.Canceled", err)
	}
	if info, err = holder.Info(ctx, name); err != nil || info.WaitersTotal != 0 {
		t.Fatalf("waiters after the cancel: %+v %v", info, err)
	}
	// The permit is still ours and the line free: the next one gets it.
	go func() { time.Sleep(50 * time.Millisecond); p.Release() }()
	p2, err := waiter.Semaphore(name).Acquire(ctx, 1)
	if err != nil || p2.Token() <= p.Token() {
		t.Fatalf("after release: %v", err)
	}
	p2.Release()
	// A context done before the call sends nothing.
	if _, err := waiter.Semaphore(name).Acquire(dctx, 1); err != context.DeadlineExceeded {
		t.Fatalf("done context: %v", err)
	}
}

// Many goroutines share one client: never more than the limit inside.
func TestManyGoroutines(t *testing.T) {
	ctx := ctxT(t, 60*time.Second)
	c := dial(t, shared.Unix)
	name := uniq(t)
	const limit, workers, rounds = 3, 32, 40
	if err := c.Create(ctx, name, limit); err != nil {
		t.Fatal(err)
	}
	s := c.Semaphore(name)
	var inside, maxInside, done atomic.Int64
	var mu sync.Mutex
	tokens := map[uint64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				p, err := s.Acquire(ctx, 1)
				if err != nil {
					errs <- err
					return
				}
				n := inside.Add(1)
				for {
					m := maxInside.Load()
					if n <= m || maxInside.CompareAndSwap(m, n) {
						break
					}
				}
				mu.Lock()
				dup := tokens[p.Token()]
				tokens[p.Token()] = true
				mu.Unlock()
				if dup {
					errs <- fmt.Errorf("token %d granted twice", p.Token())
				}
				inside.Add(-1)
				if err := p.Release(); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if done.Load() != workers*rounds || maxInside.Load() > limit || len(tokens) != workers*rounds {
		t.Fatalf("done %d, at most %d inside (limit %d), %d tokens", done.Load(), maxInside.Load(),
			limit, len(tokens))
	}
	if st := c.Stats(); st.Permits != 0 || st.Calls != 0 || st.Pending != 0 {
		t.Fatalf("stats after: %+v", st)
	}
}

// A force-released hold: Lost closes, Context is cancelled, Err says why.
func TestHoldLost(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	c, admin := dial(t, shared.Unix), dial(t, shared.Unix)
	name := uniq(t)
	p, err := c.Semaphore(name, semclient.CreateLimit(1)).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	wctx := p.Context(ctx)
	select {
	case <-p.Lost():
		t.Fatal("lost at once")
	case <-time.After(20 * time.Millisecond):
	}
	if err := admin.ForceRelease(ctx, name, p.PermitID()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not close after a forced release")
	}
	select {
	case <-wctx.Done():
	case <-time.After(time.Second):
		t.Fatal("the permit's context was not cancelled")
	}
	if !errors.Is(p.Err(), semclient.ErrHoldLost) || !errors.Is(p.Err(), semclient.ErrCancelled) {
		t.Fatalf("Err %v, want ErrHoldLost and ErrCancelled", p.Err())
	}
	if err := p.Release(); !errors.Is(err, semclient.ErrHoldLost) {
		t.Fatalf("release of a lost hold: %v", err)
	}
	if err := p.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if st := c.Stats(); st.Permits != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// The client-side lease ends before the daemon's: a daemon that stops
// answering (SIGSTOP) makes the hold lost on the client's clock, within
// the lease.
func TestClientSideLease(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	d := startSemdListen(t, t.TempDir(), "stopped")
	c := dial(t, d.TCP, semclient.WithLease(time.Second))
	p, err := c.Semaphore("lease", semclient.CreateLimit(1)).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	wctx := p.Context(context.Background())
	d.signal(syscall.SIGSTOP)
	defer d.signal(syscall.SIGCONT)
	t0 := time.Now()
	select {
	case <-p.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not close while the daemon was stopped")
	}
	el := time.Since(t0)
	// The library ends its lease at lease x 0.99 - 50 ms after the last
	// answered request (before the stop): a bound with room for a loaded
	// machine (tests/client/cutoff.py measures the margin itself).
	if el > 2*time.Second {
		t.Fatalf("lost %v after the daemon stopped, with a 1 s lease", el)
	}
	<-wctx.Done()
	if !errors.Is(p.Err(), semclient.ErrHoldLost) {
		t.Fatalf("Err %v", p.Err())
	}
	t.Logf("hold lost %v after the daemon stopped", el)
}

func TestWatch(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	c := dial(t, shared.Unix)
	name := created(t, ctx, c, 1)
	wctx, wcancel := context.WithCancel(ctx)
	evs, err := c.Watch(wctx, name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Semaphore(name).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	if err := c.SetLimit(ctx, name, 4); err != nil {
		t.Fatal(err)
	}
	want := []semclient.EventKind{semclient.EventGrant, semclient.EventRelease, semclient.EventLimit}
	for _, k := range want {
		select {
		case ev := <-evs:
			if ev.Kind != k || ev.Name != name {
				t.Fatalf("event %v %q, want %v", ev.Kind, ev.Name, k)
			}
			if k == semclient.EventGrant && ev.Token != p.Token() {
				t.Fatalf("grant event token %d, want %d", ev.Token, p.Token())
			}
			if k == semclient.EventLimit && ev.Limit != 4 {
				t.Fatalf("limit event %+v", ev)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %v event", k)
		}
	}
	wcancel()
	for range evs { // closes
	}
	if !waitFor(2*time.Second, func() bool { return c.Stats().Watches == 0 }) {
		t.Fatalf("watch not ended: %+v", c.Stats())
	}
}

func TestMultiAndDeadlock(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	a, b := dial(t, shared.Unix), dial(t, shared.Unix)
	x, y := uniq(t)+"-x", uniq(t)+"-y"
	for _, n := range []string{x, y} {
		if err := a.Create(ctx, n, 1); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := a.AcquireMulti(ctx, semclient.Want{Name: x}, semclient.Want{Name: y, N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Name() != x || ps[1].Name() != y || ps[0].Token() == 0 {
		t.Fatalf("multi %v", ps)
	}
	// b waits for both while a holds them; a cancelled multi leaves no waiter.
	mctx, mcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer mcancel()
	if _, err := b.AcquireMulti(mctx, semclient.Want{Name: x}, semclient.Want{Name: y}); err != context.DeadlineExceeded {
		t.Fatalf("multi while held: %v", err)
	}
	if info, err := a.Info(ctx, x); err != nil || info.WaitersTotal != 0 {
		t.Fatalf("waiters %+v %v", info, err)
	}
	for _, p := range ps {
		if err := p.Release(); err != nil {
			t.Fatal(err)
		}
	}
	// a holds x and waits for y; b holds y: b's wait for x closes a cycle.
	px, err := a.Semaphore(x).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	py, err := b.Semaphore(y).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		p, err := a.Semaphore(y).Acquire(ctx, 1)
		if err == nil {
			p.Release()
		}
		got <- err
	}()
	if !waitFor(5*time.Second, func() bool {
		info, err := a.Info(ctx, y)
		return err == nil && info.WaitersTotal == 1
	}) {
		t.Fatal("a's wait for y never queued")
	}
	if _, err := b.Semaphore(x).Acquire(ctx, 1); !errors.Is(err, semclient.ErrDeadlock) {
		t.Fatalf("b's wait for x: %v, want ErrDeadlock", err)
	}
	py.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	px.Release()
}

func TestLocker(t *testing.T) {
	c := dial(t, shared.Unix)
	l := c.Semaphore(uniq(t), semclient.CreateLimit(1)).Locker()
	var n int
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				l.Lock()
				n++
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != 80 {
		t.Fatalf("n = %d", n)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Unlock of an unlocked Locker did not panic")
			}
		}()
		l.Unlock()
	}()
}

func TestClosed(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	c, err := semclient.Dial(ctx, shared.Unix)
	if err != nil {
		t.Fatal(err)
	}
	name := uniq(t)
	s := c.Semaphore(name, semclient.CreateLimit(1))
	p, err := s.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	other := dial(t, shared.Unix)
	// A waiter on another name held by another client: the holder first
	// (started together, c's waiter could take it and other would wait).
	q, err := other.Semaphore(name+"-2", semclient.CreateLimit(1)).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Semaphore(name+"-2", semclient.CreateLimit(1)).Acquire(ctx, 1)
		errc <- err
	}()
	waitFor(5*time.Second, func() bool {
		info, err := other.Info(ctx, name+"-2")
		return err == nil && info.WaitersTotal == 1
	})
	c.Close()
	c.Close()
	if err := <-errc; !errors.Is(err, semclient.ErrClosed) && err != nil {
		// granted before the close is possible only if q was released
		t.Fatalf("waiter after close: %v", err)
	}
	select {
	case <-p.Lost():
	default:
		// Close gave it back first: released, not lost.
	}
	if _, err := s.TryAcquire(1); !errors.Is(err, semclient.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	// Close gave the permit back: another client gets it at once.
	if p2, err := other.Semaphore(name).TryAcquire(1); err != nil {
		t.Fatalf("after close, the permit is not free: %v", err)
	} else {
		p2.Release()
	}
	if _, err := semclient.Dial(ctx, "unix:"+t.TempDir()+"/none.sock"); !errors.Is(err, semclient.ErrConnect) {
		t.Fatalf("dial nowhere: %v", err)
	}
	if _, err := semclient.Dial(ctx, "bogus:::x"); err == nil {
		t.Fatal("dial of a malformed address succeeded")
	}
}

// No goroutine, call, permit or C memory is left behind by a loop of
// everything the package does.
//
// glibc's per-thread caches keep freed blocks counted as in use, more of
// them as more threads have freed something: the C heap is measured in a
// child process of the test binary without them.
func TestNoLeaks(t *testing.T) {
	const tun = "glibc.malloc.tcache_count=0"
	if os.Getenv("GLIBC_TUNABLES") != tun {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNoLeaks$", "-test.v")
		cmd.Env = append(os.Environ(), "GLIBC_TUNABLES="+tun)
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestNoLeaks") {
			t.Fatalf("the child failed: %v", err)
		}
		return
	}
	ctx := ctxT(t, 60*time.Second)
	c := dial(t, shared.Unix)
	other := dial(t, shared.Unix)
	name := created(t, ctx, c, 1)
	s := c.Semaphore(name)
	round := func() {
		p, err := s.Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		_ = p.Context(ctx)
		if _, err := s.TryAcquire(1); !errors.Is(err, semclient.ErrWouldBlock) {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		if _, err := other.Semaphore(name).Acquire(cctx, 1); err != context.DeadlineExceeded {
			t.Fatal(err)
		}
		cancel()
		wctx, wcancel := context.WithCancel(ctx)
		if _, err := c.Watch(wctx, name); err != nil {
			t.Fatal(err)
		}
		wcancel()
		if _, err := c.Info(ctx, name); err != nil {
			t.Fatal(err)
		}
		if err := p.Release(); err != nil {
			t.Fatal(err)
		}
		d, err := semclient.Dial(ctx, shared.Unix)
		if err != nil {
			t.Fatal(err)
		}
		q, err := d.Semaphore(name).Acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		_ = q.Context(ctx)
		d.Close() // gives q back
	}
	settle := func() (int, semclient.Stats, semclient.Stats) {
		var g int
		waitFor(3*time.Second, func() bool {
			runtime.GC()
			g = runtime.NumGoroutine()
			st, so := c.Stats(), other.Stats()
			return st.Calls == 0 && st.Watches == 0 && st.Permits == 0 && st.Pending == 0 &&
				so.Calls == 0 && so.Pending == 0
		})
		return g, c.Stats(), other.Stats()
	}
	for i := 0; i < 20; i++ { // warm up the allocators
		round()
	}
	g0, _, _ := settle()
	heap0, th0 := semclient.CHeapInUse(), osThreads()
	const n = 400
	for i := 0; i < n; i++ {
		round()
	}
	var g1 int
	var st, so semclient.Stats
	waitFor(3*time.Second, func() bool { g1, st, so = settle(); return g1 <= g0 })
	heap1, th1 := semclient.CHeapInUse(), osThreads()
	if g1 > g0 {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines %d before, %d after %d rounds:\n%s", g0, g1, n, buf[:runtime.Stack(buf, true)])
	}
	if st.Calls != 0 || st.Watches != 0 || st.Permits != 0 || st.Pending != 0 || so.Calls != 0 || so.Pending != 0 {
		t.Fatalf("stats after: %+v, other %+v", st, so)
	}
	// C heap: a leak of even one small block a round shows (n x >= 32 B).
	if grow := int64(heap1) - int64(heap0); grow > 8192 {
		t.Fatalf("C heap grew %d bytes over %d rounds (%d to %d), threads %d to %d", grow, n, heap0, heap1, th0, th1)
	}
	t.Logf("goroutines %d -> %d, C heap %d -> %d, threads %d -> %d", g0, g1, heap0, heap1, th0, th1)
}

// osThreads counts the process's threads (/proc/self/status).
func osThreads() int {
	b, _ := os.ReadFile("/proc/self/status")
	var n int
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Threads:") {
			fmt.Sscan(strings.TrimPrefix(l, "Threads:"), &n)
		}
	}
	return n
}
