"""Test hooks: the embedded store on a virtual clock, as the shared
scenarios of ``spec-tests/`` run. Not for production use."""

from __future__ import annotations

from . import _native
from ._store import Store
from ._types import Duration
from .errors import LeaseholdError

__all__ = ["VirtualClock", "error_codes", "error_for_code", "memory", "parse_duration"]

#: A clock that stands still until ``clock.advance(by)`` moves it; ``advance``
#: fires the timers due meanwhile in order, blocking while it does.
VirtualClock = _native.VirtualClock


def memory(clock: VirtualClock, *, renewal: bool = False, push: bool = True) -> Store:
    """An embedded store on ``clock``. ``renewal``: its leases run out unless
    renewed, as on the server store; ``push=False``: waiting polls."""
    return Store(_native.memory_with(clock, renewal, push))


def parse_duration(value: Duration) -> float:
    """A duration in seconds, parsed as the package parses every duration."""
    return _native.parse_duration(value)


def error_codes() -> list[str]:
    """Every error code of the core (ERR-01)."""
    return _native.error_codes()


def error_for_code(code: str, message: str) -> LeaseholdError:
    """The exception the package raises for a core error of ``code``."""
    exc = _native.error_for_code(code, message)
    if not isinstance(exc, LeaseholdError):
        raise TypeError(f"{code} made a {type(exc).__name__}, not a LeaseholdError")
    return exc
