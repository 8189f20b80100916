"""The Python holder of the chaos harness (docs/chaos.md).

Holds keys k0… of the lock `chaos` through the Python binding, one at a
time, until SIGTERM, recording its history in the harness's format (one
JSON object a line, `ns` from CLOCK_MONOTONIC: time.monotonic_ns). The
binding's own calls are not visible from here, so it records what its
holder sees: the request it makes (no request id), the grant (its fence),
the function's start and end, the loss, the hold's outcome and the fenced
write, which goes through the harness's register (a file per key, updated
under flock only by a larger fence). Its holds are short, so that no
renewal is needed to keep them.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import random
import signal
import time

import leasehold


class History:
    """Appends events, one write(2) a line, so SIGKILL loses none."""

    def __init__(self, path: str, process: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.process = process
        self.pid = os.getpid()

    def record(self, kind: str, **fields: object) -> None:
        event = {
            "ns": time.monotonic_ns(),
            "process": self.process,
            "pid": self.pid,
            "kind": kind,
        }
        event.update({k: v for k, v in fields.items() if v is not None})
        os.write(self.fd, (json.dumps(event) + "\n").encode())


def write_fenced(register: str, key: str, fence: int, history: History) -> None:
    """The register's fenced write: lands only if `fence` is larger than the last."""
    fd = os.open(os.path.join(register, key), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        text = os.read(fd, 64).decode().strip()
        landed = fence > (int(text) if text else 0)
        if landed:
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, str(fence).encode())
        history.record(
            "write", key=key, fence=fence, reason="landed" if landed else "refused"
        )
    finally:
        os.close(fd)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--history", required=True)
    parser.add_argument("--register", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keys", type=int, default=4)
    parser.add_argument("--ttl-ms", type=int, default=1000)
    args = parser.parse_args()
    history = History(args.history, args.name)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    rng = random.Random(args.seed)
    while True:
        try:
            store = await leasehold.connect(args.url)
            break
        except leasehold.LeaseholdError:
            await asyncio.sleep(0.05)
    lock = store.lock("chaos", ttl=args.ttl_ms / 1000, wait=5)
    while not stop.is_set():
        key = f"k{rng.randrange(args.keys)}"
        hold_for = rng.uniform(0, 0.003)
        attempt = rng.randrange(10) == 0
        history.record("request", key=key, queue=not attempt, ttl_ms=args.ttl_ms)
        fence = None
        try:
            cm = lock.try_hold(key) if attempt else lock.hold(key)
            async with cm as lease:
                if lease is None:
                    history.record("outcome", key=key, reason="not_held")
                    continue
                fence = lease.fence
                lease_id = f"{history.pid:x}-{fence:x}"
                history.record("granted", key=key, fence=fence, lease=lease_id)
                history.record("start", key=key, fence=fence)
                await asyncio.sleep(hold_for / 2)
                if not lease.lost:
                    write_fenced(args.register, key, fence, history)
                await asyncio.sleep(hold_for / 2)
                history.record("end", key=key, fence=fence)
            history.record("outcome", key=key, fence=fence, reason="ok")
        except leasehold.LeaseholdError as e:
            code = getattr(e, "code", type(e).__name__)
            if fence is not None and code == "Lost":
                history.record("lost", key=key, fence=fence, reason=code)
            history.record("outcome", key=key, fence=fence, reason=str(code))
            await asyncio.sleep(rng.uniform(0.001, 0.02))
    await store.close()


if __name__ == "__main__":
    asyncio.run(main())
