"""``lock.hold(key)``, ``lock.try_hold(key)``, ``lock.hold_many(keys)`` and
``slots.hold(owner)``: what they ask for, held while a block runs.

All are :class:`Hold`, native (``src/hold.rs``), a context manager for
``async with`` and, for keys without an event loop, ``with``. Waiting,
renewal, deadlines and loss are the core's; ``Hold`` turns them into
Python's ways:

- A loss (of any lease held) cancels the task running the ``async with``
  block at its next await, and the block then raises
  :class:`~leasehold.LeaseLost`, the way ``asyncio.timeout`` turns its own
  cancellation into ``TimeoutError`` (LOCK-09). A cancellation from outside
  stays ``CancelledError``.
- A hold lost between its grant and the block (its deadline came while the
  process was frozen, LOCK-04) runs no block, and the entry raises
  ``LeaseLost``.
- Once the block ends, the hold raises ``LeaseLost`` if anything held was
  lost at any point, even if the block succeeded; the block's own exception
  is the ``LeaseLost``'s ``__cause__`` (LOCK-10).
- What is held is released on every exit path; the release runs in the
  core on its own, so a cancellation cannot stop it (LOCK-11).
- Cancelling a task waiting in line leaves the line (LOCK-18).
- ``hold_many`` holds every key or none (LOCK-22), each a lease of its own:
  the loss of any one of them cancels the block and makes the hold raise
  ``LeaseLost``; the exit ends them all at once, in the core.

A cycle the core answers at once runs no Python of this module; the
coroutines below finish what waits.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import NoReturn, TypeAlias

from . import _native
from .errors import LeaseLost

__all__ = ["Hold", "HoldMany", "TryHold"]

Hold = _native.Hold
#: ``lock.try_hold(key)``: the block gets the lease, or ``None`` when the key is held.
TryHold: TypeAlias = _native.Hold[_native.Lease | None]
#: ``lock.hold_many(keys)``: the block gets the leases, in the order of the keys.
HoldMany: TypeAlias = _native.Hold[list[_native.Lease]]


async def _enter_later(hold: _native.Hold[object], begun: Awaitable[object]) -> object:
    """:class:`Hold`'s entry when its grant was not made at once."""
    return await hold._admit(await begun)


async def _refuse_later(ended: Awaitable[None], lost: LeaseLost) -> NoReturn:
    """:class:`Hold`'s entry when what it holds was lost before the block
    could start and its end was not made at once: raises ``lost``."""
    await ended
    raise lost


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
