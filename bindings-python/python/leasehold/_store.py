"""Stores and locks: where leases come from."""

from __future__ import annotations

import os
from collections.abc import Iterable
from types import TracebackType

from . import _native
from ._hold import Hold, HoldMany, TryHold
from ._ids import IdGenerator, IdLayout
from ._slots import Slots
from ._types import Duration, Pem
from .errors import InvalidArgument

__all__ = ["Lock", "ManualLease", "Store", "connect", "connect_blocking", "memory"]


class ManualLease:
    """A lease its holder extends and releases itself, with no background
    renewal (``store.try_acquire`` / ``store.acquire``). Safe to use from
    several tasks and threads at once (MANUAL-06)."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.ManualLease) -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The lease's name."""
        return self._native.name

    @property
    def fence(self) -> int:
        """The fence: larger than every fence the store granted before (MANUAL-07)."""
        return self._native.fence

    async def extend(self, by: Duration) -> None:
        """Sets the expiry to now + ``by`` (1 s to 1 h; it does not add to the
        old expiry). Raises ``LeaseLost`` once the lease is lost or released (MANUAL-03)."""
        await self._native.extend(by)

    async def release(self) -> None:
        """Releases the lease if it still owns its name. The first release of
        a lost lease raises ``LeaseLost``; after a confirmed release or loss,
        later calls do nothing (MANUAL-04)."""
        await self._native.release()

    def __repr__(self) -> str:
        return f"ManualLease(name={self.name!r}, fence={self.fence})"


class Lock:
    """A named family of keys with its options (``store.lock(name, ...)``).

    ``async with lock.hold(key) as lease:`` holds a key while a block runs;
    ``async with lock.try_hold(key) as lease:`` only if it is free (``lease``
    is ``None`` when it is held); ``async with lock.hold_many(keys) as leases:``
    holds many keys at once, all or none. All also work with ``with`` in code
    without an event loop.
    """

    __slots__ = ("_native",)

    def __init__(self, native: _native.Lock) -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The lock's name."""
        return self._native.name

    @property
    def ttl(self) -> float:
        """The ttl of its leases, in seconds."""
        return self._native.ttl

    @property
    def max_hold(self) -> float | None:
        """Seconds after its grant at which the store revokes a lease, if set."""
        return self._native.max_hold

    @property
    def wait(self) -> float | None:
        """The longest time in seconds a hold waits in line, if set."""
        return self._native.wait

    @property
    def margin(self) -> float:
        """Seconds before the store's expiry at which the holder declares its lease lost."""
        return self._native.margin

    def hold(self, key: str, *, wait: Duration | None = None) -> Hold[_native.Lease]:
        """Waits in line for ``key`` (at most ``wait``, else the lock's own
        bound; past it, ``WaitTimeout``) and holds it while the block runs."""
        return Hold(self._native, key, wait)

    def hold_many(self, keys: Iterable[str], *, wait: Duration | None = None) -> HoldMany:
        """Waits in line for every key of ``keys`` at once (at most ``wait``,
        else the lock's own bound) and holds them all while the block runs,
        each a lease of its own, given to the block as a list in the order of
        ``keys`` (LOCK-22). All or none: if one key cannot be had
        (``WaitTimeout``, cancellation), every lease taken is released and
        every line left; a key named twice raises ``InvalidArgument``. The loss
        of any one lease cancels the block, and the hold raises ``LeaseLost``."""
        return Hold.hold_many(self._native, keys, wait)

    def try_hold(self, key: str) -> TryHold:
        """Holds ``key`` while the block runs if it is free now; never waits."""
        return Hold.try_hold(self._native, key)

    async def holder(self, key: str) -> _native.HolderInfo | None:
        """Who holds ``key`` now, from a linearizable read of the store
        (WHO-02): its holder's ``identity``, ``fence``, ``held_for``,
        ``expires_in`` and how many are ``waiting``, or ``None`` when nobody
        holds it. A connection admitted only to read may ask."""
        return await self._native.holder(key)

    def __repr__(self) -> str:
        return f"Lock(name={self.name!r}, ttl={self.ttl})"


class Store:
    """A store of leases: the embedded one (:func:`memory`) or the server
    store (:func:`connect`). ``async with`` / ``with`` closes it at the end."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.Store) -> None:
        self._native = native

    @property
    def kind(self) -> str:
        """``"memory"``, ``"server"``, ``"etcd"`` or ``"postgres"``."""
        return self._native.kind

    def lock(
        self,
        name: str,
        *,
        ttl: Duration | None = None,
        max_hold: Duration | None = None,
        wait: Duration | None = None,
        margin: Duration | None = None,
    ) -> Lock:
        """Opens the lock ``name``. ``ttl``: 1 s to 1 h, 10 s by default;
        ``max_hold``: at least ``ttl``; ``wait``: a bound on time in line;
        ``margin``: below half the ttl, a tenth of it by default (LOCK-13).
        Bad options raise at once; nothing is sent to the store."""
        return Lock(self._native.lock(name, ttl, max_hold, wait, margin))

    def slots(
        self,
        name: str,
        *,
        limit: int = _native.SLOT_DEFAULT_LIMIT,
        ttl: Duration | None = None,
        tolerance: Duration | None = None,
        offset: int = 0,
        timeout: Duration | None = None,
        margin: Duration | None = None,
    ) -> Slots:
        """Opens the slot namespace ``name``: slots ``range(limit)``
        (1 to 65536); ``ttl``: 1 s to 1 h, 10 s by default; ``tolerance``: from
        a lease's expiry to its ceiling, at most 1 h, 1 s by default; ``offset``:
        what a lease's ``node`` adds to its ``slot``; ``timeout``: the bound on
        each call, 5 s by default; ``margin``: how long before a held slot's
        expiry its holder declares it lost (``slots.hold``), below half the
        ttl, a tenth of it by default. Bad options raise at once; nothing is
        sent to the store. The namespace's first use fixes its limit,
        tolerance and offset (SLOT-02)."""
        return Slots(self._native.slots(name, limit, offset, ttl, tolerance, timeout, margin))

    async def ids(
        self,
        namespace: str,
        *,
        layout: IdLayout | None = None,
        limit: int | None = None,
        offset: int = 0,
        ttl: Duration | None = None,
        tolerance: Duration | None = None,
        timeout: Duration | None = None,
        max_lead: Duration | None = None,
        owner_key: str | None = None,
        preferred: int | None = None,
    ) -> IdGenerator:
        """An ID generator on a slot of the namespace ``namespace`` (IDGEN),
        renewed in the background until it is closed. ``layout``: the bit
        layout, :attr:`IdLayout.DEFAULT` (41/10/12 in ms) by default, fixed by
        the namespace's first use (``NamespaceMismatch`` otherwise);
        ``limit``: the slots (node numbers ``offset`` to ``offset + limit -
        1``, which the node bits must hold), as many as the node bits hold
        (at most 65536) by default; ``ttl``, ``tolerance``, ``timeout``: the
        slot lease's, as for :meth:`slots`; ``max_lead``: how far ahead of
        the store's clock IDs may be issued (1 s by default, 0: never ahead);
        ``owner_key``: the key its slot is leased under
        (``"leasehold-ids"``), with a fresh instance id for every generator;
        ``preferred``: the slot to try first. Raises
        :class:`~leasehold.NotReady` (retryable) when every slot is held."""
        return IdGenerator(
            await self._native.ids(
                namespace,
                layout,
                limit,
                offset,
                ttl,
                tolerance,
                timeout,
                max_lead,
                owner_key,
                preferred,
            )
        )

    async def try_acquire(self, name: str, ttl: Duration) -> ManualLease | None:
        """The manual lease ``name`` if it is free now, else ``None`` (MANUAL-01)."""
        lease = await self._native.try_acquire(name, ttl)
        return None if lease is None else ManualLease(lease)

    async def acquire(
        self, name: str, ttl: Duration, *, wait: Duration | None = None
    ) -> ManualLease:
        """Waits for the manual lease ``name``, at most ``wait`` (MANUAL-02);
        its ``ttl`` starts at the grant."""
        return ManualLease(await self._native.acquire(name, ttl, wait))

    async def close(self) -> None:
        """Closes the store: its leases end, waiting calls fail ``Closed``."""
        await self._native.close()

    def close_blocking(self) -> None:
        """:meth:`close` for code without an event loop."""
        self._native.close_blocking()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close_blocking()

    def __repr__(self) -> str:
        return f"Store(kind={self.kind!r})"


def memory() -> Store:
    """The embedded store, in this process: holders need no renewal (LOCK-19)."""
    return Store(_native.memory())


def _pem(pem: Pem | None, what: str = "tls") -> bytes | None:
    if pem is None or isinstance(pem, bytes):
        return pem
    if isinstance(pem, str | os.PathLike):
        try:
            with open(pem, "rb") as f:
                return f.read()
        except OSError as e:
            raise InvalidArgument(f"cannot read the {what} PEM file {pem!r}: {e}") from e
    raise InvalidArgument(f"{what} must be PEM bytes or a path, not {type(pem).__name__}")


async def connect(
    url: str,
    *,
    token: str | None = None,
    tls: Pem | None = None,
    user: str | None = None,
    password: str | None = None,
    client_cert: Pem | None = None,
    client_key: Pem | None = None,
    accept_old_etcd: bool = False,
    identity: str | None = None,
) -> Store:
    """Connects to the store at ``url``: the server store
    (``leasehold://host:port``, or ``leaseholds://host:port`` with ``tls``,
    the certificates to trust; ``token`` admits the connection to read or to
    write, LOCK-14), etcd (``etcd://h1:2379,h2:2379/PREFIX``, or
    ``etcds://`` with ``tls``; DIST-01) or PostgreSQL
    (``postgres://user@h1,h2/db``; PG-01, docs/postgres.md) as ``user``
    with ``password``, presenting ``client_cert`` and ``client_key`` (PEM
    bytes or paths).
    ``accept_old_etcd`` opens an etcd older than DIST-08's minimum versions.
    ``identity`` is who this client is (WHO-01): recorded with every lease
    it takes and shown wherever a holder is (``Lock.holder``, ``leasehold
    ls``, the live page); at most 256 bytes, no control characters, by
    default ``hostname:pid``."""
    return Store(
        await _native.connect(
            url,
            token,
            _pem(tls),
            user,
            password,
            _pem(client_cert, "client_cert"),
            _pem(client_key, "client_key"),
            accept_old_etcd,
            identity,
        )
    )


def connect_blocking(
    url: str,
    *,
    token: str | None = None,
    tls: Pem | None = None,
    user: str | None = None,
    password: str | None = None,
    client_cert: Pem | None = None,
    client_key: Pem | None = None,
    accept_old_etcd: bool = False,
    identity: str | None = None,
) -> Store:
    """:func:`connect` for code without an event loop."""
    return Store(
        _native.connect_blocking(
            url,
            token,
            _pem(tls),
            user,
            password,
            _pem(client_cert, "client_cert"),
            _pem(client_key, "client_key"),
            accept_old_etcd,
            identity,
        )
    )
