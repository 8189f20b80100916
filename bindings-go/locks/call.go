package locks

/*
#include "leasehold.h"

extern void leaseholdDone(uint64_t user, lh_outcome outcome);
*/
import "C"

import (
	"context"
	"runtime/cgo"
)

// startFn starts one of the C library's calls that may wait (its _async
// form) with a cancellation token, the callback's user value and where an
// outcome reached at once goes; it reports whether the call went on.
type startFn func(cancel C.lh_cancel, done C.lh_done_fn, user C.uint64_t, now *C.lh_outcome) C.bool

// awaitCall runs a call that may wait in line or on the store, and answers its
// outcome (its error taken out). A call that goes on completes through the
// library's callback into a channel, so the goroutine waits holding no OS
// thread. When ctx ends first the call's token fires: the call fails
// ErrCancelled (which also errors.Is the ctx's cause) and leaves the line
// (LOCK-18). A ctx that cannot end costs no token.
func awaitCall(ctx context.Context, start startFn) (C.lh_outcome, error) {
	if ctx == nil {
		return C.lh_outcome{}, newError(CodeInvalidArgument, "a nil context.Context")
	}
	if ctx.Err() != nil {
		return C.lh_outcome{}, withCause(ctx, newError(CodeCancelled, "the context ended before the call"))
	}
	var token C.lh_cancel
	if ctx.Done() != nil {
		if err := takeError(C.lh_cancel_new(&token)); err != nil {
			return C.lh_outcome{}, err
		}
		defer func() { C.lh_error_free(C.lh_cancel_free(token)) }()
	}
	completion := make(chan C.lh_outcome, 1)
	handle := cgo.NewHandle(completion)
	defer handle.Delete()
	var o C.lh_outcome
	if bool(start(token, C.lh_done_fn(C.leaseholdDone), C.uint64_t(handle), &o)) {
		select {
		case o = <-completion:
		case <-ctx.Done():
			C.lh_error_free(C.lh_cancel_fire(token))
			o = <-completion
		}
	}
	err := takeError(o.error)
	o.error = nil
	return o, withCause(ctx, err)
}

// leaseholdDone is the lh_done_fn of every call that went on: the library
// calls it once, from one of its own threads, with the cgo.Handle of the
// call's channel (C never holds a Go pointer).
//
//export leaseholdDone
func leaseholdDone(user C.uint64_t, outcome C.lh_outcome) {
	if completion, ok := cgo.Handle(user).Value().(chan C.lh_outcome); ok {
		completion <- outcome
	}
}
