package locks

/*
#include "leasehold.h"

extern void leaseholdLost(uint64_t user, lh_loss_reason reason);
*/
import "C"

import (
	"context"
	"sync"
)

// cHold is what the C library offers for one kind of hold (a key's
// lh_holding_*, a slot's lh_slot_holding_*), as a small value type: reading
// its state I, the loss callback, the end (its _async form, as startCall
// starts it), and the state after the end.
type cHold[I any] interface {
	// what is "lease" or "slot", for the message of a loss.
	what() string
	info(*I) *C.lh_error
	onLost(C.lh_lost_fn, C.uint64_t) *C.lh_error
	end(done C.lh_done_fn, user C.uint64_t, now *C.lh_outcome) C.bool
	// ended makes the state as it is after the end: no time left, lost
	// if the end said so.
	ended(last *I, lost bool, reason C.lh_loss_reason)
}

// kept is the one wrapper of a C hold, of a key or of a slot: its state
// read while held and kept as it was at the end, its loss cancelling the
// held function's ctx, and its end, once. Safe for concurrent use.
type kept[I any, H cHold[I]] struct {
	mu    sync.Mutex
	c     H
	done  bool
	last  I
	final func() // runs under mu with last fresh, just before the end; nil: none
}

// fresh reads the state now (after the end: as it was then); k.mu is held.
func (k *kept[I, H]) fresh() *I {
	if !k.done {
		var info I
		if takeError(k.c.info(&info)) == nil {
			k.last = info
		}
	}
	return &k.last
}

// current is the state now (after the end: as it was then).
func (k *kept[I, H]) current() I {
	k.mu.Lock()
	defer k.mu.Unlock()
	return *k.fresh()
}

// locked runs f under the lock with the state fresh.
func (k *kept[I, H]) locked(f func(last *I)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f(k.fresh())
}

// end ends the hold, once, completing into w (the hold's waiter);
// waiting for the store's answer holds no OS thread.
func (k *kept[I, H]) end(w *waiter) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	// Only a kind with a final step reads its state first: the end's
	// outcome makes the rest of the state (ended).
	if k.final != nil {
		k.fresh()
		k.final()
	}
	k.done = true
	p := startCallOn(context.Background(), w)
	_, err := p.wait(p.ready() && bool(k.c.end(doneFn, p.user(), p.now())))
	lost, reason := lostAtEnd(err)
	k.c.ended(&k.last, lost, reason)
	return err
}

// run runs fn while the hold lasts, and ends the hold however fn ends
// (runHeld); its loss callback is registered now.
func (k *kept[I, H]) run(ctx context.Context, fn func(context.Context) error) error {
	w := takeWaiter()
	c := newHeldCtx(ctx, k.c.what())
	w.held.Store(c)
	return runHeld(c, k, w, false, fn)
}

// watch registers the loss callback (once).
func (k *kept[I, H]) watch(callback C.lh_lost_fn, user C.uint64_t) error {
	return takeError(k.c.onLost(callback, user))
}

// heldSet is what runHeld runs a function under: one kept hold, or the
// leases of one HoldMany (heldLeases).
type heldSet interface {
	// watch registers callback(user) for a loss (of any of them).
	watch(callback C.lh_lost_fn, user C.uint64_t) error
	// end ends the hold, once, completing into w.
	end(w *waiter) error
}

// lostFn is the lh_lost_fn of every hold, registered with the handle of
// the hold's waiter.
var lostFn = C.lh_lost_fn(C.leaseholdLost)

// runHeld runs fn under c while h lasts, and ends h however fn ends
// (returns, fails or panics). w is the hold's waiter, with c on it: the
// loss callback cancels c with cause ErrLost (LOCK-09); watched says
// whether the begin registered it already (lh_lock_begin_watched_async),
// else runHeld does. The end completes into w, which runHeld gives back
// once the end returned (no callback comes after it). The answer is
// combine(fn's error, end's) (LOCK-10).
func runHeld(c *heldCtx, h heldSet, w *waiter, watched bool, fn func(context.Context) error) (err error) {
	returned := false
	var fnErr error
	defer func() {
		endErr := h.end(w)
		w.held.Store(nil)
		w.give()
		c.end()
		if returned {
			err = combine(fnErr, endErr)
		}
	}()
	if !watched {
		if err := h.watch(lostFn, w.user()); err != nil {
			fnErr = err
			returned = true
			return nil
		}
	}
	// A hold lost between the grant and now (its deadline came while the
	// process was frozen: the registration called back at once) runs
	// nothing, and its end fails ErrLost (LOCK-04).
	if c.Err() == nil {
		fnErr = fn(c)
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
