"""Errors: one exception class per ERR-01 code, and bad input that raises
them rather than crashing (ERR-03)."""

from __future__ import annotations

import asyncio
import datetime
import gc
import time

import pytest

import leasehold
from leasehold import errors, testing

from conftest import Server

NAMES = {"Lost": "LeaseLost"}


# ERR-01: every code of the core is a class deriving from LeaseholdError, with `.code`.
def test_ERR_01_every_code_is_an_exception_class() -> None:
    codes = testing.error_codes()
    assert {"Lost", "InvalidTtl", "EmptyName", "PermissionDenied", "Unauthenticated",
            "WaitTimeout", "Cancelled", "Unavailable", "Timeout", "NamespaceMismatch",
            "Protocol", "Internal", "InvalidArgument", "Closed"} <= set(codes)  # fmt: skip
    for code in codes:
        cls = getattr(leasehold, NAMES.get(code, code))
        assert cls is getattr(errors, cls.__name__)
        assert issubclass(cls, leasehold.LeaseholdError) and cls.code == code
        exc = testing.error_for_code(code, "a message")
        assert type(exc) is cls and exc.code == code
        if code != "Lost":
            assert str(exc) == "a message"
    assert len({getattr(leasehold, NAMES.get(c, c)) for c in codes}) == len(codes)
    lost = testing.error_for_code("Lost", "")
    assert isinstance(lost, leasehold.LeaseLost) and lost.reason == "expired"


# SLOT-07: a store timeout is recognisable as such, apart from failures that are outcomes.
def test_SLOT_07_a_timeout_is_recognisable() -> None:
    for code in testing.error_codes():
        exc = testing.error_for_code(code, "m")
        assert isinstance(exc, leasehold.LeaseholdError)
        assert exc.is_timeout == (code == "Timeout")


BAD_NAMES: list[object] = [None, 1, b"bytes", ["k"], object(), "\ud800"]
BAD_DURATIONS: list[object] = [
    -1, -0.5, float("nan"), float("inf"), "soon", "", "30", [], {}, True, object(),
    datetime.timedelta(seconds=-1), 10**30,
]  # fmt: skip


# ERR-03: wrong types, empty or huge names and bad durations raise, never crash.
async def test_ERR_03_bad_input_raises_leasehold_errors() -> None:
    store = leasehold.memory()
    for bad in BAD_NAMES:
        with pytest.raises(leasehold.InvalidArgument):
            store.lock(bad)  # type: ignore[arg-type]
        with pytest.raises(leasehold.InvalidArgument):
            async with store.lock("l").hold(bad):  # type: ignore[arg-type]
                pass
        with pytest.raises(leasehold.InvalidArgument):
            await store.try_acquire(bad, ttl="1s")  # type: ignore[arg-type]
    with pytest.raises(leasehold.EmptyName):
        store.lock("")
    with pytest.raises(leasehold.EmptyName):
        async with store.lock("l").try_hold(""):
            pass
    with pytest.raises(leasehold.InvalidArgument):
        store.lock("x" * 10_000_000)
    for bad in BAD_DURATIONS:
        for option in ("ttl", "max_hold", "wait", "margin"):
            with pytest.raises(leasehold.InvalidTtl):
                store.lock("l", **{option: bad})  # type: ignore[arg-type]
        with pytest.raises(leasehold.InvalidTtl):
            async with store.lock("l").hold("k", wait=bad):  # type: ignore[arg-type]
                pass
        with pytest.raises(leasehold.InvalidTtl):
            await store.acquire("m", ttl=bad)  # type: ignore[arg-type]
    await store.close()


# LOCK-13: durations as seconds, timedeltas or strings; ranges and defaults.
def test_LOCK_13_durations_and_their_ranges() -> None:
    store = leasehold.memory()
    assert store.lock("l").ttl == 10 and store.lock("l").margin == 1
    for given in (30, 30.0, datetime.timedelta(seconds=30), "30s", "0.5m"):
        assert store.lock("l", ttl=given).ttl == 30
    assert store.lock("l", ttl="1m30s", max_hold="1h").max_hold == 3600
    assert store.lock("l", ttl=3, margin="250ms").margin == 0.25
    assert store.lock("l", wait=datetime.timedelta(milliseconds=1500)).wait == 1.5
    assert store.lock("l", ttl=1).ttl == 1 and store.lock("l", ttl="1h").ttl == 3600
    for bad in (
        {"ttl": 0.999},
        {"ttl": "61m"},
        {"ttl": 10, "max_hold": 9},
        {"ttl": 4, "margin": 2},
    ):
        with pytest.raises(leasehold.InvalidTtl):
            store.lock("l", **bad)
    store.close_blocking()


# ERR-03: use after close, a second end, bad connect arguments: each has its code.
async def test_ERR_03_misuse_raises_leasehold_errors(server: Server) -> None:
    store = leasehold.memory()
    lock = store.lock("l")
    holding = await lock._native.begin("k")
    await holding.end()
    with pytest.raises(leasehold.Closed):
        await holding.end()
    # A held slot ends twice the way a held key does.
    slots = store.slots("s", limit=1)
    slot_holding = await slots._native.begin(leasehold.Owner("o"), None)
    assert slot_holding is not None
    await slot_holding.end()
    with pytest.raises(leasehold.Closed):
        await slot_holding.end()
    manual = await store.try_acquire("m", ttl="10s")
    assert manual is not None
    await store.close()
    await store.close()
    with pytest.raises(leasehold.Closed):
        async with lock.hold("k"):
            pass
    with pytest.raises(leasehold.Closed):
        await store.try_acquire("m", ttl="10s")
    with pytest.raises(leasehold.Closed):
        await manual.release()
    for url in ("http://127.0.0.1:1", "nonsense", ""):
        with pytest.raises(leasehold.InvalidArgument):
            await leasehold.connect(url)
    with pytest.raises(leasehold.InvalidArgument):
        await leasehold.connect(42)  # type: ignore[arg-type]
    with pytest.raises(leasehold.InvalidArgument):
        await leasehold.connect(server.url, token=7)  # type: ignore[arg-type]
    with pytest.raises(leasehold.InvalidArgument):
        await leasehold.connect(server.url, tls=3.5)  # type: ignore[arg-type]
    with pytest.raises(leasehold.InvalidArgument):
        await leasehold.connect(server.url.replace("leasehold:", "leaseholds:"), tls="/no/such/ca")
    for name in ("two\nlines", "x" * 257):
        with pytest.raises(leasehold.InvalidArgument, match="the identity"):
            await leasehold.connect(server.url, identity=name)
    with pytest.raises(leasehold.Unavailable):
        await leasehold.connect("leasehold://127.0.0.1:1")


def test_ERR_03_a_call_that_must_wait_needs_a_running_loop() -> None:
    store = leasehold.memory()
    lock = store.lock("err03-loop")
    held = lock.hold("k")
    held.__enter__()
    with pytest.raises(leasehold.InvalidArgument, match="running asyncio event loop"):
        lock._native.begin("k")  # the native call, outside any loop: it would wait
    held.__exit__(None, None, None)
    # The refused call left the line: the key is free. Leaving runs on the
    # core's runtime, and a grant that raced it is released there (LOCK-18):
    # free soon, and for good (a call still in line would keep it).
    deadline = time.monotonic() + 5
    while True:
        with lock.try_hold("k") as free:
            if free is not None:
                break
        assert time.monotonic() < deadline, "the refused call kept its place in line"
        time.sleep(0.005)
    lease = asyncio.run(store.try_acquire("m", ttl="1s"))
    assert lease is not None
    asyncio.run(lease.release())
    store.close_blocking()


def test_ERR_03_a_call_never_awaited_warns() -> None:
    store = leasehold.memory()
    with pytest.warns(RuntimeWarning, match="never awaited: its answer is dropped"):
        store._native.try_acquire("m", "1s")  # answered at once, dropped unread
        gc.collect()
    with pytest.warns(RuntimeWarning, match="never awaited: its error is dropped"):
        store._native.try_acquire("", "1s")
        gc.collect()
    store.close_blocking()
