"""The private native module of ``leasehold`` (Rust, pyo3). Use the package's
public names instead; these are the types its wrappers build on."""

from collections.abc import Awaitable, Callable
from typing import final

from ._types import Duration

__version__: str

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
class Holding:
    """A key held from ``Lock.begin`` to ``Holding.end``."""

    @property
    def lease(self) -> Lease: ...
    def watch_loss(self, callback: Callable[[bool], object]) -> None: ...
    def end(self) -> Awaitable[None]: ...
    def end_blocking(self) -> None: ...

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
    def try_begin(self, key: str) -> Awaitable[Holding | None]: ...
    def begin_blocking(self, key: str, wait: Duration | None = None) -> Holding: ...
    def try_begin_blocking(self, key: str) -> Holding | None: ...
    def rust_hold_cycles(self, key: str, cycles: int) -> float:
        """Benchmark hook: seconds taken by ``cycles`` begin + end in Rust."""

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
    def advance(self, by: Duration) -> None:
        """Moves the clock, firing the timers due meanwhile in order."""

def memory() -> Store: ...
def connect(
    url: str, token: str | None = None, ca_pem: bytes | None = None
) -> Awaitable[Store]: ...
def connect_blocking(url: str, token: str | None = None, ca_pem: bytes | None = None) -> Store: ...
def memory_with(clock: VirtualClock, renewal: bool = False, push: bool = True) -> Store: ...
def parse_duration(value: Duration) -> float: ...
def error_codes() -> list[str]: ...
def error_for_code(code: str, message: str) -> BaseException: ...
