"""``async with slots.hold(owner) as held``: a slot held with background
renewal while a block runs, on the embedded store (a virtual clock for the
renewals and losses), a real server store process, and a frozen one."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import pytest

import leasehold
from leasehold import testing

from conftest import Server


@pytest.fixture
def namespace() -> str:
    """A namespace no other test uses (the server store is shared)."""
    return f"held-ids-{uuid.uuid4()}"


async def on_clock(clock: testing.VirtualClock, by: leasehold.Duration) -> None:
    """Moves the clock off the event loop, its timers' tasks run when it returns."""
    await asyncio.to_thread(clock.advance, by)


async def free_slot(slots: leasehold.Slots) -> leasehold.SlotLease:
    """A slot for a new owner, which must be free."""
    lease = await slots.acquire(leasehold.Owner("next"))
    assert lease is not None, "the slot stayed held"
    return lease


# SLOT-04, SLOT-05: a held slot is renewed in the background across several
# ttls (same fence, later expiry and ceiling), and its end releases it with the
# largest timestamp issued: the next holder's floor.
async def test_SLOT_05_a_held_slot_is_renewed_and_hands_on_its_issued() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    slots = store.slots("ids", limit=1, ttl="10s", tolerance="2s", offset=40)
    assert slots.margin == 1
    async with slots.hold(leasehold.Owner("svc")) as held:
        assert held is not None
        first = held.lease
        assert (held.slot, held.node, held.fence) == (0, 40, first.fence)
        assert (held.floor, held.ceiling) == (first.floor, first.ceiling)
        assert held.last_issued == 0 and not held.lost and held.loss_reason is None
        assert 0 < held.remaining <= 9
        for _ in range(6):  # 30 s: three ttls
            await on_clock(clock, "5s")
        assert not held.lost, held.loss_reason
        assert held.fence == first.fence and held.lease.fence == first.fence
        assert held.lease.expires_at >= first.expires_at + 25_000
        assert held.ceiling == held.lease.ceiling >= first.ceiling + 25_000
        assert await slots.acquire(leasehold.Owner("other")) is None  # still ours
        held.issued(first.floor + 7)
        held.issued(first.floor + 3)  # the largest is kept
        assert held.last_issued == first.floor + 7
    assert held.lost is False
    assert (await free_slot(slots)).floor == first.floor + 7
    await store.close()


# SLOT-01: when every slot is held, the block gets None (nothing is held for it).
async def test_SLOT_01_a_hold_when_every_slot_is_held_gets_none(
    store: leasehold.Store, namespace: str
) -> None:
    slots = store.slots(namespace, limit=1)
    taken = await slots.acquire(leasehold.Owner("first"))
    assert taken is not None
    async with slots.hold(leasehold.Owner("second")) as held:
        assert held is None
    assert await slots.release(taken, taken.floor)
    async with slots.hold(leasehold.Owner("second")) as held:
        assert held is not None and held.slot == 0 and held.fence > taken.fence


# SLOT-01: a hold takes the slot an acquire would: here `preferred`.
async def test_SLOT_01_a_hold_takes_the_preferred_slot(
    store: leasehold.Store, namespace: str
) -> None:
    slots = store.slots(namespace, limit=4, offset=10)
    async with slots.hold(leasehold.Owner("svc"), preferred=3) as held:
        assert held is not None and (held.slot, held.node) == (3, 13)
        async with slots.hold(leasehold.Owner("other"), 3) as other:
            assert other is not None and other.slot == 0


# LOCK-09 (for a slot): a slot released behind its holder's back is lost at the
# next renewal: the block is cancelled at its next await and the hold raises
# LeaseLost (reason "unknown", from the CancelledError).
async def test_LOCK_09_a_lost_slot_cancels_the_block() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    slots = store.slots("ids", limit=1, ttl="9s")
    reached = []
    with pytest.raises(leasehold.LeaseLost) as raised:
        async with slots.hold(leasehold.Owner("svc")) as held:
            assert held is not None
            assert await slots.release(held.lease, 0)
            await on_clock(clock, "3500ms")  # past ttl/3: the renewal answers nothing
            await asyncio.sleep(30)
            reached.append("the block went on")
    assert not reached and held is not None
    assert held.lost and held.loss_reason == "unknown" and held.remaining == 0
    assert raised.value.code == "Lost" and raised.value.reason == "unknown"
    assert isinstance(raised.value.__cause__, asyncio.CancelledError)
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]
    await free_slot(slots)
    await store.close()


# LOCK-10 (for a slot): a block that succeeds after its slot was lost still makes
# the hold raise LeaseLost, also when it swallows the cancellation.
async def test_LOCK_10_success_after_a_lost_slot_raises_lease_lost() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    slots = store.slots("ids", limit=1, ttl="3s")
    with pytest.raises(leasehold.LeaseLost) as raised:
        async with slots.hold(leasehold.Owner("svc")) as held:
            assert held is not None
            assert await slots.release(held.lease, 0)
            # The loss comes while the block computes without an await.
            clock.advance("1500ms")
    assert raised.value.__cause__ is None and raised.value.reason == "unknown"
    with pytest.raises(leasehold.LeaseLost):
        async with slots.hold(leasehold.Owner("svc")) as held:
            assert held is not None
            assert await slots.release(held.lease, 0)
            await on_clock(clock, "1500ms")
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(30)
    await store.close()


# LOCK-10 (for a slot): the block's own error is kept, as the LeaseLost's
# __cause__; without a loss, it comes out itself and the slot is released.
async def test_LOCK_10_the_blocks_error_is_kept() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    slots = store.slots("ids", limit=1, ttl="3s")
    with pytest.raises(leasehold.LeaseLost) as raised:
        async with slots.hold(leasehold.Owner("svc")) as held:
            assert held is not None
            assert await slots.release(held.lease, 0)
            clock.advance("1500ms")
            raise ValueError("the ids failed too")
    assert isinstance(raised.value.__cause__, ValueError)
    with pytest.raises(ValueError):
        async with slots.hold(leasehold.Owner("svc")) as held:
            assert held is not None
            held.issued(held.floor + 5)
            raise ValueError("not lost: the error itself comes out")
    assert held is not None and (await free_slot(slots)).floor == held.floor + 5
    await store.close()


# LOCK-09 (for a slot): a cancellation from outside stays CancelledError, and
# the slot is released (LOCK-11).
async def test_LOCK_09_outside_cancellation_of_a_slot_hold_stays_cancelled_error(
    store: leasehold.Store, namespace: str
) -> None:
    slots = store.slots(namespace, limit=1)
    entered = asyncio.Event()

    async def holder() -> None:
        async with slots.hold(leasehold.Owner("svc")) as held:
            assert held is not None
            held.issued(held.floor + 1)
            entered.set()
            await asyncio.sleep(30)

    task = asyncio.create_task(holder())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2), slots.hold(leasehold.Owner("svc")):
            await asyncio.sleep(30)
    await free_slot(slots)


# SLOT-04: on the server store, a held slot is renewed in real time past several
# ttls, and its end hands on what it issued (SLOT-05).
async def test_SLOT_04_a_held_slot_is_renewed_on_the_server(server: Server, namespace: str) -> None:
    store = await leasehold.connect(server.url)
    slots = store.slots(namespace, limit=1, ttl="1s", tolerance="500ms")
    async with slots.hold(leasehold.Owner("svc")) as held:
        assert held is not None
        first = held.lease
        await asyncio.sleep(2.5)
        assert not held.lost and held.fence == first.fence
        assert held.lease.expires_at > first.expires_at + 1_000
        assert held.ceiling == held.lease.expires_at + 500
        assert held.remaining > 0.2
        held.issued(first.ceiling)
    assert (await free_slot(slots)).floor == first.ceiling
    await store.close()


# A held slot none of whose renewals is confirmed by the holder's deadline (the
# server store is frozen) is lost ("expired"): the block (which would sleep 30 s)
# is cancelled and the hold raises LeaseLost; the release that cannot reach the
# store fails nothing. How long it took is printed.
async def test_a_held_slot_on_a_frozen_store_expires(frozen_server: Server) -> None:
    store = await leasehold.connect(frozen_server.url)
    slots = store.slots("ids", limit=1, ttl="1s", margin="200ms")
    assert slots.margin == pytest.approx(0.2)
    started = time.monotonic()
    reached = []
    try:
        with pytest.raises(leasehold.LeaseLost) as raised:
            async with slots.hold(leasehold.Owner("svc")) as held:
                assert held is not None
                frozen_server.freeze()
                await asyncio.sleep(30)
                reached.append("the block went on")
    finally:
        frozen_server.thaw()
    print(f"a held slot on a frozen store: lost after {time.monotonic() - started:.3f} s (ttl 1 s)")
    assert not reached, "the loss did not cancel the block"
    assert held is not None and held.loss_reason == "expired"
    assert raised.value.reason == "expired"
    await store.close()


# ERR-03: bad input to a hold raises its code, never a crash.
async def test_ERR_03_bad_input_to_a_slot_hold(store: leasehold.Store, namespace: str) -> None:
    for margin in ("5s", -1, "soon"):
        with pytest.raises(leasehold.InvalidTtl):
            store.slots(namespace, ttl="10s", margin=margin)
    slots = store.slots(namespace, limit=2)
    for not_an_owner in ("svc", None):
        with pytest.raises(leasehold.InvalidArgument):
            async with slots.hold(not_an_owner):  # type: ignore[arg-type]
                pytest.fail("held a slot for no owner")
    for preferred in (2, -1, "0", True):
        with pytest.raises(leasehold.InvalidArgument):
            async with slots.hold(leasehold.Owner("svc"), preferred):  # type: ignore[arg-type]
                pytest.fail("held a slot out of range")
    hold = slots.hold(leasehold.Owner("svc"))
    async with hold as held:
        assert held is not None
        for ms in (-1, 2**64, 1.5, None, "0", True):
            with pytest.raises(leasehold.InvalidArgument):
                held.issued(ms)  # type: ignore[arg-type]
    with pytest.raises(leasehold.InvalidArgument):
        async with hold:
            pytest.fail("a hold entered twice")
    await free_slot(slots)


# ERR-03: a hold on a closed store raises Closed. A slot held while its store
# closes is lost (`closed`) by the time the close returns, as a held key is
# (LOCK-19), and the block is cancelled at its next await.
async def test_ERR_03_a_slot_hold_on_a_closed_store() -> None:
    store = leasehold.memory()
    slots = store.slots("ids", limit=1)
    with pytest.raises(leasehold.LeaseLost) as raised:
        async with slots.hold(leasehold.Owner("svc")) as held:
            assert held is not None
            await store.close()
            assert held.lost and held.loss_reason == "closed"
            await asyncio.sleep(30)
    assert raised.value.reason == "closed"
    with pytest.raises(leasehold.Closed):
        async with slots.hold(leasehold.Owner("svc")):
            pytest.fail("held a slot of a closed store")


# ERR-03: a slot's hold has no blocking form: `with slots.hold(...)` raises
# InvalidArgument before it asks for anything.
def test_ERR_03_a_slot_hold_has_no_with_form() -> None:
    store = leasehold.memory()
    slots = store.slots("ids", limit=1)
    with (
        pytest.raises(leasehold.InvalidArgument, match="async with"),
        slots.hold(leasehold.Owner("svc")),
    ):
        pytest.fail("held a slot without an event loop")
    store.close_blocking()
