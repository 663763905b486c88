// SPDX-License-Identifier: BSD-2-Clause

package semclient

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// Rate is a token bucket: Tokens every Per (0: a second), at most Burst
// in the bucket (0: Tokens). Rate{} is none.
type Rate struct {
	Tokens int
	Per    time.Duration
	Burst  int
}

// ParseRate reads a rate as semctl does: "5000/h", "10/s", "3/min",
// "1/250ms" or "7" (a second).
func ParseRate(s string) (Rate, error) {
	var r, period C.uint32_t
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	if C.semc_parse_rate(cs, &r, &period) != 0 {
		return Rate{}, newError(int(ErrArgument), "rate", "", fmt.Sprintf("%q is not a rate", s))
	}
	return Rate{Tokens: int(r), Per: time.Duration(period) * time.Millisecond}, nil
}

// rateMaxPeriod is the longest period of a bucket (a day).
const rateMaxPeriod = 24 * time.Hour

// check checks r against the daemon's ranges (Rate{} passes: none).
func (r Rate) check(op, name string) error {
	if r == (Rate{}) {
		return nil
	}
	if err := checkRange(op, name, "rate tokens", r.Tokens, 1, LimitMax); err != nil {
		return err
	}
	if err := checkRange(op, name, "rate burst", r.Burst, 0, LimitMax); err != nil {
		return err
	}
	if r.Per < 0 || r.Per > rateMaxPeriod || (r.Per > 0 && r.Per < time.Millisecond) {
		return newError(int(ErrArgument), op, name, "a rate's period is 1 ms to 24 h")
	}
	return nil
}

// c is r as libsemclient's struct semc_rate.
func (r Rate) c() C.struct_semc_rate {
	var cr C.struct_semc_rate
	cr.rate = C.uint32_t(r.Tokens)
	cr.period_ms = C.uint32_t(r.Per.Milliseconds())
	cr.burst = C.uint32_t(r.Burst)
	return cr
}

// WithRate gives the name a token bucket: created with limit 0, a
// rate-only name (ModeRate: an acquire takes tokens for good, nothing is
// held, its Permit has no PermitID); with a limit, an owned name whose
// permits each need a token too.
func WithRate(r Rate) CreateOption {
	return func(cf *createConfig) { cf.rate = r }
}

// SetRate changes the bucket of name live (Rate{} takes it away).
func (c *Client) SetRate(ctx context.Context, name string, r Rate) error {
	if err := r.check("set-rate", name); err != nil {
		return err
	}
	cr := r.c()
	return c.named(ctx, "set-rate", name, func(cs *C.char) C.int {
		return C.semc_set_rate(c.h, cs, &cr)
	})
}

// check checks what Create was given against the daemon's ranges, before
// any request.
func (cf *createConfig) check(name string, limit int) error {
	lo := 1
	if cf.rate != (Rate{}) {
		lo = 0 // rate-only
	}
	if err := checkRange("create", name, "limit", limit, lo, LimitMax); err != nil {
		return err
	}
	if cf.o.initial_set {
		if err := checkRange("create", name, "initial", cf.initial, 0, limit); err != nil {
			return err
		}
	}
	if err := checkRange("create", name, "max waiters", cf.maxWaiters, 0, LimitMax); err != nil {
		return err
	}
	for g, w := range cf.weights {
		if err := checkRange("create", name, "the weight of "+g, w, 1, 1000); err != nil {
			return err
		}
	}
	return cf.rate.check("create", name)
}

// same is nil when in is what Create asked for (limit, mode, and the rate
// when one was asked), else ErrExists saying what the name has.
func (cf *createConfig) same(name string, limit int, in *Info) error {
	want := Mode(cf.o.mode)
	if cf.rate != (Rate{}) && limit == 0 {
		want = ModeRate
	}
	ok := in.Limit == limit && in.Mode == want
	if cf.rate != (Rate{}) {
		per := cf.rate.Per
		if per == 0 {
			per = time.Second
		}
		ok = ok && in.Rate.Tokens == cf.rate.Tokens && in.Rate.Per == per
	}
	if ok {
		return nil
	}
	return newError(int(ErrExists), "create", name, fmt.Sprintf(
		"%s exists with limit %d (%s), not %d (%s)", name, in.Limit, in.Mode, limit, want))
}

// create is Create once: IfNotExists, when given, is checked by Create.
func (c *Client) create(ctx context.Context, name string, cf *createConfig) error {
	if cf.maxWaiters != 0 || cf.share != ShareNone || len(cf.weights) != 0 ||
		cf.rate != (Rate{}) {
		return c.createQueue(ctx, name, cf)
	}
	return c.named(ctx, "create", name, func(cs *C.char) C.int {
		return C.semc_create_ex(c.h, cs, &cf.o)
	})
}

// createChecked is Create with IfNotExists: a name that exists passes only
// with the limit and mode asked for (the daemon takes any: a caller was
// left with another limit without a word).
func (c *Client) createChecked(ctx context.Context, name string, limit int, cf *createConfig) error {
	cf.o.if_not_exists = false
	for i := 0; i < 3; i++ { // bounded: a name deleted and made again meanwhile
		err := c.create(ctx, name, cf)
		if !errors.Is(err, ErrExists) {
			return err
		}
		in, err := c.Info(ctx, name)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		return cf.same(name, limit, in)
	}
	return c.create(ctx, name, cf)
}

// String is the mode's name: "owned", "signal" or "rate".
func (m Mode) String() string {
	switch m {
	case ModeOwned:
		return "owned"
	case ModeSignal:
		return "signal"
	case ModeRate:
		return "rate"
	}
	return fmt.Sprintf("mode %d", int(m))
}

// Validate tells whether token still holds a permit of name: what the
// resource a permit guards asks before it accepts a holder's work.
func (c *Client) Validate(ctx context.Context, name string, token uint64) (bool, error) {
	var v C.bool
	err := c.named(ctx, "validate", name, func(cs *C.char) C.int {
		return C.semc_validate(c.h, cs, C.uint64_t(token), &v)
	})
	return bool(v), err
}

// Validate tells whether token still holds a permit of the semaphore.
func (s *Semaphore) Validate(ctx context.Context, token uint64) (bool, error) {
	return s.c.Validate(ctx, s.name, token)
}

// Summary is one name as List gives it.
type Summary struct {
	Name      string
	Limit     int
	Available int64
	Mode      Mode
	Holders   int
	Waiters   int
}

// listPages bounds List and Holds: a million pages of up to 1000.
const listPages = 1 << 20

// List returns every name that begins with prefix ("": all), in name
// order, fetched in pages of 1000.
func (c *Client) List(ctx context.Context, prefix string) ([]Summary, error) {
	var out []Summary
	after := ""
	cp := C.CString(prefix)
	defer C.free(unsafe.Pointer(cp))
	for page := 0; page < listPages; page++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ca := C.CString(after)
		next := ""
		err := c.blocking("list", prefix, func() C.int {
			var l *C.struct_semc_list
			r := C.semc_list(c.h, cp, ca, 1000, &l)
			if r != 0 {
				return r
			}
			defer C.semc_list_free(l)
			if l.n > 0 {
				for _, e := range unsafe.Slice(l.entries, int(l.n)) {
					out = append(out, Summary{Name: C.GoString(e.name), Limit: int(e.limit),
						Available: int64(e.available), Mode: Mode(e.mode),
						Holders: int(e.holders), Waiters: int(e.waiters)})
				}
			}
			next = C.GoString(l.next)
			return 0
		})
		C.free(unsafe.Pointer(ca))
		if err != nil {
			return nil, err
		}
		if next == "" {
			break
		}
		after = next
	}
	return out, nil
}

// Hold is one hold of a principal, as Holds lists it.
type Hold struct {
	Name string
	Holder
}

// Holds returns a principal's holds across all names, by permit id: this
// client's principal's (principal ""), or another's (administrators).
func (c *Client) Holds(ctx context.Context, principal string) ([]Hold, error) {
	var out []Hold
	var after uint64
	cp := C.CString(principal)
	defer C.free(unsafe.Pointer(cp))
	for page := 0; page < listPages; page++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var next uint64
		err := c.blocking("holds", "", func() C.int {
			var h *C.struct_semc_holds
			r := C.semc_holds(c.h, cp, C.uint64_t(after), 1000, &h)
			if r != 0 {
				return r
			}
			defer C.semc_holds_free(h)
			if h.n > 0 {
				for _, e := range unsafe.Slice(h.entries, int(h.n)) {
					x := e.holder
					out = append(out, Hold{Name: C.GoString(e.name), Holder: Holder{
						PermitID: uint64(x.permit_id), Token: uint64(x.token), N: int(x.n),
						Who:      who(x.client_name, x.host, x.pid, x.principal, x.since_ms),
						Detached: bool(x.detached), Expires: unixMs(x.expires_ms)}})
				}
			}
			next = uint64(h.next_permit)
			return 0
		})
		if err != nil {
			return nil, err
		}
		if next == 0 {
			break
		}
		after = next
	}
	return out, nil
}
