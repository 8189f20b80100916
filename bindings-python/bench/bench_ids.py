"""The ID generator's calls through Python next to the core's ``next()`` in
Rust, in one run.

Measured in the default layout (41/10/12 ms: at most 4,096,000 IDs/s per
node) on the embedded store and on a server store started here (the release
build of ``leasehold serve``), with a lead of 10 s so that the cap does not
stop the run (a ``NotReady`` would be counted and shown):

- ``next_nowait``: ``ids.next_nowait()`` in a Python loop, per call;
- ``await next``: ``await ids.next()`` in a coroutine, per call (it issues
  without waiting: the fast path, then the core's wait only if ``NotReady``);
- ``take_nowait(B)``: ``ids.take_nowait(B)`` in a Python loop, per ID;
- ``rust next()``: the core's ``IdGenerator::next()`` in a Rust loop on the
  same generator (the native module's benchmark hook), no Python inside.

Each Python time includes its loop (``for _ in range(n)``, shown as ``empty
loop``). The table goes to stdout and, as Markdown, to ``bench-python-ids.md``
in ``$CARGO_TARGET_DIR`` (drawn beside it: bench/plots.py).

Usage: python bench_ids.py [--calls N] [--rounds R] [--server PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable

from bench_hold import server, write_table

import leasehold

BATCH = 1000


def empty_loop(n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        pass
    return time.perf_counter() - start


def next_nowait(ids: leasehold.IdGenerator, n: int) -> tuple[float, int]:
    not_ready = 0
    start = time.perf_counter()
    for _ in range(n):
        try:
            ids.next_nowait()
        except leasehold.NotReady:
            not_ready += 1
    return time.perf_counter() - start, not_ready


async def awaited_next(ids: leasehold.IdGenerator, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await ids.next()
    return time.perf_counter() - start


def take_nowait(ids: leasehold.IdGenerator, n: int) -> tuple[float, int]:
    """Seconds for ``n`` IDs taken ``BATCH`` at a time, and how many calls answered NotReady."""
    got, not_ready = 0, 0
    start = time.perf_counter()
    while got < n:
        try:
            got += len(ids.take_nowait(BATCH))
        except leasehold.NotReady:
            not_ready += 1
    return time.perf_counter() - start, not_ready


def measure(name: str, store: leasehold.Store, calls: int, rounds: int) -> list[str]:
    """The median over ``rounds`` of each way's time per call (per ID for
    ``take_nowait``), in nanoseconds, printed; returned as Markdown table
    rows. The ways take turns within each round, so that the machine's load
    (it is shared) weighs on them alike."""
    loop = asyncio.new_event_loop()
    ids = loop.run_until_complete(store.ids(f"bench-ids-{os.getpid()}", max_lead="10s"))
    not_ready = {"next_nowait": 0, f"take_nowait({BATCH})": 0, "rust next()": 0}

    def counted(way: str, run: tuple[float, int]) -> float:
        not_ready[way] += run[1]
        return run[0]

    def rust(n: int) -> tuple[float, int]:
        return ids._native.rust_next_cycles(n)

    ways: dict[str, Callable[[int], float]] = {
        "empty loop": empty_loop,
        "next_nowait": lambda n: counted("next_nowait", next_nowait(ids, n)),
        "await next": lambda n: loop.run_until_complete(awaited_next(ids, n)),
        f"take_nowait({BATCH})": lambda n: counted(f"take_nowait({BATCH})", take_nowait(ids, n)),
        "rust next()": lambda n: counted("rust next()", rust(n)),
    }
    times: dict[str, list[float]] = {way: [] for way in ways}
    try:
        for run in ways.values():
            run(max(calls // 10, 10))
        for _ in range(rounds):
            for way, run in ways.items():
                times[way].append(run(calls) / calls * 1e9)
        loop.run_until_complete(ids.close())
    finally:
        loop.close()
    rust_ns = statistics.median(times["rust next()"])
    rows = []
    for way, per in times.items():
        got = statistics.median(per)
        unit = "ns/ID  " if way.startswith("take") else "ns/call"
        ratio = "" if way in ("empty loop", "rust next()") else f"   {got / rust_ns:6.1f}x rust"
        blocked = f"   NotReady {not_ready[way]}" if way in not_ready else ""
        print(
            f"{name:<8} {way:<19} {got:8.1f} {unit} ({min(per):.1f}-{max(per):.1f}){ratio}{blocked}"
        )
        if ratio:
            rows.append(f"| {name} | {way} | {rust_ns:.1f} | {got:.1f} | {got / rust_ns:.1f}x |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7)
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    parser.add_argument("--server", default=os.path.join(target, "release", "leasehold"))
    args = parser.parse_args()

    layout = leasehold.IdLayout.DEFAULT
    print(
        f"ID generator, layout {layout.describe()}, one generator: "
        f"median of {args.rounds} rounds of {args.calls} (min-max)"
    )
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    rows = measure("embedded", leasehold.memory(), args.calls, args.rounds)
    with server(args.server) as url:
        store = leasehold.connect_blocking(url)
        rows += measure("server", store, args.calls, args.rounds)
        store.close_blocking()
    write_table(
        "bench-python-ids.md",
        f"IDs through Python, layout {layout.describe()}, median of {args.rounds} rounds",
        f"{args.calls} calls a round; per call, or per ID for `take_nowait({BATCH})`, with "
        "the Python loop's own time in it. Rust: the core's `IdGenerator::next()` on the "
        "same generator. The ratio is the medians' (Python over Rust).",
        ["store", "call", "Rust ns", "Python ns", "Python / Rust"],
        rows,
    )


if __name__ == "__main__":
    main()
