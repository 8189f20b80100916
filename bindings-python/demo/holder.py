"""The Python holder of `make demo`.

For DEMO_SECONDS seconds (default 4) it holds random keys of the lock
`summaries` (ttl 5s) on the server store at LEASEHOLD_STORE, and inside each
hold writes its fence to the fenced resource `$DEMO_DIR/<key>`, which refuses
a fence that is not larger than the last one written.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import random
import sys
import time

import leasehold

KEYS = ("chat-1", "chat-2", "chat-3")


def write_fenced(resource: pathlib.Path, fence: int) -> bool:
    """Writes ``fence`` unless the resource has seen one at least as large."""
    try:
        last = int(resource.read_text().strip() or 0)
    except FileNotFoundError:
        last = 0
    if fence <= last:
        return False
    resource.write_text(str(fence))
    return True


async def main() -> int:
    name = os.environ.get("DEMO_NAME", "1")
    seconds = float(os.environ.get("DEMO_SECONDS", "4"))
    directory = pathlib.Path(os.environ.get("DEMO_DIR", "."))
    url = os.environ.get("LEASEHOLD_STORE", "leasehold://127.0.0.1:7450")
    store = await leasehold.connect(url)
    async with store:
        lock = store.lock("summaries", ttl="5s")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            key = random.choice(KEYS)
            asked = time.monotonic()
            async with lock.hold(key) as lease:
                waited = round((time.monotonic() - asked) * 1000)
                print(
                    f"[python-{name}] holds summaries/{key} fence={lease.fence} "
                    f"waited={waited}ms at={time.time_ns() // 1_000_000}",
                    flush=True,
                )
                if not write_fenced(directory / key, lease.fence):
                    print(f"[python-{name}] REJECTED fence {lease.fence} for {key}", flush=True)
                    return 1
                await asyncio.sleep(random.uniform(0.02, 0.08))
                print(
                    f"[python-{name}] done summaries/{key} fence={lease.fence} "
                    f"at={time.time_ns() // 1_000_000}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
