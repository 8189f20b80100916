"""The Python runner of the shared scenarios (``spec-tests/scenarios/*.json``).

It mirrors the Rust runner (``spec-tests/src/runner.rs``): each scenario runs
on a fresh embedded store on a virtual clock that only ``advance`` moves (or,
for the scenarios that move no clock, on a server store), and a file with an
unknown step, field or value fails when it loads. The Python API is what runs:
``async with lock.hold(key)`` in a task per holder, ``store.try_acquire`` and
``store.acquire`` for manual leases, task cancellation for ``cancel``.

The store's work runs on other threads than the event loop, so whether a call
got its key is read by polling in real time with a bound (``until``), and
that nothing happened by pausing a little (``settle``) before looking.

Python's forms of the scenario words: the held function's ``error`` is an
``Exception`` it raises, its ``panic`` a ``BaseException`` that is not one,
``cancel`` cancels the task (a waiting call then ends in ``CancelledError``,
which the scenarios call ``Cancelled``), and "the function was told" of a
loss (LOCK-09) is the block's task cancelled at its await.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import leasehold
from leasehold import testing

SCENARIOS = pathlib.Path(__file__).resolve().parents[2] / "spec-tests" / "scenarios"

#: How long a step may wait for something to happen (real time).
BOUND = 5.0
#: How long to let pushes arrive before concluding that nothing happened.
SETTLE_MEMORY = 0.03
SETTLE_SERVER = 0.15

DURATION_FIELDS = {"ttl", "max_hold", "wait", "margin", "by"}

#: Each step: its required fields, its optional fields.
STEPS: dict[str, tuple[set[str], set[str]]] = {
    "open_lock": (
        {"lock"},
        {"name", "ttl", "max_hold", "wait", "margin", "expect", "expect_error"},
    ),
    "hold": ({"holder", "lock", "key"}, {"wait", "expect", "expect_error"}),
    "try_hold": ({"holder", "lock", "key"}, {"expect", "expect_error"}),
    "end": ({"holder"}, {"by", "message", "expect", "expect_error", "expect_cause"}),
    "cancel": ({"holder"}, set()),
    "expect_granted": ({"holder"}, set()),
    "expect_waiting": ({"holder"}, set()),
    "expect_failed": ({"holder", "error"}, set()),
    "expect_lost": ({"holder", "reason"}, set()),
    "expect_not_lost": ({"holder"}, set()),
    "expect_remaining": ({"holder", "remaining"}, set()),
    "expect_fence_greater": ({"holder", "than"}, set()),
    "advance": ({"by"}, set()),
    "try_acquire": ({"holder", "name", "ttl"}, {"expect", "expect_error"}),
    "acquire": ({"holder", "name", "ttl"}, {"wait", "expect", "expect_error"}),
    "extend": ({"holder", "by"}, {"tasks", "expect", "expect_error"}),
    "release": ({"holder"}, {"tasks", "expect", "expect_error"}),
    "close": (set(), set()),
    "reopen": (set(), set()),
}

#: The values `expect` may take, per step.
EXPECTS: dict[str, set[str]] = {
    "open_lock": {"ok"},
    "hold": {"granted", "waiting"},
    "acquire": {"granted", "waiting"},
    "try_hold": {"granted", "not_held"},
    "try_acquire": {"granted", "not_held"},
    "end": {"ok", "function_error", "panic", "cancelled"},
    "extend": {"ok"},
    "release": {"ok"},
}
MUST_EXPECT = {"hold", "acquire", "try_hold", "try_acquire"}
END_BY = {"return", "error", "panic", "cancel"}
REASONS = {"expired", "revoked", "unknown", "restarted", "closed"}
CODES = set(testing.error_codes())


class ScenarioError(Exception):
    """A scenario that does not load, or a step that failed."""


class FunctionError(Exception):
    """The held function's own error (``"by": "error"``)."""


class Panic(BaseException):
    """The held function's panic (``"by": "panic"``): not an ``Exception``."""


def _check_step(i: int, step: Any) -> None:
    where = f"step {i}"
    if not isinstance(step, dict) or not isinstance(step.get("step"), str):
        raise ScenarioError(f"{where}: a step is an object with a string `step`")
    name = step["step"]
    if name not in STEPS:
        raise ScenarioError(f"{where}: unknown step {name!r}")
    required, optional = STEPS[name]
    fields = set(step) - {"step"}
    if missing := required - fields:
        raise ScenarioError(f"{where} ({name}): missing {sorted(missing)}")
    if unknown := fields - required - optional:
        raise ScenarioError(f"{where} ({name}): unknown fields {sorted(unknown)}")
    for key in fields - {"tasks"}:
        if not isinstance(step[key], str):
            raise ScenarioError(f"{where} ({name}): {key} must be a string")
    if "tasks" in step and (
        not isinstance(step["tasks"], int) or isinstance(step["tasks"], bool) or step["tasks"] < 1
    ):
        raise ScenarioError(f"{where} ({name}): tasks must be at least 1")
    if "expect" in step and step["expect"] not in EXPECTS.get(name, set()):
        raise ScenarioError(f"{where} ({name}): unknown expectation {step['expect']!r}")
    for key in ("expect_error", "error"):
        if key in step and step[key] not in CODES:
            raise ScenarioError(f"{where} ({name}): unknown error code {step[key]!r}")
    if "reason" in step and step["reason"] not in REASONS:
        raise ScenarioError(f"{where} ({name}): unknown loss reason {step['reason']!r}")
    if name == "end":
        by = step.get("by", "return")
        if by not in END_BY:
            raise ScenarioError(f"{where} (end): unknown ending {by!r}")
        if "expect_cause" in step and "expect_error" not in step:
            raise ScenarioError(f"{where} (end): expect_cause goes with expect_error")
        if "message" in step and by not in {"error", "panic"}:
            raise ScenarioError(f"{where} (end): message goes with by: error or panic")
    if "expect" in step and "expect_error" in step:
        raise ScenarioError(f"{where} ({name}): give expect or expect_error, not both")
    if name in MUST_EXPECT and "expect" not in step and "expect_error" not in step:
        raise ScenarioError(f"{where} ({name}): this step needs expect or expect_error")


def load(path: pathlib.Path) -> dict[str, Any]:
    """Loads and checks a scenario file; anything unknown fails."""
    scenario = json.loads(path.read_text())
    if not isinstance(scenario, dict):
        raise ScenarioError(f"{path.name}: a scenario is an object")
    keys = {"id", "contracts", "title", "store", "steps"}
    if set(scenario) != keys:
        raise ScenarioError(
            f"{path.name}: fields {sorted(set(scenario) ^ keys)} missing or unknown"
        )
    if scenario["id"] != path.stem:
        raise ScenarioError(f"{path.name}: the id {scenario['id']!r} is not the file's name")
    store = scenario["store"]
    if (
        not isinstance(store, dict)
        or set(store) != {"renewal", "push"}
        or not all(isinstance(v, bool) for v in store.values())
    ):
        raise ScenarioError(f"{path.name}: store is {{renewal: bool, push: bool}}")
    contracts = scenario["contracts"]
    if not contracts or not all(isinstance(c, str) for c in contracts):
        raise ScenarioError(f"{path.name}: no contract named")
    if not isinstance(scenario["steps"], list) or not scenario["steps"]:
        raise ScenarioError(f"{path.name}: no steps")
    for i, step in enumerate(scenario["steps"]):
        _check_step(i, step)
    return scenario


def scenario_files() -> list[pathlib.Path]:
    """Every shared scenario, read from ``spec-tests/scenarios`` at test time."""
    return sorted(SCENARIOS.glob("*.json"))


def applies_to_server(scenario: dict[str, Any]) -> bool:
    """Whether a scenario can run on the server store: pushed grants, and no
    virtual clock, close, reopen or exact remaining time (as in the Rust runner)."""
    moves = {"advance", "close", "reopen", "expect_remaining"}
    return bool(scenario["store"]["push"]) and not any(
        s["step"] in moves for s in scenario["steps"]
    )


def outcome_of(exc: BaseException) -> str:
    if isinstance(exc, asyncio.CancelledError):
        return "error Cancelled"
    if isinstance(exc, leasehold.LeaseholdError):
        return f"error {exc.code}"
    raise ScenarioError(f"unexpected {type(exc).__name__}: {exc}")


@dataclass
class KeyHolder:
    """A hold of a key, run in its own task: ``async with lock.hold(key)``."""

    task: asyncio.Task[None] | None = None
    lease: leasehold.Lease | None = None
    granted: bool = False
    not_held: bool = False
    ended: bool = False
    told: bool = False
    cancelled_by_runner: bool = False
    ending: asyncio.Future[tuple[str, str]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def phase(self) -> str:
        if self.ended:
            return "ended"
        if self.granted:
            return "granted"
        assert self.task is not None
        if not self.task.done():
            return "waiting"
        if self.not_held:
            return "not_held"
        if self.task.cancelled():
            return "error Cancelled"
        exc = self.task.exception()
        return "ended" if exc is None else outcome_of(exc)

    async def until_ended(self) -> None:
        """Waits, inside the held block, for the runner's ``end``. A loss
        cancels the block here: it is told (LOCK-09), and goes on waiting."""
        assert self.lease is not None
        while True:
            try:
                by, message = await asyncio.shield(self.ending)
            except asyncio.CancelledError:
                if self.lease.lost and not self.cancelled_by_runner:
                    self.told = True
                    continue
                raise
            if by == "error":
                raise FunctionError(message)
            if by == "panic":
                raise Panic(message)
            return


@dataclass
class ManualHolder:
    """A manual lease, or the task that waits for one."""

    task: asyncio.Task[leasehold.ManualLease] | None = None
    lease: leasehold.ManualLease | None = None

    def phase(self) -> str:
        if self.lease is not None:
            return "granted"
        assert self.task is not None
        if not self.task.done():
            return "waiting"
        if self.task.cancelled():
            return "error Cancelled"
        exc = self.task.exception()
        if exc is not None:
            return outcome_of(exc)
        self.lease = self.task.result()
        return "granted"


def expected(step: dict[str, Any], default: str) -> str:
    if "expect_error" in step:
        return f"error {step['expect_error']}"
    return str(step.get("expect", default))


def compare(want: str, got: str, detail: str = "") -> None:
    if want != got:
        raise ScenarioError(f"expected {want}, got {got}{detail}")


class World:
    """One scenario's store, locks, holders and fences."""

    def __init__(self, spec: dict[str, bool], server_url: str | None) -> None:
        self.spec = spec
        self.server_url = server_url
        self.clock = testing.VirtualClock()
        self.store: leasehold.Store | None = None
        self.locks: dict[str, tuple[str, dict[str, str], leasehold.Lock]] = {}
        self.holders: dict[str, KeyHolder | ManualHolder] = {}
        self.fences: dict[str, int] = {}

    async def open(self) -> None:
        if self.server_url is not None:
            self.store = await leasehold.connect(self.server_url)
        else:
            self.store = self.memory()

    def memory(self) -> leasehold.Store:
        return testing.memory(self.clock, renewal=self.spec["renewal"], push=self.spec["push"])

    @property
    def s(self) -> leasehold.Store:
        assert self.store is not None
        return self.store

    async def settle(self) -> None:
        await asyncio.sleep(SETTLE_SERVER if self.server_url else SETTLE_MEMORY)

    async def until(self, done: Callable[[], bool]) -> None:
        """Polls ``done`` until it holds or the bound passes (then the step looks anyway)."""
        deadline = time.monotonic() + BOUND
        while not done() and time.monotonic() < deadline:
            await asyncio.sleep(0.001)

    def new_holder(self, name: str) -> None:
        if name in self.holders:
            raise ScenarioError(f"holder {name!r} exists already")

    def key_holder(self, name: str) -> KeyHolder:
        h = self.holders.get(name)
        if not isinstance(h, KeyHolder):
            raise ScenarioError(f"{name!r} is no holder of a key")
        return h

    def manual(self, name: str) -> leasehold.ManualLease:
        h = self.holders.get(name)
        if not isinstance(h, ManualHolder):
            raise ScenarioError(f"{name!r} is no holder of a manual lease")
        if h.phase() != "granted" or h.lease is None:
            raise ScenarioError(f"{name!r} has no lease: {h.phase()}")
        self.fences.setdefault(name, h.lease.fence)
        return h.lease

    def lease_of(self, name: str) -> leasehold.Lease:
        lease = self.key_holder(name).lease
        if lease is None:
            raise ScenarioError(f"{name!r} was never granted")
        return lease

    async def started(self, name: str, step: dict[str, Any]) -> None:
        """After a call that may wait started: it got its key, waits, or failed as expected."""
        h = self.holders[name]
        want = expected(step, "")
        if want == "waiting":
            await self.settle()
        else:
            await self.until(lambda: h.phase() != "waiting")
        got = h.phase()
        compare(want, got)
        if isinstance(h, ManualHolder) and h.lease is not None:
            self.fences[name] = h.lease.fence
        if got.startswith("error"):
            del self.holders[name]

    def start_hold(
        self, name: str, cm: leasehold.Hold[leasehold.Lease] | leasehold.TryHold
    ) -> KeyHolder:
        h = KeyHolder()

        async def run() -> None:
            async with cm as lease:
                if lease is None:
                    h.not_held = True
                    return
                h.lease = lease
                h.granted = True
                self.fences[name] = lease.fence
                await h.until_ended()

        h.task = asyncio.create_task(run())
        self.holders[name] = h
        return h

    async def step(self, step: dict[str, Any]) -> None:
        await getattr(self, "step_" + step["step"])(step)

    async def step_open_lock(self, step: dict[str, Any]) -> None:
        alias = step["lock"]
        if alias in self.locks:
            raise ScenarioError(f"lock {alias!r} is open already")
        name = step.get("name", alias)
        options: dict[str, str] = {
            k: step[k] for k in ("ttl", "max_hold", "wait", "margin") if k in step
        }
        try:
            lock = self.s.lock(name, **options)
        except leasehold.LeaseholdError as e:
            compare(expected(step, "ok"), f"error {e.code}", f" ({e})")
            return
        compare(expected(step, "ok"), "ok")
        self.locks[alias] = (name, options, lock)

    def lock(self, alias: str) -> leasehold.Lock:
        if alias not in self.locks:
            raise ScenarioError(f"no lock {alias!r} was opened")
        return self.locks[alias][2]

    async def step_hold(self, step: dict[str, Any]) -> None:
        self.new_holder(step["holder"])
        cm = self.lock(step["lock"]).hold(step["key"], wait=step.get("wait"))
        self.start_hold(step["holder"], cm)
        await self.started(step["holder"], step)

    async def step_try_hold(self, step: dict[str, Any]) -> None:
        name = step["holder"]
        self.new_holder(name)
        h = self.start_hold(name, self.lock(step["lock"]).try_hold(step["key"]))
        await self.until(lambda: h.phase() != "waiting")
        got = h.phase()
        compare(expected(step, ""), got)
        if got != "granted":
            del self.holders[name]

    async def step_acquire(self, step: dict[str, Any]) -> None:
        name = step["holder"]
        self.new_holder(name)
        h = ManualHolder()
        h.task = asyncio.create_task(
            self.s.acquire(step["name"], step["ttl"], wait=step.get("wait"))
        )
        self.holders[name] = h
        await self.started(name, step)

    async def step_try_acquire(self, step: dict[str, Any]) -> None:
        name = step["holder"]
        self.new_holder(name)
        want = expected(step, "")
        try:
            lease = await self.s.try_acquire(step["name"], step["ttl"])
        except leasehold.LeaseholdError as e:
            compare(want, f"error {e.code}", f" ({e})")
            return
        if lease is None:
            compare(want, "not_held")
            return
        compare(want, "granted")
        self.fences[name] = lease.fence
        self.holders[name] = ManualHolder(lease=lease)

    async def step_end(self, step: dict[str, Any]) -> None:
        name = step["holder"]
        h = self.key_holder(name)
        if h.phase() != "granted":
            raise ScenarioError(f"{name!r} holds nothing to end: {h.phase()}")
        by = step.get("by", "return")
        assert h.task is not None
        if by == "cancel":
            h.cancelled_by_runner = True
            h.task.cancel()
        else:
            h.ending.set_result((by, step.get("message", "the held function failed")))
        await self.until(h.task.done)
        if not h.task.done():
            raise ScenarioError(f"{name!r}'s hold did not end")
        h.ended = True
        await self.settle()
        want = expected(step, "ok")
        if h.task.cancelled():
            compare(want, "cancelled")
            return
        exc = h.task.exception()
        if exc is None:
            compare(want, "ok")
        elif isinstance(exc, FunctionError):
            compare(want, "function_error", f" ({exc})")
        elif isinstance(exc, Panic):
            compare(want, "panic")
        else:
            compare(want, outcome_of(exc), f" ({exc})")
            if "expect_cause" in step:
                cause = exc.__cause__
                if not isinstance(cause, FunctionError) or str(cause) != step["expect_cause"]:
                    raise ScenarioError(
                        f"expected the function's error {step['expect_cause']!r} "
                        f"as the cause, got {cause!r}"
                    )

    async def step_cancel(self, step: dict[str, Any]) -> None:
        name = step["holder"]
        h = self.holders.get(name)
        if h is None or h.phase() != "waiting" or h.task is None:
            raise ScenarioError(f"{name!r} is not waiting")
        if isinstance(h, KeyHolder):
            h.cancelled_by_runner = True
        h.task.cancel()
        await self.settle()

    async def expect_phase(self, name: str, want: str) -> None:
        h = self.holders.get(name)
        if h is None:
            raise ScenarioError(f"no holder {name!r}")
        if want == "waiting":
            await self.settle()
        else:
            await self.until(lambda: h.phase() != "waiting")
        got = h.phase()
        if isinstance(h, ManualHolder) and h.lease is not None:
            self.fences.setdefault(name, h.lease.fence)
        compare(want, got)

    async def step_expect_granted(self, step: dict[str, Any]) -> None:
        await self.expect_phase(step["holder"], "granted")

    async def step_expect_waiting(self, step: dict[str, Any]) -> None:
        await self.expect_phase(step["holder"], "waiting")

    async def step_expect_failed(self, step: dict[str, Any]) -> None:
        await self.expect_phase(step["holder"], f"error {step['error']}")

    async def step_expect_lost(self, step: dict[str, Any]) -> None:
        h = self.key_holder(step["holder"])
        lease = self.lease_of(step["holder"])
        await self.until(lambda: lease.lost and h.told)
        if lease.loss_reason != step["reason"]:
            raise ScenarioError(
                f"expected the lease lost {step['reason']}, got {lease.loss_reason!r}"
            )
        if not (lease.lost and h.told):
            raise ScenarioError(
                f"the loss did not reach the block: lost {lease.lost}, cancelled {h.told}"
            )
        if lease.remaining != 0.0:
            raise ScenarioError(f"a lost lease has {lease.remaining} s left, not zero")

    async def step_expect_not_lost(self, step: dict[str, Any]) -> None:
        h = self.key_holder(step["holder"])
        lease = self.lease_of(step["holder"])
        await self.settle()
        if lease.lost or h.told:
            raise ScenarioError(
                f"the lease was lost ({lease.loss_reason}; block cancelled {h.told})"
            )

    async def step_expect_remaining(self, step: dict[str, Any]) -> None:
        lease = self.lease_of(step["holder"])
        await self.settle()
        text = step["remaining"]
        want = None if text == "none" else testing.parse_duration(text)
        if lease.remaining != want:
            raise ScenarioError(f"expected {want} s left, got {lease.remaining}")

    async def step_expect_fence_greater(self, step: dict[str, Any]) -> None:
        for name in (step["holder"], step["than"]):
            if name not in self.fences:
                raise ScenarioError(f"holder {name!r} was never granted")
        later, earlier = self.fences[step["holder"]], self.fences[step["than"]]
        if later <= earlier:
            raise ScenarioError(f"fence {later} is not larger than {earlier}")

    async def step_advance(self, step: dict[str, Any]) -> None:
        await asyncio.to_thread(self.clock.advance, step["by"])

    async def calls(self, step: dict[str, Any], call: Callable[[], Any]) -> None:
        want = expected(step, "ok")

        async def one() -> str:
            try:
                await call()
            except leasehold.LeaseholdError as e:
                return f"error {e.code}"
            return "ok"

        got = await asyncio.gather(*(one() for _ in range(step.get("tasks", 1))))
        for i, outcome in enumerate(got):
            compare(want, outcome, f" (task {i})")
        await self.settle()

    async def step_extend(self, step: dict[str, Any]) -> None:
        lease = self.manual(step["holder"])
        await self.calls(step, lambda: lease.extend(step["by"]))

    async def step_release(self, step: dict[str, Any]) -> None:
        lease = self.manual(step["holder"])
        await self.calls(step, lease.release)

    async def step_close(self, step: dict[str, Any]) -> None:
        await self.s.close()
        await self.settle()

    async def step_reopen(self, step: dict[str, Any]) -> None:
        await self.s.close()
        await self.settle()
        self.store = self.memory()
        for alias, (name, options, _) in list(self.locks.items()):
            self.locks[alias] = (name, options, self.s.lock(name, **options))

    async def finish(self) -> None:
        """Ends what is still running and closes the store."""
        tasks = []
        for h in self.holders.values():
            if h.task is not None and not h.task.done():
                if isinstance(h, KeyHolder):
                    h.cancelled_by_runner = True
                h.task.cancel()
                tasks.append(h.task)
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.s.close()


async def run(scenario: dict[str, Any], server_url: str | None = None) -> None:
    """Runs one scenario; raises ScenarioError naming the step that failed."""
    world = World(scenario["store"], server_url)
    await world.open()
    try:
        for i, step in enumerate(scenario["steps"]):
            try:
                await asyncio.wait_for(world.step(step), BOUND * 2)
            except (ScenarioError, TimeoutError) as e:
                why = str(e) or "hung"
                raise ScenarioError(
                    f"scenario {scenario['id']}: step {i} {json.dumps(step)}: {why}"
                ) from e
    finally:
        await world.finish()
