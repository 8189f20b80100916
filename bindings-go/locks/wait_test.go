package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// occupied holds key of lock until the returned func is called.
func occupied(t *testing.T, lock *Lock, key string) func() {
	t.Helper()
	release := make(chan struct{})
	started, done := holdInBackground(context.Background(), lock, key, func(context.Context, *Lease) error {
		<-release
		return nil
	})
	within(t, "the first grant", started)
	return func() {
		close(release)
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// LOCK-17: TryHold on a held key answers false and runs nothing.
func TestLock17TryHoldRunsNothingWhenHeld(t *testing.T) {
	store := Memory()
	defer store.Close()
	lock, _ := OpenLock(store, "l")
	release := occupied(t, lock, "k")
	ran := false
	held, err := lock.TryHold(context.Background(), "k", func(context.Context, *Lease) error {
		ran = true
		return nil
	})
	if held || err != nil || ran {
		t.Fatalf("held %v, err %v, ran %v", held, err, ran)
	}
	release()
	held, err = lock.TryHold(context.Background(), "k", func(context.Context, *Lease) error {
		ran = true
		return nil
	})
	if !held || err != nil || !ran {
		t.Fatalf("on a free key: held %v, err %v, ran %v", held, err, ran)
	}
}

// LOCK-18: a ctx cancelled while Hold waits fails it ErrCancelled (and the
// ctx's own error) and leaves the line: the next holder is the one after it.
func TestLock18CancelledCtxLeavesTheLine(t *testing.T) {
	store := Memory()
	defer store.Close()
	lock, _ := OpenLock(store, "l")
	release := occupied(t, lock, "k")

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{}, 1)
	_, gaveUp := holdInBackground(ctx, lock, "k", func(context.Context, *Lease) error {
		ran <- struct{}{}
		return nil
	})
	time.Sleep(50 * time.Millisecond)
	cancel()
	err := <-gaveUp
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want ErrCancelled and context.Canceled", err)
	}

	deadline, stop := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer stop()
	err = lock.Hold(deadline, "k", func(context.Context, *Lease) error { return nil })
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want ErrCancelled and context.DeadlineExceeded", err)
	}
	err = lock.Hold(context.Background(), "k", func(context.Context, *Lease) error { return nil }, Wait(20*time.Millisecond))
	if !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("got %v, want ErrWaitTimeout", err)
	}
	bounded, _ := OpenLock(store, "l", Wait(20*time.Millisecond))
	if err := bounded.Hold(context.Background(), "k", func(context.Context, *Lease) error { return nil }); !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("the lock's Wait: got %v", err)
	}
	release()
	// Nobody is left in line: the key is free, and the cancelled holds never ran.
	held, err := lock.TryHold(context.Background(), "k", func(context.Context, *Lease) error { return nil })
	if !held || err != nil {
		t.Fatalf("after the give-ups: held %v, err %v", held, err)
	}
	if len(ran) != 0 {
		t.Fatal("a cancelled hold ran its function")
	}
	// A ctx already done never reaches the store.
	if err := lock.Hold(ctx, "k", func(context.Context, *Lease) error { return nil }); !errors.Is(err, ErrCancelled) {
		t.Fatalf("done ctx: %v", err)
	}
}

// LOCK-11: a panicking function releases the key, and the panic goes on.
func TestLock11PanicReleasesTheKey(t *testing.T) {
	store := Memory()
	defer store.Close()
	lock, _ := OpenLock(store, "l")
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v", r)
			}
		}()
		_ = lock.Hold(context.Background(), "k", func(context.Context, *Lease) error { panic("boom") })
	}()
	held, err := lock.TryHold(context.Background(), "k", func(context.Context, *Lease) error { return nil })
	if !held || err != nil {
		t.Fatalf("after a panic: held %v, err %v", held, err)
	}
}
