"""Manual leases through Python: ``store.try_acquire``, ``store.acquire``,
``lease.extend``, ``lease.release``, on both stores."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest

import leasehold
from leasehold import testing


@pytest.fixture
def name() -> str:
    return f"batch-{uuid.uuid4()}"


# MANUAL-01: try_acquire answers at once: a lease, or None when held. A try
# that waited would get the name only when its holder's 10 s ttl ran out:
# half of it tells the two apart and leaves a loaded machine 5 s.
async def test_MANUAL_01_try_acquire_answers_at_once(store: leasehold.Store, name: str) -> None:
    lease = await store.try_acquire(name, ttl="10s")
    assert lease is not None and lease.name == name and lease.fence > 0
    started = time.monotonic()
    assert await store.try_acquire(name, ttl=10) is None
    assert time.monotonic() - started < 10 / 2
    await lease.release()


# MANUAL-02: acquire waits, is woken by the release, and its wait is bounded.
async def test_MANUAL_02_acquire_waits_for_the_release(store: leasehold.Store, name: str) -> None:
    first = await store.try_acquire(name, ttl="10s")
    assert first is not None
    waiting = asyncio.create_task(store.acquire(name, ttl="10s"))
    await asyncio.sleep(0.1)
    assert not waiting.done()
    with pytest.raises(leasehold.WaitTimeout):
        await store.acquire(name, ttl="10s", wait=0.1)
    await first.release()
    second = await asyncio.wait_for(waiting, 5)
    assert second.fence > first.fence  # MANUAL-07
    await second.release()


# MANUAL-02: a waiting acquire whose task is cancelled leaves the line.
async def test_MANUAL_02_a_cancelled_acquire_leaves_the_line(
    store: leasehold.Store, name: str
) -> None:
    first = await store.try_acquire(name, ttl="10s")
    assert first is not None
    waiting = asyncio.create_task(store.acquire(name, ttl="10s"))
    await asyncio.sleep(0.1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await first.release()
    again = await store.try_acquire(name, ttl="10s")
    assert again is not None
    await again.release()


# MANUAL-03: extend sets the expiry to now + d; on a lost lease it fails Lost.
async def test_MANUAL_03_extend_sets_now_plus_d() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    lease = await store.try_acquire("x", ttl="2s")
    assert lease is not None
    await asyncio.to_thread(clock.advance, "1500ms")
    await lease.extend("2s")
    await asyncio.to_thread(clock.advance, "1999ms")
    assert await store.try_acquire("x", ttl="2s") is None
    await asyncio.to_thread(clock.advance, "1ms")
    with pytest.raises(leasehold.LeaseLost):
        await lease.extend("2s")
    for bad in ("0s", "2h", -1, "soon"):
        with pytest.raises(leasehold.InvalidTtl):
            await lease.extend(bad)
    await store.close()


# MANUAL-04: release only by the owner; the first release of a lost lease fails Lost.
async def test_MANUAL_04_release_of_a_lost_lease() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    old = await store.try_acquire("x", ttl="1s")
    assert old is not None
    await asyncio.to_thread(clock.advance, "1s")
    new = await store.try_acquire("x", ttl="10s")
    assert new is not None
    with pytest.raises(leasehold.LeaseLost):
        await old.release()
    await old.release()  # a confirmed loss: later calls do nothing
    assert await store.try_acquire("x", ttl="10s") is None  # the newer holder is untouched
    await new.release()
    await new.release()  # a confirmed release: later calls do nothing
    await store.close()


# MANUAL-05: empty names fail EmptyName, bad durations InvalidTtl; not reentrant.
async def test_MANUAL_05_bad_input_and_no_reentrance(store: leasehold.Store, name: str) -> None:
    with pytest.raises(leasehold.EmptyName):
        await store.try_acquire("", ttl="10s")
    for bad in ("0s", "61m", "soon", None, -5, float("nan")):
        with pytest.raises(leasehold.InvalidTtl):
            await store.try_acquire(name, ttl=bad)  # type: ignore[arg-type]
    lease = await store.try_acquire(name, ttl="10s")
    assert lease is not None
    assert await store.try_acquire(name, ttl="10s") is None
    await lease.release()


# MANUAL-06: one lease used from several tasks and threads at once.
async def test_MANUAL_06_one_lease_many_tasks_and_threads(
    store: leasehold.Store, name: str
) -> None:
    lease = await store.try_acquire(name, ttl="10s")
    assert lease is not None
    await asyncio.gather(*(lease.extend("10s") for _ in range(8)))
    errors: list[BaseException] = []

    def extend_in_a_thread() -> None:
        try:
            asyncio.run(lease.extend("10s"))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=extend_in_a_thread) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors
    await asyncio.gather(*(lease.release() for _ in range(8)))
    again = await store.try_acquire(name, ttl="10s")
    assert again is not None
    with pytest.raises(leasehold.LeaseLost):
        await lease.extend("10s")
    await again.release()
