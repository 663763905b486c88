// SPDX-License-Identifier: BSD-2-Clause

package semclient

/*
#include "shim.h"
*/
import "C"

import (
	"time"
	"unsafe"
)

// goSemcDone is every asynchronous request's completion callback: it
// copies the result out of C memory (valid during the call only) and
// completes the call of key.
//
//export goSemcDone
func goSemcDone(r *C.struct_semc_result, key C.uintptr_t) {
	res := result{err: int(r.error), released: uint32(r.released)}
	if r.error != 0 {
		res.msg = C.GoString(r.message)
	}
	if r.grant != nil {
		g := r.grant
		res.grant = Grant{PermitID: uint64(g.permit_id), Token: uint64(g.token), N: int(g.n),
			Waited: time.Duration(g.waited_us) * time.Microsecond}
	}
	if r.multi != nil && r.multi.n > 0 {
		gs := unsafe.Slice(r.multi.grants, int(r.multi.n))
		res.multi = make([]Grant, len(gs))
		for i := range gs {
			res.multi[i] = Grant{Name: C.GoString(gs[i].name), PermitID: uint64(gs[i].permit_id),
				Token: uint64(gs[i].token), N: int(gs[i].n),
				Waited: time.Duration(r.multi.waited_us) * time.Microsecond}
		}
	}
	cl, abandoned := table.complete(uintptr(key), res)
	if cl == nil || !abandoned || res.err != 0 {
		return
	}
	// A grant nobody waits for any more (its Acquire's context ended
	// while the cancel crossed the grant): give it back at once, by its
	// permit id, or by count (a signal-mode grant has no id: dropped, its
	// permits were lost for good). This runs inside a C call on the
	// handle, which is therefore alive.
	c := cl.c
	if res.multi == nil && (res.grant.PermitID != 0 || res.grant.N > 0) {
		c.giveBack(cl.name, res.grant)
	}
	for _, g := range res.multi {
		c.giveBack(g.Name, g)
	}
}

// giveBack sends an up of g's permit whose answer nobody waits for: by its
// permit id, or its N permits by count when it has none (a signal-mode
// grant; on a rate-only name, whose tokens are taken for good, the daemon
// refuses it). From a callback, inside a C call on the handle.
func (c *Client) giveBack(name string, g Grant) {
	cl := newCall(c)
	cl.abandoned = true
	key := table.addCall(cl)
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	if C.gsc_up_async(c.h, cs, C.uint32_t(g.N), C.uint64_t(g.PermitID), C.uintptr_t(key)) < 0 {
		table.takeCall(key)
	}
}

// returnGrant is giveBack outside a callback (an Acquire that gave up on a
// grant that had come meanwhile).
func (c *Client) returnGrant(name string, g Grant) {
	if g.PermitID == 0 && g.N == 0 {
		return
	}
	cl := newCall(c)
	cl.abandoned = true
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	_, _ = c.async("release", name, cl, func(k C.uintptr_t) C.int64_t {
		return C.gsc_up_async(c.h, cs, C.uint32_t(g.N), C.uint64_t(g.PermitID), k)
	})
}

// goSemcEvent is the connection's event callback: lost holds close their
// Permit's Lost channel; a new session or a resume makes the watches again.
//
//export goSemcEvent
func goSemcEvent(ev *C.struct_semc_event, key C.uintptr_t) {
	c := table.client(uintptr(key))
	if c == nil {
		return
	}
	switch ev._type {
	case C.SEMC_EV_HOLD_LOST:
		name := C.GoString(ev.name)
		c.holdLost(permitKey{name, uint64(ev.permit_id)},
			newError(int(ev.error), "lost", name, C.GoString(ev.message)))
	case C.SEMC_EV_RECONNECTED, C.SEMC_EV_RESUMED:
		c.reconnects.Add(1)
		c.pmu.Lock()
		for _, w := range c.watches {
			w.kick()
		}
		c.pmu.Unlock()
	}
}

// goSemcWatch is every watch's callback: the event is copied and queued
// for the watch's goroutine, never blocking the caller.
//
//export goSemcWatch
func goSemcWatch(ev *C.struct_semc_watch_event, key C.uintptr_t) {
	w := table.watch(uintptr(key))
	if w == nil {
		return
	}
	w.push(Event{
		Name:      C.GoString(ev.name),
		Kind:      EventKind(ev.kind),
		Time:      time.UnixMilli(int64(ev.time_ms)),
		N:         int(ev.n),
		PermitID:  uint64(ev.permit_id),
		Token:     uint64(ev.token),
		RequestID: uint64(ev.request_id),
		Principal: C.GoString(ev.principal),
		Client:    C.GoString(ev.client_name),
		Host:      C.GoString(ev.host),
		PID:       int(ev.pid),
		Holders:   int(ev.holders),
		Waiters:   int(ev.waiters),
		Available: int64(ev.available),
		Limit:     int(ev.limit),
		Reason:    C.GoString(ev.reason),
		Revision:  uint64(ev.revision),
	})
}
