"""The ID generator on slot leases (IDGEN): ``ids = await store.ids(namespace)``
leases a slot of the namespace and issues unique 63-bit IDs of timestamp |
node | sequence in the namespace's :class:`IdLayout`, strictly increasing
within one generator."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from . import _native
from ._native import IdLayout, IdParts, SlotLease
from .errors import NotReady

__all__ = ["IdGenerator", "IdLayout", "IdParts"]


class IdGenerator:
    """Issues unique IDs on one slot lease of a namespace, renewed in the
    background (``await store.ids(namespace, ...)``).

    :meth:`next_nowait` and :meth:`take_nowait` never wait: they raise
    :class:`~leasehold.NotReady` (retryable) when no ID can be issued yet,
    :class:`~leasehold.Overflow` when the layout's time range is used up, and
    :class:`~leasehold.LeaseLost` once the slot was lost or the generator
    closed (IDGEN-04); :meth:`next` and :meth:`take` wait while it is
    ``NotReady``. Safe to use from several tasks and threads at once.
    ``async with`` gives the generator and closes it at the end. A generator
    made before ``os.fork()`` raises :class:`~leasehold.Closed` on every use
    in the child, which leaves the parent's slot alone.
    """

    __slots__ = ("_native", "next_nowait")

    next_nowait: Callable[[], int]
    """``ids.next_nowait()``: the next ID, without waiting (see the class).
    It is the native call itself, with nothing in Python around it."""

    def __init__(self, native: _native.IdGenerator) -> None:
        self._native = native
        self.next_nowait = native.next_nowait

    async def next(self) -> int:
        """The next ID, waiting while none can be issued yet (IDGEN-04).
        Cancelling the awaiting task issues nothing."""
        try:
            return self.next_nowait()
        except NotReady:
            return await self._native.next_async()

    def take_nowait(self, n: int) -> list[int]:
        """As many IDs as can be issued now, up to ``n`` (at most 1,048,576):
        at least one for ``n > 0``, else it raises as :meth:`next_nowait`."""
        return self._native.take_nowait(n)

    async def take(self, n: int) -> list[int]:
        """``n`` IDs (at most 1,048,576), waiting while they cannot be issued
        yet. Cancelling the awaiting task drops the call and the IDs it had."""
        return await self._native.take(n)

    async def close(self) -> None:
        """Seals the generator (nothing is issued after it) and releases its
        slot, passing the largest tick issued on as the next holder's floor
        (IDGEN-02). Raises :class:`~leasehold.LeaseLost` if the slot was lost
        meanwhile; a second close does nothing. Cancelling the awaiting task
        does not stop it. A generator dropped without it is closed in the
        background."""
        await self._native.close()

    @property
    def node(self) -> int:
        """The node number every ID carries: the slot plus the namespace's offset."""
        return self._native.node

    @property
    def layout(self) -> IdLayout:
        """The namespace's layout."""
        return self._native.layout

    @property
    def lease(self) -> SlotLease:
        """The slot lease as last renewed."""
        return self._native.lease

    @property
    def last_issued(self) -> int:
        """The start of the largest tick issued, in ms since the Unix epoch (0: none)."""
        return self._native.last_issued

    @property
    def lost(self) -> bool:
        """Whether the slot was lost; once true, nothing more is issued."""
        return self._native.lost

    async def __aenter__(self) -> IdGenerator:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return repr(self._native)
