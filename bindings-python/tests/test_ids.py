"""The ID generator through Python (IDGEN): ``await store.ids(...)``,
``IdGenerator`` and ``IdLayout``, on the embedded store and a real server
store process; a generator inherited through ``os.fork()``; bad input."""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable

import pytest

import leasehold
from leasehold import IdGenerator, IdLayout

from conftest import Server

#: The most IDs one take asks for.
MAX_TAKE = 1 << 20


@pytest.fixture
def namespace() -> str:
    """A namespace no other test uses (the server store is shared)."""
    return f"py-idgen-{uuid.uuid4()}"


def increasing(ids: list[int]) -> bool:
    return all(a < b for a, b in itertools.pairwise(ids))


async def floor_ahead(store: leasehold.Store, namespace: str, layout: IdLayout) -> int:
    """Leaves the namespace's one slot with a floor about a second ahead of
    the store's clock: a generator with a lead of 1 s issues all it may now
    and closes, handing its last tick on. The floor, in ms."""
    first = await store.ids(namespace, layout=layout, limit=1, max_lead="1s")
    issued: list[int] = []
    for _ in range(1000):  # as many as it may now; the clock moves on meanwhile
        try:
            issued += first.take_nowait(MAX_TAKE)
        except leasehold.NotReady as e:
            assert e.code == "NotReady"
            break
    else:
        pytest.fail("take_nowait never reached the lead")
    assert 0 < len(issued) < MAX_TAKE and increasing(issued)
    floor = first.last_issued
    assert floor == layout.parts(issued[-1]).timestamp_ms
    assert floor > time.time() * 1000 + 500, "the generator did not issue ahead"
    await first.close()
    return floor


def test_an_id_layout_is_the_cores() -> None:
    default = IdLayout.DEFAULT
    assert (default.time_bits, default.node_bits, default.sequence_bits) == (41, 10, 12)
    assert (default.tick_ms, default.epoch_ms) == (1, IdLayout.DEFAULT_EPOCH_MS)
    assert IdLayout.DEFAULT_EPOCH_MS == 1_767_225_600_000  # 2026-01-01T00:00:00Z
    assert default == IdLayout.custom(41, 10, 12) and default.describe() == "41/10/12 ms"
    js = IdLayout.js_safe()
    assert (js.time_bits, js.node_bits, js.sequence_bits, js.tick_ms) == (41, 6, 6, 1)
    seconds = IdLayout.seconds()
    assert (seconds.time_bits, seconds.node_bits, seconds.sequence_bits) == (31, 10, 22)
    assert seconds.tick_ms == 1000 and seconds.describe() == "31/10/22 s"
    custom = IdLayout.custom(30, 8, 8, tick_ms=10, epoch_ms=1_000)
    assert (custom.tick_ms, custom.epoch_ms) == (10, 1_000)
    assert len({default, IdLayout.custom(41, 10, 12), js, seconds, custom}) == 4
    assert default != js and "IdLayout(time_bits=41" in repr(default)
    parts = custom.parts((7 << 16) | (3 << 8) | 5)
    assert (parts.tick, parts.node, parts.sequence) == (7, 3, 5)
    assert parts.timestamp_ms == 1_000 + 7 * 10
    assert parts == custom.parts((7 << 16) | (3 << 8) | 5) and "IdParts(tick=7" in repr(parts)
    with pytest.raises(AttributeError):
        default.time_bits = 40  # type: ignore[misc]


# IDGEN-03: one generator's IDs strictly increase, whichever call issues them,
# and carry its node and the ticks above its floor.
async def test_IDGEN_03_one_generators_ids_strictly_increase(
    store: leasehold.Store, namespace: str
) -> None:
    async with await store.ids(namespace, limit=8, offset=5) as ids:
        assert isinstance(ids, IdGenerator) and ids.layout == IdLayout.DEFAULT
        lease = ids.lease
        assert (lease.namespace, ids.node, lease.node) == (namespace, lease.slot + 5, ids.node)
        assert lease.owner.key == "leasehold-ids" and ids.last_issued == 0 and not ids.lost
        got = [ids.next_nowait(), await ids.next(), *ids.take_nowait(100)]
        got += [*(await ids.take(5000)), ids.next_nowait(), await ids.next()]
        assert len(got) == 5104 and increasing(got)
        parts = [ids.layout.parts(i) for i in got]
        assert {p.node for p in parts} == {ids.node}
        assert parts[0].timestamp_ms > lease.floor
        assert ids.last_issued == parts[-1].timestamp_ms <= lease.ceiling
        assert all(0 < i < 1 << 63 for i in got)
        assert "IdGenerator(namespace=" in repr(ids)
    assert not ids.lost
    with pytest.raises(leasehold.LeaseLost):  # closed: nothing more is issued
        ids.next_nowait()
    await ids.close()  # a second close does nothing


# IDGEN-01: IDs are unique across every generator of a namespace: four at once
# on three slots, closed and reopened (a reopened one takes a released slot
# above its floor), issuing from asyncio tasks and from threads, in a layout
# whose sequences run out (16 IDs per ms), so that the lead is reached too.
async def test_IDGEN_01_ids_are_unique_across_generators_tasks_and_threads(
    store: leasehold.Store, namespace: str
) -> None:
    layout = IdLayout.custom(41, 2, 4)
    batches: list[list[int]] = []

    async def opened() -> IdGenerator:
        while True:
            try:
                return await store.ids(namespace, layout=layout, limit=3, max_lead="20ms")
            except leasehold.NotReady:  # every slot is held: retryable
                await asyncio.sleep(0.002)

    async def in_task(worker: int) -> None:
        for _ in range(3):
            ids = await opened()
            mine: list[int] = []
            for i in range(60):
                try:
                    mine.append(ids.next_nowait())
                except leasehold.NotReady:
                    mine.append(await ids.next())
                mine.append(await ids.next())
                mine += await ids.take(1 + (i + worker) % 9)
                try:
                    mine += ids.take_nowait(5)
                except leasehold.NotReady:
                    await asyncio.sleep(0)
            assert increasing(mine)  # IDGEN-03
            assert {layout.parts(i).node for i in mine} == {ids.node}
            await ids.close()
            batches.append(mine)

    def in_thread(ids: IdGenerator, mine: list[int]) -> None:
        while len(mine) < 1500:
            try:
                mine.append(ids.next_nowait())
                mine += ids.take_nowait(3)
            except leasehold.NotReady:
                time.sleep(0.0005)

    shared = await opened()
    threads_got: list[list[int]] = [[], []]
    threads = [
        threading.Thread(target=in_thread, args=(shared, got), daemon=True) for got in threads_got
    ]
    for thread in threads:
        thread.start()
    await asyncio.gather(*(in_task(w) for w in range(3)))
    for thread in threads:
        await asyncio.to_thread(thread.join, 30)
        assert not thread.is_alive()
    await shared.close()
    for got in threads_got:
        assert len(got) >= 1500 and increasing(got)
    batches += threads_got
    every = [i for batch in batches for i in batch]
    assert len(batches) == 11 and len(every) > 8000
    assert len(set(every)) == len(every), "an ID was issued twice"
    assert {layout.parts(i).node for i in every} <= {0, 1, 2}


# IDGEN-04: with the slot's floor ahead of the store's clock (a handoff from a
# generator that issued 1 s ahead), next_nowait and take_nowait fail NotReady,
# and next() waits until the clock passes the floor; NotReady is retryable.
async def test_IDGEN_04_not_ready_until_the_floor_then_next_waits(
    store: leasehold.Store, namespace: str
) -> None:
    layout = IdLayout.js_safe()
    floor = await floor_ahead(store, namespace, layout)
    ids = await store.ids(namespace, layout=layout, limit=1, max_lead=0)
    assert ids.lease.floor >= floor  # IDGEN-02: the close handed its last tick on
    with pytest.raises(leasehold.NotReady) as caught:
        ids.next_nowait()
    assert caught.value.code == "NotReady" and "retry" in str(caught.value)
    with pytest.raises(leasehold.NotReady):
        ids.take_nowait(3)
    # next() waited for the floor: what it issued is stamped past it (a
    # next() that did not wait would issue at or below it, or fail NotReady).
    first = await asyncio.wait_for(ids.next(), 10)
    assert layout.parts(first).timestamp_ms > floor, "next() did not wait for the floor"
    for _ in range(100):  # retried, it issues
        try:
            assert ids.next_nowait() > first
            break
        except leasehold.NotReady:
            await asyncio.sleep(0.001)
    else:
        pytest.fail("next_nowait stayed NotReady after the floor")
    assert (await ids.take(200))[0] > first
    await ids.close()


# IDGEN-04: once the layout's time range is used up (8 bits of ms from an
# epoch an hour ago), every call fails Overflow, the waiting ones too.
async def test_IDGEN_04_a_used_up_time_range_overflows(
    store: leasehold.Store, namespace: str
) -> None:
    epoch = int(time.time() * 1000) - 3_600_000
    layout = IdLayout.custom(8, 4, 4, epoch_ms=epoch)
    async with await store.ids(namespace, layout=layout) as ids:
        with pytest.raises(leasehold.Overflow) as caught:
            ids.next_nowait()
        assert caught.value.code == "Overflow"
        with pytest.raises(leasehold.Overflow):
            ids.take_nowait(4)
        with pytest.raises(leasehold.Overflow):
            await asyncio.wait_for(ids.next(), 5)
        with pytest.raises(leasehold.Overflow):
            await asyncio.wait_for(ids.take(4), 5)
        assert ids.last_issued == 0


# IDGEN-04: a cancelled next() (task.cancel, asyncio.wait_for) leaves nothing
# behind: nothing issued, the generator issues on and closes, its slot free.
async def test_IDGEN_04_a_cancelled_next_leaves_nothing_behind(
    store: leasehold.Store, namespace: str
) -> None:
    layout = IdLayout.js_safe()
    floor = await floor_ahead(store, namespace, layout)
    ids = await store.ids(namespace, layout=layout, limit=1, max_lead=0)
    waiting = asyncio.create_task(ids.next())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(ids.take(5), 0.05)
    assert ids.last_issued == 0, "a cancelled call issued"
    first = await asyncio.wait_for(ids.next(), 10)
    assert layout.parts(first).timestamp_ms > floor and layout.parts(first).sequence == 0
    await ids.close()
    again = await store.ids(namespace, layout=layout, limit=1)  # the slot was released
    assert again.lease.floor >= layout.parts(first).timestamp_ms
    await again.close()


def in_child(work: object) -> dict[str, object]:
    """Runs ``work()`` in a forked child; what it returned (a JSON object).
    A child that hangs is killed by its alarm after 20 s, failing the test."""
    assert callable(work)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)
        os.close(read)
        try:
            result = work()
        except BaseException as e:
            result = {"crashed": repr(e)}
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    answer = json.loads(text)
    assert isinstance(answer, dict)
    return answer


# A generator made before os.fork() refuses every call in the child (Closed,
# naming the fork) instead of issuing the parent's IDs again, and the child's
# drop of it leaves the parent's slot held.
def test_a_generator_made_before_fork_is_refused_in_the_child(server: Server) -> None:
    namespace = f"py-idgen-fork-{uuid.uuid4()}"
    loop = asyncio.new_event_loop()
    stores = {"memory": leasehold.memory(), "server": leasehold.connect_blocking(server.url)}
    made = {
        name: loop.run_until_complete(store.ids(namespace, limit=1))
        for name, store in stores.items()
    }
    before = {name: ids.next_nowait() for name, ids in made.items()}

    def child() -> dict[str, object]:
        seen: dict[str, object] = {}
        calls: dict[str, Callable[[IdGenerator], object]] = {
            "next_nowait": lambda ids: ids.next_nowait(),
            "take_nowait": lambda ids: ids.take_nowait(2),
            "node": lambda ids: ids.node,
            "lost": lambda ids: ids.lost,
            "next": lambda ids: asyncio.run(ids.next()),
            "take": lambda ids: asyncio.run(ids.take(2)),
            "close": lambda ids: asyncio.run(ids.close()),
        }
        for name, ids in made.items():
            for call, run in calls.items():
                try:
                    seen[f"{name} {call}"] = f"answered {run(ids)!r}"
                except leasehold.Closed as e:
                    seen[f"{name} {call}"] = str(e)
        made.clear()  # the child drops the parent's generators
        gc.collect()
        time.sleep(0.2)

        async def fresh() -> int:
            async with leasehold.memory() as mine, await mine.ids(namespace) as ids:
                return await ids.next()

        seen["fresh"] = asyncio.run(fresh())
        return seen

    try:
        seen = in_child(child)
        assert "crashed" not in seen, seen
        for key, said in seen.items():
            if key != "fresh":
                assert "made before fork()" in str(said), (key, said)
        assert isinstance(seen["fresh"], int)
        for name, ids in made.items():
            assert not ids.lost and ids.next_nowait() > before[name]
            with pytest.raises(leasehold.NotReady):  # the slot is still the parent's
                loop.run_until_complete(stores[name].ids(namespace, limit=1))
            loop.run_until_complete(ids.close())
    finally:
        for store in stores.values():
            loop.run_until_complete(store.close())
        loop.close()


# ERR-03: bad layouts, options and counts, and use after close, raise
# leasehold errors with their codes; nothing crashes.
async def test_ERR_03_bad_ids_input_raises_leasehold_errors(namespace: str) -> None:
    bad_layouts: list[Callable[[], IdLayout]] = [
        lambda: IdLayout.custom(0, 10, 12),
        lambda: IdLayout.custom(41, 10, 13),  # 64 bits
        lambda: IdLayout.custom(256, 1, 1),
        lambda: IdLayout.custom(-1, 10, 12),
        lambda: IdLayout.custom(True, 10, 12),
        lambda: IdLayout.custom(41, 10, 12, tick_ms=0),
        lambda: IdLayout.custom(41, 10, 12, tick_ms=3_600_001),
        lambda: IdLayout.custom(41, 10, 12, epoch_ms=-5),
        lambda: IdLayout.custom("41", 10, 12),  # type: ignore[arg-type]
    ]
    for bad in bad_layouts:
        with pytest.raises(leasehold.InvalidArgument):
            bad()
    with pytest.raises(leasehold.InvalidArgument):
        IdLayout.DEFAULT.parts(-1)
    with pytest.raises(leasehold.InvalidArgument):
        IdLayout.DEFAULT.parts("1")  # type: ignore[arg-type]

    store = leasehold.memory()
    with pytest.raises(leasehold.InvalidArgument, match="IdLayout"):
        await store.ids(namespace, layout="41/10/12")  # type: ignore[arg-type]
    with pytest.raises(leasehold.InvalidArgument, match="node bits"):
        await store.ids(namespace, layout=IdLayout.js_safe(), limit=65)
    with pytest.raises(leasehold.InvalidArgument):
        await store.ids(5)  # type: ignore[arg-type]
    with pytest.raises(leasehold.EmptyName):
        await store.ids("")
    for option, value in (("limit", True), ("offset", -1), ("preferred", 1.5), ("owner_key", 3)):
        with pytest.raises(leasehold.InvalidArgument):
            await store.ids(namespace, **{option: value})  # type: ignore[arg-type]
    for option in ("ttl", "tolerance", "timeout", "max_lead"):
        with pytest.raises(leasehold.InvalidTtl):
            await store.ids(namespace, **{option: "soon"})  # type: ignore[arg-type]

    ids = await store.ids(namespace, limit=1)
    with pytest.raises(leasehold.NotReady, match="every slot"):  # the one slot is held
        await store.ids(namespace, limit=1)
    with pytest.raises(leasehold.NamespaceMismatch):  # the layout is the namespace's
        await store.ids(namespace, layout=IdLayout.seconds(), limit=1)
    for n in (-1, True, 1.5, "3", 2**64, MAX_TAKE + 1):
        with pytest.raises(leasehold.InvalidArgument):
            ids.take_nowait(n)  # type: ignore[arg-type]
        with pytest.raises(leasehold.InvalidArgument):
            await ids.take(n)  # type: ignore[arg-type]
    assert ids.take_nowait(0) == [] and await ids.take(0) == []

    await ids.close()
    for use_after_close in (
        ids.next_nowait,
        lambda: ids.take_nowait(1),
    ):
        with pytest.raises(leasehold.LeaseLost):
            use_after_close()
    with pytest.raises(leasehold.LeaseLost):
        await ids.next()
    with pytest.raises(leasehold.LeaseLost):
        await ids.take(1)
    await ids.close()

    await store.close()
    with pytest.raises(leasehold.Closed):
        await store.ids(namespace)
