"""``leaseholds://``: the server store over TLS, trusting the CA given as ``tls``."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import uuid
from collections.abc import Iterator

import pytest

import leasehold

from conftest import Server, start_server, stop_server


def make_certificates(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    """A CA and a certificate it signs for 127.0.0.1 and localhost (openssl)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the TLS test needs the openssl command")
    ca_key, ca = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "server.key", directory / "server.csr", directory / "server.pem"
    ext = directory / "server.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n")
    steps = [
        ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=leasehold test CA"],
        ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", key, "-out", csr, "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
         "-out", cert, "-days", "2", "-extfile", ext],
        ["pkcs8", "-topk8", "-nocrypt", "-in", key, "-out", directory / "server.pk8"],
    ]  # fmt: skip
    for step in steps:
        subprocess.run([openssl, *map(str, step)], check=True, capture_output=True)
    return ca, cert, directory / "server.pk8"


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, pathlib.Path]]:
    ca, cert, key = make_certificates(tmp_path_factory.mktemp("tls"))
    running = start_server("--tls-cert", str(cert), "--tls-key", str(key))
    yield running, ca
    stop_server(running)


async def test_a_hold_over_tls(tls_server: tuple[Server, pathlib.Path]) -> None:
    server, ca = tls_server
    url = server.url.replace("leasehold://", "leaseholds://")
    for trusted in (ca, str(ca), ca.read_bytes()):
        store = await leasehold.connect(url, tls=trusted)
        async with store, store.lock("py-tls").hold(f"key-{uuid.uuid4()}") as lease:
            assert lease.fence > 0
    with pytest.raises(leasehold.InvalidArgument):
        await leasehold.connect(url)  # no certificates to trust
    other = ca.parent / "other"
    other.mkdir(exist_ok=True)
    other_ca, _, _ = make_certificates(other)
    with pytest.raises(leasehold.Unavailable, match="TLS"):
        await leasehold.connect(url, tls=other_ca)  # a CA that did not sign it
