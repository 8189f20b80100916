package locks

// #include "leasehold.h"
import "C"

import (
	"context"
	"runtime"
	"time"
	"unsafe"
)

// HolderInfo is who holds a key, as Lock.Holder answers it (WHO-02).
type HolderInfo struct {
	// Identity is the identity of the store handle that took the lease
	// (WHO-01; Identity at Connect, by default hostname:pid).
	Identity string
	// Fence is the lease's fence (LOCK-02).
	Fence uint64
	// HeldFor is how long ago the lease was granted.
	HeldFor time.Duration
	// ExpiresIn is how long the store keeps the lease unless it is
	// renewed; HasExpiry is false for a lease that does not run out by
	// time (the embedded store's).
	ExpiresIn time.Duration
	HasExpiry bool
	// Waiting is how many requests wait in the key's line.
	Waiting int
}

// Holder answers who holds key now, from a linearizable read of the
// store (WHO-02): nil when nobody does. A connection admitted only to
// read may ask. ctx ending gives up waiting for the store's answer
// (ErrCancelled).
func (l *Lock) Holder(ctx context.Context, key string) (*HolderInfo, error) {
	var info C.lh_holder_info
	k, kn := cstr(key)
	err := withCancel(ctx, func(c C.lh_cancel) *C.lh_error {
		return C.lh_lock_holder(l.h, k, kn, c, &info)
	})
	runtime.KeepAlive(l)
	runtime.KeepAlive(key)
	if err != nil || !bool(info.held) {
		return nil, err
	}
	return &HolderInfo{
		Identity:  C.GoStringN((*C.char)(unsafe.Pointer(&info.identity[0])), C.int(info.identity_len)),
		Fence:     uint64(info.fence),
		HeldFor:   time.Duration(info.held_ms) * time.Millisecond,
		ExpiresIn: time.Duration(info.expires_in_ms) * time.Millisecond,
		HasExpiry: bool(info.has_expires_in),
		Waiting:   int(info.waiting),
	}, nil
}
