#!/usr/bin/env bash
# The sdist part of `make dist-test`: a fresh virtual environment builds
# `leasehold` $VERSION from $DIST/python's sdist, as pip does where no
# wheel fits (`--no-binary leasehold`), with the Rust toolchain on PATH and
# `protoc` a shim that records any call and fails (PROTOC points at it too):
# the sdist must carry everything its build needs, and that must be Rust
# alone. Then the installed package holds a key on the embedded store.
# pip builds it in an isolated environment whose maturin comes from the
# wheelhouse `make setup` filled (no index is asked); the build shares
# $CARGO_TARGET_DIR, so the dependencies `make dist` compiled are reused,
# while the sdist's own crates (at their own paths) are built afresh.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${CARGO_TARGET_DIR:?}"
wheelhouse="${PACKAGING_TOOLS:?}/wheelhouse"
[ -d "$wheelhouse" ] || { echo "sdist.sh: no $wheelhouse: run make setup" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/leasehold-sdist.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

reached="$WORK/reached-for-protoc"
mkdir -p "$WORK/no-protoc"
cat >"$WORK/no-protoc/protoc" <<SHIM
#!/bin/sh
echo "sdist.sh: protoc \$* was run" >&2
echo "protoc \$*" >>"$reached"
exit 127
SHIM
chmod +x "$WORK/no-protoc/protoc"
export PATH="$WORK/no-protoc:$PATH" PROTOC="$WORK/no-protoc/protoc"

python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --isolated --disable-pip-version-check --no-index \
  --find-links "$DIST/python" --find-links "$wheelhouse" \
  --no-binary leasehold "leasehold==$VERSION"
[ ! -e "$reached" ] || { echo "sdist.sh: the build ran protoc:" >&2; cat "$reached" >&2; exit 1; }

"$WORK/venv/bin/python" - <<'PY'
import leasehold

store = leasehold.memory()
lock = store.lock("sdist")
with lock.hold("k") as lease:
    print(f"sdist.sh: built from the sdist without protoc; fence {lease.fence}")
store.close_blocking()
PY
