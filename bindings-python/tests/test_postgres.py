"""The PostgreSQL store through Python (PG-01): ``leasehold.connect("postgres://...")``
on the PostgreSQL ``make postgres`` runs, with the lock, manual, slot and ID APIs,
each test on a schema of its own."""

from __future__ import annotations

import uuid

import pytest

import leasehold

from conftest import check_remote_store, postgres_url


def store_url() -> str:
    """The test PostgreSQL's URL with a schema no other test uses."""
    base = postgres_url()
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}schema=pg01_py_{uuid.uuid4().hex[:16]}"


# PG-01: a postgres:// URL opens a store with the same lock, manual, slot and ID APIs.
async def test_PG_01_connect_postgres_holds_keys_manual_leases_slots_and_ids() -> None:
    url = store_url()
    store = await leasehold.connect(url)
    other = await leasehold.connect(url.replace("postgres://", "postgresql://", 1))
    assert store.kind == "postgres" and "postgres" in repr(store)
    try:
        await check_remote_store(store, other)
    finally:
        await store.close()
        await other.close()


# PG-01, ERR-01: a bad PostgreSQL URL fails InvalidArgument before anything is sent,
# and an unreachable database fails Unavailable.
async def test_PG_01_bad_postgres_urls_fail_clearly() -> None:
    with pytest.raises(leasehold.InvalidArgument, match="schema"):
        await leasehold.connect("postgres://u@127.0.0.1/db?schema=Not-An-Identifier")
    with pytest.raises(leasehold.InvalidArgument, match="no_such_option"):
        await leasehold.connect("postgres://u@127.0.0.1/db?no_such_option=1")
    with pytest.raises(leasehold.Unavailable):
        await leasehold.connect("postgres://u@127.0.0.1:1/db?connect_timeout=2")
