// SPDX-License-Identifier: BSD-2-Clause

package semclient

/*
#cgo pkg-config: semclient
#include "shim.h"
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Client is one connection (one daemon session) to semd, or to the leader
// of a semd cluster, over libsemclient. It is safe for concurrent use by
// any number of goroutines: their requests are multiplexed over the one
// connection. Make one with Dial and end it with Close.
type Client struct {
	h        *C.struct_semc
	key      uintptr // the event callback's key (table.clients)
	lease    time.Duration
	replyTTL time.Duration

	// mu is read-locked while a goroutine is inside a C call on h (or
	// submitting one); Close write-locks it to free h. Callbacks never
	// take it: they run inside such a call, or in the poller, which
	// Close stops first.
	mu     sync.RWMutex
	closed atomic.Bool

	wake       [2]int // a non-blocking pipe that wakes the poller
	pollerDone chan struct{}
	closeOnce  sync.Once

	pmu       sync.Mutex
	permits   map[permitKey]*Permit
	lostEarly map[permitKey]error // HoldLost seen before its grant was filed
	watches   map[uintptr]*watch

	reconnects atomic.Int64

	// Acquires return in the order their grants were delivered (the
	// daemon's FIFO order, token order): the callback numbers each grant
	// (lastGrant, under table's lock) and Acquire returns only after the
	// grant before it did (inTurn). Without it a goroutine woken later
	// could run first, as the scheduler likes (the last one made ready
	// runs next).
	lastGrant uint64 // under table.mu
	turnMu    sync.Mutex
	turnCond  *sync.Cond
	turnNext  uint64 // the grant whose Acquire returns next (1 first)
}

type permitKey struct {
	name string
	id   uint64
}

// Option configures Dial.
type Option func(*dialConfig)

type dialConfig struct {
	lease       time.Duration
	name        string
	replyTTL    time.Duration
	tls         bool
	ca, cert    string
	key         string
	noReconnect bool
	parent      Parent // WithParent
	parentSet   bool
}

// WithLease asks for a session lease: the session and its holds survive a
// cut of the connection (or a cluster failover) this long and are resumed.
// The library ends its own, client-side, lease first and reports every
// hold lost (Permit.Lost) before the daemon can grant it to anyone else.
func WithLease(d time.Duration) Option { return func(o *dialConfig) { o.lease = d } }

// WithClientName sets the client name the daemon shows for this session
// (semctl info, Info's holders and waiters).
func WithClientName(name string) Option { return func(o *dialConfig) { o.name = name } }

// WithReplyTimeout bounds how long an ordinary request waits for its reply
// (default 10 s); Acquire waits for its context instead.
func WithReplyTimeout(d time.Duration) Option { return func(o *dialConfig) { o.replyTTL = d } }

// WithTLS sets the PEM files for tls: addresses: the CA to verify the
// daemon with, and a client certificate and key (each may be "": the
// environment's $SEMD_TLS_CA, $SEMD_TLS_CERT, $SEMD_TLS_KEY).
func WithTLS(caFile, certFile, keyFile string) Option {
	return func(o *dialConfig) { o.tls, o.ca, o.cert, o.key = true, caFile, certFile, keyFile }
}

// WithoutReconnect turns the automatic reconnection off: a broken
// connection fails what is pending and every later call.
func WithoutReconnect() Option { return func(o *dialConfig) { o.noReconnect = true } }

// Dial connects to addrs and opens a session. addrs is one address or a
// comma-separated list of a cluster's nodes, each unix:PATH, tcp:HOST[:PORT]
// or tls:HOST[:PORT] (an empty addrs: $SEMD_SERVER, else the default UNIX
// socket). Dial waits until ctx's deadline at most (10 s without one).
func Dial(ctx context.Context, addrs string, opts ...Option) (*Client, error) {
	cfg := dialConfig{replyTTL: 10 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h := C.semc_new()
	if h == nil {
		return nil, newError(int(ErrNoMemory), "dial", "", "out of memory")
	}
	c := &Client{h: h, lease: cfg.lease, replyTTL: cfg.replyTTL,
		permits: map[permitKey]*Permit{}, lostEarly: map[permitKey]error{},
		watches: map[uintptr]*watch{}, pollerDone: make(chan struct{}), turnNext: 1}
	c.turnCond = sync.NewCond(&c.turnMu)
	fail := func(err error) (*Client, error) {
		C.semc_free(h)
		table.drop(c.key)
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if addrs != "" {
		cs := C.CString(addrs)
		r := C.semc_set_address(h, cs)
		C.free(unsafe.Pointer(cs))
		if r != 0 {
			return fail(lastError(r, "dial", ""))
		}
	}
	if cfg.name != "" {
		cs := C.CString(cfg.name)
		C.semc_set_client_name(h, cs)
		C.free(unsafe.Pointer(cs))
	}
	if cfg.tls {
		ca, cert, key := cstrOrNil(cfg.ca), cstrOrNil(cfg.cert), cstrOrNil(cfg.key)
		r := C.semc_set_tls(h, ca, cert, key)
		C.free(unsafe.Pointer(ca))
		C.free(unsafe.Pointer(cert))
		C.free(unsafe.Pointer(key))
		if r != 0 {
			return fail(lastError(r, "dial", ""))
		}
	}
	if cfg.parentSet {
		C.semc_set_parent(h, C.uint64_t(cfg.parent.Session), C.uint64_t(cfg.parent.Link))
	}
	C.semc_set_lease(h, C.uint32_t(cfg.lease.Milliseconds()))
	C.semc_set_timeout(h, C.int(cfg.replyTTL.Milliseconds()))
	C.semc_set_reconnect(h, C.bool(!cfg.noReconnect))
	// The poller goroutine does the keepalive duties (semc_process).
	C.semc_set_keepalive_thread(h, false)
	c.key = table.add(c)
	C.gsc_set_event_callback(h, C.uintptr_t(c.key))
	ms := C.int(-1)
	if dl, ok := ctx.Deadline(); ok {
		ms = C.int(time.Until(dl).Milliseconds())
		if ms < 1 {
			ms = 1
		}
	}
	if r := C.semc_connect(h, ms); r != 0 {
		return fail(lastError(r, "dial", ""))
	}
	if err := syscall.Pipe2(c.wake[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		return fail(newError(int(ErrSystem), "dial", "", "pipe: "+err.Error()))
	}
	go c.poll(c.wake[0])
	return c, nil
}

func cstrOrNil(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// poll is the poller goroutine: it waits for the socket and runs
// semc_process(), which reads replies and events and calls back into Go,
// sends the keepalive pings and reconnects. It ends when Close wakes it.
func (c *Client) poll(wakefd int) {
	defer close(c.pollerDone)
	for !c.closed.Load() {
		C.gsc_poll(c.h, C.int(wakefd), 250)
	}
}

// Close gives back the permits this client holds, ends the session and
// frees the connection. Calls still waiting fail with ErrClosed, every
// Permit's Lost channel closes, and every Watch channel closes. Close may
// be called more than once.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.pmu.Lock()
		held := make([]*Permit, 0, len(c.permits))
		for _, p := range c.permits {
			held = append(held, p)
		}
		c.pmu.Unlock()
		for _, p := range held {
			_ = p.Release()
		}
		c.closed.Store(true)
		_, _ = syscall.Write(c.wake[1], []byte{1})
		<-c.pollerDone
		c.mu.Lock()
		C.semc_free(c.h)
		c.h = nil
		c.mu.Unlock()
		table.failClient(c)
		table.drop(c.key)
		c.pmu.Lock()
		for k, p := range c.permits {
			delete(c.permits, k)
			p.markLost(newError(int(ErrClosed), "lost", k.name, "client closed"))
		}
		ws := make([]*watch, 0, len(c.watches))
		for _, w := range c.watches {
			ws = append(ws, w)
		}
		c.pmu.Unlock()
		for _, w := range ws {
			w.end()
		}
		syscall.Close(c.wake[0])
		syscall.Close(c.wake[1])
	})
	return nil
}

// Stats are a client's counters, for tests and monitoring.
type Stats struct {
	Pending    int   // requests sent and not answered (semc_pending)
	Calls      int   // calls waiting for a callback, in this package
	Permits    int   // permits held and tracked for Lost
	Watches    int   // open watches
	Reconnects int64 // new sessions or resumes since Dial
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	var s Stats
	c.mu.RLock()
	if c.h != nil {
		s.Pending = int(C.semc_pending(c.h))
	}
	c.mu.RUnlock()
	s.Calls = table.callsOf(c)
	c.pmu.Lock()
	s.Permits, s.Watches = len(c.permits), len(c.watches)
	c.pmu.Unlock()
	s.Reconnects = c.reconnects.Load()
	return s
}

// Session describes the daemon session, as the handshake told it.
type Session struct {
	ID        uint64
	Lease     time.Duration // granted (0: none)
	Principal string
	Server    string // "semd 0.4.0"
	Resumed   bool
}

// Session returns what the daemon said in the latest handshake.
func (c *Client) Session() (Session, error) {
	var s Session
	err := c.blocking("session", "", func() C.int {
		var cs C.struct_semc_session
		r := C.semc_session(c.h, &cs)
		if r == 0 {
			s = Session{ID: uint64(cs.session), Lease: time.Duration(cs.lease_ms) * time.Millisecond,
				Principal: C.GoString(cs.principal), Server: C.GoString(cs.server),
				Resumed: bool(cs.resumed)}
		}
		return r
	})
	return s, err
}

// Ping makes a round trip to the daemon and returns how long it took.
func (c *Client) Ping(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	cl := newCall(c)
	if _, err := c.async("ping", "", cl, func(k C.uintptr_t) C.int64_t {
		return C.gsc_ping_async(c.h, k)
	}); err != nil {
		return 0, err
	}
	r, err := c.wait(ctx, cl, "ping", "")
	if err != nil {
		return 0, err
	}
	return time.Since(t0), newError(r.err, "ping", "", r.msg)
}

// blocking runs f, a blocking libsemclient call on c.h, on one locked OS
// thread (so that semc_last_message() is that call's), and turns its
// result into an error.
func (c *Client) blocking(op, name string, f func() C.int) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() || c.h == nil {
		return newError(int(ErrClosed), op, name, "")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return lastError(f(), op, name)
}

// async files cl and sends a request with f (given cl's key); its
// callback completes cl. It returns the request id.
func (c *Client) async(op, name string, cl *call, f func(C.uintptr_t) C.int64_t) (int64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() || c.h == nil {
		return 0, newError(int(ErrClosed), op, name, "")
	}
	key := table.addCall(cl)
	runtime.LockOSThread()
	id := int64(f(C.uintptr_t(key)))
	if id < 0 {
		err := lastError(C.int(id), op, name)
		runtime.UnlockOSThread()
		table.takeCall(key)
		return 0, err
	}
	runtime.UnlockOSThread()
	cl.id = id
	return id, nil
}

// wait waits for cl's result: until ctx is done (nil: the reply timeout).
// Given up on, the call is abandoned: its callback gives back a grant
// that comes late.
func (c *Client) wait(ctx context.Context, cl *call, op, name string) (result, error) {
	if ctx == nil {
		t := time.NewTimer(c.replyTTL + time.Second)
		defer t.Stop()
		select {
		case r := <-cl.ch:
			return c.inTurn(r), nil
		case <-t.C:
			if r, ok := cl.abandon(); ok {
				return c.inTurn(r), nil
			}
			return result{}, newError(int(ErrNoReply), op, name, "no reply in time")
		}
	}
	select {
	case r := <-cl.ch:
		return c.inTurn(r), nil
	case <-ctx.Done():
		if r, ok := cl.abandon(); ok {
			return c.inTurn(r), nil
		}
		return result{}, ctx.Err()
	}
}

// inTurn returns r once the grants delivered before it were returned
// (see Client.lastGrant): every grant handed to a call comes through here
// exactly once, so none waits for ever.
func (c *Client) inTurn(r result) result {
	if r.seq == 0 {
		return r
	}
	c.turnMu.Lock()
	for c.turnNext != r.seq {
		c.turnCond.Wait()
	}
	c.turnNext++
	c.turnCond.Broadcast()
	c.turnMu.Unlock()
	return r
}

// result is what a completion callback copied out of its semc_result.
type result struct {
	err      int
	msg      string
	grant    Grant
	multi    []Grant
	released uint32
	info     *Info
	seq      uint64 // a grant's place in delivery order (0: not a grant)
}

// call is one asynchronous request waiting for its callback.
type call struct {
	c         *Client
	ch        chan result
	id        int64
	abandoned bool   // under table's lock
	name      string // for giving back a grant of an abandoned down
	ordered   bool   // an acquire: its grant returns in delivery order
}

func newCall(c *Client) *call { return &call{c: c, ch: make(chan result, 1)} }

// abandon gives up on cl. When its result has come already, it is
// returned (ok); otherwise the callback will deal with it.
func (cl *call) abandon() (result, bool) {
	table.mu.Lock()
	defer table.mu.Unlock()
	select {
	case r := <-cl.ch:
		return r, true
	default:
	}
	cl.abandoned = true
	return result{}, false
}
