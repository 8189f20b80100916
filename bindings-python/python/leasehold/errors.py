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
    "PermissionDenied",
    "Protocol",
    "Timeout",
    "Unauthenticated",
    "Unavailable",
    "WaitTimeout",
]


class LeaseholdError(Exception):
    """The base of every Leasehold failure; ``code`` is its stable code."""

    code: ClassVar[str] = ""

    @property
    def is_timeout(self) -> bool:
        """Whether the store took too long and the outcome is unknown (SLOT-07)."""
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
