#!/usr/bin/env bash
# A root folder for `make dist-test` (packaging/consumer/run.sh), made by
# `make setup`: DIR gets the files of Debian SUITE's PACKAGEs for ARCH,
# unpacked (no maintainer scripts run, nothing installed on this machine).
# apt resolves and downloads them with a configuration of its own under
# DIR.apt, so the machine's sources and architectures stay as they are.
#   root.sh DIR SUITE ARCH PACKAGE...
set -euo pipefail
dir=${1:?usage: root.sh DIR SUITE ARCH PACKAGE...} suite=${2:?} arch=${3:?}
shift 3
apt="$dir.apt"
rm -rf "$dir" "$apt"
mkdir -p "$dir" "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
: >"$apt/status"
echo "deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" >"$apt/sources.list"
opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State=$apt" -o "Dir::State::Lists=$apt/lists" -o "Dir::State::status=$apt/status"
  -o "Dir::Cache=$apt/cache" -o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
  -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
apt-get -qq "${opts[@]}" update
(cd "$apt/debs" && apt-get -qq "${opts[@]}" download "$@")
for deb in "$apt/debs"/*.deb; do
  dpkg-deb -x "$deb" "$dir"
  echo "root.sh: $(basename "$dir"): $(basename "$deb")"
done
rm -rf "$apt"
