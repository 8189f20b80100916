package locks

/*
#include "leasehold.h"

extern void leaseholdDone(uint64_t user, lh_outcome outcome);
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"sync"
)

// pending is one of the C library's calls that may wait in line or on the
// store (their _async forms), from its start to its outcome: a call
// site reads
//
//	p := startCall(ctx)
//	o, err := p.wait(p.ready() && bool(C.lh_x_async(…, p.token, doneFn, p.user(), p.now())))
//
// A call that goes on completes through the library's callback into the
// waiter's channel, so the goroutine waits holding no OS thread. When ctx
// ends first the call's token fires: the call fails ErrCancelled (which
// also errors.Is the ctx's cause) and leaves the line (LOCK-18). A ctx
// that cannot end costs no token; a call done at once makes no channel.
type pending struct {
	ctx   context.Context
	err   error // why the call must not start
	token C.lh_cancel
	w     *waiter
}

// doneFn is the lh_done_fn of every call that may wait.
var doneFn = C.lh_done_fn(C.leaseholdDone)

// startCall prepares a call under ctx.
func startCall(ctx context.Context) pending {
	if ctx == nil {
		return pending{err: newError(CodeInvalidArgument, "a nil context.Context")}
	}
	if ctx.Err() != nil {
		return pending{ctx: ctx, err: withCause(ctx, newError(CodeCancelled, "the context ended before the call"))}
	}
	p := pending{ctx: ctx}
	if ctx.Done() != nil {
		if err := takeError(C.lh_cancel_new(&p.token)); err != nil {
			return pending{err: err}
		}
	}
	p.w = takeWaiter()
	return p
}

// ready says whether the call may start.
func (p pending) ready() bool { return p.err == nil }

// user is the callback's user value.
func (p pending) user() C.uint64_t { return C.uint64_t(p.w.handle) }

// now is where a call done at once writes its outcome.
func (p pending) now() *C.lh_outcome { return p.w.now }

// wait is the call's outcome (its error taken out), given whether the
// call went on; it ends the call's token and gives its waiter back.
func (p pending) wait(wentOn bool) (C.lh_outcome, error) {
	if p.err != nil {
		return C.lh_outcome{}, p.err
	}
	o := *p.w.now
	if wentOn {
		select {
		case o = <-p.w.completion:
		case <-p.ctx.Done():
			C.lh_error_free(C.lh_cancel_fire(p.token))
			o = <-p.w.completion
		}
	}
	if p.token.id != 0 {
		C.lh_error_free(C.lh_cancel_free(p.token))
	}
	p.w.give()
	err := takeError(o.error)
	o.error = nil
	return o, withCause(p.ctx, err)
}

// waiter is where the library's callback puts the outcome of a call that
// went on, named to C by its cgo.Handle (C never holds a Go pointer).
// Waiters are reused: a call takes one and gives it back once the outcome
// came (or the call ended at once), so that the common case, a call done
// at once, makes no channel and no handle.
type waiter struct {
	completion chan C.lh_outcome
	handle     cgo.Handle
	// now is where a call done at once writes its outcome: an allocation
	// of its own, holding no Go pointer, as cgo requires of what C writes.
	now *C.lh_outcome
}

// idleWaiters keeps at most maxIdleWaiters waiters for reuse; beyond that a
// waiter given back is let go (its handle deleted).
var idleWaiters struct {
	sync.Mutex
	list []*waiter
}

const maxIdleWaiters = 256

// takeWaiter is an idle waiter, or a new one.
func takeWaiter() *waiter {
	idleWaiters.Lock()
	if n := len(idleWaiters.list); n > 0 {
		w := idleWaiters.list[n-1]
		idleWaiters.list = idleWaiters.list[:n-1]
		idleWaiters.Unlock()
		return w
	}
	idleWaiters.Unlock()
	w := &waiter{completion: make(chan C.lh_outcome, 1), now: new(C.lh_outcome)}
	w.handle = cgo.NewHandle(w)
	return w
}

// give puts w back for reuse; its call's outcome was received.
func (w *waiter) give() {
	idleWaiters.Lock()
	if len(idleWaiters.list) < maxIdleWaiters {
		idleWaiters.list = append(idleWaiters.list, w)
		idleWaiters.Unlock()
		return
	}
	idleWaiters.Unlock()
	w.handle.Delete()
}

// leaseholdDone is the lh_done_fn of every call that went on: the library
// calls it once, from one of its own threads, with the handle of the call's
// waiter.
//
//export leaseholdDone
func leaseholdDone(user C.uint64_t, outcome C.lh_outcome) {
	if w, ok := cgo.Handle(user).Value().(*waiter); ok {
		w.completion <- outcome
	}
}
