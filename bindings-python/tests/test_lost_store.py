"""LOCK-21: a server store killed (SIGKILL) under a held key: the hold fails
``LeaseLost`` by the holder's deadline, not a ttl later, and the release of
the lost lease never delays it."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator

import pytest

import leasehold

from conftest import Server, start_server, stop_server

TTL = 2.0
# LOCK-21's bound on the hold, from the kill: the holder's deadline is at most
# ttl - margin (the default margin, a tenth of the ttl) after it (the grant or
# renewal it counts from was sent before the kill), and a hold that waited for
# its release, or for the store, would end a ttl or a connect timeout (5 s)
# after that deadline. Half a ttl past the deadline tells the two apart and
# leaves a loaded machine's scheduling a second (the Rust test:
# server/tests/holder_engine.rs).
BOUND = TTL - TTL / 10 + TTL / 2


@pytest.fixture
def own_server() -> Iterator[Server]:
    """A server store of this test's own, to kill; stopped (reaped) at the end."""
    running = start_server()
    try:
        yield running
    finally:
        stop_server(running)


def kill(server: Server) -> float:
    """Kills the server (SIGKILL) and returns the monotonic time of the kill."""
    os.kill(server.process.pid, signal.SIGKILL)
    return time.monotonic()


# LOCK-21: the function waits for the loss (the block is cancelled), and the
# hold raises LeaseLost by the holder's deadline (BOUND) after the kill.
async def test_LOCK_21_a_killed_store_fails_the_hold_at_the_deadline(own_server: Server) -> None:
    store = await leasehold.connect(own_server.url)
    try:
        lock = store.lock("py-lock-21", ttl=TTL)
        killed_at: float | None = None
        reached = []
        with pytest.raises(leasehold.LeaseLost) as raised:
            async with lock.hold("k") as lease:
                killed_at = kill(own_server)
                await asyncio.sleep(30)  # cancelled by the loss
                reached.append("the block went on")
        assert killed_at is not None
        elapsed = time.monotonic() - killed_at
        assert not reached
        assert lease.lost
        assert raised.value.code == "Lost"
        assert isinstance(raised.value.__cause__, asyncio.CancelledError)
        print(f"LOCK-21: hold raised {elapsed:.3f} s after the kill (bound {BOUND} s)")
        assert elapsed < BOUND, f"hold raised {elapsed:.3f} s after the kill, ttl {TTL} s"
    finally:
        await store.close()


# LOCK-21: the function returns at once after the kill: the hold raises
# LeaseLost (expired) by the holder's deadline (BOUND), not after a release
# that cannot reach the store.
async def test_LOCK_21_an_unreachable_store_bounds_the_release_by_the_deadline(
    own_server: Server,
) -> None:
    store = await leasehold.connect(own_server.url)
    try:
        lock = store.lock("py-lock-21", ttl=TTL)
        killed_at: float | None = None
        with pytest.raises(leasehold.LeaseLost) as raised:
            async with lock.hold("k"):
                killed_at = kill(own_server)
        assert killed_at is not None
        elapsed = time.monotonic() - killed_at
        assert raised.value.code == "Lost" and raised.value.reason == "expired"
        print(f"LOCK-21: hold raised {elapsed:.3f} s after the kill (bound {BOUND} s)")
        assert elapsed < BOUND, f"hold raised {elapsed:.3f} s after the kill, ttl {TTL} s"
    finally:
        await store.close()
