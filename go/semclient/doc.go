// SPDX-License-Identifier: BSD-2-Clause

// Package semclient is the Go client of semd, the networked counting
// semaphore service, shaped like golang.org/x/sync/semaphore but across
// processes and hosts. It is a cgo binding of libsemclient (semclient(3)),
// so that sessions, leases, failover in a cluster and lost-hold reports
// are the C library's.
//
//	c, err := semclient.Dial(ctx, "tcp:a:7385,tcp:b:7385", semclient.WithLease(10*time.Second))
//	defer c.Close()
//	s := c.Semaphore("db/replica")
//	p, err := s.Acquire(ctx, 1) // waits in the daemon's FIFO line until ctx is done
//	defer p.Release()
//	work(p.Context(ctx), p.Token()) // cancelled if the hold is lost
//
// A Client is one connection and one daemon session, safe for concurrent
// use. One poller goroutine per Client drives the C library
// (semc_fd, semc_timeout, semc_process): it reads replies and events,
// sends the keepalive pings of a session with a lease, ends the
// client-side lease and reconnects. Acquire and Release are asynchronous
// requests whose completion callbacks hand the result to the waiting
// goroutine; a few rare calls (Info, Create, ...) are blocking C calls.
// No Go pointer is passed to C: callbacks carry integer keys.
//
// Errors are *Error values; compare them with the sentinels (ErrTimeout,
// ErrHoldLost, ErrDeadlock, ErrNotFound, ...) using errors.Is. Acquire
// returns ctx.Err() itself when its context ends first.
//
// Build: cgo finds libsemclient through pkg-config ("semclient"); for the
// source tree's build, PKG_CONFIG_PATH=BUILD/client. See doc/go.md.
package semclient
