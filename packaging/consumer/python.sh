#!/usr/bin/env bash
# The Python part of `make dist-test` (packaging/consumer/run.sh): in
# $WORK_DIR, pip installs `leasehold` $VERSION from $DIST/python alone, as
# the wheel of the platform ARCH (never building the sdist), and the
# README's Python example runs against the server store at $LEASEHOLD_URL:
# two holds of "chat-1", each printing `fence N`, then a try_hold of
# "chat-2". On x86_64 into a fresh virtual environment; on aarch64, where
# the Python is the arm64 root folder's (under qemu), pip picks the wheel
# for that platform into a folder the example's PYTHONPATH names.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${WORK_DIR:?}" "${LEASEHOLD_URL:?}"
ARCH=${ARCH:-x86_64}
. "$(dirname "$0")/../platforms.sh"
cd "$WORK_DIR"
python3 -m venv venv
# --isolated: no pip configuration or PIP_* variable adds another place to look.
pip=(venv/bin/pip install -q --isolated --disable-pip-version-check --no-index
  --find-links "$DIST/python")
case $ARCH in
  x86_64)
    "${pip[@]}" --only-binary leasehold "leasehold==$VERSION"
    python=venv/bin/python
    ;;
  aarch64)
    "${pip[@]}" --only-binary :all: --target site --platform manylinux2014_aarch64 --implementation cp \
      --python-version 3.11 --abi abi3 "leasehold==$VERSION"
    ls site | grep -q '^leasehold-.*\.dist-info$'
    export PYTHONPATH=$WORK_DIR/site
    python=$ARM64_ROOT/usr/bin/python3.11
    ;;
esac

cat >example.py <<'PY'
import asyncio
import importlib.metadata
import os
import platform
import sys

import leasehold


async def main() -> None:
    store = await leasehold.connect(os.environ["LEASEHOLD_URL"])
    summaries = store.lock("summaries", ttl="30s")
    for _ in range(2):
        async with summaries.hold("chat-1") as lease:
            print(f"fence {lease.fence}")
    async with summaries.try_hold("chat-2") as lease:
        if lease is None:
            sys.exit("chat-2 is held by someone else")
    await store.close()


installed = importlib.metadata.version("leasehold")
if installed != os.environ["VERSION"]:
    sys.exit(f"installed leasehold {installed}, not {os.environ['VERSION']}")
print(f"platform {platform.machine()}")
asyncio.run(main())
PY
VERSION="$VERSION" run_on "$ARCH" "$python" example.py
