"""N embedded hold cycles and nothing else, for an instruction count.

Run it under ``valgrind --tool=callgrind`` with N and with 2N: the
difference of the two counts over N is one cycle's cost (starting Python,
importing the package and exiting cancel out; docs/benchmarks.md, "Python
binding: the hold cycle next to Rust").

Usage: python cycles.py N [async|sync|rust]
  async: ``async with lock.hold(key): pass`` on asyncio (the default);
  sync: ``with lock.hold(key): pass``;
  rust: the same cycles in Rust through the native module's hook.
"""

from __future__ import annotations

import asyncio
import sys

import leasehold

KEY = "bench-key"


async def held(lock: leasehold.Lock, cycles: int) -> None:
    for _ in range(cycles):
        async with lock.hold(KEY):
            pass


def main() -> None:
    cycles = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    way = sys.argv[2] if len(sys.argv) > 2 else "async"
    lock = leasehold.memory().lock("bench")
    if way == "async":
        asyncio.run(held(lock, cycles))
    elif way == "sync":
        for _ in range(cycles):
            with lock.hold(KEY):
                pass
    elif way == "rust":
        lock._native.rust_hold_cycles(KEY, cycles)
    else:
        raise SystemExit(f"unknown way {way!r}: async, sync or rust")


if __name__ == "__main__":
    main()
