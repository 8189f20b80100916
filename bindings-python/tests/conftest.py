"""Fixtures: a real server store process (``leasehold serve``) for the tests,
and ``store``, each test on the embedded store and on the server store."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest

import leasehold

ROOT = pathlib.Path(__file__).resolve().parents[2]


def server_binary() -> pathlib.Path:
    """The debug build of ``leasehold serve`` (``cargo build -p leasehold-server``)."""
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = pathlib.Path(os.environ.get("LEASEHOLD_SERVER", target / "debug" / "leasehold"))
    if not binary.exists():
        raise RuntimeError(f"no server binary at {binary}: run `cargo build -p leasehold-server`")
    return binary


@dataclass
class Server:
    """A running server store: its URL and process."""

    url: str
    process: subprocess.Popen[str]
    data_dir: str

    def freeze(self) -> None:
        """Stops the process (SIGSTOP) and waits until it is stopped: the
        signal takes effect a little after kill returns, and a request sent
        meanwhile would still be answered."""
        os.kill(self.process.pid, signal.SIGSTOP)
        stat = pathlib.Path(f"/proc/{self.process.pid}/stat")
        deadline = time.monotonic() + 5
        while stat.read_text().rpartition(")")[2].split()[0] != "T":
            assert time.monotonic() < deadline, f"the server {self.process.pid} did not stop"
            time.sleep(0.001)

    def thaw(self) -> None:
        """Resumes a frozen process (SIGCONT)."""
        os.kill(self.process.pid, signal.SIGCONT)


def start_server(*extra: str) -> Server:
    """Starts ``leasehold serve`` on a free loopback port; waits for its line."""
    data_dir = tempfile.mkdtemp(prefix="leasehold-py-")
    process = subprocess.Popen(
        [str(server_binary()), "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("listening on "):
        process.kill()
        raise RuntimeError(f"the server store did not start: {line!r}")
    return Server("leasehold://" + line.removeprefix("listening on "), process, data_dir)


def stop_server(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
    if server.process.stdout is not None:
        server.process.stdout.close()
    shutil.rmtree(server.data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """One server store for the session, open to every connection."""
    running = start_server()
    yield running
    stop_server(running)


@pytest.fixture(scope="session")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server store with a tokens file: ``writer-token`` may hold,
    ``reader-token`` may only read."""
    tokens = tmp_path_factory.mktemp("tokens") / "tokens"
    tokens.write_text("writer-token write\nreader-token read\n")
    running = start_server("--tokens", str(tokens))
    yield running
    stop_server(running)


@pytest.fixture
def frozen_server() -> Iterator[Server]:
    """A server store of this test's own, to freeze with SIGSTOP; it is
    always let go on (SIGCONT) and stopped."""
    running = start_server()
    try:
        yield running
    finally:
        running.thaw()
        stop_server(running)


@pytest.fixture(params=["memory", "server"])
async def store(request: pytest.FixtureRequest, server: Server) -> AsyncIterator[leasehold.Store]:
    """The embedded store, then a connection to the server store."""
    if request.param == "memory":
        opened = leasehold.memory()
    else:
        opened = await leasehold.connect(server.url)
    yield opened
    await opened.close()
