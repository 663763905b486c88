# SPDX-License-Identifier: BSD-2-Clause
"""The exceptions of semclient: one class per kind of failure, all under
:class:`Error`, grouped as semctl(1)'s stable exit codes group them (each
class has that code as ``exit_code``), and under the built-in exception a
Python program would catch for it (``TimeoutError``, ``ConnectionError``,
``PermissionError``, ``ValueError``, ``LookupError``)."""
from __future__ import annotations

from typing import Optional

from . import _semclient as _c

__all__ = [
    "Error", "Timeout", "WouldBlock", "UsageError", "BadAddress", "Unreachable",
    "Disconnected", "NoReply", "Unavailable", "TLSError", "ProtocolError", "NotSupported",
    "Closed", "PermissionDenied", "HoldLost", "SessionExpired", "NotFound", "Exists",
    "NotHolder", "Invalid", "Exhausted", "Cancelled", "InternalError", "Deadlock",
    "QueueFull", "Replaced", "Compacted",
]


class Error(Exception):
    """A failed semclient operation.

    ``code`` is libsemclient's error code (a negative ``enum semc_error``,
    semclient(3)), ``message`` the daemon's or the library's text, ``op`` the
    operation ("acquire", "release", "info", ...) and ``name`` the semaphore
    it concerns (or None). ``exit_code`` is what semctl(1) exits with for it.
    """

    exit_code = 6

    def __init__(self, message: str = "", *, code: int = 0, op: str = "",
                 name: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.op = op
        self.name = name

    def __str__(self) -> str:
        where = " ".join(x for x in (self.op, self.name) if x)
        return "%s: %s" % (where, self.message) if where else self.message

    def __repr__(self) -> str:
        return "%s(%r, code=%d, op=%r, name=%r)" % (
            type(self).__name__, self.message, self.code, self.op, self.name)

    def __reduce__(self):  # picklable across processes (multiprocessing)
        return (_rebuild, (type(self), self.message, self.code, self.op, self.name))


def _rebuild(cls, message, code, op, name):
    return cls(message, code=code, op=op, name=name)


class Timeout(Error, TimeoutError):
    """The acquire's deadline passed without a grant (semctl exits 1)."""
    exit_code = 1


class WouldBlock(Error):
    """A try (timeout 0) found the permits taken (semctl exits 1)."""
    exit_code = 1


class UsageError(Error, ValueError):
    """A bad argument to the library (semctl exits 2)."""
    exit_code = 2


class BadAddress(UsageError):
    """A malformed server address."""


class Unreachable(Error, ConnectionError):
    """The daemon cannot be reached or talked to (semctl exits 3)."""
    exit_code = 3


class Disconnected(Unreachable):
    """The connection broke and the request could not be completed."""


class NoReply(Unreachable):
    """The daemon did not answer in time."""


class Unavailable(Unreachable):
    """The daemon is shutting down, or a cluster has no leader."""


class TLSError(Unreachable):
    """TLS setup, handshake or verification failed."""


class ProtocolError(Unreachable):
    """A malformed frame."""


class NotSupported(Unreachable):
    """Not supported here (a handle used in a forked child, ...)."""


class Closed(Unreachable):
    """The client was closed."""


class PermissionDenied(Error, PermissionError):
    """The daemon's access rules refuse it (semctl exits 4)."""
    exit_code = 4


class HoldLost(Error):
    """A hold was lost, or could no longer be guaranteed (semctl exits 5).

    ``reason`` is the code that says why: ``E_CANCELLED`` (force-released,
    or its semaphore deleted with force), ``E_SESSION_EXPIRED`` (the daemon
    ended the session), ``E_UNAVAILABLE`` (the daemon shut down),
    ``E_HOLD_LOST`` (the client-side lease ended first: no answer in time; in
    a cluster, for a session without a lease, the leader's election timeout),
    ``E_DISCONNECTED`` (the connection of a session without a lease broke).
    """
    exit_code = 5

    def __init__(self, message: str = "", *, code: int = _c.E_HOLD_LOST, op: str = "lost",
                 name: Optional[str] = None, reason: Optional[int] = None) -> None:
        super().__init__(message, code=code, op=op, name=name)
        self.reason = code if reason is None else reason


class SessionExpired(HoldLost):
    """The daemon ended the session, and with it its holds."""


class NotFound(Error, LookupError):
    """No such semaphore (or no such request)."""


class Exists(Error):
    """The semaphore exists already (with another limit, for an acquire
    that creates it)."""


class NotHolder(Error):
    """The permit is not this client's."""


class Invalid(Error, ValueError):
    """The daemon refused the arguments (a name of 0 or more than 255
    bytes, a count above the limit, ...)."""


class Exhausted(Error):
    """A limit of the daemon was reached."""


class Cancelled(Error):
    """The request was cancelled."""


class InternalError(Error):
    """The daemon failed."""


class Deadlock(Error):
    """Waiting would close a cycle of sessions each waiting for a hold of
    the next; the message names the cycle (semctl exits 7)."""
    exit_code = 7


class QueueFull(Error):
    """The name's queue is at its ``max_waiters``: the acquire was refused
    rather than queued (semctl exits 8)."""
    exit_code = 8


class Replaced(Cancelled):
    """The waiting acquire was replaced by a newer one of the same
    principal with its ``replace`` key ("latest wins"; semctl exits 9)."""
    exit_code = 9


class Compacted(Error, LookupError):
    """A watch's ``from_revision`` is no longer kept by the daemon; the
    message says the oldest revision it still keeps."""


_BY_CODE = {
    _c.E_TIMEOUT: Timeout,
    _c.E_WOULD_BLOCK: WouldBlock,
    _c.E_NOT_FOUND: NotFound,
    _c.E_EXISTS: Exists,
    _c.E_NOT_HOLDER: NotHolder,
    _c.E_PERMISSION: PermissionDenied,
    _c.E_INVALID: Invalid,
    _c.E_EXHAUSTED: Exhausted,
    _c.E_CANCELLED: Cancelled,
    _c.E_UNAVAILABLE: Unavailable,
    _c.E_PROTOCOL: ProtocolError,
    _c.E_INTERNAL: InternalError,
    _c.E_SESSION_EXPIRED: SessionExpired,
    _c.E_DEADLOCK: Deadlock,
    _c.E_QUEUE_FULL: QueueFull,
    _c.E_REPLACED: Replaced,
    _c.E_COMPACTED: Compacted,
    _c.E_CONNECT: Unreachable,
    _c.E_DISCONNECTED: Disconnected,
    _c.E_HOLD_LOST: HoldLost,
    _c.E_NO_REPLY: NoReply,
    _c.E_NOMEM: Error,
    _c.E_ADDRESS: BadAddress,
    _c.E_NOT_SUPPORTED: NotSupported,
    _c.E_TLS: TLSError,
    _c.E_SYSTEM: Error,
    _c.E_ARG: UsageError,
    _c.E_CLOSED: Closed,
}


def from_code(code: int, message: str, op: str = "", name: Optional[str] = None) -> Error:
    """The exception of a libsemclient error code."""
    cls = _BY_CODE.get(code, Error)
    return cls(message or _c.strerror(code), code=code, op=op, name=name)


def lost(reason: int, message: str, name: Optional[str]) -> HoldLost:
    """The HoldLost of a hold lost for reason (an error code)."""
    cls = SessionExpired if reason == _c.E_SESSION_EXPIRED else HoldLost
    return cls(message or _c.strerror(reason), code=_c.E_HOLD_LOST, op="lost", name=name,
               reason=reason)


_c._set_error_factory(from_code)
