package locks

// #include "leasehold.h"
import "C"

import (
	"context"
	"runtime"
)

// HeldManyFunc is the function HoldMany runs while it holds every key:
// leases[i] is the lease of the i-th key asked for. Its ctx is cancelled
// with cause ErrLost (errors.Is(context.Cause(ctx), ErrLost)) when any of
// the leases is lost (LOCK-09).
type HeldManyFunc func(ctx context.Context, leases []*Lease) error

// HoldMany waits in line for every key of keys at once (LOCK-22), then runs
// fn holding them all, each a lease of its own with its own Fence, renewal,
// deadline and loss; on the server store hundreds of keys go in one frame.
// All or none: when one key cannot be had, HoldMany fails, fn does not run,
// every lease it took is released and every line it joined is left: if ctx
// ends while waiting, ErrCancelled; the option Wait (or the lock's) bounds
// the wait with ErrWaitTimeout (LOCK-18). A key named twice fails
// ErrInvalidArgument, an empty one ErrEmptyName; no keys run fn with no
// leases.
//
// Every lease is released when fn returns, fails or panics (LOCK-11), all
// at once. If any lease is lost while fn runs, fn's ctx is cancelled with
// cause ErrLost (LOCK-09), and HoldMany fails ErrLost even if fn succeeded;
// fn's own error stays reachable with errors.Is / errors.As (LOCK-10).
func (l *Lock) HoldMany(ctx context.Context, keys []string, fn HeldManyFunc, opts ...Option) error {
	if fn == nil {
		return newError(CodeInvalidArgument, "HoldMany: a nil function")
	}
	s, err := collect("HoldMany", opts, "Wait")
	if err != nil {
		return err
	}
	var callOpts C.lh_call_options
	if s.wait != nil {
		callOpts.has_wait, callOpts.wait_ns = true, nanos(*s.wait)
	}
	packed, lens := packKeys(keys)
	p := startCall(ctx)
	b, bn := cbytes(packed)
	o, err := p.wait(p.ready() && bool(C.lh_lock_begin_many_async(l.h, b, bn, first(lens), C.size_t(len(keys)),
		&callOpts, p.token, doneFn, p.user(), p.now())))
	runtime.KeepAlive(l)
	runtime.KeepAlive(packed)
	runtime.KeepAlive(lens)
	if err != nil {
		return err
	}
	batch := C.lh_holdings{id: o.handle}
	holdings := make([]C.lh_holding, len(keys))
	fences := make([]C.uint64_t, len(keys))
	if err := takeError(C.lh_holdings_take(batch, first(holdings), first(fences), C.size_t(len(keys)))); err != nil {
		C.lh_error_free(C.lh_holdings_free(batch))
		return err
	}
	// The lock, and so its store, stay alive (no finalizer closes them) until the holds ended.
	defer runtime.KeepAlive(l)
	leases := make([]*Lease, len(keys))
	held := make(heldLeases, len(keys))
	for i, key := range keys {
		held[i] = &heldLease{c: leaseHold{holdings[i]}}
		leases[i] = &Lease{Fence: uint64(fences[i]), Name: key, held: held[i]}
	}
	w := takeWaiter()
	c := newHeldCtx(ctx, "lease")
	w.held.Store(c)
	return runHeld(c, held, w, false, func(ctx context.Context) error { return fn(ctx, leases) })
}

// packKeys is keys as the C library takes many strings: their bytes one
// after another, and their lengths.
func packKeys(keys []string) ([]byte, []C.size_t) {
	n := 0
	for _, key := range keys {
		n += len(key)
	}
	packed := make([]byte, 0, n)
	lens := make([]C.size_t, len(keys))
	for i, key := range keys {
		packed = append(packed, key...)
		lens[i] = C.size_t(len(key))
	}
	return packed, lens
}

// first is the address of s's first element for a C call, nil when s is empty.
func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// heldLeases are the leases of one HoldMany, in the order of its keys:
// watched for a loss together, and ended together (lh_holding_end_all).
type heldLeases []*heldLease

// watch registers callback(user) for the loss of each lease.
func (hs heldLeases) watch(callback C.lh_lost_fn, user C.uint64_t) error {
	for _, k := range hs {
		if err := k.watch(callback, user); err != nil {
			return err
		}
	}
	return nil
}

// end ends every hold at once, in one C call, completing into w; waiting
// for the store's answers holds no OS thread. Each lease tells after it
// what it was at the end: lost if it was lost by then.
func (hs heldLeases) end(w *waiter) error {
	handles := make([]C.lh_holding, len(hs))
	for i, k := range hs {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.fresh()
		k.done = true
		handles[i] = k.c.h
	}
	p := startCallOn(context.Background(), w)
	_, err := p.wait(p.ready() && bool(C.lh_holding_end_all_async(first(handles), C.size_t(len(handles)), doneFn, p.user(), p.now())))
	runtime.KeepAlive(handles)
	for _, k := range hs {
		k.c.ended(&k.last, bool(k.last.lost), k.last.reason)
	}
	return err
}
