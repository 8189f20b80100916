package locks

/*
#include "leasehold.h"

extern void leaseholdLost(uint64_t user, lh_loss_reason reason);
*/
import "C"

import (
	"context"
	"runtime/cgo"
)

// lossWatch is what the C library calls back, through a cgo.Handle, when
// a held lease or slot is lost: it cancels the held function's ctx.
type lossWatch struct {
	what   string // "lease" or "slot", for the message
	cancel context.CancelCauseFunc
}

// runHeld runs fn while a hold (of a key or of a slot) lasts, and ends the
// hold however fn ends (returns, fails or panics). watch registers the C
// library's loss callback for the hold; end ends it. fn's ctx is cancelled
// with cause ErrLost when the hold is lost (LOCK-09), and the answer is
// combine(fn's error, end's) (LOCK-10).
func runHeld(ctx context.Context, what string, watch func(C.lh_lost_fn, C.uint64_t) *C.lh_error,
	end func() error, fn func(context.Context) error) (err error) {
	fnCtx, cancel := context.WithCancelCause(ctx)
	handle := cgo.NewHandle(&lossWatch{what: what, cancel: cancel})
	returned := false
	var fnErr error
	defer func() {
		endErr := end()
		handle.Delete()
		cancel(nil)
		if returned {
			err = combine(fnErr, endErr)
		}
	}()
	if err := takeError(watch(C.lh_lost_fn(C.leaseholdLost), C.uint64_t(handle))); err != nil {
		fnErr = err
	} else {
		fnErr = fn(fnCtx)
	}
	returned = true
	return nil
}

// combine is what a hold answers: fn's error, unless the hold was lost,
// then ErrLost with fn's error as its cause (LOCK-10). An end that failed
// otherwise does not fail the hold (the lease or slot runs out at the store).
func combine(fnErr, endErr error) error {
	e, ok := endErr.(*Error)
	if !ok || e.Code != CodeLost {
		return fnErr
	}
	e.cause = fnErr
	return e
}

// lostAtEnd says whether the error of a hold's end (a key's or a slot's)
// tells a loss while held, and its reason as the C library gives it
// (Unknown for a reason the binding does not know).
func lostAtEnd(endErr error) (bool, C.lh_loss_reason) {
	e, ok := endErr.(*Error)
	if !ok || e.Code != CodeLost {
		return false, C.LH_REASON_NONE
	}
	if r, ok := reasonCodes[e.Reason]; ok {
		return true, r
	}
	return true, C.LH_REASON_UNKNOWN
}
