// SPDX-License-Identifier: BSD-2-Clause

package semclient

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"sync"
	"time"
	"unsafe"
)

// EventKind says what a watch's Event reports.
type EventKind int

// The kinds of watch events; EventGap is the package's own.
const (
	EventWait     EventKind = C.SEMC_WATCH_WAIT     // a request queued
	EventGrant    EventKind = C.SEMC_WATCH_GRANT    // permits granted
	EventRelease  EventKind = C.SEMC_WATCH_RELEASE  // permits given back
	EventTimeout  EventKind = C.SEMC_WATCH_TIMEOUT  // a queued request's deadline passed
	EventCancel   EventKind = C.SEMC_WATCH_CANCEL   // a queued request left without a grant
	EventLimit    EventKind = C.SEMC_WATCH_LIMIT    // the limit changed
	EventRate     EventKind = C.SEMC_WATCH_RATE     // the token bucket changed
	EventCreate   EventKind = C.SEMC_WATCH_CREATE   // the name was created
	EventDelete   EventKind = C.SEMC_WATCH_DELETE   // the name was deleted
	EventDeadlock EventKind = C.SEMC_WATCH_DEADLOCK // a request was refused: deadlock
	EventQueue    EventKind = C.SEMC_WATCH_QUEUE    // the queue policies changed
	EventReplaced EventKind = C.SEMC_WATCH_REPLACED // a queued request was replaced
	// EventGap says the connection was replaced (a reconnection or a
	// failover) and the watch made again: events in between are missing
	// (for WatchFrom's watches: only when the daemon no longer keeps them).
	EventGap EventKind = 100
)

// String names the kind: "wait", "grant", ..., "gap".
func (k EventKind) String() string {
	if k == EventGap {
		return "gap"
	}
	return C.GoString(C.semc_watch_kind_name(C.enum_semc_watch_kind(k)))
}

// Event is one change of a watched semaphore, as the daemon reported it.
type Event struct {
	Name      string
	Kind      EventKind
	Time      time.Time // the daemon's clock
	N         int
	PermitID  uint64
	Token     uint64
	RequestID uint64
	Principal string // "" when the watcher may not see who
	Client    string
	Host      string
	PID       int
	Holders   int // after the event
	Waiters   int
	Available int64
	Limit     int
	Reason    string
	// Revision numbers the daemon's events: one more than the event
	// before it, the same on every node of a cluster (0 for EventGap).
	// WatchFrom(ctx, name, ev.Revision+1) resumes after ev.
	Revision uint64
}

// watch is one Watch: the callback queues events, its goroutine hands
// them to the channel.
type watch struct {
	c      *Client
	key    uintptr
	name   string
	prefix bool
	resume bool   // WatchFrom: on a new connection, replay what the old one missed
	top    uint64 // the latest revision received (mu): older ones are repeats

	mu      sync.Mutex
	queue   []Event
	wake    chan struct{} // cap 1: events queued
	rewatch chan struct{} // cap 1: the connection was replaced
	stop    chan struct{} // closed by end()
	once    sync.Once
}

func (w *watch) push(ev Event) {
	w.mu.Lock()
	if w.resume && ev.Revision != 0 {
		if ev.Revision <= w.top {
			w.mu.Unlock() // a replay repeating what the old watch delivered
			return
		}
		w.top = ev.Revision
	}
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watch) kick() {
	select {
	case w.rewatch <- struct{}{}:
	default:
	}
}

func (w *watch) end() { w.once.Do(func() { close(w.stop) }) }

// start asks the daemon for the watch, from revision from (0: live only),
// and returns its id.
func (w *watch) start(from uint64) (int64, error) {
	var id int64
	cs := C.CString(w.name)
	defer C.free(unsafe.Pointer(cs))
	err := w.c.blocking("watch", w.name, func() C.int {
		var r C.int64_t
		if from != 0 {
			r = C.gsc_watch_from(w.c.h, cs, C.bool(w.prefix), C.uint64_t(from), C.uintptr_t(w.key))
		} else {
			r = C.gsc_watch(w.c.h, cs, C.bool(w.prefix), C.uintptr_t(w.key))
		}
		if r < 0 {
			return C.int(r)
		}
		id = int64(r)
		return 0
	})
	return id, err
}

// Watch reports the events of the semaphore name on the returned
// channel until ctx is done or the client closes; then the channel
// closes. Events are queued without bound while the program does not
// read them (the daemon is never kept waiting). After a reconnection the
// watch is made again and an Event of kind EventGap comes first.
func (c *Client) Watch(ctx context.Context, name string) (<-chan Event, error) {
	return c.watch(ctx, name, false, false, 0)
}

// WatchPrefix is Watch for every name that begins with prefix ("": all).
func (c *Client) WatchPrefix(ctx context.Context, prefix string) (<-chan Event, error) {
	return c.watch(ctx, prefix, true, false, 0)
}

// WatchFrom is Watch that first replays the events of name from revision
// from on (0: none, live only) that the daemon still keeps (its
// --watch-history), and after a reconnection or a failover resumes from
// the event after the last one received (with none, from the daemon's
// last revision when the watch began) instead of reporting a gap: no
// event is lost or repeated. It fails with ErrCompacted when some events
// from from on are no longer kept; after a reconnection that finds them
// gone, an EventGap comes and the watch goes on live.
func (c *Client) WatchFrom(ctx context.Context, name string, from uint64) (<-chan Event, error) {
	return c.watch(ctx, name, false, true, from)
}

// WatchPrefixFrom is WatchFrom for every name that begins with prefix.
func (c *Client) WatchPrefixFrom(ctx context.Context, prefix string, from uint64) (<-chan Event, error) {
	return c.watch(ctx, prefix, true, true, from)
}

func (c *Client) watch(ctx context.Context, name string, prefix, resume bool, from uint64) (<-chan Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &watch{c: c, name: name, prefix: prefix, resume: resume,
		wake: make(chan struct{}, 1), rewatch: make(chan struct{}, 1), stop: make(chan struct{})}
	w.key = table.addWatch(w)
	c.pmu.Lock()
	c.watches[w.key] = w
	c.pmu.Unlock()
	id, err := w.start(from)
	if err != nil {
		c.pmu.Lock()
		delete(c.watches, w.key)
		c.pmu.Unlock()
		table.dropWatch(w.key)
		return nil, err
	}
	out := make(chan Event)
	go w.run(ctx, id, out)
	return out, nil
}

// run hands the queued events to out, makes the watch again after a
// reconnection, and ends it when ctx is done or the client closes.
func (w *watch) run(ctx context.Context, id int64, out chan<- Event) {
	defer close(out)
	defer func() {
		w.c.pmu.Lock()
		delete(w.c.watches, w.key)
		w.c.pmu.Unlock()
		if id > 0 {
			_ = w.c.blocking("unwatch", w.name, func() C.int {
				return C.semc_unwatch(w.c.h, C.uint64_t(id))
			})
		}
		table.dropWatch(w.key)
	}()
	for {
		w.mu.Lock()
		var ev Event
		have := len(w.queue) > 0
		if have {
			ev = w.queue[0]
			w.queue[0] = Event{}
			w.queue = w.queue[1:]
		}
		w.mu.Unlock()
		// With an event, wait to hand it over; without, for the next one.
		var send chan<- Event
		var wake <-chan struct{}
		if have {
			send = out
		} else {
			wake = w.wake
		}
		select {
		case send <- ev:
		case <-wake:
		case <-ctx.Done():
			return
		case <-w.stop:
			id = 0
			return
		case <-w.rewatch:
			if have {
				w.mu.Lock()
				w.queue = append([]Event{ev}, w.queue...)
				w.mu.Unlock()
			}
			if !w.again(&id) {
				return
			}
		}
	}
}

// again makes the watch on the new connection and queues an EventGap,
// unless a WatchFrom's replays what the old connection did not deliver:
// from where libsemclient says the old watch id left off, after the last
// event it delivered or, with none, after the daemon's last revision when
// it began (so that a watch that saw no event misses none either).
func (w *watch) again(id *int64) bool {
	from := uint64(0)
	old := C.uint64_t(*id)
	// The old watch went with its connection: read where it left off,
	// then let libsemclient forget it.
	_ = w.c.blocking("watch", w.name, func() C.int {
		if w.resume {
			from = uint64(C.semc_watch_next_revision(w.c.h, old))
		}
		C.semc_unwatch(w.c.h, old)
		return 0
	})
	n, err := w.start(from)
	if from != 0 && errors.Is(err, ErrCompacted) {
		from = 0
		n, err = w.start(0)
	}
	if err != nil {
		*id = 0
		return false
	}
	*id = n
	if from == 0 {
		w.mu.Lock()
		w.top = 0 // live again: revisions start afresh
		w.mu.Unlock()
		w.push(Event{Name: w.name, Kind: EventGap, Time: time.Now()})
	}
	return true
}
