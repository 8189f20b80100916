"""The etcd store through Python (DIST-01): ``leasehold.connect("etcd://...")``
on a real etcd member with the lock, manual and slot APIs."""

from __future__ import annotations

import uuid

import pytest

import leasehold

from conftest import Etcd


# DIST-01: an etcd:// URL opens a store with the same lock, manual and slot APIs.
async def test_DIST_01_connect_etcd_holds_keys_manual_leases_and_slots(etcd: Etcd) -> None:
    url = etcd.url(f"dist01-py-{uuid.uuid4()}")
    store = await leasehold.connect(url)
    other = await leasehold.connect(url, accept_old_etcd=False)
    assert store.kind == "etcd"
    fences: list[int] = []

    def grew(fence: int) -> None:
        assert fence > 0 and (not fences or fence > fences[-1]), (fence, fences)
        fences.append(fence)

    try:
        lock = store.lock("summaries", ttl="2s")
        rival = other.lock("summaries", ttl="2s")
        ran = False
        async with lock.hold("chat-1") as lease:
            ran = True
            grew(lease.fence)
            async with rival.try_hold("chat-1") as none:
                assert none is None
        assert ran
        async with rival.try_hold("chat-1") as mine:
            assert mine is not None
            grew(mine.fence)

        manual = await store.try_acquire("batch", ttl="2s")
        assert manual is not None and manual.name == "batch"
        grew(manual.fence)
        assert await other.try_acquire("batch", ttl="2s") is None
        await manual.extend("3s")
        await manual.release()
        nxt = await other.acquire("batch", ttl="2s", wait="10s")
        grew(nxt.fence)
        await nxt.release()

        slots = store.slots("nodes", limit=4)
        slot = await slots.acquire(leasehold.Owner("worker-a"))
        assert slot is not None and 0 <= slot.slot < 4
        grew(slot.fence)
        assert await slots.release(slot, 0)
    finally:
        await store.close()
        await other.close()


# DIST-01, DIST-08: accept_old_etcd reaches the driver: an etcd 3.4 older than 3.4.32 is
# refused (Protocol, naming the option) without it and holds with it.
async def test_DIST_01_accept_old_etcd_opens_an_old_etcd(etcd_34: Etcd) -> None:
    url = etcd_34.url(f"dist01-py-old-{uuid.uuid4()}")
    with pytest.raises(leasehold.Protocol, match="accept_old_etcd"):
        await leasehold.connect(url)
    store = await leasehold.connect(url, accept_old_etcd=True)
    try:
        async with store.lock("old", ttl="2s").hold("k") as lease:
            assert lease.fence > 0
    finally:
        await store.close()


# DIST-01: the etcd options are checked by type before anything is sent.
async def test_DIST_01_connect_checks_the_etcd_options() -> None:
    with pytest.raises(leasehold.InvalidArgument):
        await leasehold.connect("etcd://127.0.0.1:1/p", user=5)  # type: ignore[arg-type]
    with pytest.raises(leasehold.InvalidArgument, match="client_cert"):
        await leasehold.connect("etcd://127.0.0.1:1/p", client_cert="/nonexistent/cert.pem")
