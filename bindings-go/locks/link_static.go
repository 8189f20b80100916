//go:build !leasehold_system

package locks

// The static library of ../ffi in the module's lib/GOOS_GOARCH/ folder: the
// published module's zip carries the ones built for linux/amd64 and
// linux/arm64, glibc 2.17 or newer (packaging/go.sh), and in the repository
// `make go-lib` copies the debug build there (docs/go.md). Other platforms
// fail to build with the message of link_unsupported.go.

// #cgo linux,amd64 LDFLAGS: ${SRCDIR}/../lib/linux_amd64/libleasehold_ffi.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
// #cgo linux,arm64 LDFLAGS: ${SRCDIR}/../lib/linux_arm64/libleasehold_ffi.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
import "C"
