#!/usr/bin/env bash
# `make dist-jvm`: the JVM artifact dev.leasehold:leasehold:$VERSION as a
# Maven repository in $DIST/jvm/repository (what `mvn deploy` would publish:
# the jar, with the native library of each platform inside as JNA's
# resource (linux-x86-64/, linux-aarch64/; packaging/platforms.sh), and its
# pom), and the jar again as $DIST/jvm/leasehold-$VERSION.jar. The native
# libraries are built with the
# dist profile by `make dist-native` (its symbol table kept for uniffi's
# bindgen, which reads the exports' metadata there; the jar's copy is
# stripped) and without the test hooks; the Kotlin uniffi generates from it and Maven's output stay
# under $CARGO_TARGET_DIR.
# Env: DIST, VERSION, CARGO_TARGET_DIR, UNIFFI_BINDGEN (uniffi's bindgen,
# the one the tests use: mk/jvm.mk builds it) and MVN (default mvn).
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${CARGO_TARGET_DIR:?}" "${UNIFFI_BINDGEN:?}"
MVN=${MVN:-mvn}
cd "$(dirname "$0")/.."
. packaging/platforms.sh

stage="$CARGO_TARGET_DIR/jvm/dist"
rm -rf "$stage"
# The Kotlin is generated from the x86_64 library (every platform's exports
# are the same).
"$UNIFFI_BINDGEN" generate --no-format --language kotlin \
  --out-dir "$stage/generated" "$(native_dir x86_64)/libleasehold_jvm.so"
for arch in "${PLATFORMS[@]}"; do
  lib="$(native_dir "$arch")/libleasehold_jvm.so"
  into="$stage/native/$(jna_folder "$arch")"
  mkdir -p "$into"
  "$(strip_tool "$arch")" --strip-all -o "$into/libleasehold_jvm.so" "$lib"
  echo "jvm.sh: $arch library $(du -h "$lib" | cut -f1) built, $(du -h "$into/libleasehold_jvm.so" | cut -f1) stripped, needs GLIBC_$(check_glibc "$into/libleasehold_jvm.so")"
done

rm -rf "$DIST/jvm"
mkdir -p "$DIST/jvm"
(cd bindings-jvm && "$MVN" -B -q -Dkotlin.compiler.daemon=false -Dstyle.color=never -Pdist \
  -Dmaven.test.skip=true \
  -Dleasehold.generated="$stage/generated" \
  -Dleasehold.native="$stage/native" \
  -Dleasehold.build="$stage/maven" \
  -DaltDeploymentRepository="dist::file://$DIST/jvm/repository" \
  deploy)
jar="$DIST/jvm/repository/dev/leasehold/leasehold/$VERSION/leasehold-$VERSION.jar"
# The listing is read whole before it is searched: `unzip | grep -q` fails
# under pipefail when grep stops reading early (unzip gets SIGPIPE).
listing=$(unzip -l "$jar")
for arch in "${PLATFORMS[@]}"; do
  grep -q " $(jna_folder "$arch")/libleasehold_jvm.so$" <<<"$listing" ||
    { echo "jvm.sh: the jar has no $(jna_folder "$arch")/libleasehold_jvm.so" >&2; exit 1; }
done
if grep -q -e 'MemoryWith' -e 'VirtualClock' <<<"$listing"; then
  echo "jvm.sh: the jar carries the test hooks" >&2
  exit 1
fi
cp "$jar" "$DIST/jvm/leasehold-$VERSION.jar"
