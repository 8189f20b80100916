"""The hold cycle through Python next to the same cycle in Rust, in one run.

One cycle: hold a key and release it, uncontended, on one key. Measured on
the embedded store and on a server store started here (the release build of
``leasehold serve``), three ways:

- ``python async``: ``async with lock.hold(key): pass`` in an asyncio loop;
- ``python uvloop``: the same on uvloop's event loop, when uvloop is installed
  (``make bench-python`` installs it);
- ``python sync``: ``with lock.hold(key): pass`` (blocking calls, GIL released);
- ``rust``: ``Lock::begin`` + ``Holding::end`` in a Rust loop on the same
  store and runtime (the native module's benchmark hook), no Python inside.

The table goes to stdout and, as Markdown, to ``bench-python.md`` in
``$CARGO_TARGET_DIR`` (which ``make bench-python`` draws beside it:
bench/plots.py).

Usage: python bench_hold.py [--cycles N] [--rounds R] [--server PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import leasehold

KEY = "bench-key"


@contextmanager
def server(binary: str) -> Iterator[str]:
    """A server store on loopback for the run; its URL."""
    with tempfile.TemporaryDirectory() as data:
        proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data, "--log", "warn"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if not line.startswith("listening on "):
                raise SystemExit(f"the server did not start: {line!r}")
            yield "leasehold://" + line.removeprefix("listening on ")
        finally:
            proc.terminate()
            proc.wait(timeout=15)


async def python_async(lock: leasehold.Lock, cycles: int) -> float:
    start = time.perf_counter()
    for _ in range(cycles):
        async with lock.hold(KEY):
            pass
    return time.perf_counter() - start


def python_sync(lock: leasehold.Lock, cycles: int) -> float:
    start = time.perf_counter()
    for _ in range(cycles):
        with lock.hold(KEY):
            pass
    return time.perf_counter() - start


def rust(lock: leasehold.Lock, cycles: int) -> float:
    return lock._native.rust_hold_cycles(KEY, cycles)


def uvloop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def measure(name: str, lock: leasehold.Lock, cycles: int, rounds: int) -> list[str]:
    """The median over ``rounds`` of each way's time per cycle, in microseconds,
    printed; returned as Markdown table rows. The ways take turns within each
    round, so that the machine's load, which changes (it is shared), weighs
    on them alike."""
    loop = asyncio.new_event_loop()
    ways: dict[str, Callable[[int], float]] = {
        "python async": lambda n: loop.run_until_complete(python_async(lock, n)),
        "python sync": lambda n: python_sync(lock, n),
        "rust": lambda n: rust(lock, n),
    }
    make_uvloop = uvloop_factory()
    uv = make_uvloop() if make_uvloop is not None else None
    if uv is not None:
        ways["python uvloop"] = lambda n: uv.run_until_complete(python_async(lock, n))
    times: dict[str, list[float]] = {way: [] for way in ways}
    try:
        for run in ways.values():
            run(max(cycles // 10, 10))
        for _ in range(rounds):
            for way, run in ways.items():
                times[way].append(run(cycles) / cycles * 1e6)
    finally:
        loop.close()
        if uv is not None:
            uv.close()
    got = {way: statistics.median(t) for way, t in times.items()}
    rows = []
    for way in (w for w in got if w != "rust"):
        # Each round's time divided by the Rust round's of the same round.
        ratios = sorted(p / r for p, r in zip(times[way], times["rust"], strict=True))
        print(
            f"{name:<8} {way:<13} {got[way]:8.1f} µs/cycle   rust {got['rust']:8.1f} µs/cycle   "
            f"ratio {statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})"
        )
        rows.append(
            f"| {name} | {way} | {got['rust']:.1f} | {got[way]:.1f} | "
            f"{statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}) |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    parser.add_argument("--server", default=os.path.join(target, "release", "leasehold"))
    args = parser.parse_args()

    print(f"hold cycle, one key, uncontended: median of {args.rounds} rounds of {args.cycles}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    rows = measure("embedded", leasehold.memory().lock("bench"), args.cycles, args.rounds)
    with server(args.server) as url:
        store = leasehold.connect_blocking(url)
        rows += measure("server", store.lock("bench"), args.cycles, args.rounds)
        store.close_blocking()
    write_table(
        "bench-python.md",
        f"Hold cycle through Python, median of {args.rounds} rounds of {args.cycles}",
        "One key, uncontended. Python: `async with lock.hold(key): pass` (asyncio, uvloop) "
        "or `with lock.hold(key): pass` (sync); Rust: `Lock::begin` + `Holding::end` on the "
        "same store and runtime. The ratio is the median of each round's Python time over "
        "the same round's Rust time.",
        ["store", "way", "Rust µs", "Python µs", "Python / Rust (lowest-highest)"],
        rows,
    )


def write_table(file: str, heading: str, about: str, header: list[str], rows: list[str]) -> None:
    """Writes a Markdown table under ``$CARGO_TARGET_DIR``."""
    align = ["---" if n < 2 or n == len(header) - 1 else "---:" for n in range(len(header))]
    text = [f"## {heading}", "", about, "", "| " + " | ".join(header) + " |"]
    text += ["|" + "|".join(align) + "|", *rows, ""]
    path = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), file)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(text))


if __name__ == "__main__":
    main()
