//go:build !leasehold_system && !(linux && (amd64 || arm64))

package locks

// The module carries the static library for linux/amd64 and linux/arm64
// only. Elsewhere, build the library from source and link it with the build
// tag leasehold_system (docs/go.md); without it the build fails here, naming
// what to do.

var _ = leasehold_ships_libraries_for_linux_amd64_and_arm64_only__build_libleasehold_ffi_from_source_and_use_tag_leasehold_system
