// SPDX-License-Identifier: BSD-2-Clause

package semclient

import (
	"context"
	"sync"
)

// Locker is a sync.Locker over one permit of a semaphore, for code that
// wants a sync.Locker. Lock panics when Acquire fails (a broken
// connection, a deadlock, a closed client) and Unlock panics when no
// permit is held or Release fails: use Acquire and Release to handle the
// errors. Lock and Unlock may be called from different goroutines, as
// with sync.Mutex; the Locker holds at most one permit at a time.
type Locker struct {
	s  *Semaphore
	mu sync.Mutex
	p  *Permit
}

var _ sync.Locker = (*Locker)(nil)

// Locker returns a sync.Locker taking one permit of s (see Locker).
func (s *Semaphore) Locker() *Locker { return &Locker{s: s} }

// Lock acquires one permit, waiting as long as it takes; it panics on an
// error.
func (l *Locker) Lock() {
	p, err := l.s.Acquire(context.Background(), 1)
	if err != nil {
		panic(err)
	}
	l.mu.Lock()
	if l.p != nil {
		l.mu.Unlock()
		_ = p.Release()
		panic("semclient: Locker.Lock while locked (its semaphore's limit is above 1)")
	}
	l.p = p
	l.mu.Unlock()
}

// Unlock gives the permit back; it panics when the Locker holds none or
// the release fails (a hold lost included).
func (l *Locker) Unlock() {
	l.mu.Lock()
	p := l.p
	l.p = nil
	l.mu.Unlock()
	if p == nil {
		panic("semclient: Locker.Unlock of an unlocked Locker")
	}
	if err := p.Release(); err != nil {
		panic(err)
	}
}

// Permit returns the permit the Locker holds now (nil: none), for its
// Token or Lost channel.
func (l *Locker) Permit() *Permit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.p
}
