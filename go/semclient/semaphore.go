// SPDX-License-Identifier: BSD-2-Clause

package semclient

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// Grant is what the daemon granted: a permit of Name, its fencing token
// (strictly increasing per name), the count and how long the request
// waited in line.
type Grant struct {
	Name     string
	PermitID uint64
	Token    uint64
	N        int
	Waited   time.Duration
}

// Semaphore is a handle on one named semaphore of a Client. It is only a
// name and options: making one sends nothing, and it is safe for
// concurrent use.
type Semaphore struct {
	c           *Client
	name        string
	holdLease   time.Duration
	createLimit int
	priority    int    // WithPriority
	group       string // WithGroup
	replace     string // WithReplace
}

// SemaphoreOption configures Client.Semaphore.
type SemaphoreOption func(*Semaphore)

// HoldLease makes the permits acquired through this Semaphore detached
// holds: they belong to the client's principal, not to the session, and
// the daemon keeps each for d after it was granted or renewed (Permit.Renew),
// whatever becomes of the connection. Their Lost channel closes when d
// runs out on the client's clock, shortened by the library's margin.
func HoldLease(d time.Duration) SemaphoreOption { return func(s *Semaphore) { s.holdLease = d } }

// CreateLimit makes Acquire and TryAcquire create the semaphore with this
// limit when it does not exist (ErrExists when it does, with another).
func CreateLimit(limit int) SemaphoreOption {
	return func(s *Semaphore) { s.createLimit = limit }
}

// Semaphore returns a handle on the semaphore name.
func (c *Client) Semaphore(name string, opts ...SemaphoreOption) *Semaphore {
	s := &Semaphore{c: c, name: name}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Acquire takes n permits (n >= 1), waiting in the daemon's FIFO line
// until they are granted or ctx is done. When ctx ends first, the waiter
// is cancelled on the daemon before Acquire returns ctx.Err() (a grant
// that crossed the cancel is given back). Other failures are *Error values:
// ErrDeadlock when waiting would close a cycle of sessions, ErrNotFound,
// ErrPermissionDenied, ErrUnavailable, ErrClosed, ...
func (s *Semaphore) Acquire(ctx context.Context, n int) (*Permit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cl, sent, err := s.down(n, -1)
	if err != nil {
		return nil, err
	}
	select {
	case r := <-cl.ch:
		p, err := s.granted(r, sent)
		s.c.inTurn(r) // the last step: return in grant order
		return p, err
	case <-ctx.Done():
	}
	if r, ok := cl.abandon(); ok {
		if s.c.inTurn(r).err == 0 {
			s.c.returnGrant(s.name, r.grant)
		}
		return nil, ctx.Err()
	}
	// The callback gives back a grant that comes now; the Cancel's
	// answer means the daemon has taken the waiter out of its line.
	_ = s.c.blocking("cancel", s.name, func() C.int {
		return C.semc_cancel(s.c.h, C.uint64_t(cl.id))
	})
	return nil, ctx.Err()
}

// TryAcquire takes n permits only if they are free now; otherwise it
// fails with ErrWouldBlock at once.
func (s *Semaphore) TryAcquire(n int) (*Permit, error) {
	cl, sent, err := s.down(n, 0)
	if err != nil {
		return nil, err
	}
	r, err := s.c.wait(nil, cl, "acquire", s.name)
	if err != nil {
		return nil, err
	}
	return s.granted(r, sent)
}

// down sends a down of n permits with timeout (ms; < 0 forever, 0 try).
func (s *Semaphore) down(n int, timeout int64) (*call, time.Time, error) {
	if err := s.check(n); err != nil {
		return nil, time.Time{}, err
	}
	cl := newCall(s.c)
	cl.name = s.name
	cl.ordered = true
	cs := C.CString(s.name)
	defer C.free(unsafe.Pointer(cs))
	sent := time.Now()
	if s.priority != 0 || s.group != "" || s.replace != "" {
		group, replace := cstrOrNil(s.group), cstrOrNil(s.replace)
		defer C.free(unsafe.Pointer(group))
		defer C.free(unsafe.Pointer(replace))
		_, err := s.c.async("acquire", s.name, cl, func(k C.uintptr_t) C.int64_t {
			return C.gsc_down_policy_async(s.c.h, cs, C.uint32_t(n), C.int64_t(timeout),
				C.uint32_t(s.holdLease.Milliseconds()), C.uint32_t(s.createLimit),
				C.int(s.priority), group, replace, k)
		})
		return cl, sent, err
	}
	_, err := s.c.async("acquire", s.name, cl, func(k C.uintptr_t) C.int64_t {
		return C.gsc_down_async(s.c.h, cs, C.uint32_t(n), C.int64_t(timeout),
			C.uint32_t(s.holdLease.Milliseconds()), C.uint32_t(s.createLimit), k)
	})
	return cl, sent, err
}

// granted makes the Permit of a down's result (or its error).
func (s *Semaphore) granted(r result, sent time.Time) (*Permit, error) {
	if r.err != 0 {
		return nil, newError(r.err, "acquire", s.name, r.msg)
	}
	g := r.grant
	g.Name = s.name
	return s.c.file(g, s.holdLease, sent), nil
}

// Want is one name of a multi-name acquire: N permits (0 means 1) of Name.
type Want struct {
	Name string
	N    int
}

// AcquireMulti takes every want at once, or none (as SysV semop): nothing
// is held while it waits in line. The permits come back in the order of
// the wants. As Acquire, it waits until ctx is done; it fails with
// ErrDeadlock when waiting would close a cycle of sessions. At most 16
// names, owned-mode ones.
func (c *Client) AcquireMulti(ctx context.Context, wants ...Want) ([]*Permit, error) {
	return c.acquireMulti(ctx, 0, wants)
}

// AcquireMultiPriority is AcquireMulti in priority class priority
// (PriorityMin to PriorityMax; see WithPriority).
func (c *Client) AcquireMultiPriority(ctx context.Context, priority int, wants ...Want) ([]*Permit, error) {
	return c.acquireMulti(ctx, priority, wants)
}

func (c *Client) acquireMulti(ctx context.Context, priority int, wants []Want) ([]*Permit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(wants) == 0 || len(wants) > 16 {
		return nil, newError(int(ErrArgument), "acquire", "", "1 to 16 names")
	}
	for _, w := range wants {
		if w.N != 0 {
			if err := checkRange("acquire", w.Name, "n", w.N, 1, LimitMax); err != nil {
				return nil, err
			}
		}
	}
	if err := checkRange("acquire", wants[0].Name, "priority", priority, PriorityMin,
		PriorityMax); err != nil {
		return nil, err
	}
	cw := (*C.struct_semc_want)(C.calloc(C.size_t(len(wants)), C.size_t(unsafe.Sizeof(C.struct_semc_want{}))))
	ws := unsafe.Slice(cw, len(wants))
	for i, w := range wants {
		ws[i].name = C.CString(w.Name)
		ws[i].n = C.uint32_t(w.N)
	}
	cl := newCall(c)
	cl.ordered = true
	sent := time.Now()
	_, err := c.async("acquire", wants[0].Name, cl, func(k C.uintptr_t) C.int64_t {
		if priority != 0 {
			return C.gsc_down_multi_policy_async(c.h, cw, C.size_t(len(wants)), -1, 0,
				C.int(priority), k)
		}
		return C.gsc_down_multi_async(c.h, cw, C.size_t(len(wants)), -1, 0, k)
	})
	for i := range ws {
		C.free(unsafe.Pointer(ws[i].name))
	}
	C.free(unsafe.Pointer(cw))
	if err != nil {
		return nil, err
	}
	multi := func(r result) ([]*Permit, error) {
		if r.err != 0 {
			return nil, newError(r.err, "acquire", wants[0].Name, r.msg)
		}
		ps := make([]*Permit, len(r.multi))
		for i, g := range r.multi {
			ps[i] = c.file(g, 0, sent)
		}
		return ps, nil
	}
	select {
	case r := <-cl.ch:
		ps, err := multi(r)
		c.inTurn(r)
		return ps, err
	case <-ctx.Done():
	}
	if r, ok := cl.abandon(); ok {
		if c.inTurn(r).err == 0 {
			for _, g := range r.multi {
				c.returnGrant(g.Name, g)
			}
		}
		return nil, ctx.Err()
	}
	_ = c.blocking("cancel", wants[0].Name, func() C.int {
		return C.semc_cancel(c.h, C.uint64_t(cl.id))
	})
	return nil, ctx.Err()
}

// Permit is a hold of permits granted by Acquire: give it back with
// Release. A session-bound permit (the default) lives as long as the
// session: Lost closes when the daemon or the library reports it gone.
type Permit struct {
	c        *Client
	g        Grant
	detached time.Duration // HoldLease, 0: session-bound

	mu       sync.Mutex
	released bool
	lostErr  error
	lost     chan struct{}        // closed when lost
	gone     chan struct{}        // closed when lost or released
	timer    *time.Timer          // detached: the client-side end of its lease
	cancels  []context.CancelFunc // of Context's contexts
}

// file makes the Permit of g and tracks it for lost-hold events.
func (c *Client) file(g Grant, detached time.Duration, sent time.Time) *Permit {
	p := &Permit{c: c, g: g, detached: detached, lost: make(chan struct{}), gone: make(chan struct{})}
	if g.PermitID == 0 { // rate-only name: nothing is held
		p.released = true
		close(p.gone)
		return p
	}
	k := permitKey{g.Name, g.PermitID}
	c.pmu.Lock()
	early, ok := c.lostEarly[k]
	if ok {
		delete(c.lostEarly, k)
	} else if detached == 0 {
		c.permits[k] = p
	}
	c.pmu.Unlock()
	if ok {
		p.markLost(early)
	} else if detached > 0 {
		p.armLease(sent, detached)
	}
	return p
}

// holdLost marks the permit of k lost (or remembers it, for a grant not
// filed yet).
func (c *Client) holdLost(k permitKey, err error) {
	c.pmu.Lock()
	p := c.permits[k]
	if p != nil {
		delete(c.permits, k)
	} else {
		if len(c.lostEarly) >= 1024 {
			c.lostEarly = map[permitKey]error{}
		}
		c.lostEarly[k] = err
	}
	c.pmu.Unlock()
	if p != nil {
		p.markLost(err)
	}
}

// leaseMargin is the client-side end of a detached hold's lease sent at
// sent: lease x (1 - 1%) - max(50 ms, lease / 20), as libsemclient's own
// client-side lease.
func leaseEnd(sent time.Time, lease time.Duration) time.Time {
	m := lease / 20
	if m < 50*time.Millisecond {
		m = 50 * time.Millisecond
	}
	return sent.Add(lease - lease/100 - m)
}

// armLease (re)starts the timer of a detached hold's lease.
func (p *Permit) armLease(sent time.Time, lease time.Duration) {
	d := time.Until(leaseEnd(sent, lease))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released || p.lostErr != nil {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timer = time.AfterFunc(d, func() {
		p.markLost(newError(int(ErrHoldLost), "lost", p.g.Name,
			"the hold's lease ran out on the client's clock"))
	})
}

// markLost closes Lost (once) with err as the reason.
func (p *Permit) markLost(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lostErr != nil {
		return
	}
	p.lostErr = err
	if p.timer != nil {
		p.timer.Stop()
	}
	close(p.lost)
	if !p.released {
		close(p.gone)
	}
	for _, f := range p.cancels {
		f()
	}
	p.cancels = nil
}

// Name returns the semaphore's name.
func (p *Permit) Name() string { return p.g.Name }

// Token returns the permit's fencing token, strictly increasing per name:
// pass it to the resource the permit guards, which refuses older ones.
func (p *Permit) Token() uint64 { return p.g.Token }

// PermitID returns the daemon's id of the permit.
func (p *Permit) PermitID() uint64 { return p.g.PermitID }

// N returns how many permits the hold is (fewer after ReleaseN, or a
// Semaphore.Release that took some of them).
func (p *Permit) N() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.g.N
}

// Waited returns how long the request waited in line.
func (p *Permit) Waited() time.Duration { return p.g.Waited }

// Lost returns a channel closed when the hold is lost: the daemon
// force-released it, ended the session or shut down, or the session's
// client-side lease (a detached hold's own lease) ended first, before the
// daemon could grant the permit to anyone else. Err tells why.
func (p *Permit) Lost() <-chan struct{} { return p.lost }

// Err returns why the hold was lost (it matches ErrHoldLost with
// errors.Is), or nil.
func (p *Permit) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lostErr
}

// Context returns a context derived from parent that is cancelled when
// the hold is lost (the moment Lost closes) or released, so that work can
// be tied to the hold.
func (p *Permit) Context(parent context.Context) context.Context {
	ctx, cancel := withCancel(parent) // cancel is kept for the end of the hold
	p.mu.Lock()
	ended := p.released || p.lostErr != nil
	if !ended {
		p.cancels = append(p.cancels, cancel)
	}
	p.mu.Unlock()
	if ended {
		cancel()
	}
	return ctx
}

// Release gives the permit back. It is idempotent: later calls return
// nil. A hold lost before returns its loss (errors.Is ErrHoldLost).
func (p *Permit) Release() error {
	done, lostErr := p.settle()
	if done {
		return nil
	}
	c := p.c
	c.pmu.Lock()
	delete(c.permits, permitKey{p.g.Name, p.g.PermitID})
	c.pmu.Unlock()
	if lostErr != nil {
		return lostErr
	}
	r, err := c.up(nil, p.g.Name, 0, p.g.PermitID)
	if err != nil {
		return err
	}
	if Code(r.err) == ErrNotHolder || Code(r.err) == ErrNotFound {
		return newError(int(ErrHoldLost), "lost", p.g.Name, r.msg)
	}
	return newError(r.err, "release", p.g.Name, r.msg)
}

// settle marks the permit released: done when it was already, and why it
// was lost if it was.
func (p *Permit) settle() (done bool, lostErr error) {
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return true, nil
	}
	p.released = true
	lostErr = p.lostErr
	if p.timer != nil {
		p.timer.Stop()
	}
	if lostErr == nil {
		close(p.gone)
	}
	cancels := p.cancels
	p.cancels = nil
	p.mu.Unlock()
	for _, f := range cancels {
		f()
	}
	return false, lostErr
}

// up sends an Up (by permit id, or n by count when permitID is 0) and
// waits for its result (ctx nil: the reply timeout).
func (c *Client) up(ctx context.Context, name string, n int, permitID uint64) (result, error) {
	cl := newCall(c)
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	if _, err := c.async("release", name, cl, func(k C.uintptr_t) C.int64_t {
		return C.gsc_up_async(c.h, cs, C.uint32_t(n), C.uint64_t(permitID), k)
	}); err != nil {
		return result{}, err
	}
	return c.wait(ctx, cl, "release", name)
}

// ReleaseN gives back n of the hold's permits and keeps the rest (N
// shrinks); n equal to N is Release. A part goes back by count, which the
// daemon takes from the session's newest hold of the name: p must be that
// hold, and held by the session (not a HoldLease one), else ErrArgument.
func (p *Permit) ReleaseN(n int) error {
	have := p.N()
	if n == have {
		return p.Release()
	}
	if err := checkRange("release", p.g.Name, "n", n, 1, have); err != nil {
		return err
	}
	if err := p.Err(); err != nil {
		return err
	}
	c := p.c
	c.pmu.Lock()
	newest := c.newestLocked(p.g.Name)
	c.pmu.Unlock()
	if p.detached != 0 || newest != p {
		return newError(int(ErrArgument), "release", p.g.Name, "a part of a hold goes back "+
			"by count, which the daemon takes from the session's newest hold of the name: "+
			"this permit is not that hold; release all of it, or n of the name with "+
			"Semaphore.Release")
	}
	_, err := p.c.release(nil, p.g.Name, n)
	return err
}

// Release gives back n permits of the name by count, as the C library's
// semc_up and semctl up do: on a ModeSignal name a post (any client may, up
// to the limit); on an owned name, n of what this session holds there,
// taken from its newest holds first (their Permits' N shrink, or they are
// released), then from the principal's HoldLease holds. ErrNotHolder when
// they hold fewer. It returns how many went back.
func (s *Semaphore) Release(ctx context.Context, n int) (int, error) {
	if err := checkRange("release", s.name, "n", n, 1, LimitMax); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return s.c.release(ctx, s.name, n)
}

// release gives back n permits of name by count and shrinks the session's
// Permits of the name as the daemon did: newest first.
func (c *Client) release(ctx context.Context, name string, n int) (int, error) {
	r, err := c.up(ctx, name, n, 0)
	if err != nil {
		return 0, err
	}
	if err := newError(r.err, "release", name, r.msg); err != nil {
		return 0, err
	}
	got := int(r.released)
	if got == 0 {
		got = n
	}
	c.shrink(name, got)
	return got, nil
}

// newestLocked is the session's newest tracked hold of name (c.pmu held).
func (c *Client) newestLocked(name string) *Permit {
	var best *Permit
	for k, p := range c.permits {
		if k.name == name && (best == nil || k.id > best.g.PermitID) {
			best = p
		}
	}
	return best
}

// shrink takes n permits of name off the session's Permits, newest first
// (permit ids grow with the grants), as an up by count did on the daemon.
func (c *Client) shrink(name string, n int) {
	for n > 0 {
		c.pmu.Lock()
		p := c.newestLocked(name)
		if p == nil {
			c.pmu.Unlock()
			return
		}
		p.mu.Lock()
		take := p.g.N
		if take > n {
			take = n
		}
		p.g.N -= take
		whole := p.g.N == 0
		p.mu.Unlock()
		if whole {
			delete(c.permits, permitKey{name, p.g.PermitID})
		}
		c.pmu.Unlock()
		n -= take
		if whole {
			p.settle()
		}
	}
}

// LimitMax is the most permits a name has, or an acquire takes (2^30).
const LimitMax = 1 << 30

// check checks an acquire's n and the Semaphore's options against the
// daemon's ranges, before any request.
func (s *Semaphore) check(n int) error {
	if err := checkRange("acquire", s.name, "n", n, 1, LimitMax); err != nil {
		return err
	}
	if err := checkRange("acquire", s.name, "priority", s.priority, PriorityMin,
		PriorityMax); err != nil {
		return err
	}
	if s.holdLease < 0 || s.holdLease > maxLease {
		return newError(int(ErrArgument), "acquire", s.name,
			"HoldLease must be from 0 to 4294967295 ms")
	}
	return checkRange("acquire", s.name, "CreateLimit", s.createLimit, 0, LimitMax)
}

// maxLease is the longest lease the protocol carries (the daemon's
// max-lease may be less: the library refuses longer ones, ErrInvalid).
const maxLease = time.Duration(1<<32-1) * time.Millisecond

// checkRange is ErrArgument unless lo <= v <= hi.
func checkRange(op, name, what string, v, lo, hi int) error {
	if v < lo || v > hi {
		return newError(int(ErrArgument), op, name,
			fmt.Sprintf("%s must be from %d to %d, not %d", what, lo, hi, v))
	}
	return nil
}

// Renew extends the hold. A detached hold (HoldLease) gets lease from now
// (0: its own lease again); a session-bound hold lives with the session,
// whose lease the client keeps alive: Renew then makes a round trip, which
// renews the session's lease at once, and lease is not used. Either fails
// with ErrHoldLost when the hold is gone.
func (p *Permit) Renew(ctx context.Context, lease time.Duration) error {
	if err := p.Err(); err != nil {
		return err
	}
	if p.detached == 0 {
		if _, err := p.c.Ping(ctx); err != nil {
			return err
		}
		return p.Err()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var renewed C.uint32_t
	sent := time.Now()
	cs := C.CString(p.g.Name)
	defer C.free(unsafe.Pointer(cs))
	err := p.c.blocking("renew", p.g.Name, func() C.int {
		return C.semc_renew(p.c.h, cs, C.uint64_t(p.g.PermitID), C.uint32_t(lease.Milliseconds()),
			&renewed, nil)
	})
	if err != nil {
		return err
	}
	if renewed == 0 {
		err := newError(int(ErrHoldLost), "lost", p.g.Name, "the hold is gone")
		p.markLost(err)
		return err
	}
	if lease == 0 {
		lease = p.detached
	}
	p.armLease(sent, lease)
	return nil
}

// withCancel is context.WithCancel, for a cancel function kept beyond the
// caller (go vet's lostcancel check cannot follow it).
func withCancel(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(parent)
}
