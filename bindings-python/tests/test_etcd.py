"""The etcd store through Python (DIST-01): ``leasehold.connect("etcd://...")``
on a real etcd member with the lock, manual and slot APIs."""

from __future__ import annotations

import uuid

import pytest

import leasehold

from conftest import Etcd, check_remote_store


# DIST-01: an etcd:// URL opens a store with the same lock, manual, slot and ID APIs.
async def test_DIST_01_connect_etcd_holds_keys_manual_leases_and_slots(etcd: Etcd) -> None:
    url = etcd.url(f"dist01-py-{uuid.uuid4()}")
    store = await leasehold.connect(url)
    other = await leasehold.connect(url, accept_old_etcd=False)
    assert store.kind == "etcd"
    try:
        await check_remote_store(store, other)
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
