"""Leasehold: leases and fenced locks for asyncio, over one Rust core.

::

    import leasehold

    store = await leasehold.connect("leasehold://127.0.0.1:7450")
    summaries = store.lock("summaries", ttl="30s")
    async with summaries.hold("chat-1") as lease:   # a lost lease cancels the block
        await save_summary("chat-1", lease.fence)   # fence: int

Every failure raises a subclass of :class:`LeaseholdError` with its ``code``.
"""

from __future__ import annotations

from ._hold import Hold, HoldMany, TryHold
from ._ids import IdGenerator, IdLayout, IdParts
from ._native import HolderInfo, Lease, __version__
from ._slots import HeldSlot, Owner, SlotHold, SlotLease, Slots
from ._store import Lock, ManualLease, Store, connect, connect_blocking, memory
from ._types import Duration, Pem
from .errors import (
    Cancelled,
    Closed,
    EmptyName,
    Internal,
    InvalidArgument,
    InvalidTtl,
    LeaseholdError,
    LeaseLost,
    NamespaceMismatch,
    NotReady,
    Overflow,
    PermissionDenied,
    Protocol,
    Timeout,
    Unauthenticated,
    Unavailable,
    WaitTimeout,
    is_timeout,
)

__all__ = [
    "Cancelled",
    "Closed",
    "Duration",
    "EmptyName",
    "HeldSlot",
    "Hold",
    "HoldMany",
    "HolderInfo",
    "IdGenerator",
    "IdLayout",
    "IdParts",
    "Internal",
    "InvalidArgument",
    "InvalidTtl",
    "Lease",
    "LeaseLost",
    "LeaseholdError",
    "Lock",
    "ManualLease",
    "NamespaceMismatch",
    "NotReady",
    "Overflow",
    "Owner",
    "Pem",
    "PermissionDenied",
    "Protocol",
    "SlotHold",
    "SlotLease",
    "Slots",
    "Store",
    "Timeout",
    "TryHold",
    "Unauthenticated",
    "Unavailable",
    "WaitTimeout",
    "__version__",
    "connect",
    "connect_blocking",
    "is_timeout",
    "memory",
]
