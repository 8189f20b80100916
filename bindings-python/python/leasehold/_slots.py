"""Slot leases: a namespace of ``limit`` slots, each leased by one
owner at a time, to derive a node number for an ID generator; and
``slots.hold(owner)``, a slot held with background renewal while a block runs."""

from __future__ import annotations

from typing import TypeAlias

from . import _native
from ._native import HeldSlot, Owner, SlotLease

__all__ = ["HeldSlot", "Owner", "SlotHold", "SlotLease", "Slots"]


#: ``slots.hold(owner, preferred=None)``: acquires a slot as
#: :meth:`Slots.acquire` does and holds it while the block runs, renewed in
#: the background every ttl/3; the block gets its :class:`~leasehold.HeldSlot`,
#: or ``None`` when every slot is held. A lost slot (a renewal that answers
#: nothing, or none confirmed by the holder's deadline) cancels the block at
#: its next await and the ``async with`` raises :class:`~leasehold.LeaseLost`,
#: even if the block succeeded; the block's own exception is its
#: ``__cause__``. A cancellation from outside stays ``CancelledError``. The
#: slot is released on every exit, with the largest timestamp recorded by
#: ``held.issued(ms)`` (SLOT-05). It is a :class:`~leasehold.Hold`, with the
#: rules of every hold (``leasehold._hold``); asyncio only.
SlotHold: TypeAlias = _native.Hold[HeldSlot | None]


class Slots:
    """A slot namespace opened on a store (``store.slots(name, ...)``).

    Every call is bounded by the namespace's ``timeout``: past it, it raises
    :class:`~leasehold.Timeout` and its outcome is unknown (SLOT-07). Outcomes
    are not errors: no free slot is ``None``, a lease no longer held is
    ``None`` from :meth:`renew` and ``False`` from :meth:`release`.
    :meth:`hold` holds a slot while a block runs, renewed in the background.
    """

    __slots__ = ("_native",)

    def __init__(self, native: _native.Slots) -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The namespace's name."""
        return self._native.name

    @property
    def limit(self) -> int:
        """The slots are ``range(limit)``."""
        return self._native.limit

    @property
    def offset(self) -> int:
        """What a lease's ``node`` adds to its ``slot``."""
        return self._native.offset

    @property
    def ttl(self) -> float:
        """Seconds after the store's now at which a lease expires unless renewed."""
        return self._native.ttl

    @property
    def tolerance(self) -> float:
        """Seconds from a lease's expiry to its ceiling."""
        return self._native.tolerance

    @property
    def margin(self) -> float:
        """Seconds before a held slot's expiry at which its holder declares it lost."""
        return self._native.margin

    async def acquire(self, owner: Owner, preferred: int | None = None) -> SlotLease | None:
        """A slot for ``owner`` (SLOT-01): the one it holds already, else
        ``preferred`` if free, else the one its key held last if free, else
        the lowest free slot; ``None`` when every slot is held. A namespace
        first used with another limit, tolerance or offset raises
        :class:`~leasehold.NamespaceMismatch`."""
        return await self._native.acquire(owner, preferred)

    def hold(self, owner: Owner, preferred: int | None = None) -> SlotHold:
        """``async with slots.hold(owner) as held:`` holds a slot for
        ``owner`` while the block runs, renewed in the background; ``held``
        is ``None`` when every slot is held (see :class:`SlotHold`)."""
        return _native.Hold.slot(self._native, owner, preferred)

    async def renew(self, lease: SlotLease) -> SlotLease | None:
        """``lease`` renewed for the namespace's ttl, with the same fence
        (SLOT-04); ``None`` when its owner or fence no longer match."""
        return await self._native.renew(lease)

    async def release(self, lease: SlotLease, last_issued: int) -> bool:
        """Releases ``lease``, having issued timestamps up to ``last_issued``
        (milliseconds): the next holder's floor becomes ``max(floor,
        min(last_issued, ceiling))`` (SLOT-05). ``False`` when its owner or
        fence no longer match; a repeated release answers ``True`` again.
        Cancelling the awaiting task does not stop the release."""
        return await self._native.release(lease, last_issued)

    def __repr__(self) -> str:
        return f"Slots(name={self.name!r}, limit={self.limit}, offset={self.offset})"
