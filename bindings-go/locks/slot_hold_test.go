//go:build leasehold_testing

package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// slotStore is an embedded store on a virtual clock, for slots: leases
// expire, and a held slot's renewals run, when the test moves the clock.
func slotStore(t *testing.T) (*Store, *VirtualClock) {
	return storeOnClock(t, MemoryOptions{})
}

// mustHold is a Hold that must get a slot and end without error.
func mustHold(t *testing.T, slots *Slots, owner Owner, fn HeldSlotFunc, opts ...Option) {
	t.Helper()
	ran, err := slots.Hold(context.Background(), owner, fn, opts...)
	if !ran || err != nil {
		t.Fatalf("Hold for %s: ran %v, err %v", owner.Key(), ran, err)
	}
}

// waitDone waits for the held function's ctx to end and answers its cause.
func waitDone(t *testing.T, ctx context.Context) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(5 * time.Second):
		t.Fatal("the held function's ctx was not cancelled")
	}
	return nil
}

// advanceRenewed moves the clock by step (at most the TTL/3) n times, each
// time until the held slot's renewal shows (at most 5 s of real time): a
// step no longer than TTL/3 never passes the holder's deadline, however late
// the core's renewal task runs.
func advanceRenewed(t *testing.T, clock *VirtualClock, held *HeldSlot, n int, step time.Duration) {
	t.Helper()
	for range n {
		before := held.Lease().ExpiresAt()
		if err := clock.Advance(step, advancePause); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); held.Lease().ExpiresAt() <= before && !held.Lost(); {
			if time.Now().After(deadline) {
				t.Fatalf("no renewal %v after %d", step, before)
			}
			time.Sleep(time.Millisecond)
		}
		if held.Lost() {
			t.Fatalf("lost while renewed: %q", held.LossReason())
		}
	}
}

// SLOT-04, SLOT-05: a held slot is renewed in the background across several
// TTLs (same fence, later expiry, the ceiling moving on), and the end of the
// hold releases it with the largest timestamp issued: the next holder's floor.
func TestSlot05HeldSlotIsRenewedAndHandsOnItsIssued(t *testing.T) {
	store, clock := slotStore(t)
	slots := openSlots(t, store, "held-ids", Limit(2), TTL(3*time.Second), Offset(100))
	var kept *HeldSlot
	var first *SlotLease
	mustHold(t, slots, newOwner(t, "orders"), func(ctx context.Context, held *HeldSlot) error {
		kept = held
		first = held.Lease()
		if held.Slot() != 1 || held.Node() != 101 || held.Fence() != first.Fence() || held.Floor() != first.Floor() ||
			held.Ceiling() != first.Ceiling() || held.Namespace() != "held-ids" || held.Owner().Key() != "orders" {
			t.Fatalf("held slot %d node %d fence %d floor %d ceiling %d; lease %d %d %d %d %d",
				held.Slot(), held.Node(), held.Fence(), held.Floor(), held.Ceiling(),
				first.Slot(), first.Node(), first.Fence(), first.Floor(), first.Ceiling())
		}
		if held.Lost() || held.LossReason() != NotLost || held.LastIssued() != 0 {
			t.Fatalf("lost %v (%q), last issued %d", held.Lost(), held.LossReason(), held.LastIssued())
		}
		advanceRenewed(t, clock, held, 10, time.Second)
		if held.Lost() || ctx.Err() != nil {
			t.Fatalf("lost after renewals: %q, ctx %v", held.LossReason(), context.Cause(ctx))
		}
		now := held.Lease()
		if now.Fence() != first.Fence() || now.Slot() != first.Slot() || now.ExpiresAt() < first.ExpiresAt()+9000 ||
			held.Ceiling() <= first.Ceiling() || held.Ceiling() != now.Ceiling() {
			t.Fatalf("after 10 s: fence %d expiry %d ceiling %d; first %d %d %d",
				now.Fence(), now.ExpiresAt(), held.Ceiling(), first.Fence(), first.ExpiresAt(), first.Ceiling())
		}
		if again := held.Lease(); again != now {
			t.Fatalf("an unrenewed lease is handed out anew")
		}
		if left := held.Remaining(); left <= 0 || left > 3*time.Second {
			t.Fatalf("remaining %v", left)
		}
		held.Issued(first.Floor() + 7)
		held.Issued(first.Floor() + 3)
		if held.LastIssued() != first.Floor()+7 {
			t.Fatalf("last issued %d, want %d", held.LastIssued(), first.Floor()+7)
		}
		return nil
	}, Preferred(1))
	// After the hold: as at the end, and nothing more recorded.
	kept.Issued(first.Ceiling())
	if kept.Lost() || kept.Remaining() != 0 || kept.LastIssued() != first.Floor()+7 || kept.Lease().Fence() != first.Fence() {
		t.Fatalf("after the hold: lost %v, remaining %v, last issued %d", kept.Lost(), kept.Remaining(), kept.LastIssued())
	}
	next := mustAcquire(t, slots, newOwner(t, "billing"), Preferred(1))
	if next.Floor() != first.Floor()+7 || next.Fence() <= first.Fence() {
		t.Fatalf("SLOT-05: the next floor %d, want %d (fence %d after %d)", next.Floor(), first.Floor()+7, next.Fence(), first.Fence())
	}
}

// SLOT-01: holding when every slot is held runs nothing, and is no error.
func TestSlot01HoldWhenExhaustedRunsNothing(t *testing.T) {
	store, _ := slotStore(t)
	slots := openSlots(t, store, "one", Limit(1))
	mustAcquire(t, slots, newOwner(t, "a"))
	ran, err := slots.Hold(context.Background(), newOwner(t, "b"), func(context.Context, *HeldSlot) error {
		t.Error("the function ran with every slot held")
		return nil
	})
	if ran || err != nil {
		t.Fatalf("exhausted: ran %v, err %v", ran, err)
	}
}

// LOCK-09 for a held slot: released behind its holder's back, the slot is
// lost at the next renewal (ttl/3 later): the function's ctx is cancelled
// with cause ErrLost, and Hold fails ErrLost although the function succeeded.
func TestSlotHoldLock09LossCancelsTheCtxWithErrLost(t *testing.T) {
	store, clock := slotStore(t)
	slots := openSlots(t, store, "lost", Limit(1), TTL(3*time.Second))
	var cause error
	var kept *HeldSlot
	ran, err := slots.Hold(context.Background(), newOwner(t, "a"), func(ctx context.Context, held *HeldSlot) error {
		kept = held
		released, err := slots.Release(ctx, held.Lease(), 0)
		if !released || err != nil {
			t.Fatalf("the release behind the holder's back: %v %v", released, err)
		}
		if err := clock.Advance(1500*time.Millisecond, advancePause); err != nil {
			t.Fatal(err)
		}
		cause = waitDone(t, ctx)
		if !held.Lost() || held.LossReason() != Unknown || held.Remaining() != 0 {
			t.Errorf("held: lost %v (%q), remaining %v", held.Lost(), held.LossReason(), held.Remaining())
		}
		return nil
	})
	if !ran {
		t.Fatal("the function did not run")
	}
	if !errors.Is(cause, ErrLost) {
		t.Fatalf("the ctx's cause is %v, not ErrLost", cause)
	}
	var e *Error
	if !errors.Is(err, ErrLost) || !errors.As(err, &e) || e.Reason != Unknown {
		t.Fatalf("Hold answered %v after a loss, not ErrLost (unknown)", err)
	}
	if !kept.Lost() || kept.LossReason() != Unknown {
		t.Fatalf("after the hold: lost %v (%q)", kept.Lost(), kept.LossReason())
	}
	// The slot is free: the release behind the back let it go.
	mustAcquire(t, slots, newOwner(t, "b"))
}

// LOCK-09 for a held slot: closing the store loses it (reason closed) by
// the time Close returns, and Hold fails ErrLost.
func TestSlotHoldLock09StoreCloseLosesTheSlot(t *testing.T) {
	store, _ := slotStore(t)
	slots := openSlots(t, store, "closing", Limit(1))
	ran, err := slots.Hold(context.Background(), newOwner(t, "a"), func(ctx context.Context, held *HeldSlot) error {
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		if !held.Lost() || held.LossReason() != Closed {
			t.Errorf("after Close: lost %v (%q)", held.Lost(), held.LossReason())
		}
		if cause := waitDone(t, ctx); !errors.Is(cause, ErrLost) {
			t.Errorf("the cause is %v", cause)
		}
		return nil
	})
	var e *Error
	if !ran || !errors.Is(err, ErrLost) || !errors.As(err, &e) || e.Reason != Closed {
		t.Fatalf("ran %v, err %v: want ErrLost (closed)", ran, err)
	}
}

// LOCK-10 for a held slot: after a loss, the function's own error stays
// reachable from ErrLost; without one, it comes back unchanged and the slot
// is released.
func TestSlotHoldLock10TheFunctionsOwnErrorIsKept(t *testing.T) {
	store, clock := slotStore(t)
	slots := openSlots(t, store, "own", Limit(1), TTL(3*time.Second))
	own := errors.New("the batch was not written")
	ran, err := slots.Hold(context.Background(), newOwner(t, "a"), func(ctx context.Context, held *HeldSlot) error {
		if _, err := slots.Release(ctx, held.Lease(), 0); err != nil {
			t.Fatal(err)
		}
		if err := clock.Advance(1500*time.Millisecond, advancePause); err != nil {
			t.Fatal(err)
		}
		waitDone(t, ctx)
		return own
	})
	if !ran || !errors.Is(err, ErrLost) || !errors.Is(err, own) {
		t.Fatalf("ran %v, got %v: want ErrLost with the function's error", ran, err)
	}
	ran, err = slots.Hold(context.Background(), newOwner(t, "a"), func(context.Context, *HeldSlot) error { return own })
	if !ran || err != own {
		t.Fatalf("ran %v, got %v, want the function's own error", ran, err)
	}
	mustAcquire(t, slots, newOwner(t, "b"))
}

// LOCK-11 for a held slot: a panicking function releases the slot, and the panic goes on.
func TestSlotHoldLock11PanicReleasesTheSlot(t *testing.T) {
	store, _ := slotStore(t)
	slots := openSlots(t, store, "panic", Limit(1))
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v", r)
			}
		}()
		_, _ = slots.Hold(context.Background(), newOwner(t, "a"), func(context.Context, *HeldSlot) error { panic("boom") })
	}()
	mustAcquire(t, slots, newOwner(t, "b"))
}

// A ctx cancelled from outside while the function runs is not a loss: the
// function's ctx ends with the outer cause, and Hold answers the function's
// error. A ctx done before the call runs nothing (ErrCancelled).
func TestSlotHoldOuterCancellationIsNotALoss(t *testing.T) {
	store, _ := slotStore(t)
	slots := openSlots(t, store, "outer", Limit(1))
	ctx, cancel := context.WithCancel(context.Background())
	ran, err := slots.Hold(ctx, newOwner(t, "a"), func(ctx context.Context, held *HeldSlot) error {
		cancel()
		if cause := waitDone(t, ctx); !errors.Is(cause, context.Canceled) || errors.Is(cause, ErrLost) {
			t.Errorf("the cause is %v", cause)
		}
		if held.Lost() {
			t.Error("an outer cancellation lost the slot")
		}
		return ctx.Err()
	})
	if !ran || !errors.Is(err, context.Canceled) || errors.Is(err, ErrLost) {
		t.Fatalf("ran %v, err %v", ran, err)
	}
	ran, err = slots.Hold(ctx, newOwner(t, "a"), func(context.Context, *HeldSlot) error {
		t.Error("the function ran with a done ctx")
		return nil
	})
	if ran || !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a done ctx: ran %v, err %v", ran, err)
	}
	mustAcquire(t, slots, newOwner(t, "b"))
}

// The holder's deadline is the send time + TTL − Margin (a tenth of the TTL
// by default); a Margin not below half the TTL fails ErrInvalidTTL.
func TestSlotHoldMargin(t *testing.T) {
	store, _ := slotStore(t)
	remaining := func(opts ...Option) time.Duration {
		slots := openSlots(t, store, "margin", append([]Option{TTL(10 * time.Second)}, opts...)...)
		var left time.Duration
		mustHold(t, slots, newOwner(t, "a"), func(_ context.Context, held *HeldSlot) error {
			left = held.Remaining()
			return nil
		})
		return left
	}
	if left := remaining(); left != 9*time.Second {
		t.Fatalf("the default margin leaves %v", left)
	}
	if left := remaining(Margin(2 * time.Second)); left != 8*time.Second {
		t.Fatalf("a 2 s margin leaves %v", left)
	}
	for _, bad := range []Option{Margin(5 * time.Second), Margin(-time.Second)} {
		if _, err := store.Slots("margin", TTL(10*time.Second), bad); !errors.Is(err, ErrInvalidTTL) {
			t.Errorf("Margin %v: %v", bad, err)
		}
	}
}

// ERR-01, ERR-03: bad input to Hold fails with its code, and nothing runs.
func TestSlotHoldBadInputFailsWithItsCode(t *testing.T) {
	store := Memory()
	slots := openSlots(t, store, "bad", Limit(2))
	owner := newOwner(t, "a")
	never := func(context.Context, *HeldSlot) error {
		t.Error("the function ran")
		return nil
	}
	var noCtx context.Context
	for _, c := range []struct {
		what string
		err  error
		want error
	}{
		{what: "a nil function", err: func() error { _, err := slots.Hold(context.Background(), owner, nil); return err }(), want: ErrInvalidArgument},
		{what: "a nil ctx", err: func() error { _, err := slots.Hold(noCtx, owner, never); return err }(), want: ErrInvalidArgument},
		{what: "a zero Owner", err: func() error { _, err := slots.Hold(context.Background(), Owner{}, never); return err }(), want: ErrEmptyName},
		{what: "Preferred = limit", err: func() error {
			_, err := slots.Hold(context.Background(), owner, never, Preferred(2))
			return err
		}(), want: ErrInvalidArgument},
		{what: "an option Hold does not take", err: func() error {
			_, err := slots.Hold(context.Background(), owner, never, Limit(2))
			return err
		}(), want: ErrInvalidArgument},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.err, c.want)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if ran, err := slots.Hold(context.Background(), owner, never); ran || !errors.Is(err, ErrClosed) {
		t.Fatalf("on a closed store: %v %v", ran, err)
	}
}

// A hold on a server store process, end to end: renewed on the server's
// real clock past its TTL, exhausting the namespace while it lasts, handing
// what it issued to the next holder (SLOT-05); then a slot released behind
// its holder's back is lost (LOCK-09) at the next renewal.
func TestServerSlotHoldEndToEnd(t *testing.T) {
	store := connect(t, startServer(t))
	slots := openSlots(t, store, "served", Limit(1), TTL(time.Second))
	var first *SlotLease
	mustHold(t, slots, newOwner(t, "a"), func(ctx context.Context, held *HeldSlot) error {
		first = held.Lease()
		ran, err := slots.Hold(ctx, newOwner(t, "b"), func(context.Context, *HeldSlot) error { return nil })
		if ran || err != nil {
			t.Errorf("SLOT-01 while held: ran %v, err %v", ran, err)
		}
		time.Sleep(1600 * time.Millisecond)
		now := held.Lease()
		if held.Lost() || ctx.Err() != nil || now.Fence() != first.Fence() || now.ExpiresAt() <= first.ExpiresAt() {
			t.Fatalf("after 1.6 s of a 1 s ttl: lost %v (%q), fence %d / %d, expiry %d / %d",
				held.Lost(), held.LossReason(), now.Fence(), first.Fence(), now.ExpiresAt(), first.ExpiresAt())
		}
		held.Issued(first.Floor() + 5)
		return nil
	})
	next := mustAcquire(t, slots, newOwner(t, "c"))
	if next.Floor() != first.Floor()+5 {
		t.Fatalf("SLOT-05 on the server: floor %d, want %d", next.Floor(), first.Floor()+5)
	}
	mustRelease(t, slots, next, next.Floor())

	ran, err := slots.Hold(context.Background(), newOwner(t, "d"), func(ctx context.Context, held *HeldSlot) error {
		if released, err := slots.Release(ctx, held.Lease(), 0); !released || err != nil {
			t.Fatalf("the release behind the holder's back: %v %v", released, err)
		}
		if cause := waitDone(t, ctx); !errors.Is(cause, ErrLost) {
			t.Errorf("the cause is %v", cause)
		}
		return nil
	})
	if !ran || !errors.Is(err, ErrLost) {
		t.Fatalf("ran %v, err %v: want ErrLost", ran, err)
	}
}
