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

func (t *keyTable) add(c *Client) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.next
	t.next++
	t.clients[k] = c
	return k
}

func (t *keyTable) client(k uintptr) *Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.clients[k]
}

func (t *keyTable) drop(k uintptr) {
	t.mu.Lock()
	delete(t.clients, k)
	t.mu.Unlock()
}

func (t *keyTable) addCall(cl *call) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.next
	t.next++
	t.calls[k] = cl
	return k
}

// takeCall removes and returns the call of k (nil: none), and whether it
// was abandoned.
func (t *keyTable) takeCall(k uintptr) (*call, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cl := t.calls[k]
	if cl == nil {
		return nil, false
	}
	delete(t.calls, k)
	return cl, cl.abandoned
}

func (t *keyTable) addWatch(w *watch) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.next
	t.next++
	t.watches[k] = w
	return k
}

func (t *keyTable) watch(k uintptr) *watch {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.watches[k]
}

func (t *keyTable) dropWatch(k uintptr) {
	t.mu.Lock()
	delete(t.watches, k)
	t.mu.Unlock()
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
	cl := t.calls[k]
	if cl == nil {
		return nil, false
	}
	delete(t.calls, k)
	if !cl.abandoned {
		cl.ch <- r
	}
	return cl, cl.abandoned
}
