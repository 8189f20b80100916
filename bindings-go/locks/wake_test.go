package locks

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// A wait longer than the wait in C (a call in line behind a hold of
// 10 × waitInC) moves to the channel and still gets its outcome; more
// waiters than places to wait in C wait on their channels at once.
func TestWaitInCRunsOutToTheChannel(t *testing.T) {
	store := Memory()
	defer store.Close()
	lock, err := OpenLock(store, "wake")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	release := occupied(t, lock, "k")
	const waiters = 3 * maxWaitingInC
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- lock.Hold(context.Background(), "k", func(context.Context, *Lease) error { return nil })
		}()
	}
	time.Sleep(10 * waitInC)
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := waitingInC.Load(); n != 0 {
		t.Fatalf("%d goroutines still counted as waiting in C", n)
	}
}

// LOCK-18 while waiting in C: a ctx that ends within the wait in C ends
// the call (its token fired), ErrCancelled, without waiting out waitInC's
// bound or the holder.
func TestWaitInCEndsWithItsCtx(t *testing.T) {
	store := Memory()
	defer store.Close()
	lock, err := OpenLock(store, "wake-cancel")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	release := occupied(t, lock, "k")
	ctx, cancel := context.WithTimeout(context.Background(), waitInC/4)
	defer cancel()
	err = lock.Hold(ctx, "k", func(context.Context, *Lease) error { return nil })
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a Hold whose ctx ended in line: %v", err)
	}
	release()
}
