// SPDX-License-Identifier: BSD-2-Clause

package semclient

/*
#include <semclient.h>
*/
import "C"

// Code is one of libsemclient's error codes (enum semc_error): the
// protocol's codes -1 to -18 and the library's own from -100 on.
type Code int

// Error is the error of a failed operation: its code, the operation and
// name it concerns, and the daemon's (or the library's) message. Compare
// it with the sentinel errors with errors.Is, for example
// errors.Is(err, semclient.ErrTimeout).
type Error struct {
	Code    Code   // libsemclient's code (negative)
	Op      string // "acquire", "release", "info", ...
	Name    string // the semaphore, when there is one
	Message string // the daemon's or the library's text
}

// Error formats the error as "semclient: OP NAME: MESSAGE (CODE NAME)".
func (e *Error) Error() string {
	s := "semclient: " + e.Op
	if e.Name != "" {
		s += " " + e.Name
	}
	m := e.Message
	if m == "" {
		m = e.Code.String()
	}
	return s + ": " + m
}

// Is reports whether target is the sentinel error of e's code. A hold
// lost for any reason (forced release, expired session, daemon shutdown,
// the client-side lease) also matches ErrHoldLost.
func (e *Error) Is(target error) bool {
	t, ok := target.(Code)
	if !ok {
		return false
	}
	if t == e.Code {
		return true
	}
	return t == ErrHoldLost && e.Op == "lost"
}

// Error names the code (semc_strerror), so that a Code is an error: the
// sentinels below are Codes.
func (c Code) Error() string { return "semclient: " + c.String() }

// String is semc_strerror's name of the code.
func (c Code) String() string {
	if c == ErrClosed {
		return "client closed"
	}
	return C.GoString(C.semc_strerror(C.int(c)))
}

// The sentinel errors, one per libsemclient code; an *Error matches the
// one of its code with errors.Is.
const (
	ErrTimeout          Code = C.SEMC_E_TIMEOUT         // the acquire's deadline passed
	ErrWouldBlock       Code = C.SEMC_E_WOULD_BLOCK     // TryAcquire: not free now
	ErrNotFound         Code = C.SEMC_E_NOT_FOUND       // no such semaphore
	ErrExists           Code = C.SEMC_E_EXISTS          // Create: it exists already
	ErrNotHolder        Code = C.SEMC_E_NOT_HOLDER      // the permit is not ours
	ErrPermissionDenied Code = C.SEMC_E_PERMISSION      // the ACL refuses it
	ErrInvalid          Code = C.SEMC_E_INVALID         // the daemon refused the arguments
	ErrExhausted        Code = C.SEMC_E_EXHAUSTED       // a daemon limit was reached
	ErrCancelled        Code = C.SEMC_E_CANCELLED       // cancelled (or force-released)
	ErrUnavailable      Code = C.SEMC_E_UNAVAILABLE     // shutting down, no leader, or writes refused (a full disk)
	ErrProtocol         Code = C.SEMC_E_PROTOCOL        // a malformed frame
	ErrInternal         Code = C.SEMC_E_INTERNAL        // the daemon failed
	ErrSessionExpired   Code = C.SEMC_E_SESSION_EXPIRED // the daemon ended the session
	ErrDeadlock         Code = C.SEMC_E_DEADLOCK        // waiting would close a cycle
	ErrQueueFull        Code = C.SEMC_E_QUEUE_FULL      // the name's line is at its max waiters
	ErrReplaced         Code = C.SEMC_E_REPLACED        // replaced by a newer acquire with its key
	ErrCompacted        Code = C.SEMC_E_COMPACTED       // WatchFrom: the revision is no longer kept
	ErrConnect          Code = C.SEMC_E_CONNECT         // cannot connect
	ErrDisconnected     Code = C.SEMC_E_DISCONNECTED    // the connection broke
	ErrHoldLost         Code = C.SEMC_E_HOLD_LOST       // a hold was lost
	ErrNoReply          Code = C.SEMC_E_NO_REPLY        // no answer in time
	ErrNoMemory         Code = C.SEMC_E_NOMEM           // out of memory
	ErrAddress          Code = C.SEMC_E_ADDRESS         // malformed address
	ErrNotSupported     Code = C.SEMC_E_NOT_SUPPORTED   // not supported here
	ErrTLS              Code = C.SEMC_E_TLS             // TLS setup or handshake
	ErrSystem           Code = C.SEMC_E_SYSTEM          // a system call failed
	ErrArgument         Code = C.SEMC_E_ARG             // a bad argument to the library
	// ErrClosed is returned by calls on a closed Client and by calls
	// that were pending when it closed.
	ErrClosed Code = -1000
)

// newError builds the *Error of a failed call (nil for code 0).
func newError(code int, op, name, msg string) error {
	if code == 0 {
		return nil
	}
	if Code(code) == ErrClosed {
		return &Error{Code: ErrClosed, Op: op, Name: name, Message: "client closed"}
	}
	return &Error{Code: Code(code), Op: op, Name: name, Message: msg}
}

// lastError is newError with the calling thread's semc_last_message(): it
// must run on the OS thread that made the failed call (see Client.blocking).
func lastError(code C.int, op, name string) error {
	if code >= 0 {
		return nil
	}
	return newError(int(code), op, name, C.GoString(C.semc_last_message()))
}
