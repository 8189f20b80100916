package locks

/*
#include <stdlib.h>
#include "leasehold.h"

extern void leaseholdDone(uint64_t user, lh_outcome outcome);
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"
)

// pending is one of the C library's calls that may wait in line or on the
// store (their _async forms), from its start to its outcome: a call
// site reads
//
//	p := startCall(ctx)
//	o, err := p.wait(p.ready() && bool(C.lh_x_async(…, p.token, doneFn, p.user(), p.now())))
//
// A call that goes on completes through the library's callback into the
// waiter's C slot (wake.go): the goroutine waits there first, blocking
// its thread, if one of the few places to wait in C is free, for at most a
// short time; otherwise, and after that, it waits on the waiter's channel,
// holding no OS thread. When ctx ends first the
// call's token fires: the call fails ErrCancelled (which also errors.Is
// the ctx's cause) and leaves the line (LOCK-18). A ctx that cannot end
// costs no token; a call done at once makes no channel.
type pending struct {
	ctx   context.Context
	err   error // why the call must not start
	token C.lh_cancel
	w     *waiter
	keep  bool // w is the caller's (startCallOn): wait does not give it back
}

// startCall prepares a call under ctx.
func startCall(ctx context.Context) pending { return startCallOn(ctx, nil) }

// startCallOn prepares a call under ctx that completes into w, which the
// caller took (takeWaiter) and gives back once it is done with it, as a
// hold does after its end; nil: a waiter taken here and given back by wait.
func startCallOn(ctx context.Context, w *waiter) pending {
	if ctx == nil {
		return pending{err: newError(CodeInvalidArgument, "a nil context.Context")}
	}
	if ctx.Err() != nil {
		return pending{ctx: ctx, err: withCause(ctx, newError(CodeCancelled, "the context ended before the call"))}
	}
	p := pending{ctx: ctx}
	if ctx.Done() != nil {
		// A variable of its own: what C writes to escapes, and a ctx that
		// cannot end should cost no allocation.
		var token C.lh_cancel
		if err := takeError(C.lh_cancel_new(&token)); err != nil {
			return pending{err: err}
		}
		p.token = token
	}
	if w == nil {
		w = takeWaiter()
	} else {
		p.keep = true
	}
	p.w = w
	return p
}

// ready says whether the call may start.
func (p pending) ready() bool { return p.err == nil }

// user is the done callback's user value: the waiter's slot.
func (p pending) user() C.uint64_t { return p.w.slot.user() }

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
		o = p.waitOn()
	}
	if p.token.id != 0 {
		C.lh_error_free(C.lh_cancel_free(p.token))
	}
	if !p.keep {
		p.w.give()
	}
	err := takeError(o.error)
	o.error = nil
	return o, withCause(p.ctx, err)
}

// waitOn is the outcome of a call that went on: waited for in C first
// (wake.go), then, once that wait ran out or when no place to wait in C
// was free, on the waiter's channel, holding no thread.
func (p pending) waitOn() C.lh_outcome {
	if o, ok := p.waitInC(); ok {
		return o
	}
	var o C.lh_outcome
	select {
	case o = <-p.w.completion:
	case <-p.ctx.Done():
		C.lh_error_free(C.lh_cancel_fire(p.token))
		o = <-p.w.completion
	}
	p.w.slot.reset()
	return o
}

// waitInC is the slot's waitInC; while it waits, ctx ending fires the
// call's token (context.AfterFunc), which ends the call, and so the wait.
func (p pending) waitInC() (C.lh_outcome, bool) {
	if p.ctx.Done() == nil {
		return p.w.slot.waitInC()
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(p.ctx, func() {
		C.lh_error_free(C.lh_cancel_fire(p.token))
		close(fired)
	})
	o, ok := p.w.slot.waitInC()
	if !stop() {
		<-fired
	}
	return o, ok
}

// waiter is where the library's callback puts the outcome of a call that
// went on, named to C by its cgo.Handle (C never holds a Go pointer).
// Waiters are reused: a call takes one and gives it back once the outcome
// came (or the call ended at once), so that the common case, a call done
// at once, makes no channel and no handle.
type waiter struct {
	completion chan C.lh_outcome
	handle     cgo.Handle
	// now is where a call done at once writes its outcome: C memory
	// (freed with the waiter), so that cgo's check of the argument finds
	// no Go pointer to look into.
	now *C.lh_outcome
	// held is the ctx of the hold this waiter serves from its begin to its
	// end (nil otherwise): the loss callback, given the waiter's handle,
	// cancels it (leaseholdLost).
	held atomic.Pointer[heldCtx]
	// slot is where the library's callback puts the outcome, and how the
	// goroutine waits for it (wake.go).
	slot slot
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
	now := (*C.lh_outcome)(C.calloc(1, C.sizeof_lh_outcome))
	if now == nil {
		panic("locks: out of memory")
	}
	w := &waiter{completion: make(chan C.lh_outcome, 1), now: now}
	w.handle = cgo.NewHandle(w)
	w.slot = newSlot(w.handle)
	return w
}

// user is w's handle, as the user value of a C callback.
func (w *waiter) user() C.uint64_t { return C.uint64_t(w.handle) }

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
	C.free(unsafe.Pointer(w.now))
	w.slot.free()
}

// leaseholdDone hands the outcome of a call that went on to the goroutine
// waiting on its waiter's channel: leasehold_go_done (wake.go), the
// library's callback, calls it once, from one of the library's threads,
// with the handle of the call's waiter, when the goroutine does not wait
// in C.
//
//export leaseholdDone
func leaseholdDone(user C.uint64_t, outcome C.lh_outcome) {
	if w, ok := cgo.Handle(user).Value().(*waiter); ok {
		w.completion <- outcome
	}
}
