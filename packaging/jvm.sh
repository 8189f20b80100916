#!/usr/bin/env bash
# `make dist-jvm`: the JVM artifact dev.leasehold:leasehold:$VERSION as a
# Maven repository in $DIST/jvm/repository (what `mvn deploy` would publish:
# the jar, with the native library for linux x86_64 inside as JNA's
# linux-x86-64/ resource, and its pom), and the jar again as
# $DIST/jvm/leasehold-$VERSION.jar. The native library is built with the
# dist profile by `make dist-native` (its symbol table kept for uniffi's
# bindgen, which reads the exports' metadata there; the jar's copy is
# stripped) and without the test hooks; the Kotlin uniffi generates from it and Maven's output stay
# under $CARGO_TARGET_DIR.
# Env: DIST, VERSION, CARGO_TARGET_DIR, CARGO and MVN (default cargo, mvn).
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${CARGO_TARGET_DIR:?}"
CARGO=${CARGO:-cargo}
MVN=${MVN:-mvn}
cd "$(dirname "$0")/.."

lib="$CARGO_TARGET_DIR/dist/libleasehold_jvm.so"
(cd tools/uniffi-bindgen && "$CARGO" build --locked)
stage="$CARGO_TARGET_DIR/jvm/dist"
rm -rf "$stage"
mkdir -p "$stage/native/linux-x86-64"
"$CARGO_TARGET_DIR/debug/uniffi-bindgen" generate --no-format --language kotlin \
  --out-dir "$stage/generated" "$lib"
strip --strip-all -o "$stage/native/linux-x86-64/libleasehold_jvm.so" "$lib"
echo "jvm.sh: native library $(du -h "$lib" | cut -f1) built, $(du -h "$stage/native/linux-x86-64/libleasehold_jvm.so" | cut -f1) stripped"

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
grep -q ' linux-x86-64/libleasehold_jvm.so$' <<<"$listing" ||
  { echo "jvm.sh: the jar has no linux-x86-64/libleasehold_jvm.so" >&2; exit 1; }
if grep -q -e 'MemoryWith' -e 'VirtualClock' <<<"$listing"; then
  echo "jvm.sh: the jar carries the test hooks" >&2
  exit 1
fi
cp "$jar" "$DIST/jvm/leasehold-$VERSION.jar"
