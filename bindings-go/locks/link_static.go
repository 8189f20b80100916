//go:build !leasehold_system

package locks

// The static library built from ../ffi by `make go-lib` (docs/go.md), linked
// from the module's own lib/ folder.

// #cgo LDFLAGS: ${SRCDIR}/../lib/libleasehold_ffi.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
import "C"
