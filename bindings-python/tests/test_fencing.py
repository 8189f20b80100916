"""``leasehold.fencing`` against the real PostgreSQL ``make postgres`` starts
(its URL in ``$LEASEHOLD_POSTGRES_URL`` or ``$CARGO_TARGET_DIR/postgres/url``)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

import leasehold
from leasehold.fencing import FenceRefused, fenced_update, fenced_write

from conftest import postgres_url


@pytest.fixture
async def conn() -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    async with await psycopg.AsyncConnection.connect(postgres_url(), autocommit=True) as conn:
        yield conn


@pytest.fixture
async def table(conn: psycopg.AsyncConnection[Any]) -> AsyncIterator[str]:
    """A fresh table of this test's own: key, fence numeric(20), text."""
    name = f"py_{uuid.uuid4().hex}"
    await conn.execute(
        f"CREATE TABLE {name}"
        " (key text PRIMARY KEY, fence numeric(20) NOT NULL, text text NOT NULL)"
    )
    yield name
    await conn.execute(f"DROP TABLE {name}")


async def row(conn: psycopg.AsyncConnection[Any], table: str, key: str) -> tuple[int, str] | None:
    cursor = await conn.execute(f"SELECT fence, text FROM {table} WHERE key = %s", [key])
    found = await cursor.fetchone()
    return None if found is None else (int(found[0]), str(found[1]))


async def test_a_larger_fence_lands_and_a_smaller_or_equal_one_is_refused(
    conn: psycopg.AsyncConnection[Any], table: str
) -> None:
    await fenced_write(conn, table, "k", 5, {"text": "five"})
    await fenced_write(conn, table, "k", 7, {"text": "seven"})
    for stale in (7, 6, 1):
        with pytest.raises(FenceRefused) as refused:
            await fenced_write(conn, table, "k", stale, {"text": "stale"})
        assert refused.value.fence == stale and refused.value.key == "k"
        with pytest.raises(FenceRefused):
            await fenced_update(conn, table, "k", stale, {"text": "stale"})
    assert await row(conn, table, "k") == (7, "seven")
    await fenced_update(conn, table, "k", 8, {"text": "eight"})
    assert await row(conn, table, "k") == (8, "eight")


async def test_update_refuses_a_missing_row(conn: psycopg.AsyncConnection[Any], table: str) -> None:
    with pytest.raises(FenceRefused):
        await fenced_update(conn, table, "k", 1, {"text": "x"})
    assert await row(conn, table, "k") is None


# Fences above 2**63 - 1 (server fences from 2038 on) keep their order.
async def test_fences_above_bigint_keep_their_order(
    conn: psycopg.AsyncConnection[Any], table: str
) -> None:
    await fenced_write(conn, table, "k", 2**63 - 1, {"text": "bigint max"})
    await fenced_write(conn, table, "k", 2**64 - 1, {"text": "u64 max"})
    with pytest.raises(FenceRefused):
        await fenced_write(conn, table, "k", 2**63, {"text": "stale"})
    assert await row(conn, table, "k") == (2**64 - 1, "u64 max")
    with pytest.raises(ValueError):
        await fenced_write(conn, table, "k", 2**64, {"text": "too wide"})


# The paused holder, on the embedded and on the server store: A holds the key
# with a 1 s ttl and stops renewing past its lease, B holds it and writes with
# its larger fence; A's late write is refused and the table keeps B's.
async def test_a_holder_paused_past_its_lease_is_refused(
    store: leasehold.Store, conn: psycopg.AsyncConnection[Any], table: str
) -> None:
    key = f"chat-{uuid.uuid4()}"
    a = await store.try_acquire(key, ttl="1s")
    assert a is not None
    await fenced_write(conn, table, key, a.fence, {"text": "a, on time"})
    await asyncio.sleep(1.5)  # A is paused past its ttl
    b = await store.try_acquire(key, ttl="1s")
    assert b is not None, "A's lease ran out"
    assert b.fence > a.fence
    await fenced_write(conn, table, key, b.fence, {"text": "b"})
    with pytest.raises(FenceRefused):
        await fenced_write(conn, table, key, a.fence, {"text": "a, late"})
    assert await row(conn, table, key) == (b.fence, "b")
    await b.release()
