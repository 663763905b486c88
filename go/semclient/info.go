// SPDX-License-Identifier: BSD-2-Clause

package semclient

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"time"
	"unsafe"
)

// Mode is a semaphore's mode.
type Mode int

// The modes of a semaphore.
const (
	ModeOwned  Mode = C.SEMC_MODE_OWNED  // only a holder gives back, only what it holds
	ModeSignal Mode = C.SEMC_MODE_SIGNAL // any client may give back, up to the limit
	ModeRate   Mode = C.SEMC_MODE_RATE   // a token bucket: tokens are taken for good
)

// Who holds or waits: the client as it named itself in its handshake,
// the principal the daemon knows it as, and since when.
type Who struct {
	Client    string
	Host      string
	PID       int
	Principal string
	Since     time.Time
}

// Holder is one hold of a semaphore, as Info lists it.
type Holder struct {
	Who
	PermitID uint64
	Token    uint64
	N        int
	Detached bool
	Expires  time.Time // zero: tied to a live connection
}

// Waiter is one request waiting in a semaphore's line, as Info lists it.
type Waiter struct {
	Who
	RequestID uint64
	N         int
	Deadline  time.Time // zero: none
	Detached  bool
	Priority  int    // its down's class, -8..7 (0: the default)
	Replace   string // its down's replace key ("": none)
}

// Info describes a semaphore: its limit and what is free, its holders and
// its waiters in line order (up to 10,000 of each; the totals count all).
type Info struct {
	Name         string
	Limit        int
	Available    int64 // negative after a shrinking SetLimit
	Mode         Mode
	AutoCreated  bool
	LastToken    uint64
	Holders      []Holder
	Waiters      []Waiter
	HoldersTotal int
	WaitersTotal int
	MaxWaiters   int     // the bound on the line (0: none)
	Share        ShareBy // how permits are shared between groups
	Groups       []Group // with shares: the groups listed or active, by name
	Rate         Rate    // the token bucket (Rate{}: none)
	Tokens       float64 // in the bucket now
	NextToken    time.Time
}

func unixMs(ms C.uint64_t) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms))
}

// who makes a Who of the C strings and numbers of a holder or waiter.
func who(client, host *C.char, pid C.uint32_t, principal *C.char, sinceMs C.uint64_t) Who {
	return Who{Client: C.GoString(client), Host: C.GoString(host), PID: int(pid),
		Principal: C.GoString(principal), Since: unixMs(sinceMs)}
}

// named runs the blocking call f of op on name, given as a C string,
// unless ctx is done already.
func (c *Client) named(ctx context.Context, op, name string, f func(cs *C.char) C.int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return c.blocking(op, name, func() C.int { return f(cs) })
}

// Info describes the semaphore name.
func (c *Client) Info(ctx context.Context, name string) (*Info, error) {
	var out *Info
	err := c.named(ctx, "info", name, func(cs *C.char) C.int {
		var ci *C.struct_semc_info
		r := C.semc_info(c.h, cs, &ci)
		if r != 0 {
			return r
		}
		defer C.semc_info_free(ci)
		out = &Info{Name: C.GoString(ci.name), Limit: int(ci.limit), Available: int64(ci.available),
			Mode: Mode(ci.mode), AutoCreated: bool(ci.auto_created), LastToken: uint64(ci.last_token),
			HoldersTotal: int(ci.holders_total), WaitersTotal: int(ci.waiters_total),
			MaxWaiters: int(ci.max_waiters), Share: ShareBy(ci.share),
			Tokens: float64(ci.tokens_nano) / 1e9, NextToken: unixMs(ci.next_token_ms)}
		if ci.rate != 0 {
			out.Rate = Rate{Tokens: int(ci.rate), Burst: int(ci.burst),
				Per: time.Duration(ci.rate_period_ms) * time.Millisecond}
		}
		if ci.n_groups > 0 {
			for _, g := range unsafe.Slice(ci.groups, int(ci.n_groups)) {
				out.Groups = append(out.Groups, Group{Name: C.GoString(g.group),
					Weight: int(g.weight), Share: int(g.share), Held: int(g.held),
					Waiting: int(g.waiting)})
			}
		}
		if ci.n_holders > 0 {
			for _, h := range unsafe.Slice(ci.holders, int(ci.n_holders)) {
				out.Holders = append(out.Holders, Holder{PermitID: uint64(h.permit_id),
					Token: uint64(h.token), N: int(h.n),
					Who:      who(h.client_name, h.host, h.pid, h.principal, h.since_ms),
					Detached: bool(h.detached), Expires: unixMs(h.expires_ms)})
			}
		}
		if ci.n_waiters > 0 {
			for _, w := range unsafe.Slice(ci.waiters, int(ci.n_waiters)) {
				out.Waiters = append(out.Waiters, Waiter{RequestID: uint64(w.request_id), N: int(w.n),
					Who:      who(w.client_name, w.host, w.pid, w.principal, w.since_ms),
					Deadline: unixMs(w.deadline_ms), Detached: bool(w.detached)})
			}
		}
		// Each waiter's class, in the same order (a daemon before 0.4.0
		// sends none: every waiter is then of class 0 with no key).
		if ci.n_waiter_classes == ci.n_waiters && ci.n_waiters > 0 {
			for i, k := range unsafe.Slice(ci.waiter_classes, int(ci.n_waiter_classes)) {
				out.Waiters[i].Priority = int(k.priority)
				out.Waiters[i].Replace = C.GoString(k.replace)
			}
		}
		return 0
	})
	return out, err
}

// Info describes the semaphore.
func (s *Semaphore) Info(ctx context.Context) (*Info, error) { return s.c.Info(ctx, s.name) }

// CreateOption configures Client.Create.
type CreateOption func(*createConfig)

// createConfig is what Create's options set: semc_create_opts, and the
// queue policies (queue.go).
type createConfig struct {
	o          C.struct_semc_create_opts
	initial    int
	maxWaiters int
	share      ShareBy
	weights    map[string]int
	rate       Rate // WithRate (names.go)
}

// WithMode creates the semaphore in mode m (default ModeOwned).
func WithMode(m Mode) CreateOption {
	return func(cf *createConfig) { cf.o.mode = C.enum_semc_mode(m) }
}

// IfNotExists makes Create succeed when the name exists already with the
// limit and mode asked for (and the rate, with WithRate); when it exists
// with others, Create fails with ErrExists saying what it has.
func IfNotExists() CreateOption {
	return func(cf *createConfig) { cf.o.if_not_exists = true }
}

// WithInitial starts a ModeSignal semaphore with n free permits (0..limit;
// by default all limit are free).
func WithInitial(n int) CreateOption {
	return func(cf *createConfig) { cf.o.initial_set, cf.initial = true, n }
}

// Create makes the semaphore name with limit permits, 1 to LimitMax (0 for
// a rate-only name: WithRate). ErrExists when it exists, unless
// IfNotExists; arguments out of the daemon's ranges are ErrArgument.
func (c *Client) Create(ctx context.Context, name string, limit int, opts ...CreateOption) error {
	var cf createConfig
	for _, f := range opts {
		f(&cf)
	}
	if err := cf.check(name, limit); err != nil {
		return err
	}
	cf.o.limit = C.uint32_t(limit)
	cf.o.initial = C.uint32_t(cf.initial)
	if cf.rate != (Rate{}) && limit == 0 {
		cf.o.mode = C.SEMC_MODE_RATE
	}
	if cf.o.if_not_exists {
		return c.createChecked(ctx, name, limit, &cf)
	}
	return c.create(ctx, name, &cf)
}

// SetLimit changes the limit of name. Shrinking below what is held leaves
// the holders alone: Available goes negative until they give back.
func (c *Client) SetLimit(ctx context.Context, name string, limit int) error {
	if err := checkRange("set-limit", name, "limit", limit, 1, LimitMax); err != nil {
		return err
	}
	return c.named(ctx, "set-limit", name, func(cs *C.char) C.int {
		return C.semc_set_limit(c.h, cs, C.uint32_t(limit))
	})
}

// Delete removes the semaphore name; with force, even while it is held or
// waited for (its holders' permits are lost, its waiters cancelled).
func (c *Client) Delete(ctx context.Context, name string, force bool) error {
	return c.named(ctx, "delete", name, func(cs *C.char) C.int { return C.semc_delete(c.h, cs, C.bool(force)) })
}

// ForceRelease gives back someone else's permit (the admin right): its
// holder's Permit reports it lost.
func (c *Client) ForceRelease(ctx context.Context, name string, permitID uint64) error {
	return c.named(ctx, "force-release", name, func(cs *C.char) C.int {
		return C.semc_release(c.h, cs, C.uint64_t(permitID), nil)
	})
}
