#!/usr/bin/env bash
# `make dist-python`: builds into $DIST/python/ what would be published to
# PyPI for the package `leasehold` (bindings-python/):
#   - one abi3 wheel (CPython 3.11 and later) for this platform, its native
#     module built with the cargo profile `dist`, tagged with the lowest
#     manylinux tag the glibc symbols it uses allow;
#   - the sdist, which builds from source (with Rust alone) where no
#     wheel fits: the binding, the core crate it depends on by path, and the
#     workspace's Cargo.lock.
# Checks both (names, version $VERSION, tags with `auditwheel show`, the
# sdist's contents) and fails if either is not what it should be. maturin
# and auditwheel are those `make setup` installed from PyPI into a virtual
# environment under $CARGO_TARGET_DIR (bindings-python/requirements-packaging.txt).
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${CARGO_TARGET_DIR:?}"
root=$(cd "$(dirname "$0")/.." && pwd)
manifest="$root/bindings-python/Cargo.toml"
out="$DIST/python"
fail() { echo "python.sh: $*" >&2; exit 1; }

# A cargo named by $CARGO (the Makefile's) is the one maturin runs.
if [ -n "${CARGO:-}" ] && [ "${CARGO#*/}" != "$CARGO" ]; then
  PATH="$(cd "$(dirname "$CARGO")" && pwd):$PATH"
fi

tools="$CARGO_TARGET_DIR/packaging/python-tools"
requirements="$root/bindings-python/requirements-packaging.txt"
cmp -s "$requirements" "$tools/requirements.txt" ||
  fail "the packaging tools in $tools are missing or not those of $requirements: run make setup"

rm -rf "$out"
mkdir -p "$out"

# The wheel. `--auditwheel check` fails the build if the module needs a
# shared library beyond what the manylinux policy allows.
"$tools/bin/maturin" build --manifest-path "$manifest" --profile dist \
  --auditwheel check --interpreter python3 --out "$out"
arch=$(uname -m)
shopt -s nullglob
wheels=("$out"/*.whl)
[ "${#wheels[@]}" = 1 ] || fail "expected one wheel in $out, found ${#wheels[@]}"
wheel=${wheels[0]}
name=$(basename "$wheel")
case "$name" in
  "leasehold-$VERSION-cp311-abi3-manylinux"*"_$arch.whl") ;;
  *) fail "$name is not leasehold-$VERSION-cp311-abi3-manylinux…_$arch.whl" ;;
esac
show=$("$tools/bin/auditwheel" show "$wheel")
tag=$(printf '%s' "$show" | tr -s '\n ' '  ' |
  sed -n 's/.*consistent with the following platform tag: "\([^"]*\)".*/\1/p')
[ -n "$tag" ] || fail "auditwheel show found no platform tag for $name: $show"
case "$tag" in
  manylinux*) ;;
  *) fail "auditwheel show says $name is only $tag, not manylinux" ;;
esac
case "$name" in
  *"-$tag.whl" | *"-$tag."* | *".$tag.whl" | *".$tag."*) ;;
  *) fail "$name is not tagged $tag, the tag auditwheel show gives it" ;;
esac
"$tools/bin/python" - "$wheel" "$VERSION" <<'PY'
import sys, zipfile

wheel, version = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    info = f"leasehold-{version}.dist-info"
    metadata = z.read(f"{info}/METADATA").decode()
    tags = [line.split(": ", 1)[1] for line in z.read(f"{info}/WHEEL").decode().splitlines()
            if line.startswith("Tag: ")]
problems = []
if f"Version: {version}" not in metadata.splitlines():
    problems.append(f"METADATA does not say Version: {version}")
if not tags or any(not t.startswith("cp311-abi3-manylinux") for t in tags):
    problems.append(f"WHEEL tags {tags} are not all cp311-abi3-manylinux…")
for needed in ("leasehold/__init__.py", "leasehold/py.typed", "leasehold/_native.abi3.so"):
    if needed not in names:
        problems.append(f"no {needed}")
if problems:
    sys.exit("python.sh: " + wheel + ": " + "; ".join(problems))
PY

# The sdist, and what it must hold to build without this repository.
"$tools/bin/maturin" sdist --manifest-path "$manifest" --out "$out"
sdist="$out/leasehold-$VERSION.tar.gz"
[ -f "$sdist" ] || fail "no $sdist: $(ls "$out")"
contents=$(tar -tzf "$sdist")
for needed in Cargo.toml Cargo.lock pyproject.toml PKG-INFO \
  bindings-python/Cargo.toml bindings-python/src/lib.rs \
  python/leasehold/__init__.py python/leasehold/py.typed \
  core/Cargo.toml core/src/lib.rs; do
  grep -qx "leasehold-$VERSION/$needed" <<<"$contents" ||
    fail "$sdist has no leasehold-$VERSION/$needed"
done

echo "python.sh: $name (abi3, $tag), $(basename "$sdist"), in $out"
