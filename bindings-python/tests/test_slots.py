"""Slot leases through Python: ``store.slots``, ``Owner``,
``slots.acquire`` / ``renew`` / ``release``, on the embedded store, a real
server store process, and a frozen one for the timeouts."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

import leasehold
from leasehold import testing

from conftest import Server


@pytest.fixture
def namespace() -> str:
    """A namespace no other test uses (the server store is shared)."""
    return f"ids-{uuid.uuid4()}"


async def leased(slots: leasehold.Slots, owner: leasehold.Owner, **kw: int) -> leasehold.SlotLease:
    lease = await slots.acquire(owner, **kw)
    assert lease is not None, f"{owner} got no slot"
    return lease


def test_an_owner_has_a_key_and_an_instance() -> None:
    first, second = leasehold.Owner("svc"), leasehold.Owner("svc")
    assert first.key == second.key == "svc"
    assert first.instance != second.instance and len(first.instance) == 32
    given = leasehold.Owner("svc", "pod-7")
    assert given.instance == "pod-7" and given == leasehold.Owner("svc", instance="pod-7")
    assert given != leasehold.Owner("svc", "pod-8") and given != first
    assert len({given, leasehold.Owner("svc", "pod-7"), first}) == 2
    assert leasehold.Owner("svc", None).instance != first.instance


# SLOT-01: the held slot, then preferred, then the key's last slot, then the lowest free; Exhausted.
# SLOT-08: every new lease's fence is larger than the ones before.
def test_a_namespace_without_options_has_the_cores_defaults() -> None:
    slots = leasehold.memory().slots("defaults")
    assert (slots.limit, slots.offset, slots.ttl, slots.tolerance, slots.margin) == (
        1024,
        0,
        10,
        1,
        1,
    )


async def test_SLOT_01_acquire_tries_held_preferred_last_lowest(
    store: leasehold.Store, namespace: str
) -> None:
    slots = store.slots(namespace, limit=4, ttl="10s", tolerance="2s", offset=100)
    assert (slots.name, slots.limit, slots.offset) == (namespace, 4, 100)
    assert (slots.ttl, slots.tolerance) == (10, 2)
    a = leasehold.Owner("svc-a")
    first = await leased(slots, a)
    assert (first.slot, first.node, first.namespace, first.owner) == (0, 100, namespace, a)
    assert isinstance(first.fence, int) and first.fence > 0
    now_ms = time.time() * 1000
    assert abs(first.expires_at - (now_ms + 10_000)) < 2_000
    assert first.ceiling == first.expires_at + 2_000 and first.floor < first.expires_at
    again = await leased(slots, a, preferred=3)  # the held slot comes before preferred
    assert (again.slot, again.fence) == (first.slot, first.fence)

    b = await leased(slots, leasehold.Owner("svc-b"), preferred=3)
    assert b.slot == 3 and b.node == 103 and b.fence > first.fence
    assert await slots.release(b, b.floor)
    b_again = await leased(slots, leasehold.Owner("svc-b"))  # a new instance: its key's last slot
    assert b_again.slot == 3 and b_again.fence > b.fence
    c = await leased(slots, leasehold.Owner("svc-c"))  # the lowest free slot
    d = await leased(slots, leasehold.Owner("svc-d"))
    assert (c.slot, d.slot) == (1, 2)
    assert await slots.acquire(leasehold.Owner("svc-e")) is None  # Exhausted: an outcome
    assert await slots.acquire(leasehold.Owner("svc-e"), preferred=1) is None

    assert await slots.release(d, d.floor)
    assert await slots.release(b_again, b_again.floor)
    b_third = await leased(slots, leasehold.Owner("svc-b"), preferred=2)  # preferred first
    assert b_third.slot == 2


# SLOT-01: an expired slot is free (the embedded store on a virtual clock).
async def test_SLOT_01_an_expired_slot_is_free() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    slots = store.slots("ids", limit=1, ttl="1s", tolerance="500ms")
    old = await leased(slots, leasehold.Owner("old"))
    assert old.expires_at == clock.unix_millis + 1_000 and old.ceiling == old.expires_at + 500
    assert await slots.acquire(leasehold.Owner("new")) is None
    await asyncio.to_thread(clock.advance, "999ms")
    assert await slots.acquire(leasehold.Owner("new")) is None
    await asyncio.to_thread(clock.advance, "1ms")
    new = await leased(slots, leasehold.Owner("new"))
    assert new.slot == 0 and new.fence > old.fence
    assert new.floor == old.ceiling  # SLOT-06: the old holder may have issued up to its ceiling
    assert new.expires_at == clock.unix_millis + 1_000
    assert await slots.renew(old) is None and not await slots.release(old, old.ceiling)
    await store.close()


BAD_INTS: list[object] = [-1, 1.5, "3", None, True, [], object(), 2**64]


# SLOT-01: bad input raises its ERR-01 code (ERR-03), never a crash.
async def test_SLOT_01_bad_input_raises_its_code(store: leasehold.Store, namespace: str) -> None:
    with pytest.raises(leasehold.EmptyName):
        store.slots("")
    for bad_name in (None, 7, b"ids", "\ud800", "x" * 10_000_000):
        with pytest.raises(leasehold.InvalidArgument):
            store.slots(bad_name)  # type: ignore[arg-type]
    for limit in (0, 65_537, 2**32, *BAD_INTS):
        with pytest.raises(leasehold.InvalidArgument):
            store.slots(namespace, limit=limit)  # type: ignore[arg-type]
    for offset in (2**32 - 4, *BAD_INTS):
        with pytest.raises(leasehold.InvalidArgument):
            store.slots(namespace, limit=4, offset=offset)  # type: ignore[arg-type]
    for option, bad in [
        ("ttl", "999ms"), ("ttl", "61m"), ("ttl", "soon"), ("ttl", -1), ("tolerance", "2h"),
        ("tolerance", float("nan")), ("timeout", 0), ("timeout", "0s"), ("timeout", True),
    ]:  # fmt: skip
        with pytest.raises(leasehold.InvalidTtl):
            store.slots(namespace, **{option: bad})  # type: ignore[arg-type]
    with pytest.raises(leasehold.EmptyName):
        leasehold.Owner("")
    with pytest.raises(leasehold.EmptyName):
        leasehold.Owner("svc", "")
    for bad_owner in (3, b"svc", None):
        with pytest.raises(leasehold.InvalidArgument):
            leasehold.Owner(bad_owner)  # type: ignore[arg-type]
        with pytest.raises(leasehold.InvalidArgument):
            leasehold.Owner("svc", 3)  # type: ignore[arg-type]

    slots = store.slots(namespace, limit=4)
    owner = leasehold.Owner("svc")
    for not_an_owner in ("svc", None, object()):
        with pytest.raises(leasehold.InvalidArgument):
            await slots.acquire(not_an_owner)  # type: ignore[arg-type]
    for preferred in (4, 2**32 - 1, -1, 1.0, "0", True):
        with pytest.raises(leasehold.InvalidArgument):
            await slots.acquire(owner, preferred=preferred)  # type: ignore[arg-type]
    lease = await leased(slots, owner)
    for not_a_lease in (None, "lease", owner):
        with pytest.raises(leasehold.InvalidArgument):
            await slots.renew(not_a_lease)  # type: ignore[arg-type]
        with pytest.raises(leasehold.InvalidArgument):
            await slots.release(not_a_lease, 0)  # type: ignore[arg-type]
    for last_issued in (-1, 2**64, 1.5, None, "0", False):
        with pytest.raises(leasehold.InvalidArgument):
            await slots.release(lease, last_issued)  # type: ignore[arg-type]
    assert await slots.release(lease, 2**64 - 1)  # any u64, capped at the ceiling


# ERR-03: slots of a closed store raise Closed.
async def test_ERR_03_slots_of_a_closed_store(store: leasehold.Store, namespace: str) -> None:
    slots = store.slots(namespace, limit=2)
    owner = leasehold.Owner("svc")
    lease = await leased(slots, owner)
    await store.close()
    with pytest.raises(leasehold.Closed):
        store.slots(namespace, limit=2)
    with pytest.raises(leasehold.Closed):
        await slots.acquire(owner)
    with pytest.raises(leasehold.Closed):
        await slots.renew(lease)
    with pytest.raises(leasehold.Closed):
        await slots.release(lease, lease.floor)


# ERR-01: a read-only connection may not take, renew or release a slot: PermissionDenied.
async def test_ERR_01_a_read_only_connection_takes_no_slot(
    token_server: Server, namespace: str
) -> None:
    writer = await leasehold.connect(token_server.url, token="writer-token")
    reader = await leasehold.connect(token_server.url, token="reader-token")
    try:
        lease = await leased(writer.slots(namespace), leasehold.Owner("svc"))
        read_only = reader.slots(namespace)
        with pytest.raises(leasehold.PermissionDenied):
            await read_only.acquire(leasehold.Owner("svc"))
        with pytest.raises(leasehold.PermissionDenied):
            await read_only.renew(lease)
        with pytest.raises(leasehold.PermissionDenied):
            await read_only.release(lease, lease.floor)
        assert await writer.slots(namespace).release(lease, lease.floor)
    finally:
        await reader.close()
        await writer.close()


# ERR-01, SLOT-02: the first use fixes limit, tolerance and offset; a use with others fails
# NamespaceMismatch (the ttl is the handle's own).
async def test_ERR_01_namespace_mismatch_has_its_code(
    store: leasehold.Store, namespace: str
) -> None:
    first = await leased(store.slots(namespace, limit=4, tolerance="1s"), leasehold.Owner("a"))
    for other in ({"limit": 5}, {"limit": 4, "tolerance": "2s"}, {"limit": 4, "offset": 1}):
        with pytest.raises(leasehold.NamespaceMismatch) as caught:
            await store.slots(namespace, **other).acquire(leasehold.Owner("b"))
        assert caught.value.code == "NamespaceMismatch"
        assert not leasehold.is_timeout(caught.value) and not caught.value.is_timeout
    same = store.slots(namespace, limit=4, tolerance=1, ttl="30s")  # the ttl is not fixed
    assert (await leased(same, leasehold.Owner("b"))).slot == first.slot + 1


# SLOT-04: renew keeps the fence and never moves the expiry or the ceiling back.
async def test_SLOT_04_renew_keeps_the_fence(store: leasehold.Store, namespace: str) -> None:
    slots = store.slots(namespace, limit=2, ttl="5s", tolerance="1s")
    lease = await leased(slots, leasehold.Owner("svc"))
    renewed = await slots.renew(lease)
    assert renewed is not None and renewed.fence == lease.fence and renewed.slot == lease.slot
    assert renewed.expires_at >= lease.expires_at
    assert renewed.ceiling == renewed.expires_at + 1_000
    assert await slots.renew(lease) is not None  # an older copy of the same lease renews too
    assert await slots.release(renewed, renewed.floor)
    assert await slots.renew(renewed) is None


# SLOT-05: the next holder's floor is max(floor, min(last_issued, ceiling)); stale releases fail.
async def test_SLOT_05_release_sets_the_next_floor(store: leasehold.Store, namespace: str) -> None:
    slots = store.slots(namespace, limit=1, ttl="10s", tolerance="1s")
    first = await leased(slots, leasehold.Owner("one"))
    below = first.ceiling - 500  # below the ceiling: the floor is what was issued
    assert await slots.release(first, below)
    assert await slots.release(first, below + 100)  # again: true, and nothing changes
    second = await leased(slots, leasehold.Owner("two"))
    assert second.floor == max(first.floor, below) == below

    assert not await slots.release(first, second.ceiling)  # stale: someone else holds it
    assert await slots.acquire(leasehold.Owner("three")) is None  # still held by `two`
    renewed = await slots.renew(second)
    assert renewed is not None and renewed.fence == second.fence
    second = renewed

    assert await slots.release(second, second.ceiling + 60_000)  # above: capped at the ceiling
    third = await leased(slots, leasehold.Owner("three"))
    assert third.floor == second.ceiling

    assert await slots.release(third, 0)  # below the old floor: the floor stays
    fourth = await leased(slots, leasehold.Owner("four"))
    assert fourth.floor == third.floor == second.ceiling
    assert await slots.release(fourth, fourth.floor)


# SLOT-07: against a frozen server store, every call fails Timeout and is_timeout says so;
# outcomes (Exhausted, NamespaceMismatch) are not timeouts. The calls that must answer
# keep the default bound (5 s); those to the frozen store, which must time out, 300 ms.
# A timed-out call ends no sooner than its bound; how much later is printed (the store
# stays frozen until they all ended: a call that waited for it would never end).
async def test_SLOT_07_a_frozen_store_times_out(frozen_server: Server) -> None:
    store = await leasehold.connect(frozen_server.url)
    try:
        answering = store.slots("ids", limit=1)
        held = await leased(answering, leasehold.Owner("held"))
        frozen = leasehold.Owner("frozen")
        assert await answering.acquire(frozen) is None  # Exhausted is no error
        with pytest.raises(leasehold.NamespaceMismatch) as mismatch:
            await store.slots("ids", limit=2).acquire(frozen)
        assert not leasehold.is_timeout(mismatch.value) and not mismatch.value.is_timeout

        slots = store.slots("ids", limit=1, timeout=0.3)
        frozen_server.freeze()
        try:
            started = time.monotonic()
            with pytest.raises(leasehold.Timeout) as timeout:
                await asyncio.wait_for(slots.acquire(frozen), 30)
            took = time.monotonic() - started
            print(f"SLOT-07: a 300 ms call to a frozen store timed out after {took:.3f} s")
            assert took >= 0.25
            assert timeout.value.code == "Timeout" and timeout.value.is_timeout
            assert leasehold.is_timeout(timeout.value)
            with pytest.raises(leasehold.Timeout):
                await slots.renew(held)
            patient = store.slots("other-ids", timeout="1m")
            waiting = asyncio.create_task(patient.acquire(frozen))
            await asyncio.sleep(0.1)
            waiting.cancel()  # a cancelled call is a CancelledError, not a timeout
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(waiting, 3)
            with pytest.raises(leasehold.Timeout):
                await slots.release(held, held.floor)
        finally:
            frozen_server.thaw()
        # Unfrozen, it answers again: the release (maybe a repeat of the one
        # that timed out) and then the slot for `frozen`.
        unfrozen = store.slots("ids", limit=1, timeout="5s")
        assert await unfrozen.release(held, held.floor)
        after = await leased(unfrozen, frozen)
        assert after.slot == 0 and after.fence > held.fence
    finally:
        await store.close()


# SLOT-07: is_timeout looks through __cause__ and __context__, and only finds a Timeout.
def test_SLOT_07_is_timeout_follows_the_chain() -> None:
    timeout = testing.error_for_code("Timeout", "slow")
    assert leasehold.is_timeout(timeout)
    try:
        try:
            raise timeout
        except leasehold.Timeout as e:
            raise RuntimeError("wrapped") from e
    except RuntimeError as wrapped:
        assert leasehold.is_timeout(wrapped)
    try:
        try:
            raise timeout
        except leasehold.Timeout:
            raise ValueError("while handling it")  # noqa: B904
    except ValueError as implicit:
        assert implicit.__cause__ is None and leasehold.is_timeout(implicit)
    try:
        try:
            raise timeout
        except leasehold.Timeout:
            raise ValueError("not because of it") from None
    except ValueError as suppressed:  # the chain as a traceback shows it: none
        assert not leasehold.is_timeout(suppressed)
    try:
        try:
            raise timeout
        except leasehold.Timeout:
            raise ValueError("because of another") from KeyError("k")
    except ValueError as caused:
        assert not leasehold.is_timeout(caused)
    looped = ValueError("a loop")
    looped.__context__ = KeyError("k")
    looped.__context__.__context__ = looped
    assert not leasehold.is_timeout(looped)
    assert not leasehold.is_timeout(TimeoutError("a builtin timeout is not the store's"))
    assert not leasehold.is_timeout(None)
    for code in testing.error_codes():
        assert leasehold.is_timeout(testing.error_for_code(code, "m")) == (code == "Timeout")
    group = ExceptionGroup("calls", [timeout, leasehold.NamespaceMismatch("m")])
    matched = group.subgroup(leasehold.is_timeout)
    assert matched is not None and matched.exceptions == (timeout,)
