"""Fixtures: a real server store process (``leasehold serve``) for the tests,
``store``, each test on the embedded store and on the server store, a
real etcd member (``etcd``, from ``$LEASEHOLD_ETCD``), a 3-member etcd
cluster driven by commands (``etcd_cluster``, from ``$LEASEHOLD_ETCD_CLUSTER``),
and the URL of the PostgreSQL ``make postgres`` runs (``postgres_url``)."""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest

import leasehold

ROOT = pathlib.Path(__file__).resolve().parents[2]


def postgres_url() -> str:
    """The URL of ``make postgres``'s cluster (``$LEASEHOLD_POSTGRES_URL``, or
    the file it writes under the cargo target dir); fails the test when there is none."""
    url = os.environ.get("LEASEHOLD_POSTGRES_URL")
    if url:
        return url
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    file = target / "postgres" / "url"
    if not file.exists():
        raise RuntimeError(f"no PostgreSQL URL in LEASEHOLD_POSTGRES_URL or {file}: make postgres")
    return file.read_text().strip()


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


def free_port() -> int:
    """A loopback TCP port that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Etcd:
    """A running etcd member: its client endpoint ``127.0.0.1:PORT`` and process."""

    endpoint: str
    process: subprocess.Popen[bytes]
    data_dir: str

    def url(self, prefix: str) -> str:
        """The store URL of this member under ``prefix``."""
        return f"etcd://{self.endpoint}/{prefix}"


def start_etcd(env: str = "LEASEHOLD_ETCD") -> Etcd:
    """Starts one etcd member of the binary the variable ``env`` names
    (``LEASEHOLD_ETCD``: 3.6, which ``make etcd`` builds;
    ``LEASEHOLD_ETCD_34``: Debian's 3.4) on free loopback ports with a fresh
    data dir; waits until its client port accepts connections."""
    binary = os.environ.get(env)
    if not binary:
        raise RuntimeError(
            f"{env} is not set: it names an etcd binary the etcd tests start"
            " (`make etcd` provides it; `make python-test` sets it)"
        )
    if not pathlib.Path(binary).is_file():
        raise RuntimeError(f"no etcd binary at {env}={binary} (`make etcd` provides it)")
    client, peer = free_port(), free_port()
    client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    data_dir = tempfile.mkdtemp(prefix="leasehold-py-etcd-")
    process = subprocess.Popen(
        [
            binary,
            *("--name", "m0", "--data-dir", data_dir),
            *("--listen-client-urls", client_url, "--advertise-client-urls", client_url),
            *("--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url),
            *("--initial-cluster", f"m0={peer_url}", "--initial-cluster-state", "new"),
            *("--heartbeat-interval", "50", "--election-timeout", "500"),
            *("--logger", "zap", "--log-level", "error"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", client), timeout=0.1).close()
            return Etcd(f"127.0.0.1:{client}", process, data_dir)
        except OSError as e:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait()
                shutil.rmtree(data_dir, ignore_errors=True)
                raise RuntimeError(f"etcd did not accept connections on port {client}: {e}") from e
            time.sleep(0.02)


def stop_etcd(etcd: Etcd) -> None:
    etcd.process.kill()
    etcd.process.wait()
    shutil.rmtree(etcd.data_dir, ignore_errors=True)


@pytest.fixture
def etcd() -> Iterator[Etcd]:
    """An etcd member of this test's own, stopped at its end."""
    running = start_etcd()
    try:
        yield running
    finally:
        stop_etcd(running)


@pytest.fixture
def etcd_34() -> Iterator[Etcd]:
    """A member of Debian's etcd 3.4 (``$LEASEHOLD_ETCD_34``), older than
    DIST-08's minimum, of this test's own."""
    running = start_etcd("LEASEHOLD_ETCD_34")
    try:
        yield running
    finally:
        stop_etcd(running)


@dataclass
class EtcdCluster:
    """A running ``etcd-cluster`` (etcd-tests/src/bin/etcd-cluster.rs): three
    etcd members on loopback, told what to do by one command a line on its
    stdin, each answered by one line."""

    endpoints: str
    """``127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2``, member 0 first."""
    election_timeout: float
    """The members' ``--election-timeout``, in seconds."""
    process: subprocess.Popen[str]

    def url(self, prefix: str) -> str:
        """The store URL of the cluster under ``prefix``."""
        return f"etcd://{self.endpoints}/{prefix}"

    def command(self, line: str) -> str:
        """Sends one command (``leader``, ``lead N``, ``kill N``, ``restart N``,
        ``freeze N``, ``thaw N``) and answers its answer (``leader N``, ``ok``);
        an ``error: ...`` answer or the tool's exit raises."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if not answer or answer.startswith("error"):
            raise RuntimeError(
                f"etcd-cluster answered {answer or 'nothing (it exited)'!r} to {line!r}"
            )
        return answer


def start_etcd_cluster() -> EtcdCluster:
    """Starts ``$LEASEHOLD_ETCD_CLUSTER`` (``make etcd-cluster`` builds it; it
    starts ``$LEASEHOLD_ETCD``) and reads its ready line."""
    binary = os.environ.get("LEASEHOLD_ETCD_CLUSTER")
    if not binary:
        raise RuntimeError(
            "LEASEHOLD_ETCD_CLUSTER is not set: it names the etcd-cluster tool the etcd fault"
            " tests start (`make etcd-cluster` builds it; `make python-test` sets it)"
        )
    if not pathlib.Path(binary).is_file():
        raise RuntimeError(
            f"no etcd-cluster at LEASEHOLD_ETCD_CLUSTER={binary} (`make etcd-cluster` builds it)"
        )
    process = subprocess.Popen(
        [binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    ready = re.fullmatch(r"ready etcd://(\S+) election-timeout=(\d+)ms", line)
    if ready is None:
        stop_etcd_cluster(process)
        raise RuntimeError(f"etcd-cluster did not start: {line!r}")
    return EtcdCluster(ready[1], int(ready[2]) / 1000, process)


def stop_etcd_cluster(process: subprocess.Popen[str]) -> None:
    """Closes the tool's stdin, on which it stops its members (thawing a
    frozen one) and removes their data; kills it if it has not exited in
    10 s (its members would then be left running)."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(BrokenPipeError):
        process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    process.stdout.close()


@pytest.fixture
def etcd_cluster() -> Iterator[EtcdCluster]:
    """A 3-member etcd cluster of this test's own, stopped at its end."""
    running = start_etcd_cluster()
    try:
        yield running
    finally:
        stop_etcd_cluster(running.process)


async def check_remote_store(store: leasehold.Store, other: leasehold.Store) -> None:
    """Runs, on two stores of one remote store (etcd, PostgreSQL), what every
    store does: a held key that the other store's try_hold finds held, a
    manual lease, a slot and 100 IDs, with fences growing throughout
    (DIST-01, PG-01)."""
    fences: list[int] = []

    def grew(fence: int) -> None:
        assert fence > 0 and (not fences or fence > fences[-1]), (fence, fences)
        fences.append(fence)

    lock = store.lock("summaries", ttl="2s")
    rival = other.lock("summaries", ttl="2s")
    ran = False
    async with lock.hold("chat-1") as lease:
        ran = True
        grew(lease.fence)
        async with rival.try_hold("chat-1") as none:
            assert none is None
    assert ran
    async with rival.try_hold("chat-1") as mine:
        assert mine is not None
        grew(mine.fence)

    manual = await store.try_acquire("batch", ttl="2s")
    assert manual is not None and manual.name == "batch"
    grew(manual.fence)
    assert await other.try_acquire("batch", ttl="2s") is None
    await manual.extend("3s")
    await manual.release()
    nxt = await other.acquire("batch", ttl="2s", wait="10s")
    grew(nxt.fence)
    await nxt.release()

    slots = store.slots("nodes", limit=4)
    slot = await slots.acquire(leasehold.Owner("worker-a"))
    assert slot is not None and 0 <= slot.slot < 4
    grew(slot.fence)
    assert await slots.release(slot, 0)

    ids = await store.ids("orders", limit=4)
    taken = [await ids.next() for _ in range(100)]
    assert taken == sorted(set(taken))
    await ids.close()
