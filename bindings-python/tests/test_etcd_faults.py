"""DIST-09 through Python with traffic in flight: six holders in three stores
take turns on two keys (10 ms holds, waiters always in line) while one
member of a 3-member etcd cluster (``etcd_cluster``: etcd-tests'
``etcd-cluster``) is killed or frozen, and then comes back. A member's fault
must cost the holders an election and a round trip, never a failed call:
every hold succeeds, fences grow, no two holds of a key overlap, and the
longest hold call stays under the election plus one second: two election
timeouts (etcd elects one to two election timeouts after the leader's last
heartbeat: each follower's timer is randomized in that span), or the
cluster's own outage when it was longer (etcd-cluster's ``outage`` command:
a split vote, a loaded machine).

The clients' calls go to member 0, the URL's first, while it answers, so
each fault is placed where it hurts: the leader killed while the clients
talk to a follower that forwards to it, and the clients' own member frozen
while it leads (the Rust tests of the same: etcd-tests/tests/member_faults.rs)."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from dataclasses import dataclass

import leasehold

from conftest import EtcdCluster

RUN = 7.0
"""How long the holders take turns, and when the fault comes and ends (s)."""
FAULT_AT = 2.5
FAULT_FOR = 3.0
TTL = "5s"
WORK = 0.01


@dataclass
class Hold:
    """One hold call: its key, when it began and how long it took (one
    monotonic clock), and its fence and block's start and end, or its error."""

    key: str
    began: float
    took: float = 0.0
    fence: int = 0
    start: float = 0.0
    end: float = 0.0
    error: leasehold.LeaseholdError | None = None


async def holder(
    lock: leasehold.Lock, keys: tuple[str, str], until: float, holds: list[Hold]
) -> None:
    turn = 0
    while time.monotonic() < until:
        hold = Hold(keys[turn % 2], time.monotonic())
        turn += 1
        try:
            async with lock.hold(hold.key) as lease:
                hold.start = time.monotonic()
                await asyncio.sleep(WORK)
                hold.fence = lease.fence
                hold.end = time.monotonic()
        except leasehold.LeaseholdError as e:
            hold.error = e
        hold.took = time.monotonic() - hold.began
        holds.append(hold)


async def run(cluster: EtcdCluster, name: str, lead: int, fault: str, mend: str) -> None:
    """Moves the leadership to member ``lead``, starts the holders, sends
    ``fault`` at 2.5 s and ``mend`` 3 s later, and checks every hold."""
    assert cluster.command(f"lead {lead}") == "ok"
    url = cluster.url(f"dist09-py-{name}-{uuid.uuid4()}")
    url += f"?attempt-timeout={round(cluster.election_timeout * 1000 / 2)}ms"
    stores = [await leasehold.connect(url) for _ in range(3)]
    holds: list[Hold] = []
    try:
        start = time.monotonic()
        async with asyncio.TaskGroup() as holders:
            for i, store in enumerate(stores):
                for j in range(2):
                    keys = ("a", "b") if (i + j) % 2 == 0 else ("b", "a")
                    lock = store.lock("jobs", ttl=TTL)
                    holders.create_task(holder(lock, keys, start + RUN, holds))
            await asyncio.sleep(start + FAULT_AT - time.monotonic())
            fault_at = time.monotonic()
            assert await asyncio.to_thread(cluster.command, fault) == "ok"
            await asyncio.sleep(fault_at + FAULT_FOR - time.monotonic())
            assert await asyncio.to_thread(cluster.command, mend) == "ok"
    finally:
        for store in stores:
            await store.close()
    outage = await asyncio.to_thread(cluster.command, "outage")
    assert outage.startswith("outage ") and outage.endswith("ms"), outage
    election = max(2 * cluster.election_timeout, int(outage[len("outage ") : -2]) / 1000)
    check(name, election, fault_at, holds)


def check(name: str, election: float, fault_at: float, holds: list[Hold]) -> None:
    """Checks every hold; ``election`` is two election timeouts, or the
    cluster's own outage when it was longer (s)."""
    failed = [
        f"{h.key}: {h.error!r} after {h.took:.3f} s,"
        f" begun {h.began - fault_at:+.3f} s from the fault"
        for h in holds
        if h.error is not None
    ]
    longest = max(h.took for h in holds)
    through = sum(
        1 for h in holds if h.began + h.took >= fault_at and h.began <= fault_at + FAULT_FOR
    )
    print(
        f"{name}: {len(holds)} holds, {len(failed)} failed, {through} in flight through the fault,"
        f" longest hold call {longest:.3f} s, the election {election:.3f} s"
    )
    assert not failed, f"{name}: holds failed:\n" + "\n".join(failed)
    assert through > 20, f"{name}: only {through} holds ran through the fault"
    for key in ("a", "b"):
        ran = sorted((h for h in holds if h.key == key), key=lambda h: h.start)
        for before, after in itertools.pairwise(ran):
            assert after.fence > before.fence, (
                f"{name}: key {key}: fence {after.fence} after {before.fence}"
            )
            assert after.start >= before.end, (
                f"{name}: key {key}: the hold of fence {after.fence}"
                f" began before fence {before.fence}'s ended"
            )
    slow = [
        f"{h.key}: {h.took:.3f} s, begun {h.began - fault_at:+.3f} s from the fault"
        for h in holds
        if h.took >= election + 1
    ]
    assert not slow, (
        f"{name}: hold calls longer than the election ({election:.3f} s) and a second:\n"
        + ("\n".join(slow))
    )


# DIST-09: kill -9 of the leader (member 1) while the clients' calls go to a
# follower (member 0) that forwards them to it; restarted 3 s later.
async def test_DIST_09_killing_the_leader_under_load_fails_no_hold(
    etcd_cluster: EtcdCluster,
) -> None:
    await run(etcd_cluster, "kill-leader", lead=1, fault="kill 1", mend="restart 1")


# DIST-09: the clients' own member frozen (SIGSTOP) while it leads, thawed
# 3 s later: their calls and their watch stream move to another member.
async def test_DIST_09_freezing_the_clients_leader_under_load_fails_no_hold(
    etcd_cluster: EtcdCluster,
) -> None:
    await run(etcd_cluster, "freeze-leader", lead=0, fault="freeze 0", mend="thaw 0")
