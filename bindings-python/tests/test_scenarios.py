"""The shared scenarios of spec-tests/ (the same JSON files the Rust runner
loads), run through the Python API on the embedded store on a virtual clock,
and those that move no clock again on a real server store process.

The scenario files name the contracts they show: LOCK-01, LOCK-02, LOCK-04,
LOCK-05, LOCK-06, LOCK-08, LOCK-09, LOCK-10, LOCK-11, LOCK-12, LOCK-13,
LOCK-17, LOCK-18, LOCK-19, LOCK-20, MANUAL-01 to MANUAL-07, ERR-01.
"""

from __future__ import annotations

import json
import pathlib

import pytest

import scenario_runner
from conftest import start_server, stop_server

FILES = scenario_runner.scenario_files()
SERVER_FILES = [f for f in FILES if scenario_runner.applies_to_server(scenario_runner.load(f))]


def test_the_scenarios_are_there() -> None:
    assert len(FILES) >= 20, f"no scenarios found in {scenario_runner.SCENARIOS}"
    assert SERVER_FILES, "no scenario runs on the server store"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
async def test_scenario_on_the_embedded_store(path: pathlib.Path) -> None:
    await scenario_runner.run(scenario_runner.load(path))


@pytest.mark.parametrize("path", SERVER_FILES, ids=[f.stem for f in SERVER_FILES])
async def test_scenario_on_the_server_store(path: pathlib.Path) -> None:
    server = start_server()
    try:
        await scenario_runner.run(scenario_runner.load(path), server.url)
    finally:
        stop_server(server)


@pytest.mark.parametrize(
    "bad",
    [
        {"step": "frobnicate"},
        {"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect": "granted", "extra": "x"},
        {"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect": "soon"},
        {"step": "hold", "holder": "a", "lock": "l", "key": "k"},
        {"step": "expect_failed", "holder": "a", "error": "NoSuchCode"},
        {"step": "expect_lost", "holder": "a", "reason": "bored"},
        {"step": "end", "holder": "a", "by": "vanish"},
        {"step": "release", "holder": "a", "tasks": 0},
    ],
)
def test_an_unknown_step_field_or_value_fails_the_load(
    bad: dict[str, object], tmp_path: pathlib.Path
) -> None:
    path = tmp_path / "bad.json"
    scenario = {
        "id": "bad",
        "contracts": ["LOCK-01"],
        "title": "t",
        "store": {"renewal": False, "push": True},
        "steps": [{"step": "open_lock", "lock": "l"}, bad],
    }
    path.write_text(json.dumps(scenario))
    with pytest.raises(scenario_runner.ScenarioError):
        scenario_runner.load(path)


async def test_a_wrong_expectation_fails_the_run() -> None:
    scenario = {
        "id": "wrong",
        "contracts": ["LOCK-01"],
        "title": "a second holder does not get a held key",
        "store": {"renewal": False, "push": True},
        "steps": [
            {"step": "open_lock", "lock": "l"},
            {"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect": "granted"},
            {"step": "hold", "holder": "b", "lock": "l", "key": "k", "expect": "granted"},
        ],
    }
    with pytest.raises(scenario_runner.ScenarioError, match="step 2"):
        await scenario_runner.run(scenario)
