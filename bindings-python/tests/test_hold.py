"""``async with lock.hold(key)`` and ``lock.try_hold(key)``, and their ``with``
forms, against the embedded store and a real server store process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest

import leasehold
from leasehold import testing

from conftest import Server


@pytest.fixture
def key() -> str:
    """A key no other test uses (the server store is shared)."""
    return f"key-{uuid.uuid4()}"


HANG = 30.0
"""How long a test waits for what must come before it counts it as never
coming: a hang, not a speed (the machine is shared)."""


async def until(done: object, bound: float = 5.0) -> None:
    """Polls ``done()`` until it is true or ``bound`` seconds pass."""
    assert callable(done)
    deadline = time.monotonic() + bound
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.005)


async def held_by_someone(lock: leasehold.Lock, key: str) -> bool:
    async with lock.try_hold(key) as lease:
        return lease is None


async def test_a_hold_gives_the_block_its_lease(store: leasehold.Store, key: str) -> None:
    lock = store.lock("py-hold", ttl="5s")
    async with lock.hold(key) as lease:
        assert isinstance(lease.fence, int) and lease.fence > 0
        assert not lease.lost and lease.loss_reason is None
        assert lease.key == key and lease.lock_name == "py-hold"
        if store.kind == "memory":
            # LOCK-19: a holder in the embedded store's own process needs no renewal.
            assert lease.remaining is None
        else:
            assert lease.remaining is not None and 0 < lease.remaining <= 5 * 0.9
    assert not await held_by_someone(lock, key)


# LOCK-01: a hold on a held key waits in line, first come, first served.
async def test_LOCK_01_holds_wait_in_line_in_order(store: leasehold.Store, key: str) -> None:
    lock = store.lock("py-line")
    order: list[str] = []
    release_first = asyncio.Event()

    async def first() -> None:
        async with lock.hold(key):
            order.append("a")
            await release_first.wait()

    async def later(name: str) -> None:
        async with lock.hold(key):
            order.append(name)

    a = asyncio.create_task(first())
    await until(lambda: order == ["a"])
    b = asyncio.create_task(later("b"))
    await asyncio.sleep(0.1)
    c = asyncio.create_task(later("c"))
    await asyncio.sleep(0.1)
    assert order == ["a"]
    release_first.set()
    await asyncio.wait_for(asyncio.gather(a, b, c), 5)
    assert order == ["a", "b", "c"]


# LOCK-17: try_hold never waits: the block gets None when the key is held
# (by this very task: a try that waited in line would never be answered).
async def test_LOCK_17_try_hold_is_none_when_held(store: leasehold.Store, key: str) -> None:
    lock = store.lock("py-try")

    async def attempt() -> bool:
        async with lock.try_hold(key) as other:
            return other is None

    async with lock.hold(key) as lease:
        assert await asyncio.wait_for(attempt(), HANG)
    async with lock.try_hold(key) as mine:
        assert mine is not None and mine.fence > lease.fence


# LOCK-09: a lost lease cancels the block at its next await; the hold raises LeaseLost.
async def test_LOCK_09_a_loss_cancels_the_block_at_its_next_await() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    lock = store.lock("py-loss", ttl="1s", max_hold="2s")
    reached = []
    with pytest.raises(leasehold.LeaseLost) as raised:
        async with lock.hold("k") as lease:
            await asyncio.to_thread(clock.advance, "2s")
            await asyncio.sleep(30)
            reached.append("the block went on")
    assert not reached
    assert lease.lost and lease.loss_reason == "revoked" and lease.remaining == 0
    assert raised.value.code == "Lost" and raised.value.reason == "revoked"
    assert isinstance(raised.value.__cause__, asyncio.CancelledError)
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]
    await store.close()


# LOCK-09, LOCK-12: on the server store, max_hold revokes the lease in real
# time: the block, which would sleep 10 s, is cancelled by the loss. How long
# it took is printed.
async def test_LOCK_12_max_hold_revokes_on_the_server(server: Server, key: str) -> None:
    store = await leasehold.connect(server.url)
    lock = store.lock("py-max-hold", ttl="1s", max_hold="1s")
    started = time.monotonic()
    reached = []
    with pytest.raises(leasehold.LeaseLost):
        async with lock.hold(key) as lease:
            await asyncio.sleep(10)
            reached.append("the block went on")
    print(f"LOCK-12: revoked after {time.monotonic() - started:.3f} s (max_hold 1 s)")
    assert not reached, "the loss did not cancel the block"
    assert lease.lost and lease.loss_reason in {"revoked", "expired"}
    await store.close()


# LOCK-06: renewed in the background while the block runs, past several ttls.
async def test_LOCK_06_renewed_while_the_block_runs(server: Server, key: str) -> None:
    store = await leasehold.connect(server.url)
    lock = store.lock("py-renew", ttl="1s")
    async with lock.hold(key) as lease:
        await asyncio.sleep(2.5)
        assert not lease.lost
        assert lease.remaining is not None and lease.remaining > 0.3
    await store.close()


# LOCK-10: a block that succeeds after a loss still makes the hold raise LeaseLost.
async def test_LOCK_10_success_after_a_loss_raises_lease_lost() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    lock = store.lock("py-late", ttl="1s", max_hold="1s")
    with pytest.raises(leasehold.LeaseLost) as raised:
        async with lock.hold("k"):
            # The loss comes while the block computes without an await.
            clock.advance("1s")
    assert raised.value.__cause__ is None
    with pytest.raises(leasehold.LeaseLost):
        async with lock.hold("k"):
            await asyncio.to_thread(clock.advance, "1s")
            # The block swallows the cancellation: the hold still fails.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(30)
    await store.close()


# LOCK-10: the block's own error is kept, as the LeaseLost's __cause__.
async def test_LOCK_10_the_blocks_error_is_the_cause() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    lock = store.lock("py-cause", ttl="1s", max_hold="1s")
    with pytest.raises(leasehold.LeaseLost) as raised:
        async with lock.hold("k"):
            clock.advance("1s")
            raise ValueError("the summary failed too")
    assert isinstance(raised.value.__cause__, ValueError)
    with pytest.raises(ValueError):
        async with lock.hold("k"):
            raise ValueError("not lost: the error itself comes out")
    await store.close()


# LOCK-09: a cancellation from outside stays CancelledError (and releases, LOCK-11).
async def test_LOCK_09_outside_cancellation_stays_cancelled_error(
    store: leasehold.Store, key: str
) -> None:
    lock = store.lock("py-outside")
    entered = asyncio.Event()

    async def holder() -> None:
        async with lock.hold(key):
            entered.set()
            await asyncio.sleep(30)

    task = asyncio.create_task(holder())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: task.done())
    assert not await held_by_someone(lock, key)


# LOCK-09: asyncio.timeout around a hold still raises TimeoutError, not LeaseLost.
async def test_LOCK_09_an_enclosing_timeout_keeps_its_meaning(
    store: leasehold.Store, key: str
) -> None:
    lock = store.lock("py-timeout")
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            async with lock.hold(key):
                await asyncio.sleep(30)
    assert not await held_by_someone(lock, key)


class Panic(BaseException):
    """Not an Exception: the way a Python block 'panics'."""


# LOCK-11: released when the block returns, raises, raises a BaseException or is cancelled.
async def test_LOCK_11_released_on_every_exit_path(store: leasehold.Store, key: str) -> None:
    lock = store.lock("py-exits")
    async with lock.hold(key):
        pass
    assert not await held_by_someone(lock, key)
    with pytest.raises(RuntimeError):
        async with lock.hold(key):
            raise RuntimeError("failed")
    assert not await held_by_someone(lock, key)
    with pytest.raises(Panic):
        async with lock.hold(key):
            raise Panic("panicked")
    assert not await held_by_someone(lock, key)
    waiter_got = asyncio.Event()

    async def waiter() -> None:
        async with lock.hold(key):
            waiter_got.set()

    async def holder() -> None:
        async with lock.hold(key):
            await asyncio.sleep(30)

    first = asyncio.create_task(holder())
    await asyncio.sleep(0.1)
    second = asyncio.create_task(waiter())
    await asyncio.sleep(0.1)
    first.cancel()
    await asyncio.wait_for(waiter_got.wait(), 5)  # the next in line is granted at once
    await second


# LOCK-11: a cancellation that comes while the release is on its way does not stop it.
async def test_LOCK_11_the_release_is_shielded(server: Server, key: str) -> None:
    store = await leasehold.connect(server.url)
    other = await leasehold.connect(server.url)
    lock = store.lock("py-shield", ttl="30s")
    entered = asyncio.Event()

    async def holder() -> None:
        async with lock.hold(key):
            entered.set()
            await asyncio.sleep(30)

    task = asyncio.create_task(holder())
    await entered.wait()
    task.cancel()
    await asyncio.sleep(0)  # the block ends; its release is sent
    task.cancel()  # and cancelled while on its way
    with pytest.raises(asyncio.CancelledError):
        await task
    free = False
    deadline = time.monotonic() + 5
    while not free and time.monotonic() < deadline:
        free = not await held_by_someone(other.lock("py-shield"), key)
        await asyncio.sleep(0.02)
    assert free, "the key stayed held: the release was dropped"
    await store.close()
    await other.close()


# LOCK-18: cancelling a task that waits in line leaves the line; nothing is granted to it.
async def test_LOCK_18_cancelling_a_waiting_hold_leaves_the_line(
    store: leasehold.Store, key: str
) -> None:
    lock = store.lock("py-give-up")
    got: list[str] = []
    release = asyncio.Event()

    async def hold(name: str, until_set: asyncio.Event | None = None) -> None:
        async with lock.hold(key):
            got.append(name)
            if until_set is not None:
                await until_set.wait()

    a = asyncio.create_task(hold("a", release))
    await until(lambda: got == ["a"])
    b = asyncio.create_task(hold("b"))
    await asyncio.sleep(0.1)
    c = asyncio.create_task(hold("c"))
    await asyncio.sleep(0.1)
    b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await b
    release.set()
    await asyncio.wait_for(asyncio.gather(a, c), 5)
    assert got == ["a", "c"]
    assert not await held_by_someone(lock, key)


# LOCK-18: `wait` bounds the time in line: WaitTimeout, and the line is left.
async def test_LOCK_18_wait_bounds_the_line(store: leasehold.Store, key: str) -> None:
    lock = store.lock("py-wait", wait=timedelta(milliseconds=100))
    async with lock.hold(key):
        with pytest.raises(leasehold.WaitTimeout):
            async with lock.hold(key):
                pytest.fail("granted a held key")
        with pytest.raises(leasehold.WaitTimeout):
            async with lock.hold(key, wait=0.05):
                pytest.fail("granted a held key")
    async with lock.try_hold(key) as lease:
        assert lease is not None


# LOCK-20: holding one key does not delay another (held by this very task:
# a second key that waited for the first would never be had).
async def test_LOCK_20_keys_are_independent(store: leasehold.Store, key: str) -> None:
    lock = store.lock("py-keys")

    async def second() -> bool:
        async with lock.hold(key + "-2") as lease:
            return not lease.lost

    async with lock.hold(key + "-1"):
        assert await asyncio.wait_for(second(), HANG)


# LOCK-14: a read-only token may not hold; a connection without a valid token is refused.
async def test_LOCK_14_tokens(token_server: Server, key: str) -> None:
    reader = await leasehold.connect(token_server.url, token="reader-token")
    lock = reader.lock("py-tokens")
    with pytest.raises(leasehold.PermissionDenied):
        async with lock.hold(key):
            pytest.fail("a read-only connection held a key")
    with pytest.raises(leasehold.PermissionDenied):
        async with lock.try_hold(key):
            pytest.fail("a read-only connection held a key")
    with pytest.raises(leasehold.PermissionDenied):
        await reader.try_acquire(key, ttl="10s")
    writer = await leasehold.connect(token_server.url, token="writer-token")
    async with writer.lock("py-tokens").hold(key) as lease:
        assert lease.fence > 0
    for token in (None, "wrong-token"):
        with pytest.raises(leasehold.Unauthenticated):
            await leasehold.connect(token_server.url, token=token)
    await reader.close()
    await writer.close()


# WHO-01, WHO-02: ``lock.holder(key)`` answers ``None`` for a free key and,
# for a held one, the identity its holder connected with (by default
# hostname:pid), its fence and how many wait; a read-only connection may ask.
async def test_WHO_02_holder_names_the_identity(token_server: Server, key: str) -> None:
    writer = await leasehold.connect(token_server.url, token="writer-token", identity="billing-3")
    other = await leasehold.connect(token_server.url, token="writer-token")
    reader = await leasehold.connect(token_server.url, token="reader-token")
    seen = reader.lock("py-who")
    assert await seen.holder(key) is None
    async with writer.lock("py-who", ttl="5s").hold(key) as lease:
        waiter = asyncio.create_task(wait_for_it(other.lock("py-who", ttl="5s"), key))
        await until_holder(seen, key, lambda h: h.waiting == 1)
        info = await seen.holder(key)
        assert info is not None
        assert (info.identity, info.fence, info.waiting) == ("billing-3", lease.fence, 1)
        assert info.expires_in is not None and 0 < info.expires_in <= 5
    own = await asyncio.wait_for(waiter, HANG)
    assert own == f"{socket.gethostname()}:{os.getpid()}"
    assert await seen.holder(key) is None
    with pytest.raises(leasehold.EmptyName):
        await seen.holder("")
    for store in (writer, other, reader):
        await store.close()


async def wait_for_it(lock: leasehold.Lock, key: str) -> str:
    """Waits in line for ``key`` and answers who the store says holds it then."""
    async with lock.hold(key):
        info = await lock.holder(key)
        assert info is not None
        return info.identity


async def until_holder(
    lock: leasehold.Lock, key: str, ok: Callable[[leasehold.HolderInfo], bool]
) -> None:
    """Asks who holds ``key`` until ``ok`` says yes; fails after HANG."""
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        info = await lock.holder(key)
        if info is not None and ok(info):
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"the holder of {key} never became what was waited for: {info}")


def test_with_hold_in_code_without_an_event_loop(server: Server) -> None:
    key = f"key-{uuid.uuid4()}"
    for store in (leasehold.memory(), leasehold.connect_blocking(server.url)):
        with store:
            lock = store.lock("py-sync", ttl="2s")
            with lock.hold(key) as lease:
                assert not lease.lost
                with lock.try_hold(key) as other:
                    assert other is None
            with lock.try_hold(key) as again:
                assert again is not None and again.fence > lease.fence


# LOCK-10: the blocking form checks `lease.lost` and raises LeaseLost at the end.
def test_LOCK_10_with_hold_raises_lease_lost_at_the_end() -> None:
    clock = testing.VirtualClock()
    with testing.memory(clock) as store:
        lock = store.lock("py-sync-loss", ttl="1s", max_hold="1s")
        with pytest.raises(leasehold.LeaseLost) as raised, lock.hold("k") as lease:
            clock.advance("1s")
            deadline = time.monotonic() + 5
            while not lease.lost and time.monotonic() < deadline:
                time.sleep(0.001)
            assert lease.lost
            raise KeyError("the block's own error")
        assert isinstance(raised.value.__cause__, KeyError)


def test_with_hold_waits_in_line_on_other_threads() -> None:
    store = leasehold.memory()
    lock = store.lock("py-threads")
    order: list[int] = []
    first_in = threading.Event()

    def first() -> None:
        with lock.hold("k"):
            first_in.set()
            time.sleep(0.2)
            order.append(1)

    def second() -> None:
        first_in.wait()
        with lock.hold("k"):
            order.append(2)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert order == [1, 2]
    store.close_blocking()


async def test_with_hold_refuses_to_block_the_event_loop(store: leasehold.Store) -> None:
    lock = store.lock("py-refuse")
    with pytest.raises(leasehold.InvalidArgument), lock.hold("k"):
        pytest.fail("blocked the event loop")


async def test_a_hold_is_entered_once(store: leasehold.Store, key: str) -> None:
    hold = store.lock("py-once").hold(key)
    async with hold:
        pass
    with pytest.raises(leasehold.InvalidArgument):
        async with hold:
            pass


# LOCK-19: closing the embedded store ends its leases (the block hears it).
async def test_LOCK_19_closing_the_store_ends_its_leases() -> None:
    store = leasehold.memory()
    lock = store.lock("py-close")
    with pytest.raises(leasehold.LeaseLost) as raised:
        async with lock.hold("k"):
            await store.close()
            await asyncio.sleep(30)
    assert raised.value.reason == "closed"
    with pytest.raises(leasehold.Closed):
        async with lock.hold("k"):
            pass


# LOCK-09: a lease kept past its hold keeps what it was, as the core's lease
# says once its holder ended it: the same fence, not lost, no time left, and
# never lost after, its old deadline (maxHold) passing included; the same for
# try_hold's and each of hold_many's.
async def test_LOCK_09_a_lease_read_after_its_hold_ended_keeps_what_it_was() -> None:
    store = leasehold.memory()
    lock = store.lock("py-after", ttl="1s", max_hold="1s")
    kept: list[leasehold.Lease] = []
    async with lock.hold("k") as lease:
        assert lease.remaining is not None and lease.remaining > 0
        kept.append(lease)
    async with lock.try_hold("k") as tried:
        assert tried is not None
        kept.append(tried)
    async with lock.hold_many(["a", "b"]) as leases:
        kept.extend(leases)
        fences = [lease.fence for lease in kept]
    await asyncio.sleep(1.2)
    assert [lease.fence for lease in kept] == fences
    assert [(lease.lost, lease.loss_reason, lease.remaining) for lease in kept] == [
        (False, None, 0.0)
    ] * 4
    await store.close()


# LOCK-09: in a TaskGroup, a loss fails the child with LeaseLost, not with the
# cancellation that stopped its block, and the group reports it.
async def test_LOCK_09_a_loss_in_a_task_group() -> None:
    clock = testing.VirtualClock()
    store = testing.memory(clock)
    lock = store.lock("py-group", ttl="1s", max_hold="1s")
    entered = asyncio.Event()

    async def holder() -> None:
        async with lock.hold("k"):
            entered.set()
            await asyncio.sleep(30)

    with pytest.raises(ExceptionGroup) as raised:
        async with asyncio.TaskGroup() as group:
            group.create_task(holder())
            await entered.wait()
            await asyncio.to_thread(clock.advance, "1s")
    assert [type(e) for e in raised.value.exceptions] == [leasehold.LeaseLost]
    await store.close()


# LOCK-09: a lease lost before its block begins is told on the loop's next turn,
# never from inside `__aenter__` (a cancellation requested there could outlive a
# block without an await).
async def test_LOCK_09_a_loss_before_the_block_is_told_on_the_next_turn() -> None:
    store = leasehold.memory()
    holding = await store.lock("py-early")._native.begin("k")
    await store.close()
    await until(lambda: holding.lease.lost)
    told: list[bool] = []
    holding.watch_loss(told.append)
    assert told == []
    await asyncio.sleep(0)
    assert told == [True]
    with pytest.raises(leasehold.LeaseLost):
        await holding.end()


# LOCK-09: a holding's loss is watched once. A second watch of the same
# holding, a key's or a slot's, raises InvalidArgument (ERR-01's code), and the
# first callback stays the one told of the loss.
async def test_LOCK_09_a_second_watch_of_a_holding_fails() -> None:
    store = leasehold.memory()
    holding = await store.lock("py-watched")._native.begin("k")
    slot = await store.slots("py-watched", limit=1)._native.begin(leasehold.Owner("svc"), None)
    assert slot is not None
    told: list[str] = []
    holding.watch_loss(lambda _: told.append("key"))
    slot.watch_loss(lambda _: told.append("slot"))
    for watched in (holding, slot):
        with pytest.raises(leasehold.InvalidArgument) as raised:
            watched.watch_loss(lambda _: told.append("second"))
        assert raised.value.code == "InvalidArgument"
        assert "watched already" in str(raised.value)
    await store.close()
    await until(lambda: len(told) == 2)
    await asyncio.sleep(0)
    assert sorted(told) == ["key", "slot"]
    with pytest.raises(leasehold.LeaseLost):
        await holding.end()
    with pytest.raises(leasehold.LeaseLost):
        await slot.end()


# LOCK-18: Ctrl-C while a blocking hold waits in line raises KeyboardInterrupt
# (the wait releases the GIL and wakes for signals) and leaves the line.
# Python's own SIGINT handler is installed for the test: a process started
# in the background of a shell inherits SIGINT ignored, and Python then
# installs none, so the signal would never arrive.
def test_LOCK_18_ctrl_c_leaves_the_line_of_a_blocking_hold() -> None:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        ctrl_c_leaves_the_line()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def ctrl_c_leaves_the_line() -> None:
    store = leasehold.memory()
    lock = store.lock("py-ctrl-c")
    with lock.hold("k"):
        timer = threading.Timer(0.2, signal.raise_signal, (signal.SIGINT,))
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt), lock.hold("k"):
            pytest.fail("granted a held key")
        print(
            f"LOCK-18: the hold left the line {time.monotonic() - started:.3f} s in"
            " (Ctrl-C at 0.2 s)"
        )
        timer.join()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with lock.try_hold("k") as lease:
            if lease is not None:
                break
        time.sleep(0.01)
    else:
        pytest.fail("the key stayed held: the interrupted hold kept its place")
    store.close_blocking()


async def test_LOCK_18_a_try_hold_given_up_releases_its_late_grant(frozen_server: Server) -> None:
    """LOCK-18: a try_hold whose awaiting task gives up while the store
    cannot answer (frozen) ends at once (the store stays frozen until it
    has: a give-up that waited for the store would never end), and the grant
    the store makes once it runs again is released, not left to run out: the
    key is free again well within its 10 s ttl (half of it: a late grant
    left to run out would hold the key the whole ttl from the thaw)."""
    store = await leasehold.connect(frozen_server.url)
    lock = store.lock("late-grant", ttl=10)

    async def attempt() -> None:
        async with lock.try_hold("k"):
            pass

    frozen_server.freeze()
    task = asyncio.create_task(attempt())
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, HANG)
    frozen_server.thaw()
    deadline = time.monotonic() + 10 / 2
    while True:
        async with lock.try_hold("k") as lease:
            if lease is not None:
                break
        assert time.monotonic() < deadline, "the late grant still holds the key"
        await asyncio.sleep(0.05)
    await store.close()
