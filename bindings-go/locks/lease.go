package locks

// #include "leasehold.h"
import "C"

import (
	"context"
	"runtime"
	"time"
)

// Lease is one grant of one key: given to the function Hold runs, or
// returned by Store.TryLock and Store.Lock (a manual lease, which only
// Extend renews). Safe for concurrent use (MANUAL-06).
type Lease struct {
	// Fence is larger than every fence the store granted before (LOCK-02,
	// MANUAL-07): hand it to the system you write to, so that it can refuse
	// a late writer.
	Fence uint64
	// Name is the key held (Hold, HoldMany) or the manual lease's name.
	Name string

	held   *heldLease
	manual *manualLease
}

// heldLease is the C holding behind a lease given to Hold's function.
type heldLease = kept[C.lh_lease_info, leaseHold]

// leaseHold is a key's C holding, as kept uses it.
type leaseHold struct{ h C.lh_holding }

func (leaseHold) what() string { return "lease" }

func (l leaseHold) info(info *C.lh_lease_info) *C.lh_error { return C.lh_holding_info(l.h, info) }

func (l leaseHold) onLost(callback C.lh_lost_fn, user C.uint64_t) *C.lh_error {
	return C.lh_holding_on_lost(l.h, callback, user)
}

func (l leaseHold) end(done C.lh_done_fn, user C.uint64_t, now *C.lh_outcome) C.bool {
	return C.lh_holding_end_async(l.h, done, user, now)
}

// ended: the C handle is gone after the end, so the lease keeps what the
// core's lease says once ended: no time left, and lost if it was lost
// while held (the end's answer).
func (leaseHold) ended(last *C.lh_lease_info, lost bool, reason C.lh_loss_reason) {
	*last = C.lh_lease_info{has_remaining: true}
	if lost {
		last.lost, last.reason = true, reason
	}
}

// manualLease is the C manual lease behind a lease from TryLock or Lock.
type manualLease struct {
	h     C.lh_manual
	store *Store // keeps the store (and its finalizer) away while the lease is in use
}

func newManualLease(s *Store, name string, h C.lh_manual) *Lease {
	var fence C.uint64_t
	C.lh_error_free(C.lh_manual_fence(h, &fence))
	l := &Lease{Fence: uint64(fence), Name: name, manual: &manualLease{h: h, store: s}}
	runtime.SetFinalizer(l, func(l *Lease) { C.lh_error_free(C.lh_manual_free(l.manual.h)) })
	return l
}

// Lost says whether a held lease was lost (LOCK-09); once true it stays
// true. A manual lease learns of a loss only from Extend or Unlock: false.
func (l *Lease) Lost() bool {
	return l.held != nil && bool(l.held.current().lost)
}

// LossReason says why a held lease was lost (NotLost while it is not).
func (l *Lease) LossReason() LossReason {
	if l.held == nil {
		return NotLost
	}
	return reasonOf(l.held.current().reason)
}

// Remaining is the time left before a held lease's deadline (LOCK-04),
// zero once lost or once the hold ended; ok is false while an embedded
// lease without MaxHold is held (it has no deadline) and for a manual lease.
func (l *Lease) Remaining() (left time.Duration, ok bool) {
	if l.held == nil {
		return 0, false
	}
	info := l.held.current()
	return time.Duration(info.remaining_ns), bool(info.has_remaining)
}

func (l *Lease) manualOnly(call string) error {
	if l.manual == nil {
		return newError(CodeInvalidArgument, call+": the lease of a Hold is kept by Hold; Extend and Unlock are for leases from TryLock and Lock")
	}
	return nil
}

// Extend sets a manual lease's expiry to now + d (MANUAL-03): ErrLost when
// it was lost or released, ErrInvalidTTL for d outside 1 s to 1 h. If ctx
// ends first, ErrCancelled, and the outcome is unknown.
func (l *Lease) Extend(ctx context.Context, d time.Duration) error {
	if err := l.manualOnly("Extend"); err != nil {
		return err
	}
	err := withCancel(ctx, func(c C.lh_cancel) *C.lh_error {
		return C.lh_manual_extend(l.manual.h, nanos(d), c)
	})
	runtime.KeepAlive(l)
	return err
}

// Unlock releases a manual lease if it still owns its key (MANUAL-04): if
// it was lost, the first Unlock fails ErrLost and touches no newer holder;
// after a confirmed release or loss, later calls do nothing and return nil.
// A store failure is returned and leaves the call retryable.
func (l *Lease) Unlock(ctx context.Context) error {
	if err := l.manualOnly("Unlock"); err != nil {
		return err
	}
	err := withCancel(ctx, func(c C.lh_cancel) *C.lh_error {
		return C.lh_manual_release(l.manual.h, c)
	})
	runtime.KeepAlive(l)
	return err
}

// Close frees a manual lease without releasing it (it runs out at its ttl);
// a finalizer does the same for a lease dropped unclosed. Later calls on
// the lease fail ErrClosed, as does a second Close.
func (l *Lease) Close() error {
	if err := l.manualOnly("Close"); err != nil {
		return err
	}
	runtime.SetFinalizer(l, nil)
	err := takeError(C.lh_manual_free(l.manual.h))
	runtime.KeepAlive(l)
	return err
}
