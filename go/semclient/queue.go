// SPDX-License-Identifier: BSD-2-Clause

package semclient

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"os"
	"sort"
	"unsafe"
)

// ShareBy says how a name's permits are shared between groups of waiters.
type ShareBy int

// The ways of sharing a name's permits.
const (
	ShareNone      ShareBy = C.SEMC_SHARE_NONE      // one line, first come first served
	SharePrincipal ShareBy = C.SEMC_SHARE_PRINCIPAL // a group per principal
	ShareKey       ShareBy = C.SEMC_SHARE_KEY       // a group per acquire's WithGroup key
)

// Group is one group of a name with fair shares, as Info lists it.
type Group struct {
	Name    string
	Weight  int
	Share   int // permits: limit x weight / the weights of the active groups
	Held    int // permits held
	Waiting int // acquires waiting
}

// The range of an acquire's priority class (WithPriority).
const (
	PriorityMin = C.SEMC_PRIO_MIN
	PriorityMax = C.SEMC_PRIO_MAX
)

// WithMaxWaiters bounds the name's line: an acquire that would wait while
// n wait fails with ErrQueueFull instead (0: no bound). SetQueue changes
// it later.
func WithMaxWaiters(n int) CreateOption {
	return func(cf *createConfig) { cf.maxWaiters = n }
}

// WithShares splits the name's permits between groups while several
// wait: each is granted in proportion to its weight (1 to 1000; a group
// not in weights weighs 1), first come first served within a group, and
// a group's unused share is lent until the next hand-off. The groups are
// the principals (SharePrincipal) or the acquires' WithGroup keys
// (ShareKey; the principal without one). Owned names only, at creation
// only; such a name takes no multi-name acquires and no priorities.
func WithShares(by ShareBy, weights map[string]int) CreateOption {
	return func(cf *createConfig) { cf.share, cf.weights = by, weights }
}

// createQueue is Create with queue policies (semc_create_queue).
func (c *Client) createQueue(ctx context.Context, name string, cf *createConfig) error {
	if len(cf.weights) > 64 {
		return newError(int(ErrArgument), "create", name, "at most 64 weights")
	}
	groups := make([]string, 0, len(cf.weights))
	for g := range cf.weights {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var q C.struct_semc_queue
	q.max_waiters = C.uint32_t(cf.maxWaiters)
	q.share = C.enum_semc_share_by(cf.share)
	if len(groups) > 0 {
		cw := (*C.struct_semc_weight)(C.calloc(C.size_t(len(groups)),
			C.size_t(unsafe.Sizeof(C.struct_semc_weight{}))))
		ws := unsafe.Slice(cw, len(groups))
		for i, g := range groups {
			ws[i].group = C.CString(g)
			ws[i].weight = C.uint32_t(cf.weights[g])
		}
		defer func() {
			for i := range ws {
				C.free(unsafe.Pointer(ws[i].group))
			}
			C.free(unsafe.Pointer(cw))
		}()
		q.weights, q.n_weights = cw, C.size_t(len(groups))
	}
	var rate *C.struct_semc_rate
	if cf.rate != (Rate{}) {
		cr := cf.rate.c()
		rate = &cr
	}
	return c.named(ctx, "create", name, func(cs *C.char) C.int {
		return C.semc_create_queue(c.h, cs, &cf.o, rate, &q)
	})
}

// SetQueue changes the bound on name's line (0: none); see WithMaxWaiters.
func (c *Client) SetQueue(ctx context.Context, name string, maxWaiters int) error {
	if err := checkRange("set-queue", name, "max waiters", maxWaiters, 0, LimitMax); err != nil {
		return err
	}
	var q C.struct_semc_queue
	q.max_waiters = C.uint32_t(maxWaiters)
	return c.named(ctx, "set-queue", name, func(cs *C.char) C.int {
		return C.semc_set_queue(c.h, cs, &q)
	})
}

// WithPriority puts the Semaphore's acquires in priority class p
// (PriorityMin to PriorityMax, default 0): a higher class is served
// first, first come first served within a class, and a class is worth 10
// seconds of waiting (an acquire of class -8 waits at most 150 s for
// newer ones).
func WithPriority(p int) SemaphoreOption { return func(s *Semaphore) { s.priority = p } }

// WithGroup makes the Semaphore's acquires count in group key on a name
// shared by key (WithShares(ShareKey, ...)); by default the principal's.
func WithGroup(key string) SemaphoreOption { return func(s *Semaphore) { s.group = key } }

// WithReplace gives the Semaphore's acquires a replace key: once granted
// or queued, an acquire cancels the waiting one of the same principal
// with that key on the name, which fails with ErrReplaced ("latest
// wins").
func WithReplace(key string) SemaphoreOption { return func(s *Semaphore) { s.replace = key } }

// BackupInfo describes a backup Backup wrote.
type BackupInfo struct {
	Bytes  uint64   // of state
	Time   int64    // the daemon's unix ms when it was taken
	SHA256 [32]byte // of the state
}

// Backup writes a consistent copy of the daemon's whole state (an
// administrator's right) to f from its current offset, as a backup file
// that semd --restore reads: a 64-byte header, then the state. The
// checksum is verified before Backup returns; on an error f holds part of
// a backup: discard it.
func (c *Client) Backup(ctx context.Context, f *os.File) (BackupInfo, error) {
	var bi C.struct_semc_backup_info
	if err := ctx.Err(); err != nil {
		return BackupInfo{}, err
	}
	fd := C.int(f.Fd())
	err := c.blocking("backup", "", func() C.int { return C.semc_backup(c.h, fd, &bi) })
	if err != nil {
		return BackupInfo{}, err
	}
	out := BackupInfo{Bytes: uint64(bi.bytes), Time: int64(bi.wall_ms)}
	for i := range out.SHA256 {
		out.SHA256[i] = byte(bi.sha256[i])
	}
	return out, nil
}

// Parent names the session a client's process runs under (WithParent).
type Parent struct {
	Session uint64 // the parent's Session().ID
	Link    uint64 // the parent's SessionLink()
}

// WithParent tells the daemon that the session of parent waits for this
// client's (a program run while parent holds a name, as semctl run
// does), so that it sees a deadlock across the two. Without it the
// library takes the parent from $SEMD_SESSION, which semctl run exports;
// WithParent(Parent{}) means none. The daemon ignores a parent that does
// not exist, is another principal's, or whose link does not match.
func WithParent(p Parent) Option {
	return func(o *dialConfig) { o.parent, o.parentSet = p, true }
}

// SessionLink returns the link of the current session, for a child's
// WithParent (0 while disconnected, or from a daemon older than 0.4).
func (c *Client) SessionLink() uint64 {
	var link uint64
	_ = c.blocking("session-link", "", func() C.int {
		link = uint64(C.semc_session_link(c.h))
		return 0
	})
	return link
}
