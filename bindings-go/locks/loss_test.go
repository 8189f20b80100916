//go:build leasehold_testing

package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// storeOnClock is an embedded store with the options o on a new virtual
// clock, closed when the test ends.
func storeOnClock(t *testing.T, o MemoryOptions) (*Store, *VirtualClock) {
	clock := NewVirtualClock()
	o.Clock = clock
	store := MemoryWith(o)
	t.Cleanup(func() { _ = store.Close() })
	return store, clock
}

// virtualStore is an embedded store whose leases run out unless renewed,
// on a virtual clock, as the server store's do on real time.
func virtualStore(t *testing.T) (*Store, *VirtualClock) {
	return storeOnClock(t, MemoryOptions{Renewal: true})
}

// LOCK-09, LOCK-10, LOCK-12: a lease revoked at maxHold cancels the function's
// ctx with cause ErrLost; Hold fails ErrLost although the function succeeded.
func TestLock09LossCancelsTheCtxWithErrLost(t *testing.T) {
	store, clock := virtualStore(t)
	lock, err := OpenLock(store, "l", TTL(3*time.Second), MaxHold(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var cause error
	started, done := holdInBackground(context.Background(), lock, "k", func(ctx context.Context, lease *Lease) error {
		<-ctx.Done()
		cause = context.Cause(ctx)
		return nil
	})
	lost := within(t, "the grant", started)
	if err := clock.Advance(11*time.Second, advancePause); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if !errors.Is(cause, ErrLost) {
		t.Fatalf("the ctx's cause is %v, not ErrLost", cause)
	}
	if !errors.Is(err, ErrLost) {
		t.Fatalf("Hold answered %v after a loss, not ErrLost", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Reason != Revoked || lost.LossReason() != Revoked || !lost.Lost() {
		t.Fatalf("the loss is not told as revoked: %v, %q", err, lost.LossReason())
	}
}

// LOCK-10: after a loss, the function's own error stays reachable from ErrLost.
func TestLock10TheFunctionsOwnErrorIsKept(t *testing.T) {
	store, clock := virtualStore(t)
	lock, err := OpenLock(store, "l", TTL(time.Second), MaxHold(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	own := errors.New("the summary was late")
	started, done := holdInBackground(context.Background(), lock, "k", func(ctx context.Context, lease *Lease) error {
		<-ctx.Done()
		return own
	})
	within(t, "the grant", started)
	if err := clock.Advance(2*time.Second, advancePause); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if !errors.Is(err, ErrLost) || !errors.Is(err, own) {
		t.Fatalf("got %v: want ErrLost with the function's error", err)
	}
	// Without a loss, the function's error comes back unchanged.
	err = lock.Hold(context.Background(), "k", func(context.Context, *Lease) error { return own })
	if err != own {
		t.Fatalf("got %v, want the function's own error", err)
	}
}

// LOCK-05: a lease that ran out is never renewed; holding again is a new, larger fence.
func TestLock05HoldingAgainAfterALossIsANewFence(t *testing.T) {
	store, clock := virtualStore(t)
	lock, err := OpenLock(store, "l", TTL(time.Second), MaxHold(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	started, done := holdInBackground(context.Background(), lock, "k", func(ctx context.Context, lease *Lease) error {
		<-ctx.Done()
		return nil
	})
	first := within(t, "the grant", started).Fence
	if err := clock.Advance(2*time.Second, advancePause); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrLost) {
		t.Fatal(err)
	}
	held, err := lock.TryHold(context.Background(), "k", func(ctx context.Context, lease *Lease) error {
		if lease.Fence <= first {
			t.Errorf("fence %d after %d", lease.Fence, first)
		}
		return nil
	})
	if !held || err != nil {
		t.Fatal(held, err)
	}
}

// LOCK-06: while the function runs, renewals keep the lease well past its ttl.
func TestLock06RenewedWhileTheFunctionRuns(t *testing.T) {
	store, clock := virtualStore(t)
	lock, err := OpenLock(store, "l", TTL(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started, done := holdInBackground(context.Background(), lock, "k", func(ctx context.Context, l *Lease) error {
		<-release
		return ctx.Err()
	})
	lease := within(t, "the grant", started)
	if err := clock.Advance(30*time.Second, advancePause); err != nil {
		t.Fatal(err)
	}
	if lease.Lost() {
		t.Fatalf("lost after renewals: %s", lease.LossReason())
	}
	if left, ok := lease.Remaining(); !ok || left <= 0 || left > 3*time.Second {
		t.Fatalf("remaining %v %v", left, ok)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
