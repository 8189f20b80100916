//go:build leasehold_system

package locks

// With the build tag leasehold_system: the library installed where the
// linker finds it (for example /usr/local/lib/libleasehold_ffi.a), for
// users of the module who build the library themselves (docs/go.md).

// #cgo LDFLAGS: -lleasehold_ffi -lgcc_s -lutil -lrt -lpthread -lm -ldl
import "C"
