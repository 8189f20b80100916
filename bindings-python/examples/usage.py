"""A typed tour of the package, checked by `mypy --strict` (make python-test).

Run it against the embedded store, or a server store given as an argument:
    python examples/usage.py [leasehold://127.0.0.1:7450]
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import timedelta

import leasehold


async def save_summary(chat_id: str, text: str, fence: int) -> None:
    """The fenced resource: it would refuse a fence older than the last it saw."""
    print(f"saved {text!r} for {chat_id} with fence {fence}")


async def main(url: str | None) -> None:
    store = leasehold.memory() if url is None else await leasehold.connect(url)
    async with store:
        summaries = store.lock("summaries", ttl="30s", max_hold=timedelta(minutes=5), wait=10)
        try:
            async with summaries.hold("chat-1") as lease:  # a lost lease cancels the block
                await save_summary("chat-1", "a summary", lease.fence)
        except leasehold.LeaseLost as lost:
            print(f"lost the lease ({lost.reason}); the summary was not saved")
        except leasehold.WaitTimeout:
            print("somebody else summarised for too long")

        async with summaries.try_hold("chat-2") as maybe:
            if maybe is None:
                print("chat-2 is being summarised elsewhere")
            else:
                await save_summary("chat-2", "another", maybe.fence)

        shards = [f"shard-{i}" for i in range(8)]
        async with summaries.hold_many(shards, wait=5) as leases:  # all or none, in order
            fences: list[int] = [lease.fence for lease in leases]
            print("holding", len(fences), "shards")

        await node_number(store)

        batch: leasehold.ManualLease | None = await store.try_acquire("catalog", ttl="1m")
        if batch is not None:
            for _ in range(3):
                await batch.extend("1m")
            await batch.release()


async def node_number(store: leasehold.Store) -> None:
    """A slot lease: the node number of an ID generator, and the window of
    timestamps (ms) it may issue under it."""
    slots = store.slots("order-ids", limit=1024, ttl="30s", tolerance="2s", timeout=5)
    owner = leasehold.Owner("order-service")  # a fresh instance id for this process
    try:
        lease: leasehold.SlotLease | None = await slots.acquire(owner, preferred=7)
    except leasehold.Timeout:
        print("the store did not answer in time; the outcome is unknown")
        return
    if lease is None:
        print("all 1024 slots are held")
        return
    print(f"node {lease.node}: issue ids above {lease.floor}, up to {lease.ceiling}")
    renewed = await slots.renew(lease)
    if renewed is not None:
        lease = renewed
    last_issued: int = lease.floor + 1
    released: bool = await slots.release(lease, last_issued)
    assert released

    # Held while a block runs, renewed in the background; a lost slot cancels the block.
    try:
        async with slots.hold(owner, preferred=lease.slot) as held:
            if held is None:
                print("all 1024 slots are held")
                return
            timestamp = max(int(time.time() * 1000), held.floor + 1)  # never past held.ceiling
            held.issued(timestamp)  # the release hands the largest on as the next floor
            print(f"node {held.node} (fence {held.fence}) issued up to {held.last_issued}")
    except leasehold.LeaseLost as lost:
        print(f"lost the slot ({lost.reason}); stop issuing ids under it")


def blocking() -> None:
    """The same without an event loop: check `lease.lost` yourself."""
    with leasehold.memory() as store, store.lock("summaries").hold("chat-1") as lease:
        if not lease.lost:
            print("holding chat-1 with fence", lease.fence)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else None))
    blocking()
