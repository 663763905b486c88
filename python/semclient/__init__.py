# SPDX-License-Identifier: BSD-2-Clause
"""semclient: the Python client of semd, the networked counting-semaphore
service, synchronous and asyncio, over libsemclient (semclient(3)).

    import semclient

    with semclient.Client("unix:/run/semd/semd.sock", lease=10) as c:
        with c.semaphore("db/replica", limit=4).acquire(timeout=30) as permit:
            run_query(fencing_token=permit.token)

Sessions, leases, resume, redirects and failover are the C library's: this
package adds the Python idioms (context managers, exceptions, asyncio) and
never speaks the protocol itself. See doc/python.md in semd's source tree.
"""
from . import _semclient
from ._errors import (BadAddress, Cancelled, Closed, Compacted, Deadlock, Disconnected, Error,
                      Exhausted, Exists, HoldLost, InternalError, Invalid, NoReply, NotFound,
                      NotHolder, NotSupported, PermissionDenied, ProtocolError, QueueFull,
                      Replaced, SessionExpired, Timeout, TLSError, Unavailable, Unreachable,
                      UsageError, WouldBlock)
from ._types import (Backup, ClusterNode, ClusterStatus, Group, Hold, Holder, Info, Rate,
                     Session, Summary, Waiter, WatchEvent)
from ._client import Client, MultiPermit, Permit, Semaphore, Watch
from ._aio import AsyncClient, AsyncMultiPermit, AsyncPermit, AsyncSemaphore, AsyncWatch

# The error codes of libsemclient (HoldLost.reason is one of them).
from ._semclient import (E_CANCELLED, E_COMPACTED, E_DISCONNECTED, E_HOLD_LOST, E_QUEUE_FULL,
                         E_REPLACED, E_SESSION_EXPIRED, E_TIMEOUT, E_UNAVAILABLE,
                         E_WOULD_BLOCK)

#: The range of an acquire's priority.
PRIORITY_MIN = _semclient.PRIO_MIN
PRIORITY_MAX = _semclient.PRIO_MAX

__version__ = "0.4.0"


def library_version() -> str:
    """The version of the libsemclient in use."""
    return _semclient.version()


def parse_duration(s: str) -> float:
    """Seconds of a duration as semctl(1) reads it: "250ms", "5s", "2m", "1h", "1.5s"."""
    return _semclient.parse_duration(s) / 1000.0


__all__ = [
    "Client", "Semaphore", "Permit", "MultiPermit", "Watch",
    "AsyncClient", "AsyncSemaphore", "AsyncPermit", "AsyncMultiPermit", "AsyncWatch",
    "Error", "Timeout", "WouldBlock", "UsageError", "BadAddress", "Unreachable", "Disconnected",
    "NoReply", "Unavailable", "TLSError", "ProtocolError", "NotSupported", "Closed",
    "PermissionDenied", "HoldLost", "SessionExpired", "NotFound", "Exists", "NotHolder",
    "Invalid", "Exhausted", "Cancelled", "InternalError", "Deadlock", "QueueFull", "Replaced",
    "Compacted",
    "Session", "Holder", "Waiter", "Rate", "Group", "Info", "Summary", "Hold", "WatchEvent",
    "ClusterNode", "ClusterStatus", "Backup", "library_version", "parse_duration",
    "E_TIMEOUT", "E_WOULD_BLOCK", "E_CANCELLED", "E_UNAVAILABLE", "E_SESSION_EXPIRED",
    "E_DISCONNECTED", "E_HOLD_LOST", "E_QUEUE_FULL", "E_REPLACED", "E_COMPACTED",
    "PRIORITY_MIN", "PRIORITY_MAX",
]
