#!/usr/bin/env bash
# The Debian package of `make dist`, checked without installing it on this
# machine: its metadata, its files, its systemd unit (systemd-analyze
# verify, where systemd is), and its binary and shipped settings, which
# must start a server (on a free loopback port and a scratch data dir): for
# the platform ARCH (packaging/platforms.sh), under qemu for aarch64.
set -euo pipefail
usage="usage: deb.sh ARCH PACKAGE.deb SCRATCH"
arch=${1:?$usage} deb=${2:?$usage} scratch=${3:?$usage}
: "${VERSION:?}"
. "$(dirname "$0")/../platforms.sh"
mkdir -p "$scratch"
for field in Package:leasehold Version:"$VERSION" Architecture:"$(deb_arch "$arch")"; do
  got=$(dpkg-deb --field "$deb" "${field%%:*}")
  [ "$got" = "${field#*:}" ] || { echo "deb.sh: $field expected, the package says $got" >&2; exit 1; }
done
contents=$(dpkg-deb --contents "$deb")
for path in ./usr/bin/leasehold ./lib/systemd/system/leasehold.service ./etc/leasehold/leasehold.toml; do
  grep -q " $path\$" <<<"$contents" || { echo "deb.sh: $deb lacks $path" >&2; exit 1; }
done
dpkg-deb --extract "$deb" "$scratch/root"
bin="$scratch/root/usr/bin/leasehold"
[ "$(run_on "$arch" "$bin" --version)" = "leasehold $VERSION" ]
if command -v systemd-analyze >/dev/null; then
  # The unit names /usr/bin/leasehold; verify it against the extracted one.
  sed "s|/usr/bin/leasehold|$bin|" "$scratch/root/lib/systemd/system/leasehold.service" >"$scratch/leasehold.service"
  systemd-analyze verify "$scratch/leasehold.service"
fi
mkdir -p "$scratch/data"
on "$arch"
"${ON[@]}" "$bin" serve --config "$scratch/root/etc/leasehold/leasehold.toml" --listen 127.0.0.1:0 \
  --data-dir "$scratch/data" >"$scratch/out" 2>"$scratch/err" &
pid=$!
for _ in $(seq 300); do
  grep -q '^listening on ' "$scratch/out" && break
  sleep 0.1
done
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
grep -q '^listening on ' "$scratch/out" ||
  { echo "deb.sh: the packaged settings did not start a server:" >&2; cat "$scratch/err" >&2; exit 1; }
echo "deb.sh: $(basename "$deb"): its files, unit and settings are good"
