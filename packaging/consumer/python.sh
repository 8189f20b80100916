#!/usr/bin/env bash
# The Python part of `make dist-test` (packaging/consumer/run.sh): in
# $WORK_DIR, a fresh virtual environment installs `leasehold` $VERSION from
# $DIST/python alone, as the wheel (never building the sdist), and runs the
# README's Python example against the server store at $LEASEHOLD_URL: two
# holds of "chat-1", each printing `fence N`, then a try_hold of "chat-2".
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${WORK_DIR:?}" "${LEASEHOLD_URL:?}"
cd "$WORK_DIR"
python3 -m venv venv
# --isolated: no pip configuration or PIP_* variable adds another place to look.
venv/bin/pip install -q --isolated --disable-pip-version-check --no-index \
  --find-links "$DIST/python" --only-binary leasehold "leasehold==$VERSION"

cat >example.py <<'PY'
import asyncio
import importlib.metadata
import os
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
asyncio.run(main())
PY
VERSION="$VERSION" venv/bin/python example.py
