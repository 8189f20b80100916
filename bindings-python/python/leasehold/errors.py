"""Leasehold's exceptions: one class per stable code of ERR-01.

Every exception the package raises for a failure of Leasehold derives from
:class:`LeaseholdError` and carries the code in ``.code``. The class is named
like the code (``InvalidTtl``, ``EmptyName``, ...), except ``Lost``, which is
:class:`LeaseLost`. See ``docs/errors.md`` for when each is raised.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "Cancelled",
    "Closed",
    "EmptyName",
    "Internal",
    "InvalidArgument",
    "InvalidTtl",
    "LeaseLost",
    "LeaseholdError",
    "NamespaceMismatch",
    "NotReady",
    "Overflow",
    "PermissionDenied",
    "Protocol",
    "Timeout",
    "Unauthenticated",
    "Unavailable",
    "WaitTimeout",
    "is_timeout",
]


class LeaseholdError(Exception):
    """The base of every Leasehold failure; ``code`` is its stable code."""

    code: ClassVar[str] = ""

    @property
    def is_timeout(self) -> bool:
        """Whether this error is itself a :class:`Timeout`: the store took too
        long and the outcome is unknown (SLOT-07). :func:`is_timeout` also
        looks through ``__cause__`` and ``__context__``."""
        return self.code == "Timeout"


class LeaseLost(LeaseholdError):
    """The lease is gone: it ran out, was revoked at max_hold, released
    elsewhere, or the store restarted or closed. ``reason`` says which
    (``"expired"``, ``"revoked"``, ``"unknown"``, ``"restarted"``, ``"closed"``)
    when it is known. Raised by ``async with lock.hold(...)`` when the lease was
    lost while the block ran; the block's own exception, if any, is its
    ``__cause__``."""

    code = "Lost"
    reason: str | None = None


class InvalidTtl(LeaseholdError):
    """A ttl, max_hold, margin, wait or extension that is not a duration in range."""

    code = "InvalidTtl"


class EmptyName(LeaseholdError):
    """An empty lock name, key or lease name."""

    code = "EmptyName"


class PermissionDenied(LeaseholdError):
    """The connection may read but not hold (a read-only token)."""

    code = "PermissionDenied"


class Unauthenticated(LeaseholdError):
    """The server store refused the connection's credentials."""

    code = "Unauthenticated"


class WaitTimeout(LeaseholdError):
    """A hold or acquire spent its ``wait`` in line."""

    code = "WaitTimeout"


class Cancelled(LeaseholdError):
    """The core gave up waiting on a cancellation (a cancelled asyncio task
    raises ``asyncio.CancelledError`` instead)."""

    code = "Cancelled"


class Unavailable(LeaseholdError):
    """The store cannot be reached, or a key's line is full; retryable."""

    code = "Unavailable"


class Timeout(LeaseholdError):
    """A store operation took too long; its outcome is unknown."""

    code = "Timeout"


class NamespaceMismatch(LeaseholdError):
    """A slot namespace opened with other parameters than its first use."""

    code = "NamespaceMismatch"


class Protocol(LeaseholdError):
    """A malformed, oversized or hostile frame or request."""

    code = "Protocol"


class Internal(LeaseholdError):
    """A bug in Leasehold."""

    code = "Internal"


class InvalidArgument(LeaseholdError):
    """An argument not of the form the call takes: a name that is not a
    ``str``, a name over 1024 bytes, a blocking call inside an event loop."""

    code = "InvalidArgument"


class Closed(LeaseholdError):
    """A call on a closed store, or on a store opened before ``os.fork()``."""

    code = "Closed"


class NotReady(LeaseholdError):
    """Nothing can be issued yet (an ID generator's clock behind its floor, a
    tick's sequence used up); retryable."""

    code = "NotReady"


class Overflow(LeaseholdError):
    """A range is used up for good (an ID layout's time bits)."""

    code = "Overflow"


def is_timeout(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a store timeout (SLOT-07): a :class:`Timeout`, or an
    exception whose chain holds one, the chain a traceback shows: each
    exception's ``__cause__``, else its ``__context__`` unless suppressed
    (``raise ... from None``). Outcomes (``None`` from an acquire,
    ``NamespaceMismatch``, ...) are not timeouts. For an exception group,
    ``group.subgroup(is_timeout)`` picks them out."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, Timeout):
            return True
        seen.add(id(exc))
        if exc.__cause__ is not None:
            exc = exc.__cause__
        elif exc.__suppress_context__:
            return False
        else:
            exc = exc.__context__
    return False
