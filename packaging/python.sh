#!/usr/bin/env bash
# `make dist-python`: builds into $DIST/python/ what would be published to
# PyPI for the package `leasehold` (bindings-python/):
#   - the sdist, by maturin, which builds from source (with Rust alone)
#     where no wheel fits: the binding, the core crate it depends on by
#     path, and the workspace's Cargo.lock;
#   - one abi3 wheel (CPython 3.11 and later) for each platform
#     (packaging/platforms.sh), tagged manylinux2014 (= manylinux_2_17):
#     the sdist's Python package and metadata (maturin's PKG-INFO is the
#     wheel's METADATA, the same text), with the native module `make
#     dist-native` built for the platform beside every other native part
#     (one build of their dependencies; built by maturin instead, each
#     wheel rebuilt them all with its own features, about 3 minutes a
#     platform), packed by pypa's `wheel pack`, which writes the RECORD.
# Checks each (names, version $VERSION, tags with `auditwheel show`, glibc
# symbols, the sdist's contents) and fails if one is not what it should
# be. maturin, wheel and auditwheel are those `make setup` installed from
# PyPI into a virtual environment of their own ($PACKAGING_TOOLS, mk/dist.mk)
# (bindings-python/requirements-packaging.txt).
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${CARGO_TARGET_DIR:?}"
root=$(cd "$(dirname "$0")/.." && pwd)
manifest="$root/bindings-python/Cargo.toml"
. "$root/packaging/platforms.sh"
out="$DIST/python"
fail() { echo "python.sh: $*" >&2; exit 1; }

# A cargo named by $CARGO (the Makefile's) is the one maturin runs.
if [ -n "${CARGO:-}" ] && [ "${CARGO#*/}" != "$CARGO" ]; then
  PATH="$(cd "$(dirname "$CARGO")" && pwd):$PATH"
fi

tools="${PACKAGING_TOOLS:?}"
requirements="$root/bindings-python/requirements-packaging.txt"
cmp -s "$requirements" "$tools/requirements.txt" ||
  fail "the packaging tools in $tools are missing or not those of $requirements: run make setup"

rm -rf "$out"
mkdir -p "$out"

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
sdist_dir="$CARGO_TARGET_DIR/wheels/sdist"
rm -rf "$sdist_dir"
mkdir -p "$sdist_dir"
tar -xzf "$sdist" -C "$sdist_dir"
sdist_dir="$sdist_dir/leasehold-$VERSION"

# wheel ARCH: the platform's wheel, checked.
wheel() {
  local arch=$1
  local built="$CARGO_TARGET_DIR/wheels/$arch"
  local tree="$built/leasehold-$VERSION"
  local info="$tree/leasehold-$VERSION.dist-info"
  rm -rf "$built"
  mkdir -p "$info"
  cp -r "$sdist_dir/python/leasehold" "$tree/"
  cp "$(native_dir "$arch")/lib_native.so" "$tree/leasehold/_native.abi3.so"
  cp "$sdist_dir/PKG-INFO" "$info/METADATA"
  printf '%s\n' "Wheel-Version: 1.0" "Generator: leasehold packaging/python.sh" "Root-Is-Purelib: false" \
    "Tag: cp311-abi3-manylinux2014_$arch" "Tag: cp311-abi3-manylinux_2_17_$arch" >"$info/WHEEL"
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) "$tools/bin/python" -m wheel pack "$tree" --dest-dir "$built" >/dev/null
  shopt -s nullglob
  local wheels=("$built"/*.whl)
  shopt -u nullglob
  [ "${#wheels[@]}" = 1 ] || fail "expected one $arch wheel, found ${#wheels[@]}"
  local wheel=${wheels[0]} name
  name=$(basename "$wheel")
  case "$name" in
    "leasehold-$VERSION-cp311-abi3-manylinux2014_$arch.manylinux_2_17_$arch.whl") ;;
    *) fail "$name is not leasehold-$VERSION-cp311-abi3-manylinux2014_$arch.manylinux_2_17_$arch.whl" ;;
  esac
  local show tag
  show=$("$tools/bin/auditwheel" show "$wheel")
  tag=$(printf '%s' "$show" | tr -s '\n ' '  ' |
    sed -n 's/.*consistent with the following platform tag: "\([^"]*\)".*/\1/p')
  [ "$tag" = "manylinux_2_17_$arch" ] ||
    fail "auditwheel show says $name is $tag, not manylinux_2_17_$arch: $show"
  "$tools/bin/python" - "$wheel" "$VERSION" "$arch" <<'PY'
import sys, zipfile

wheel, version, arch = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    info = f"leasehold-{version}.dist-info"
    metadata = z.read(f"{info}/METADATA").decode()
    tags = [line.split(": ", 1)[1] for line in z.read(f"{info}/WHEEL").decode().splitlines()
            if line.startswith("Tag: ")]
problems = []
if f"Version: {version}" not in metadata.splitlines():
    problems.append(f"METADATA does not say Version: {version}")
if not tags or any(not (t.startswith("cp311-abi3-manylinux") and t.endswith(arch)) for t in tags):
    problems.append(f"WHEEL tags {tags} are not all cp311-abi3-manylinux…_{arch}")
for needed in ("leasehold/__init__.py", "leasehold/py.typed", "leasehold/_native.abi3.so"):
    if needed not in names:
        problems.append(f"no {needed}")
if problems:
    sys.exit("python.sh: " + wheel + ": " + "; ".join(problems))
PY
  echo "python.sh: $name ($tag), its module needs GLIBC_$(check_glibc "$tree/leasehold/_native.abi3.so")"
  cp "$wheel" "$out/"
}

for arch in "${PLATFORMS[@]}"; do
  wheel "$arch"
done

echo "python.sh: $(cd "$out" && ls *.whl | tr '\n' ' ')and $(basename "$sdist"), in $out"
