"""``async with lock.hold_many(keys)`` and its ``with`` form (LOCK-22): many
keys of one lock held at once, each a lease of its own, all or none, against
the embedded store and a real server store process."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest

import leasehold
from leasehold import testing

from conftest import Server

#: More keys than one HoldMany frame carries (511) on the server store.
MANY = 1000


@pytest.fixture
def keys() -> list[str]:
    """Keys no other test uses (the server store is shared)."""
    run = uuid.uuid4()
    return [f"key-{run}-{i}" for i in range(MANY)]


@pytest.fixture
async def rival(store: leasehold.Store, server: Server) -> AsyncIterator[leasehold.Store]:
    """Another holder of the store's keys: the embedded store itself, or a
    second connection to the server store."""
    if store.kind == "memory":
        yield store
        return
    other = await leasehold.connect(server.url)
    yield other
    await other.close()


async def until(done: object, bound: float = 5.0) -> None:
    """Polls ``done()`` until it is true or ``bound`` seconds pass."""
    assert callable(done)
    deadline = time.monotonic() + bound
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.005)


async def held_by_someone(lock: leasehold.Lock, key: str) -> bool:
    async with lock.try_hold(key) as lease:
        return lease is None


# LOCK-22: a thousand keys (two HoldMany frames on the server store) held at
# once, their leases in key order with fences of their own, all released after.
async def test_LOCK_22_many_keys_are_held_in_order_and_released(
    store: leasehold.Store, rival: leasehold.Store, keys: list[str]
) -> None:
    lock = store.lock("py-many", ttl="30s")
    other = rival.lock("py-many", ttl="30s")
    async with lock.hold_many(keys) as leases:
        assert [lease.key for lease in leases] == keys
        assert all(lease.lock_name == "py-many" and not lease.lost for lease in leases)
        fences = [lease.fence for lease in leases]
        assert all(fence > 0 for fence in fences) and len(set(fences)) == len(keys)
        for key in (keys[0], keys[510], keys[511], keys[-1]):
            assert await held_by_someone(other, key)
    # Released at once: within half the 30 s ttl (a lease left to run out
    # would hold its key the whole ttl), or the hold fails WaitTimeout.
    async with other.hold_many(keys, wait=15) as again:
        assert len(again) == len(keys)
        assert min(lease.fence for lease in again) > max(fences)
    async with lock.hold_many([]) as none:
        assert none == []


# LOCK-22: all or none. One key held by another holder: the hold fails
# WaitTimeout, and every other key is free at once (long before the 30 s ttl
# could let them go), and its place in the held key's line is left.
async def test_LOCK_22_a_key_that_cannot_be_had_releases_every_other(
    store: leasehold.Store, rival: leasehold.Store, keys: list[str]
) -> None:
    lock = store.lock("py-many-none", ttl="30s")
    other = rival.lock("py-many-none", ttl="30s")
    blocked = keys[MANY // 2]
    async with other.hold(blocked):
        ran = False
        with pytest.raises(leasehold.WaitTimeout):
            async with lock.hold_many(keys, wait=0.3):
                ran = True
        assert not ran
        # Within half the 30 s ttl, or the hold fails WaitTimeout.
        free = [key for key in keys if key != blocked]
        async with other.hold_many(free, wait=15) as leases:
            assert len(leases) == MANY - 1
    async with other.try_hold(blocked) as lease:
        assert lease is not None, "the key was granted to the hold that timed out"


# LOCK-22: a key named twice fails InvalidArgument and holds nothing; an empty
# key EmptyName; keys that are not an iterable of str fail InvalidArgument.
async def test_LOCK_22_a_key_named_twice_is_invalid(
    store: leasehold.Store, keys: list[str]
) -> None:
    lock = store.lock("py-many-twice")
    with pytest.raises(leasehold.InvalidArgument) as raised:
        async with lock.hold_many([keys[0], keys[1], keys[0]]):
            pytest.fail("held a key named twice")
    assert raised.value.code == "InvalidArgument"
    assert not await held_by_someone(lock, keys[0])
    assert not await held_by_someone(lock, keys[1])
    with pytest.raises(leasehold.EmptyName):
        async with lock.hold_many([keys[0], ""]):
            pytest.fail("held an empty key")
    for bad in ("k", b"k", 7, None, [keys[0], 7]):
        with pytest.raises(leasehold.InvalidArgument):
            async with lock.hold_many(bad):  # type: ignore[arg-type]
                pytest.fail(f"held {bad!r}")
    assert not await held_by_someone(lock, keys[0])
    async with lock.hold_many(key for key in keys[:3]) as leases:
        assert [lease.key for lease in leases] == keys[:3]


# LOCK-22, LOCK-09: the loss of one lease of many cancels the block at its
# next await, and the hold raises LeaseLost; the others were not lost. The
# first key is granted at once and the second a second later, so only the
# first one's max_hold has run out when the clock reaches 2 s.
async def test_LOCK_22_the_loss_of_one_lease_cancels_the_block() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    lock = store.lock("py-many-loss", ttl="1s", max_hold="2s")
    rival_in, rival_go, entered = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def rival() -> None:
        async with lock.hold("b"):
            rival_in.set()
            await rival_go.wait()

    rival_task = asyncio.create_task(rival())
    await rival_in.wait()
    got: list[leasehold.Lease] = []
    reached: list[str] = []

    async def holder() -> None:
        async with lock.hold_many(["a", "b"]) as leases:
            got.extend(leases)
            entered.set()
            await asyncio.sleep(30)
            reached.append("the block went on")

    task = asyncio.create_task(holder())
    await asyncio.sleep(0.05)
    await asyncio.to_thread(clock.advance, "1s")
    rival_go.set()
    await rival_task
    await entered.wait()
    await asyncio.to_thread(clock.advance, "1s")
    with pytest.raises(leasehold.LeaseLost) as raised:
        await asyncio.wait_for(task, 5)
    assert not reached
    first, second = got
    assert first.lost and first.loss_reason == "revoked"
    assert not second.lost
    assert raised.value.reason == "revoked"
    assert isinstance(raised.value.__cause__, asyncio.CancelledError)
    async with lock.hold_many(["a", "b"], wait=1) as again:
        assert again[0].fence > first.fence and again[1].fence > second.fence
    await store.close()


# LOCK-22, LOCK-10: after a loss, a block that succeeded still raises
# LeaseLost, and a block's own error is its cause.
async def test_LOCK_22_a_loss_keeps_the_blocks_error_as_cause() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    lock = store.lock("py-many-cause", ttl="1s", max_hold="1s")
    with pytest.raises(leasehold.LeaseLost) as raised:
        async with lock.hold_many(["a", "b"]):
            clock.advance("1s")
    assert raised.value.__cause__ is None
    with pytest.raises(leasehold.LeaseLost) as raised:
        async with lock.hold_many(["a", "b"]):
            clock.advance("1s")
            raise ValueError("the batch failed too")
    assert isinstance(raised.value.__cause__, ValueError)
    await store.close()


# LOCK-22, LOCK-09, LOCK-12: on the server store, max_hold revokes every lease
# of the hold in real time; the block (which would sleep 10 s) is cancelled
# and the hold raises LeaseLost. How long it took is printed.
async def test_LOCK_22_max_hold_revokes_many_on_the_server(server: Server, keys: list[str]) -> None:
    store = await leasehold.connect(server.url)
    lock = store.lock("py-many-max-hold", ttl="1s", max_hold="1s")
    started = time.monotonic()
    reached = []
    with pytest.raises(leasehold.LeaseLost):
        async with lock.hold_many(keys) as leases:
            await asyncio.sleep(10)
            reached.append("the block went on")
    print(f"LOCK-22: revoked after {time.monotonic() - started:.3f} s (max_hold 1 s)")
    assert not reached, "the loss did not cancel the block"
    assert all(lease.lost for lease in leases)
    await store.close()


# LOCK-22: a lease lost between its grant and the block's start (its
# max_hold ran out while the hold waited for another key): nothing runs, and
# the hold raises LeaseLost.
async def test_LOCK_22_a_lease_lost_before_the_block_runs_nothing() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    lock = store.lock("py-many-early", ttl="1s", max_hold="1s")
    unbounded = store.lock("py-many-early")
    ran = False

    async def holder() -> None:
        nonlocal ran
        async with lock.hold_many(["a", "b"]):
            ran = True

    async with unbounded.hold("b"):
        task = asyncio.create_task(holder())
        await asyncio.sleep(0.05)
        await asyncio.to_thread(clock.advance, "1s")
    with pytest.raises(leasehold.LeaseLost):
        await asyncio.wait_for(task, 5)
    assert not ran
    assert not await held_by_someone(unbounded, "a")
    assert not await held_by_someone(unbounded, "b")
    await store.close()


# LOCK-22, LOCK-18: cancelling a task whose hold_many waits in line leaves
# every line: the keys it was granted are free at once, and the held keys go
# to the holders behind it.
async def test_LOCK_22_cancelling_a_waiting_hold_many_leaves_every_line(
    store: leasehold.Store, rival: leasehold.Store, keys: list[str]
) -> None:
    lock = store.lock("py-many-give-up", ttl="30s")
    other = rival.lock("py-many-give-up", ttl="30s")
    blocked = [keys[10], keys[700]]
    rival_in, rival_go = asyncio.Event(), asyncio.Event()
    got: list[str] = []

    async def rival_holder() -> None:
        async with other.hold_many(blocked):
            rival_in.set()
            await rival_go.wait()

    async def behind(key: str) -> None:
        async with other.hold(key):
            got.append(key)

    async def many() -> None:
        async with lock.hold_many(keys):
            got.append("many")

    first = asyncio.create_task(rival_holder())
    await rival_in.wait()
    waiting = asyncio.create_task(many())
    await asyncio.sleep(0.3)
    later = [asyncio.create_task(behind(key)) for key in blocked]
    await asyncio.sleep(0.1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    # Free at once: within half the 30 s ttl, or the hold fails WaitTimeout.
    free = [key for key in keys if key not in blocked]
    async with other.hold_many(free, wait=15) as leases:
        assert len(leases) == len(free)
    rival_go.set()
    await asyncio.wait_for(asyncio.gather(first, *later), 5)
    assert sorted(got) == sorted(blocked)


# LOCK-22: the blocking form, in code without an event loop: held, released
# after the block, WaitTimeout leaving the others free, InvalidArgument.
def test_LOCK_22_with_hold_many_in_code_without_an_event_loop(server: Server) -> None:
    keys = [f"key-{uuid.uuid4()}" for _ in range(MANY)]
    for store in (leasehold.memory(), leasehold.connect_blocking(server.url)):
        with store:
            lock = store.lock("py-many-sync", ttl="30s")
            with lock.hold_many(keys) as leases:
                assert [lease.key for lease in leases] == keys
                assert len({lease.fence for lease in leases}) == MANY
                with lock.try_hold(keys[-1]) as none:
                    assert none is None
            with lock.hold(keys[3]):
                with pytest.raises(leasehold.WaitTimeout), lock.hold_many(keys, wait=0.2):
                    pytest.fail("granted a held key")
                # The others were left at once: within half the 30 s ttl.
                with lock.hold_many(keys[:3] + keys[4:], wait=15) as rest:
                    assert len(rest) == MANY - 1
            with pytest.raises(leasehold.InvalidArgument), lock.hold_many(["x", "x"]):
                pytest.fail("held a key named twice")
            with lock.try_hold("x") as free:
                assert free is not None


# LOCK-22, LOCK-10: the blocking form raises LeaseLost at the end if a lease was lost.
def test_LOCK_22_with_hold_many_raises_lease_lost_at_the_end() -> None:
    clock = testing.VirtualClock()
    with testing.memory(clock) as store:
        lock = store.lock("py-many-sync-loss", ttl="1s", max_hold="1s")
        with pytest.raises(leasehold.LeaseLost) as raised, lock.hold_many(["a", "b"]) as leases:
            clock.advance("1s")
            deadline = time.monotonic() + 5
            while not all(lease.lost for lease in leases) and time.monotonic() < deadline:
                time.sleep(0.001)
            raise KeyError("the block's own error")
        assert isinstance(raised.value.__cause__, KeyError)


async def test_LOCK_22_with_hold_many_refuses_to_block_the_event_loop(
    store: leasehold.Store,
) -> None:
    with pytest.raises(leasehold.InvalidArgument), store.lock("py-many-refuse").hold_many(["k"]):
        pytest.fail("blocked the event loop")
