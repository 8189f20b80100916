//go:build leasehold_testing

package locks

// #cgo CFLAGS: -DLEASEHOLD_TESTING
// #include "leasehold.h"
import "C"

import (
	"runtime"
	"time"
)

// The test hooks, built only with the tag leasehold_testing and a library
// built with the C ABI's feature `testing` (`make go-lib` builds one; the
// published module's library has none): an embedded store on a virtual
// clock that only the test moves, as the shared scenarios need
// (spec-tests/README.md), the core's duration parser, a deliberate panic.

// VirtualClock stands still until Advance moves it.
type VirtualClock struct {
	h C.lh_clock
}

// NewVirtualClock makes a virtual clock at its origin.
func NewVirtualClock() *VirtualClock {
	var h C.lh_clock
	if err := takeError(C.lh_clock_new(&h)); err != nil {
		panic("locks: " + err.Error())
	}
	c := &VirtualClock{h: h}
	runtime.SetFinalizer(c, func(c *VirtualClock) { C.lh_error_free(C.lh_clock_free(c.h)) })
	return c
}

// Advance moves the clock by d, one timer's deadline at a time; after each
// step it waits until the tasks the step woke have polled their timers, then
// pauses pause of real time for the work they started, so that what the step
// woke runs before the clock moves on. It blocks.
func (c *VirtualClock) Advance(d, pause time.Duration) error {
	err := takeError(C.lh_clock_advance(c.h, nanos(d), nanos(pause)))
	runtime.KeepAlive(c)
	return err
}

// MemoryOptions are the options of MemoryWith.
type MemoryOptions struct {
	// Clock is the store's clock; nil is the process's monotonic clock.
	Clock *VirtualClock
	// Renewal makes leases run out unless renewed, as on a server store.
	Renewal bool
	// NoPush makes waiting poll instead of being pushed the grant.
	NoPush bool
}

// MemoryWith opens an embedded store with other options than Memory's:
// for tests.
func MemoryWith(o MemoryOptions) *Store {
	opts := C.lh_memory_options{renewal: C.bool(o.Renewal), push: C.bool(!o.NoPush)}
	if o.Clock != nil {
		opts.clock = o.Clock.h
	}
	var h C.lh_store
	err := takeError(C.lh_store_memory_with(&opts, &h))
	runtime.KeepAlive(o.Clock)
	if err != nil {
		panic("locks: " + err.Error())
	}
	return newStore(h)
}

// ParseDuration parses a duration as the other bindings take strings
// ("30s", "1m30s", "250ms"), with the core's parser: a bad one fails
// ErrInvalidTTL. Go callers pass time.Duration; the scenario runner needs this.
func ParseDuration(s string) (time.Duration, error) {
	var ns C.int64_t
	p, n := cstr(s)
	err := takeError(C.lh_duration_parse(p, n, &ns))
	runtime.KeepAlive(s)
	return time.Duration(ns), err
}

// panicInLibrary makes the library panic, to see the panic come back as
// ErrInternal (ERR-03).
func panicInLibrary() error {
	return takeError(C.lh_testing_panic())
}

// abiCodeNames are the names of the C ABI's codes 0..LH_CODE_COUNT-1 ("Ok", "Lost", …).
func abiCodeNames() []string {
	names := make([]string, 0, int(C.LH_CODE_COUNT))
	for i := C.int32_t(0); i < C.LH_CODE_COUNT; i++ {
		names = append(names, C.GoString(C.lh_code_name(i)))
	}
	return names
}
