"""Fenced writes to PostgreSQL with psycopg 3 (``pip install leasehold[postgres]``;
docs/fencing.md): a write that carries a lease's fence lands only if the
row's last fence is smaller, so a holder paused past its lease cannot
overwrite the holder after it.

::

    from leasehold.fencing import FenceRefused, fenced_write

    async with summaries.hold("chat-1") as lease:
        text = await model.summarize(messages)
        await fenced_write(conn, "summaries", "chat-1", lease.fence, {"text": text})

The table has a row per key and its last fence, as ``numeric(20)`` (fences
are unsigned 64-bit numbers, beyond ``bigint`` from 2038 on)::

    CREATE TABLE summaries (key text PRIMARY KEY, fence numeric(20) NOT NULL, text text NOT NULL);
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg import AsyncConnection, AsyncCursor, sql

__all__ = ["FenceRefused", "fenced_update", "fenced_write"]


class FenceRefused(Exception):
    """A fenced write changed nothing: the row's fence was already as large
    as the write's or larger (for :func:`fenced_update`, or there was no row).
    The holder's lease is stale; it should stop."""

    def __init__(self, key: str, fence: int) -> None:
        super().__init__(
            f"the write to {key!r} with fence {fence} was refused: "
            "a write with a fence as large or larger landed first"
        )
        self.key = key
        self.fence = fence


def _table(table: str) -> sql.Identifier:
    """``name`` or ``schema.name`` as a quoted identifier."""
    return sql.Identifier(*table.split("."))


async def fenced_write(
    conn: AsyncConnection[Any] | AsyncCursor[Any],
    table: str,
    key: str,
    fence: int,
    values: Mapping[str, object],
    *,
    key_column: str = "key",
    fence_column: str = "fence",
) -> None:
    """Writes ``values`` (column: value) to the row of ``key`` with ``fence``,
    creating the row if there is none, in one statement (``INSERT … ON
    CONFLICT … DO UPDATE … WHERE fence < %(fence)s``), inside the
    connection's transaction if one is open. Raises :class:`FenceRefused`
    when the row's fence is ``fence`` or larger: nothing changed."""
    k, f = sql.Identifier(key_column), sql.Identifier(fence_column)
    columns = [sql.Identifier(c) for c in values]
    query = sql.SQL(
        "INSERT INTO {t} AS t ({names}) VALUES ({placeholders}) "
        "ON CONFLICT ({k}) DO UPDATE SET {set} WHERE t.{f} < EXCLUDED.{f}"
    ).format(
        t=_table(table),
        names=sql.SQL(", ").join([k, f, *columns]),
        placeholders=sql.SQL(", ").join(
            [sql.Placeholder("key"), sql.SQL("{}::numeric").format(sql.Placeholder("fence"))]
            + [sql.Placeholder(f"v{i}") for i in range(len(columns))]
        ),
        k=k,
        f=f,
        set=sql.SQL(", ").join(sql.SQL("{c} = EXCLUDED.{c}").format(c=c) for c in [f, *columns]),
    )
    await _execute(conn, query, key, fence, values)


async def fenced_update(
    conn: AsyncConnection[Any] | AsyncCursor[Any],
    table: str,
    key: str,
    fence: int,
    values: Mapping[str, object],
    *,
    key_column: str = "key",
    fence_column: str = "fence",
) -> None:
    """Like :func:`fenced_write` for a row that must already exist (``UPDATE
    … WHERE key = %(key)s AND fence < %(fence)s``): a missing row is refused too."""
    k, f = sql.Identifier(key_column), sql.Identifier(fence_column)
    assignments = [sql.SQL("{f} = {p}::numeric").format(f=f, p=sql.Placeholder("fence"))] + [
        sql.SQL("{c} = {p}").format(c=sql.Identifier(c), p=sql.Placeholder(f"v{i}"))
        for i, c in enumerate(values)
    ]
    query = sql.SQL("UPDATE {t} SET {set} WHERE {k} = {key} AND {f} < {fence}::numeric").format(
        t=_table(table),
        set=sql.SQL(", ").join(assignments),
        k=k,
        key=sql.Placeholder("key"),
        f=f,
        fence=sql.Placeholder("fence"),
    )
    await _execute(conn, query, key, fence, values)


async def _execute(
    conn: AsyncConnection[Any] | AsyncCursor[Any],
    query: sql.Composed,
    key: str,
    fence: int,
    values: Mapping[str, object],
) -> None:
    if not 0 <= fence < 1 << 64:
        raise ValueError(f"a fence is an unsigned 64-bit number, not {fence}")
    params: dict[str, object] = {"key": key, "fence": str(fence)}
    params.update({f"v{i}": v for i, v in enumerate(values.values())})
    cursor = await conn.execute(query, params)
    if cursor.rowcount == 0:
        raise FenceRefused(key, fence)
