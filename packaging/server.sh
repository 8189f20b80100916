#!/usr/bin/env bash
# `make dist-server`: the `leasehold` binary (server and CLI) of each
# platform (packaging/platforms.sh), built with the dist profile by
# `make dist-native`, shipped as a tarball and as a Debian package with a
# systemd unit (packaging/server/), into $DIST/server.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${CARGO_TARGET_DIR:?}"
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/packaging/platforms.sh"
out="$DIST/server"
rm -rf "$out" && mkdir -p "$out"

# package ARCH: the tarball and the .deb of one platform.
package() {
local arch=$1
local bin glibc
bin="$(native_dir "$arch")/leasehold"
glibc=$(check_glibc "$bin")
local built
built=$(run_on "$arch" "$bin" --version)
[ "$built" = "leasehold $VERSION" ] || { echo "server.sh: the $arch binary says '$built', not leasehold $VERSION" >&2; exit 1; }

local stage="$CARGO_TARGET_DIR/packaging/server/$arch"
rm -rf "$stage" && mkdir -p "$stage"

# The tarball: bin/, the unit and the settings to copy, the docs.
local name="leasehold-$VERSION-$arch-linux-gnu"
local t="$stage/$name"
install -D -m 0755 "$bin" "$t/bin/leasehold"
install -D -m 0644 "$root/packaging/server/leasehold.service" "$t/share/leasehold/leasehold.service"
install -D -m 0644 "$root/packaging/server/leasehold.toml" "$t/share/leasehold/leasehold.toml"
install -D -m 0644 "$root/README.md" "$t/share/doc/leasehold/README.md"
install -D -m 0644 "$root/docs/server.md" "$t/share/doc/leasehold/server.md"
tar -C "$stage" --owner=0 --group=0 --sort=name -czf "$out/$name.tar.gz" "$name"

# The Debian package, laid out as it installs.
local d="$stage/deb"
install -D -m 0755 "$bin" "$d/usr/bin/leasehold"
install -D -m 0644 "$root/packaging/server/leasehold.service" "$d/lib/systemd/system/leasehold.service"
install -D -m 0644 "$root/packaging/server/leasehold.toml" "$d/etc/leasehold/leasehold.toml"
install -D -m 0644 "$root/docs/server.md" "$d/usr/share/doc/leasehold/server.md"
install -D -m 0644 /dev/stdin "$d/usr/share/doc/leasehold/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: leasehold

Files: *
License: Apache-2.0
 On Debian systems, the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
COPYRIGHT
for script in postinst prerm postrm; do
  install -D -m 0755 "$root/packaging/server/$script" "$d/DEBIAN/$script"
done
echo /etc/leasehold/leasehold.toml >"$d/DEBIAN/conffiles"
# Depends on the newest glibc symbol version the binary needs (checked above).
cat >"$d/DEBIAN/control" <<CONTROL
Package: leasehold
Version: $VERSION
Architecture: $(deb_arch "$arch")
Maintainer: Leasehold developers <leasehold@example.invalid>
Section: net
Priority: optional
Depends: libc6 (>= $glibc), adduser
Installed-Size: $(du -sk "$d" --exclude=DEBIAN | cut -f1)
Homepage: https://example.invalid/leasehold
Description: lease and lock server with fences that only grow
 leasehold serve is the server store of Leasehold: leases on keys of named
 locks, FIFO waiting with pushed grants, renewal by group, and a fence per
 grant that only grows, across restarts too. The package runs it as the
 systemd service leasehold.service, set up in /etc/leasehold/leasehold.toml.
 The same binary is the CLI: leasehold hold, leasehold ls.
CONTROL
dpkg-deb --root-owner-group --build "$d" "$out/leasehold_${VERSION}_$(deb_arch "$arch").deb" >/dev/null
echo "server.sh: $arch: $name.tar.gz and leasehold_${VERSION}_$(deb_arch "$arch").deb, the binary needs GLIBC_$glibc"
}

for arch in "${PLATFORMS[@]}"; do
  package "$arch"
done
