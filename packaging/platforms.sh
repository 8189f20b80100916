# Sourced by the packaging scripts: the platforms `make dist` ships
# (docs/packaging.md, "Platforms"), each platform's names in every
# ecosystem, and the glibc check every shipped binary passes.

# Linux with glibc 2.17 or newer, on x86_64 and aarch64.
PLATFORMS=(x86_64 aarch64)
GLIBC_FLOOR=2.17

# The Rust target (cargo-zigbuild's, less the glibc suffix).
rust_target() { echo "$1-unknown-linux-gnu"; }
# Where `make dist-native` and maturin leave the platform's native parts.
native_dir() { echo "$CARGO_TARGET_DIR/$(rust_target "$1")/dist"; }
# Debian's architecture, Go's GOARCH, npm's platform (napi-rs's names),
# JNA's resource folder.
deb_arch() { case $1 in x86_64) echo amd64 ;; aarch64) echo arm64 ;; esac; }
go_arch() { deb_arch "$1"; }
npm_platform() { case $1 in x86_64) echo linux-x64-gnu ;; aarch64) echo linux-arm64-gnu ;; esac; }
jna_folder() { case $1 in x86_64) echo linux-x86-64 ;; aarch64) echo linux-aarch64 ;; esac; }
# The binutils strip that reads the platform's objects.
strip_tool() { case $1 in x86_64) echo strip ;; aarch64) echo aarch64-linux-gnu-strip ;; esac; }

# The newest glibc symbol version FILE (an executable or a shared library)
# needs, or nothing if it needs none.
glibc_needed() {
  objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1
}

# Fails, naming FILE, if it needs a glibc newer than GLIBC_FLOOR; else
# prints the version it needs.
check_glibc() {
  local needed
  needed=$(glibc_needed "$1")
  [ -n "$needed" ] || { echo "platforms.sh: $1 has no glibc symbol versions" >&2; return 1; }
  if [ "$(printf '%s\n%s\n' "$needed" "$GLIBC_FLOOR" | sort -V | tail -n 1)" != "$GLIBC_FLOOR" ]; then
    echo "platforms.sh: $1 needs GLIBC_$needed, above the floor GLIBC_$GLIBC_FLOOR" >&2
    return 1
  fi
  echo "$needed"
}

# Sets the array ON to what runs an executable of the platform ARCH here,
# before the executable's absolute path: for aarch64, qemu-user-static with
# its loader and libraries from the root folder ARM64_ROOT (default /, where
# Debian's multiarch puts libc6:arm64); for x86_64, nothing, or when
# AMD64_ROOT names a root folder, that folder's loader and libraries (an
# older glibc than this machine's). `"${ON[@]}" /path/to/exe ... &` keeps
# $! the executable's process.
on() {
  case $1 in
    x86_64)
      if [ -n "${AMD64_ROOT:-}" ]; then
        ON=("$AMD64_ROOT/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
          --library-path "$AMD64_ROOT/lib/x86_64-linux-gnu:$AMD64_ROOT/usr/lib/x86_64-linux-gnu")
      else
        ON=()
      fi
      ;;
    aarch64) ON=(qemu-aarch64-static -L "${ARM64_ROOT:-/}") ;;
    *) echo "platforms.sh: no platform $1" >&2; return 1 ;;
  esac
}

# Runs EXECUTABLE (a path, or a command on PATH) of the platform ARCH here,
# with its arguments (see `on`).
#   run_on ARCH EXECUTABLE ARG...
run_on() {
  local exe
  on "$1"
  exe=$(command -v "$2") || { echo "platforms.sh: no executable $2" >&2; return 127; }
  case $exe in /*) ;; *) exe=$PWD/$exe ;; esac
  shift 2
  "${ON[@]}" "$exe" "$@"
}
