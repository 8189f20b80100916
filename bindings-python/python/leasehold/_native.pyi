"""The private native module of ``leasehold`` (Rust, pyo3). Use the package's
public names instead; these are the types its wrappers build on."""

import asyncio
from collections.abc import Awaitable, Callable, Generator, Iterable
from types import TracebackType
from typing import Any, ClassVar, Generic, TypeVar, final

from ._types import Duration

_T = TypeVar("_T")

__all__ = [
    "SLOT_DEFAULT_LIMIT",
    "HeldSlot",
    "Hold",
    "HolderInfo",
    "Holding",
    "IdGenerator",
    "IdLayout",
    "IdParts",
    "Lease",
    "Lock",
    "LoopDriver",
    "ManualLease",
    "Owner",
    "Ready",
    "SlotHolding",
    "SlotLease",
    "Slots",
    "Store",
    "VirtualClock",
    "__version__",
    "connect",
    "connect_blocking",
    "error_codes",
    "error_for_code",
    "memory",
    "memory_with",
    "parse_duration",
]

__version__: str
SLOT_DEFAULT_LIMIT: int
"""The core's number of slots of a namespace that does not set one."""

@final
class Lease:
    """A held lease: its fence, whether it was lost, the time left."""

    @property
    def fence(self) -> int:
        """Larger than every fence the store granted before (LOCK-02)."""
    @property
    def lost(self) -> bool:
        """Whether the lease was lost (LOCK-09); once true, it stays true."""
    @property
    def loss_reason(self) -> str | None:
        """Why it was lost: ``"expired"``, ``"revoked"``, ``"unknown"``,
        ``"restarted"`` or ``"closed"``; ``None`` while it is not."""
    @property
    def remaining(self) -> float | None:
        """Seconds left before the holder's deadline, 0 once lost; ``None``: no deadline."""
    @property
    def key(self) -> str:
        """The key held."""
    @property
    def lock_name(self) -> str:
        """The name of the lock the key belongs to."""

@final
class ManualLease:
    """A lease its holder extends and releases itself (MANUAL-*)."""

    @property
    def name(self) -> str:
        """The lease's name."""
    @property
    def fence(self) -> int:
        """The fence, with LOCK-02's guarantee (MANUAL-07)."""
    def extend(self, by: Duration) -> Awaitable[None]:
        """Sets the expiry to now + ``by``; ``LeaseLost`` once lost or released."""
    def release(self) -> Awaitable[None]:
        """Releases it if it still owns its name; ``LeaseLost`` the first time after a loss."""

@final
class Owner:
    """Who leases a slot: a stable key and the instance id of one process."""

    def __new__(cls, key: str, instance: str | None = None) -> Owner:
        """``instance``: ``None`` for a fresh random instance id (a new process of ``key``)."""
    @property
    def key(self) -> str:
        """The stable key."""
    @property
    def instance(self) -> str:
        """This process's instance id."""
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class SlotLease:
    """A lease on one slot, as last returned by the store; times in ms of the store's clock."""

    @property
    def namespace(self) -> str:
        """The namespace."""
    @property
    def owner(self) -> Owner:
        """The owner."""
    @property
    def slot(self) -> int:
        """The slot, in ``range(limit)``."""
    @property
    def node(self) -> int:
        """The node number for IDs: the slot plus the namespace's offset."""
    @property
    def fence(self) -> int:
        """Larger than every fence the store gave before (SLOT-08)."""
    @property
    def floor(self) -> int:
        """Issue only timestamps above this one (SLOT-05, SLOT-06)."""
    @property
    def expires_at(self) -> int:
        """When the lease expires unless renewed."""
    @property
    def ceiling(self) -> int:
        """Issue no timestamp past this one."""
    def __eq__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class Slots:
    """A slot namespace opened on a store, its options checked."""

    @property
    def name(self) -> str: ...
    @property
    def limit(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def ttl(self) -> float: ...
    @property
    def tolerance(self) -> float: ...
    @property
    def margin(self) -> float: ...
    def acquire(
        self, owner: Owner, preferred: int | None = None
    ) -> Awaitable[SlotLease | None]: ...
    def begin(
        self, owner: Owner, preferred: int | None = None
    ) -> Awaitable[SlotHolding | None]: ...
    def renew(self, lease: SlotLease) -> Awaitable[SlotLease | None]: ...
    def release(self, lease: SlotLease, last_issued: int) -> Awaitable[bool]: ...

@final
class HeldSlot:
    """A held slot, as the block running under it sees it; renewals move its lease on."""

    @property
    def lease(self) -> SlotLease:
        """The lease as last renewed."""
    @property
    def slot(self) -> int:
        """The slot, in ``range(limit)``."""
    @property
    def node(self) -> int:
        """The node number for IDs: the slot plus the namespace's offset."""
    @property
    def fence(self) -> int:
        """Larger than every fence the store gave before (SLOT-08); renewals keep it."""
    @property
    def floor(self) -> int:
        """Issue only timestamps above this one (SLOT-05, SLOT-06)."""
    @property
    def ceiling(self) -> int:
        """Issue no timestamp past this one; renewals move it on."""
    def issued(self, ms: int) -> None:
        """Records that timestamps up to ``ms`` were issued: the release hands
        the largest one recorded to the slot's next holder (SLOT-05)."""
    @property
    def last_issued(self) -> int:
        """The largest timestamp recorded by :meth:`issued` (0: none)."""
    @property
    def lost(self) -> bool:
        """Whether the slot was lost; once true, it stays true."""
    @property
    def loss_reason(self) -> str | None:
        """Why it was lost: ``"expired"`` (no renewal confirmed by the holder's
        deadline) or ``"unknown"`` (a renewal answered nothing); ``None`` while it is not."""
    @property
    def remaining(self) -> float:
        """Seconds left before the holder's deadline, 0 once lost."""

@final
class SlotHolding:
    """A slot held from ``Slots.begin`` to ``SlotHolding.end``."""

    def watch_loss(
        self,
        callback: Callable[[bool], object],
        event_loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        """Calls ``callback(True)`` on the loop's thread once, if the slot is
        lost before the holding ends; a second watch raises ``InvalidArgument``.
        ``event_loop``, the running loop when the caller has it (its task's),
        spares its lookup."""
    def end(self) -> Awaitable[None]: ...

@final
class IdLayout:
    """How an ID's bits are split, high to low: ``time_bits`` of ticks of
    ``tick_ms`` since ``epoch_ms``, ``node_bits`` of node, ``sequence_bits``
    of sequence; at most 63 bits in all."""

    DEFAULT: ClassVar[IdLayout]
    """41 bits of milliseconds from 2026-01-01, 10 of node, 12 of sequence."""
    DEFAULT_EPOCH_MS: ClassVar[int]
    """2026-01-01T00:00:00Z in milliseconds since the Unix epoch."""
    @staticmethod
    def js_safe() -> IdLayout:
        """IDs below 2**53: 41 bits of milliseconds, 6 of node, 6 of sequence."""
    @staticmethod
    def seconds() -> IdLayout:
        """31 bits of seconds, 10 of node, 22 of sequence."""
    @staticmethod
    def custom(
        time_bits: int,
        node_bits: int,
        sequence_bits: int,
        *,
        tick_ms: int | None = None,
        epoch_ms: int | None = None,
    ) -> IdLayout:
        """These splits, ticks of ``tick_ms`` (``None``: 1; at most an hour)
        from ``epoch_ms`` (``None``: :attr:`DEFAULT_EPOCH_MS`); at least one bit of each
        part and at most 63 in all, else ``InvalidArgument``."""
    @property
    def time_bits(self) -> int: ...
    @property
    def node_bits(self) -> int: ...
    @property
    def sequence_bits(self) -> int: ...
    @property
    def tick_ms(self) -> int: ...
    @property
    def epoch_ms(self) -> int: ...
    def parts(self, id: int) -> IdParts:
        """Takes the ID ``id`` apart."""
    def describe(self) -> str:
        """A short description: ``"41/10/12 ms"``."""
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class IdParts:
    """An ID taken apart by :meth:`IdLayout.parts`."""

    @property
    def tick(self) -> int:
        """Ticks since the layout's epoch."""
    @property
    def timestamp_ms(self) -> int:
        """The tick's start in milliseconds since the Unix epoch."""
    @property
    def node(self) -> int:
        """The node number."""
    @property
    def sequence(self) -> int:
        """The sequence within the tick."""
    def __eq__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

@final
class IdGenerator:
    """An ID generator holding one slot lease of a namespace."""

    def next_nowait(self) -> int: ...
    def next_async(self) -> Awaitable[int]: ...
    def take_nowait(self, n: int) -> list[int]: ...
    def take(self, n: int) -> Awaitable[list[int]]: ...
    def close(self) -> Awaitable[None]: ...
    @property
    def node(self) -> int: ...
    @property
    def layout(self) -> IdLayout: ...
    @property
    def lease(self) -> SlotLease: ...
    @property
    def last_issued(self) -> int: ...
    @property
    def lost(self) -> bool: ...
    def rust_next_cycles(self, cycles: int) -> tuple[float, int]:
        """Benchmark hook: seconds taken by ``cycles`` calls of the core's
        ``next()`` in Rust, and how many answered ``NotReady``."""

@final
class Hold(Generic[_T]):
    """``lock.hold(key, wait=...)``, ``lock.try_hold(key)``,
    ``lock.hold_many(keys, wait=...)`` and ``slots.hold(owner, preferred)``:
    holds what it asks for while the block runs and gives the block its
    :class:`Lease` (a list of them; a :class:`HeldSlot`; ``None`` when
    nothing was free). Entered once, with ``async with`` or, for keys
    without an event loop, ``with``."""

    def __new__(cls, lock: Lock, key: str, wait: Duration | None = None) -> Hold[Lease]: ...
    @staticmethod
    def try_hold(lock: Lock, key: str) -> Hold[Lease | None]: ...
    @staticmethod
    def hold_many(
        lock: Lock, keys: Iterable[str], wait: Duration | None = None
    ) -> Hold[list[Lease]]: ...
    @staticmethod
    def slot(slots: Slots, owner: Owner, preferred: int | None = None) -> Hold[HeldSlot | None]: ...
    def __class_getitem__(cls, item: Any) -> Any: ...
    def __aenter__(self) -> Awaitable[_T]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Awaitable[None]: ...
    def __enter__(self) -> _T: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
    def _admit(self, got: object) -> Awaitable[_T]:
        """What the block gets once the begin answered ``got``, its loss watched."""
    def _on_lost(self, _lost: bool) -> None:
        """Cancels the block's task, once, at a loss."""

@final
class Holding:
    """A key held from ``Lock.begin`` to ``Holding.end``."""

    @property
    def lease(self) -> Lease: ...
    def watch_loss(
        self,
        callback: Callable[[bool], object],
        event_loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        """Calls ``callback(True)`` on the loop's thread once, if the lease is
        lost before the holding ends (LOCK-09); a second watch raises
        ``InvalidArgument``. ``event_loop``, the running loop when the caller
        has it (its task's), spares its lookup."""
    def end(self) -> Awaitable[None]: ...

@final
class Lock:
    """A lock of a store, its options checked."""

    @property
    def name(self) -> str: ...
    @property
    def ttl(self) -> float: ...
    @property
    def max_hold(self) -> float | None: ...
    @property
    def wait(self) -> float | None: ...
    @property
    def margin(self) -> float: ...
    def begin(self, key: str, wait: Duration | None = None) -> Awaitable[Holding]: ...
    def holder(self, key: str) -> Awaitable[HolderInfo | None]: ...
    def rust_hold_cycles(self, key: str, cycles: int) -> float:
        """Benchmark hook: seconds taken by ``cycles`` begin + end in Rust."""

@final
class HolderInfo:
    """Who holds a key (WHO-02): the identity of the store handle that took
    the lease, its fence, how long it has been held and how long the store
    keeps it unless renewed (seconds; ``None``: not by time), and how many
    wait in the key's line."""

    @property
    def identity(self) -> str: ...
    @property
    def fence(self) -> int: ...
    @property
    def held_for(self) -> float: ...
    @property
    def expires_in(self) -> float | None: ...
    @property
    def waiting(self) -> int: ...

@final
class Store:
    """The embedded store or a connection to the server store."""

    @property
    def kind(self) -> str: ...
    def lock(
        self,
        name: str,
        ttl: Duration | None = None,
        max_hold: Duration | None = None,
        wait: Duration | None = None,
        margin: Duration | None = None,
    ) -> Lock: ...
    def slots(
        self,
        name: str,
        limit: int,
        offset: int,
        ttl: Duration | None = None,
        tolerance: Duration | None = None,
        timeout: Duration | None = None,
        margin: Duration | None = None,
    ) -> Slots: ...
    def ids(
        self,
        namespace: str,
        layout: IdLayout | None = None,
        limit: int | None = None,
        offset: int | None = None,
        ttl: Duration | None = None,
        tolerance: Duration | None = None,
        timeout: Duration | None = None,
        max_lead: Duration | None = None,
        owner_key: str | None = None,
        preferred: int | None = None,
    ) -> Awaitable[IdGenerator]: ...
    def try_acquire(self, name: str, ttl: Duration) -> Awaitable[ManualLease | None]: ...
    def acquire(
        self, name: str, ttl: Duration, wait: Duration | None = None
    ) -> Awaitable[ManualLease]: ...
    def close(self) -> Awaitable[None]: ...
    def close_blocking(self) -> None: ...

@final
class VirtualClock:
    """A clock that stands still until ``advance`` moves it."""

    def __init__(self) -> None: ...
    @property
    def now(self) -> float:
        """Seconds since the clock's origin."""
    @property
    def unix_millis(self) -> int:
        """The time of day on the clock in ms since the Unix epoch, as slot leases stamp it."""
    def advance(self, by: Duration) -> None:
        """Moves the clock, firing the timers due meanwhile in order."""

def memory() -> Store: ...
def connect(
    url: str,
    token: str | None = None,
    ca_pem: bytes | None = None,
    user: str | None = None,
    password: str | None = None,
    client_cert_pem: bytes | None = None,
    client_key_pem: bytes | None = None,
    accept_old_etcd: bool = False,
    identity: str | None = None,
) -> Awaitable[Store]: ...
def connect_blocking(
    url: str,
    token: str | None = None,
    ca_pem: bytes | None = None,
    user: str | None = None,
    password: str | None = None,
    client_cert_pem: bytes | None = None,
    client_key_pem: bytes | None = None,
    accept_old_etcd: bool = False,
    identity: str | None = None,
) -> Store: ...
def memory_with(clock: VirtualClock, renewal: bool = False, push: bool = True) -> Store: ...
def parse_duration(value: Duration) -> float: ...
def error_codes() -> list[str]: ...
def error_for_code(code: str, message: str) -> BaseException: ...

@final
class Ready:
    """The awaitable of a call the core answered at once: awaiting it gives
    the answer, or raises its error, without a turn of the event loop. One
    never awaited warns (``RuntimeWarning``) when it goes, as a coroutine
    never awaited does."""

    def __await__(self) -> Generator[Any, None, Any]: ...
    def __next__(self) -> Any:
        """Ends the await with the answer (``StopIteration(answer)``), or raises its error."""
    def result(self) -> Any:
        """The answer, or raises its error: what awaiting it gives, without the await."""

@final
class LoopDriver:
    """The core futures one asyncio event loop waits for, polled on its
    thread; made by the module on a loop's first call, never by users."""

    def run_woken(self) -> None:
        """Called by the loop when the driver's wake-up socket is readable."""
