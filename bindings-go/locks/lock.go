package locks

// #include "leasehold.h"
import "C"

import (
	"context"
	"runtime"
)

// Lock is a named family of keys with its options. Safe for concurrent use.
type Lock struct {
	h     C.lh_lock
	store *Store // keeps the store (and its finalizer) away while the lock is in use
	name  string
}

// HeldFunc is the function Hold runs while it holds the key. Its ctx is
// cancelled with cause ErrLost (errors.Is(context.Cause(ctx), ErrLost))
// when the lease is lost (LOCK-09).
type HeldFunc func(ctx context.Context, lease *Lease) error

// OpenLock opens the lock name of store with the options TTL, MaxHold,
// Wait and Margin. Nothing is sent to the store; bad options fail at once
// (ErrInvalidTTL, ErrEmptyName; LOCK-13).
func OpenLock(store *Store, name string, opts ...Option) (*Lock, error) {
	if store == nil {
		return nil, newError(CodeInvalidArgument, "OpenLock: a nil *Store")
	}
	s, err := collect("OpenLock", opts, "TTL", "MaxHold", "Wait", "Margin")
	if err != nil {
		return nil, err
	}
	var o C.lh_lock_options
	if s.ttl != nil {
		o.has_ttl, o.ttl_ns = true, nanos(*s.ttl)
	}
	if s.maxHold != nil {
		o.has_max_hold, o.max_hold_ns = true, nanos(*s.maxHold)
	}
	if s.wait != nil {
		o.has_wait, o.wait_ns = true, nanos(*s.wait)
	}
	if s.margin != nil {
		o.has_margin, o.margin_ns = true, nanos(*s.margin)
	}
	var h C.lh_lock
	n, nn := cstr(name)
	err = takeError(C.lh_lock_open(store.h, n, nn, &o, &h))
	runtime.KeepAlive(store)
	runtime.KeepAlive(name)
	if err != nil {
		return nil, err
	}
	l := &Lock{h: h, store: store, name: name}
	runtime.SetFinalizer(l, func(l *Lock) { C.lh_error_free(C.lh_lock_free(l.h)) })
	return l, nil
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// Close frees the lock (holds of it go on until they end). A second Close fails ErrClosed.
func (l *Lock) Close() error {
	runtime.SetFinalizer(l, nil)
	err := takeError(C.lh_lock_free(l.h))
	runtime.KeepAlive(l)
	return err
}

// Hold waits in line for key (LOCK-01), then runs fn holding it: the lease
// is renewed in the background where the store needs it (LOCK-06) and
// released when fn returns, fails or panics (LOCK-11). If ctx ends while
// waiting, Hold fails ErrCancelled and leaves the line; the option Wait (or
// the lock's) bounds the wait with ErrWaitTimeout (LOCK-18).
//
// If the lease is lost while fn runs, fn's ctx is cancelled with cause
// ErrLost (LOCK-09), and Hold fails ErrLost even if fn succeeded; fn's own
// error stays reachable with errors.Is / errors.As (LOCK-10).
func (l *Lock) Hold(ctx context.Context, key string, fn HeldFunc, opts ...Option) error {
	if fn == nil {
		return newError(CodeInvalidArgument, "Hold: a nil function")
	}
	s, err := collect("Hold", opts, "Wait")
	if err != nil {
		return err
	}
	// Options only when given (what C reads escapes: a call without them
	// costs no allocation).
	var callOpts *C.lh_call_options
	if s.wait != nil {
		callOpts = &C.lh_call_options{has_wait: true, wait_ns: nanos(*s.wait)}
	}
	// The hold's state in one allocation: the held function's ctx, the
	// lease and its C holding. Its waiter serves the begin, the loss
	// callback (registered by the begin: one C call) and the end.
	held := &heldKey{ctx: heldCtx{parent: ctx, what: "lease"}}
	w := takeWaiter()
	w.held.Store(&held.ctx)
	p := startCallOn(ctx, w)
	k, kn := cstr(key)
	o, err := p.wait(p.ready() && bool(C.lh_lock_begin_watched_async(l.h, k, kn, callOpts, p.token, lostFn, w.user(), doneFn, p.user(), p.now())))
	runtime.KeepAlive(l)
	runtime.KeepAlive(key)
	if err != nil {
		// No holding: no loss callback comes.
		w.held.Store(nil)
		w.give()
		return err
	}
	return l.run(held, w, true, key, C.lh_holding{id: C.uint64_t(o.handle)}, uint64(o.fence), fn)
}

// TryHold runs fn holding key if the key is free now, never waiting in
// line (LOCK-17): (false, nil) and nothing runs when another holder has it.
// Otherwise it is Hold, without the wait; ctx ending while the store has not
// answered (a server store reconnecting) fails it ErrCancelled.
func (l *Lock) TryHold(ctx context.Context, key string, fn HeldFunc) (bool, error) {
	if fn == nil {
		return false, newError(CodeInvalidArgument, "TryHold: a nil function")
	}
	w := takeWaiter()
	p := startCallOn(ctx, w)
	k, kn := cstr(key)
	o, err := p.wait(p.ready() && bool(C.lh_lock_try_begin_async(l.h, k, kn, p.token, doneFn, p.user(), p.now())))
	runtime.KeepAlive(l)
	runtime.KeepAlive(key)
	if err != nil || !bool(o.held) {
		w.give()
		return false, err
	}
	held := &heldKey{ctx: heldCtx{parent: ctx, what: "lease"}}
	w.held.Store(&held.ctx)
	return true, l.run(held, w, false, key, C.lh_holding{id: C.uint64_t(o.handle)}, uint64(o.fence), fn)
}

// heldKey is the state of one hold of a key, in one allocation: the held
// function's ctx, the lease and its C holding.
type heldKey struct {
	ctx   heldCtx
	lease Lease
	kept  heldLease
}

// run runs fn holding h under held.ctx, and ends the hold however fn ends;
// w is the hold's waiter, with held.ctx on it, and watched says whether
// the begin registered the loss callback (runHeld).
func (l *Lock) run(held *heldKey, w *waiter, watched bool, key string, h C.lh_holding, fence uint64, fn HeldFunc) error {
	// The lock, and so its store, stay alive (no finalizer closes them) until the hold ended.
	defer runtime.KeepAlive(l)
	held.kept.c = leaseHold{h}
	held.lease = Lease{Fence: fence, Name: key, held: &held.kept}
	return runHeld(&held.ctx, &held.kept, w, watched, func(ctx context.Context) error { return fn(ctx, &held.lease) })
}
