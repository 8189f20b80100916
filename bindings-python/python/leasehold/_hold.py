"""``lock.hold(key)``, ``lock.try_hold(key)`` and ``lock.hold_many(keys)``: a
key, or many keys at once, held while a block runs.

All are context managers for ``async with`` and, for code without an event
loop, for ``with``. Waiting, renewal, deadlines and loss are the core's; this
module turns them into Python's ways:

- A lost lease cancels the task running the ``async with`` block at its next
  await, and the block then raises :class:`~leasehold.LeaseLost`, the way
  ``asyncio.timeout`` turns its own cancellation into ``TimeoutError``
  (LOCK-09). A cancellation from outside stays ``CancelledError``.
- Once the block ends, the hold raises ``LeaseLost`` if the lease was lost at
  any point, even if the block succeeded; the block's own exception is the
  ``LeaseLost``'s ``__cause__`` (LOCK-10).
- The key is released on every exit path; the release runs in the core on its
  own, so a cancellation cannot stop it (LOCK-11).
- Cancelling a task waiting in line leaves the line (LOCK-18).
- ``hold_many`` holds every key or none (LOCK-22), each a lease of its own:
  the loss of any one of them cancels the block and makes the hold raise
  ``LeaseLost``; the exit ends them all at once, in the core.

:class:`Watched` is that machinery for any holding of the core that can be
watched for its loss and ended: ``try_hold``, ``hold_many`` and a slot's hold
(``slots.hold``). ``lock.hold``, the one most calls go through, is
:class:`Hold`, native (``src/hold.rs``), with the same rules.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from types import TracebackType
from typing import ClassVar, Generic, NoReturn, Protocol, TypeVar

from . import _native
from ._types import Duration
from .errors import InvalidArgument, LeaseLost

__all__ = ["Hold", "HoldMany", "TryHold"]

#: The message of the cancellation a lost lease sends to the holding task.
LOST_MESSAGE = "leasehold: the lease was lost"
#: The message of the ``LeaseLost`` of a lease lost before its block began.
LOST_BEFORE = "the lease was lost before the block could start"

#: The awaitable of a native call answered at once.
_Ready = _native.Ready


class Ending(Protocol):
    """A holding of the core: watched for its loss, then ended (the native
    ``Holding`` and ``SlotHolding``)."""

    def watch_loss(
        self, callback: Callable[[bool], object], event_loop: asyncio.AbstractEventLoop
    ) -> None: ...
    def end(self) -> Awaitable[None]: ...


class Blocking(Ending, Protocol):
    """An :class:`Ending` that code without an event loop can end too (a
    key's ``Holding``, the :class:`Holdings` of many keys)."""

    def end_blocking(self) -> None: ...


H = TypeVar("H", bound=Ending)
B = TypeVar("B", bound=Blocking)


def _refuse_in_event_loop(what: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise InvalidArgument(f"`with {what}` would block the event loop; use `async with`")


class Watched(Generic[H]):
    """An ``async with`` over a holding: its loss cancels the block, and the
    exit ends the holding and raises ``LeaseLost`` if it was lost.

    The hot paths are written out inline: a hold cycle is a few microseconds
    of Python around the core's work, and every call counts."""

    __slots__ = ("_cancelling", "_entered", "_exiting", "_holding", "_lost_cancel", "_task")

    #: How the context manager is written, for error messages.
    _FORM: ClassVar[str] = "lock.hold(...)"
    #: The message of the cancellation a loss sends to the holding task.
    _LOST: ClassVar[str] = LOST_MESSAGE

    def __init__(self) -> None:
        self._holding: H | None = None
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._lost_cancel = False
        self._exiting = False
        self._entered = False

    def _enter(self) -> asyncio.Task[object]:
        """Checks that the hold is entered once, inside a task; the task,
        whose loop the watch of the holding's loss is given (looked up, the
        running loop costs a system call on Python 3.11)."""
        if self._entered:
            raise InvalidArgument(f"a {self._FORM} is entered once; call it again")
        self._entered = True
        task = asyncio.current_task()
        if task is None:
            raise InvalidArgument(f"`async with {self._FORM}` runs inside an asyncio task")
        self._task = task
        self._cancelling = task.cancelling()
        return task

    def _on_lost(self, _lost: bool) -> None:
        # On the event loop's thread, if the holding is lost while held: once
        # per watched holding (of many keys, each may call), one cancellation.
        task = self._task
        if task is not None and not self._lost_cancel and not self._exiting and not task.done():
            self._lost_cancel = True
            task.cancel(self._LOST)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        holding = self._holding
        if holding is None:
            return
        self._exiting = True
        ours = False
        if self._lost_cancel and self._task is not None:
            # Like asyncio.timeout: the cancellation was ours if no other is pending.
            ours = self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError
        try:
            ended = holding.end()
            # A release the core made at once is read, not awaited: the same answer
            # without an await's cost.
            if type(ended) is _Ready:
                ended.result()
            else:
                await ended
        except LeaseLost as lost:
            if exc_type is asyncio.CancelledError and not ours:
                return
            raise lost from exc


class _Held(Watched[B]):
    """What the key holds share: the blocking form."""

    __slots__ = ()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        holding = self._holding
        if holding is None:
            return
        try:
            holding.end_blocking()
        except LeaseLost as lost:
            raise lost from exc

    async def _refuse_if_lost(self, holding: B, lost: bool) -> None:
        """A hold ``lost`` between its grant and now (its deadline came
        while the process was frozen, LOCK-04) runs no block: it ends, and
        ``LeaseLost`` is raised from the entry."""
        if lost:
            self._holding = None
            await holding.end()
            raise LeaseLost(LOST_BEFORE)

    def _refuse_if_lost_blocking(self, holding: B, lost: bool) -> None:
        """:meth:`_refuse_if_lost` for the blocking forms."""
        if lost:
            self._holding = None
            holding.end_blocking()
            raise LeaseLost(LOST_BEFORE)

    def _enter_blocking(self) -> None:
        if self._entered:
            raise InvalidArgument(f"a {self._FORM} is entered once; call it again")
        self._entered = True
        _refuse_in_event_loop(self._FORM)


#: ``lock.hold(key, wait=...)``: native (``bindings-python/src/hold.rs``), so
#: that a cycle the core answers at once runs none of this module; it keeps
#: the rules of :class:`Watched`, and finishes in the coroutines below what
#: waits.
Hold = _native.Hold


async def _enter_later(hold: _native.Hold, begun: Awaitable[_native.Holding]) -> _native.Lease:
    """:class:`Hold`'s entry when its grant was not made at once."""
    return await hold._admit(await begun)


async def _refuse_later(ended: Awaitable[None]) -> NoReturn:
    """:class:`Hold`'s entry when its lease was lost before the block could
    start and its end was not made at once."""
    await ended
    raise LeaseLost(LOST_BEFORE)


async def _exit_later(ended: Awaitable[None], quiet: bool, exc: BaseException | None) -> None:
    """:class:`Hold`'s exit when its release was not made at once: raises
    ``LeaseLost`` from ``exc``, unless ``quiet`` (a cancellation the loss did
    not send is under way)."""
    try:
        await ended
    except LeaseLost as lost:
        if quiet:
            return
        raise lost from exc


class TryHold(_Held[_native.Holding]):
    """``lock.try_hold(key)``: holds the key if it is free now, never waiting
    (LOCK-17); the block gets ``None`` when the key is held."""

    __slots__ = ("_key", "_lock")

    _FORM = "lock.try_hold(...)"

    def __init__(self, lock: _native.Lock, key: str) -> None:
        super().__init__()
        self._lock = lock
        self._key = key

    async def __aenter__(self) -> _native.Lease | None:
        task = self._enter()
        holding = await self._lock.try_begin(self._key)
        if holding is None:
            return None
        await self._refuse_if_lost(holding, holding.lease.lost)
        self._holding = holding
        holding.watch_loss(self._on_lost, task.get_loop())
        return holding.lease

    def __enter__(self) -> _native.Lease | None:
        self._enter_blocking()
        holding = self._lock.try_begin_blocking(self._key)
        if holding is not None:
            self._refuse_if_lost_blocking(holding, holding.lease.lost)
        self._holding = holding
        return None if holding is None else holding.lease


class Holdings:
    """The holdings of one ``begin_many``, in the order of its keys, watched
    and ended together: a loss of any one is the loss the block is told of,
    and the end is the core's ``Holding::end_all``."""

    __slots__ = ("_holdings",)

    def __init__(self, holdings: list[_native.Holding]) -> None:
        self._holdings = holdings

    @property
    def leases(self) -> list[_native.Lease]:
        """Their leases, in the order of the keys."""
        return [holding.lease for holding in self._holdings]

    @property
    def lost(self) -> bool:
        """Whether any of the leases was lost."""
        return any(holding.lease.lost for holding in self._holdings)

    def watch_loss(
        self, callback: Callable[[bool], object], event_loop: asyncio.AbstractEventLoop
    ) -> None:
        """Calls ``callback(True)`` on the thread of ``event_loop`` (the
        running loop) at the loss of each lease lost before the end
        (:meth:`Watched._on_lost` acts on the first)."""
        for holding in self._holdings:
            holding.watch_loss(callback, event_loop)

    def end(self) -> Awaitable[None]:
        """Releases every key at once; ``LeaseLost`` if a lease was lost while held."""
        return _native.Holding.end_all(self._holdings)

    def end_blocking(self) -> None:
        """:meth:`end` for code without an event loop."""
        _native.Holding.end_all_blocking(self._holdings)


class HoldMany(_Held[Holdings]):
    """``lock.hold_many(keys, wait=...)``: waits in line for every key at
    once and holds them all while the block runs, or none (LOCK-22); the
    block gets their :class:`~leasehold.Lease` objects in the order of
    ``keys``, each a lease of its own (its fence, deadline and loss)."""

    __slots__ = ("_keys", "_lock", "_wait")

    _FORM = "lock.hold_many(...)"
    _LOST = "leasehold: one of the leases was lost"

    def __init__(self, lock: _native.Lock, keys: Iterable[str], wait: Duration | None) -> None:
        super().__init__()
        self._lock = lock
        self._keys = keys
        self._wait = wait

    async def __aenter__(self) -> list[_native.Lease]:
        task = self._enter()
        held = Holdings(await self._lock.begin_many(self._keys, self._wait))
        await self._refuse_if_lost(held, held.lost)
        self._holding = held
        held.watch_loss(self._on_lost, task.get_loop())
        return held.leases

    def __enter__(self) -> list[_native.Lease]:
        self._enter_blocking()
        held = Holdings(self._lock.begin_many_blocking(self._keys, self._wait))
        self._refuse_if_lost_blocking(held, held.lost)
        self._holding = held
        return held.leases
