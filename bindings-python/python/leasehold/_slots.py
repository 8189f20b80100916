"""Slot leases (seed 002): a namespace of ``limit`` slots, each leased by one
owner at a time, to derive a node number for an ID generator."""

from __future__ import annotations

from . import _native
from ._native import Owner, SlotLease

__all__ = ["Owner", "SlotLease", "Slots"]


class Slots:
    """A slot namespace opened on a store (``store.slots(name, ...)``).

    Every call is bounded by the namespace's ``timeout``: past it, it raises
    :class:`~leasehold.Timeout` and its outcome is unknown (SLOT-07). Outcomes
    are not errors: no free slot is ``None``, a lease no longer held is
    ``None`` from :meth:`renew` and ``False`` from :meth:`release`.
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

    async def acquire(self, owner: Owner, preferred: int | None = None) -> SlotLease | None:
        """A slot for ``owner`` (SLOT-01): the one it holds already, else
        ``preferred`` if free, else the one its key held last if free, else
        the lowest free slot; ``None`` when every slot is held. A namespace
        first used with another limit, tolerance or offset raises
        :class:`~leasehold.NamespaceMismatch`."""
        return await self._native.acquire(owner, preferred)

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
