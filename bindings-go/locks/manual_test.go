//go:build leasehold_testing

package locks

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// MANUAL-01, MANUAL-05, MANUAL-07: TryLock answers at once, not reentrant, with a fence.
func TestManual01TryLockAnswersAtOnce(t *testing.T) {
	ctx := context.Background()
	store := Memory()
	defer store.Close()
	lease, held, err := store.TryLock(ctx, "catalog-refresh", time.Minute)
	if err != nil || !held || lease.Fence == 0 {
		t.Fatalf("lease %v, held %v, err %v", lease, held, err)
	}
	again, held, err := store.TryLock(ctx, "catalog-refresh", time.Minute)
	if again != nil || held || err != nil {
		t.Fatalf("the same caller got it twice: %v %v %v", again, held, err)
	}
	if _, _, err := store.TryLock(ctx, "", time.Minute); !errors.Is(err, ErrEmptyName) {
		t.Fatalf("MANUAL-05 empty name: %v", err)
	}
	for _, bad := range []time.Duration{0, -time.Second, 999 * time.Millisecond, 2 * time.Hour} {
		if _, _, err := store.TryLock(ctx, "x", bad); !errors.Is(err, ErrInvalidTTL) {
			t.Fatalf("MANUAL-05 ttl %v: %v", bad, err)
		}
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	next, held, err := store.TryLock(ctx, "catalog-refresh", time.Minute)
	if err != nil || !held || next.Fence <= lease.Fence {
		t.Fatalf("MANUAL-07: fence %v after %d (%v)", next, lease.Fence, err)
	}
}

// MANUAL-02: Lock waits and is woken by the release; its wait is bounded by
// ctx (ErrCancelled) or by Wait (ErrWaitTimeout).
func TestManual02LockWaitsForTheRelease(t *testing.T) {
	ctx := context.Background()
	store := Memory()
	defer store.Close()
	first, _, _ := store.TryLock(ctx, "batch", time.Minute)
	waiting, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := store.Lock(waiting, "batch", time.Minute); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("bounded by ctx: %v", err)
	}
	if _, err := store.Lock(ctx, "batch", time.Minute, Wait(20*time.Millisecond)); !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("bounded by Wait: %v", err)
	}
	if _, err := store.Lock(ctx, "batch", time.Minute, TTL(time.Second)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an option Lock does not take: %v", err)
	}
	got := make(chan *Lease, 1)
	go func() {
		lease, err := store.Lock(ctx, "batch", time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- lease
	}()
	time.Sleep(30 * time.Millisecond)
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case lease := <-got:
		if lease.Fence <= first.Fence {
			t.Fatalf("fence %d after %d", lease.Fence, first.Fence)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting Lock was not woken by the release")
	}
}

// MANUAL-03, MANUAL-04: Extend sets now + d; a lost lease fails ErrLost on
// Extend and on its first Unlock only, and leaves the newer holder alone.
func TestManual03ExtendAndManual04UnlockAfterALoss(t *testing.T) {
	ctx := context.Background()
	clock := NewVirtualClock()
	store := MemoryWith(MemoryOptions{Clock: clock})
	defer store.Close()
	lease, _, _ := store.TryLock(ctx, "x", time.Second)
	if err := lease.Extend(ctx, 0); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("Extend(0): %v", err)
	}
	if err := lease.Extend(ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := clock.Advance(2*time.Second, advancePause); err != nil {
		t.Fatal(err)
	}
	if _, held, _ := store.TryLock(ctx, "x", time.Second); held {
		t.Fatal("Extend did not set now + 3s")
	}
	if err := clock.Advance(2*time.Second, advancePause); err != nil {
		t.Fatal(err)
	}
	newer, held, err := store.TryLock(ctx, "x", time.Minute)
	if !held || err != nil {
		t.Fatalf("after the expiry: %v %v", held, err)
	}
	if err := lease.Extend(ctx, time.Minute); !errors.Is(err, ErrLost) {
		t.Fatalf("Extend of a lost lease: %v", err)
	}
	if err := lease.Unlock(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("first Unlock of a lost lease: %v", err)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
	if _, held, _ := store.TryLock(ctx, "x", time.Minute); held {
		t.Fatal("the lost lease's Unlock released the newer holder")
	}
	if err := newer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := newer.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after a confirmed release: %v", err)
	}
}

// MANUAL-06: one lease used from many goroutines at once.
func TestManual06OneLeaseManyGoroutines(t *testing.T) {
	ctx := context.Background()
	store := Memory()
	defer store.Close()
	lease, _, _ := store.TryLock(ctx, "x", time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- lease.Extend(ctx, time.Minute)
		}()
	}
	wg.Wait()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- lease.Unlock(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
