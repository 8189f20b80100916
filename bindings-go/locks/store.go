package locks

// #include "leasehold.h"
import "C"

import (
	"context"
	"runtime"
	"time"
)

// Store grants leases: the embedded store (Memory) or the server store
// (Connect). Safe for concurrent use. Close it when done; a finalizer
// closes a store that was dropped unclosed.
type Store struct {
	h C.lh_store
}

func newStore(h C.lh_store) *Store {
	s := &Store{h: h}
	runtime.SetFinalizer(s, func(s *Store) { C.lh_error_free(C.lh_store_close(s.h)) })
	return s
}

// Memory opens an embedded store in this process: its holders need no
// renewal, and its keys are let go when the function returns or the
// process ends (LOCK-19).
func Memory() *Store {
	var h C.lh_store
	if err := takeError(C.lh_store_memory(&h)); err != nil {
		panic("locks: the embedded store does not open: " + err.Error())
	}
	return newStore(h)
}

// Connect connects to the server store at url ("leasehold://host:port", or
// "leaseholds://" for TLS), with the options Token and CA. It blocks until
// connected, or until ctx ends (ErrCancelled).
func Connect(ctx context.Context, url string, opts ...Option) (*Store, error) {
	s, err := collect("Connect", opts, "Token", "CA")
	if err != nil {
		return nil, err
	}
	token := ""
	if s.token != nil {
		token = *s.token
	}
	var h C.lh_store
	err = withCancel(ctx, func(c C.lh_cancel) *C.lh_error {
		u, un := cstr(url)
		t, tn := cstr(token)
		ca, can := cbytes(s.caPEM)
		return C.lh_store_connect(u, un, t, tn, ca, can, c, &h)
	})
	if err != nil {
		return nil, err
	}
	return newStore(h), nil
}

// Close closes the store: every lease it gave ends, every waiting call fails
// ErrClosed, and later calls on it, its locks and its leases fail ErrClosed.
// A second Close fails ErrClosed.
func (s *Store) Close() error {
	runtime.SetFinalizer(s, nil)
	err := takeError(C.lh_store_close(s.h))
	runtime.KeepAlive(s)
	return err
}

// TryLock takes the manual lease name for ttl if nobody holds it, at once
// (MANUAL-01): (lease, true, nil), or (nil, false, nil) when another holder
// has it. The lease is renewed only by Extend; Unlock it when done.
func (s *Store) TryLock(ctx context.Context, name string, ttl time.Duration) (*Lease, bool, error) {
	var h C.lh_manual
	var held C.bool
	err := withCancel(ctx, func(c C.lh_cancel) *C.lh_error {
		n, nn := cstr(name)
		return C.lh_store_try_acquire(s.h, n, nn, nanos(ttl), c, &h, &held)
	})
	runtime.KeepAlive(s)
	if err != nil || !bool(held) {
		return nil, false, err
	}
	return newManualLease(s, name, h), true, nil
}

// Lock waits for the manual lease name (MANUAL-02), woken by the store's
// push where it pushes. ctx bounds the wait (ErrCancelled, which also
// errors.Is the ctx's cause), and so does the option Wait (ErrWaitTimeout);
// the ttl starts at the grant.
func (s *Store) Lock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lease, error) {
	o, err := collect("Store.Lock", opts, "Wait")
	if err != nil {
		return nil, err
	}
	hasWait, wait := C.bool(o.wait != nil), C.int64_t(0)
	if o.wait != nil {
		wait = nanos(*o.wait)
	}
	var h C.lh_manual
	err = withCancel(ctx, func(c C.lh_cancel) *C.lh_error {
		n, nn := cstr(name)
		return C.lh_store_acquire(s.h, n, nn, nanos(ttl), hasWait, wait, c, &h)
	})
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	return newManualLease(s, name, h), nil
}
