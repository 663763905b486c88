// SPDX-License-Identifier: BSD-2-Clause

package semclient

import "sync"

// keyTable maps the integer keys handed to C as callback arguments to the
// calls, watches and clients they stand for: no Go pointer ever goes to C.
type keyTable struct {
	mu      sync.Mutex
	next    uintptr
	calls   map[uintptr]*call
	clients map[uintptr]*Client
	watches map[uintptr]*watch
}

var table = &keyTable{next: 1, calls: map[uintptr]*call{}, clients: map[uintptr]*Client{},
	watches: map[uintptr]*watch{}}

// keyPut stores v under a new key of the table's one sequence; keyGet
// and keyDrop read and remove it. The maps are the table's, under its mutex.
func keyPut[T any](t *keyTable, m map[uintptr]T, v T) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.next
	t.next++
	m[k] = v
	return k
}

func keyGet[T any](t *keyTable, m map[uintptr]T, k uintptr) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	return m[k]
}

func keyDrop[T any](t *keyTable, m map[uintptr]T, k uintptr) {
	t.mu.Lock()
	delete(m, k)
	t.mu.Unlock()
}

func (t *keyTable) add(c *Client) uintptr     { return keyPut(t, t.clients, c) }
func (t *keyTable) client(k uintptr) *Client  { return keyGet(t, t.clients, k) }
func (t *keyTable) drop(k uintptr)            { keyDrop(t, t.clients, k) }
func (t *keyTable) addCall(cl *call) uintptr  { return keyPut(t, t.calls, cl) }
func (t *keyTable) addWatch(w *watch) uintptr { return keyPut(t, t.watches, w) }
func (t *keyTable) watch(k uintptr) *watch    { return keyGet(t, t.watches, k) }
func (t *keyTable) dropWatch(k uintptr)       { keyDrop(t, t.watches, k) }

// takeCall removes and returns the call of k (nil: none), and whether it
// was abandoned.
func (t *keyTable) takeCall(k uintptr) (*call, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cl := t.takeLocked(k); cl != nil {
		return cl, cl.abandoned
	}
	return nil, false
}

// takeLocked removes and returns the call of k (nil: none), t.mu held.
func (t *keyTable) takeLocked(k uintptr) *call {
	cl := t.calls[k]
	if cl != nil {
		delete(t.calls, k)
	}
	return cl
}

// failClient completes every call of c still waiting (after semc_free(),
// which runs no callback) with ErrClosed.
func (t *keyTable) failClient(c *Client) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, cl := range t.calls {
		if cl.c != c {
			continue
		}
		delete(t.calls, k)
		if !cl.abandoned {
			cl.ch <- result{err: int(ErrClosed)}
		}
	}
}

// callsOf counts c's calls waiting for a callback.
func (t *keyTable) callsOf(c *Client) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, cl := range t.calls {
		if cl.c == c {
			n++
		}
	}
	return n
}

// complete takes the call of k and, unless it was abandoned, hands it r
// under the lock (so that abandon() either sees r or marks the call
// before r is handed over). It returns the call (nil: none) and whether
// it was abandoned: the caller then deals with r itself.
func (t *keyTable) complete(k uintptr, r result) (*call, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cl := t.takeLocked(k)
	if cl == nil {
		return nil, false
	}
	if !cl.abandoned {
		if cl.ordered && r.err == 0 {
			cl.c.lastGrant++
			r.seq = cl.c.lastGrant
		}
		cl.ch <- r
	}
	return cl, cl.abandoned
}
