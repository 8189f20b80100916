//go:build leasehold_testing

package locks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"
)

func expectExhausted(t *testing.T, slots *Slots, owner Owner) {
	t.Helper()
	lease, leased, err := slots.Acquire(context.Background(), owner)
	if lease != nil || leased || err != nil {
		t.Fatalf("SLOT-01 exhausted: lease %v, leased %v, err %v", lease, leased, err)
	}
}

// slot01Order checks SLOT-01's order on store: the owner's held slot, the
// preferred one, the one its key held last, the lowest free; Exhausted.
func slot01Order(t *testing.T, store *Store) {
	slots := openSlots(t, store, "order-ids", Limit(4), Offset(100))
	orders := newOwner(t, "orders")
	a := mustAcquire(t, slots, orders)
	if a.Slot() != 0 || a.Node() != 100 || a.Fence() == 0 {
		t.Fatalf("the first lease: slot %d, node %d, fence %d", a.Slot(), a.Node(), a.Fence())
	}
	if !(a.Floor() < a.ExpiresAt() && a.ExpiresAt() < a.Ceiling()) {
		t.Fatalf("floor %d, expiry %d, ceiling %d", a.Floor(), a.ExpiresAt(), a.Ceiling())
	}
	// The slot this owner holds comes first, even before a preferred one.
	again := mustAcquire(t, slots, orders, Preferred(3))
	if again.Slot() != a.Slot() || again.Fence() != a.Fence() {
		t.Fatalf("the held slot came back as slot %d fence %d, not %d / %d", again.Slot(), again.Fence(), a.Slot(), a.Fence())
	}
	// The preferred slot when it is free.
	billing := newOwner(t, "billing")
	b := mustAcquire(t, slots, billing, Preferred(2))
	if b.Slot() != 2 || b.Fence() <= a.Fence() {
		t.Fatalf("preferred 2: slot %d, fence %d", b.Slot(), b.Fence())
	}
	mustRelease(t, slots, b, b.Floor())
	// A new process of the key (a new instance) gets the slot its key held last.
	billing2 := newOwner(t, "billing")
	if billing2.Instance() == billing.Instance() || billing2.Key() != billing.Key() {
		t.Fatalf("instances %q and %q", billing.Instance(), billing2.Instance())
	}
	b2 := mustAcquire(t, slots, billing2)
	if b2.Slot() != 2 || b2.Fence() <= b.Fence() {
		t.Fatalf("the key's last slot: slot %d, fence %d", b2.Slot(), b2.Fence())
	}
	// Otherwise the lowest free slot (a preferred slot that is held is skipped).
	c := mustAcquire(t, slots, newOwner(t, "audit"), Preferred(2))
	if c.Slot() != 1 {
		t.Fatalf("the lowest free slot is 1, got %d", c.Slot())
	}
	d := mustAcquire(t, slots, newOwner(t, "search"))
	if d.Slot() != 3 || d.Node() != 103 {
		t.Fatalf("the lowest free slot is 3, got %d (node %d)", d.Slot(), d.Node())
	}
	// Every slot held: Exhausted, an outcome and no error.
	expectExhausted(t, slots, newOwner(t, "export"))
}

// SLOT-01 on the embedded store.
func TestSlot01AcquireOrderEmbedded(t *testing.T) {
	store := Memory()
	defer store.Close()
	slot01Order(t, store)
}

// SLOT-01 on a server store process.
func TestServerSlot01AcquireOrder(t *testing.T) {
	store := connect(t, startServer(t))
	slot01Order(t, store)
	// An expired slot is free, on the server's real clock.
	slots := openSlots(t, store, "one", Limit(1), TTL(time.Second))
	a := mustAcquire(t, slots, newOwner(t, "a"))
	expectExhausted(t, slots, newOwner(t, "b"))
	time.Sleep(1200 * time.Millisecond)
	b := mustAcquire(t, slots, newOwner(t, "b"))
	if b.Slot() != 0 || b.Fence() <= a.Fence() {
		t.Fatalf("after the expiry: slot %d, fence %d after %d", b.Slot(), b.Fence(), a.Fence())
	}
}

// SLOT-01: an expired slot is free (the embedded store's virtual clock
// moved past the ttl); the new holder's floor covers the old ceiling, and
// the old lease renews and releases nothing.
func TestSlot01ExpiredSlotIsFree(t *testing.T) {
	ctx := context.Background()
	store, clock := slotStore(t)
	slots := openSlots(t, store, "one", Limit(1), TTL(time.Second), Tolerance(500*time.Millisecond))
	a := mustAcquire(t, slots, newOwner(t, "a"))
	if want := a.ExpiresAt() + 500; a.Ceiling() != want {
		t.Fatalf("ceiling %d, want expiry + tolerance %d", a.Ceiling(), want)
	}
	expectExhausted(t, slots, newOwner(t, "b"))
	if err := clock.Advance(2*time.Second, advancePause); err != nil {
		t.Fatal(err)
	}
	b := mustAcquire(t, slots, newOwner(t, "b"))
	if b.Slot() != 0 || b.Fence() <= a.Fence() || b.Floor() < a.Ceiling() {
		t.Fatalf("after the expiry: slot %d, fence %d, floor %d (old ceiling %d)", b.Slot(), b.Fence(), b.Floor(), a.Ceiling())
	}
	if renewed, ok, err := slots.Renew(ctx, a); renewed != nil || ok || err != nil {
		t.Fatalf("Renew of the expired lease: %v %v %v", renewed, ok, err)
	}
	if released, err := slots.Release(ctx, a, a.Ceiling()); released || err != nil {
		t.Fatalf("Release of the expired lease: %v %v", released, err)
	}
}

// SLOT-04 through the binding: a renewal keeps the slot and the fence, and
// its expiry does not move back; the old *SlotLease stays usable.
func TestSlotRenewKeepsTheFence(t *testing.T) {
	ctx := context.Background()
	store, clock := slotStore(t)
	slots := openSlots(t, store, "renewed", TTL(5*time.Second))
	a := mustAcquire(t, slots, newOwner(t, "a"))
	if err := clock.Advance(time.Second, advancePause); err != nil {
		t.Fatal(err)
	}
	r, ok, err := slots.Renew(ctx, a)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer r.Close()
	if r.Slot() != a.Slot() || r.Fence() != a.Fence() || r.ExpiresAt() != a.ExpiresAt()+1000 || r.Ceiling() <= a.Ceiling() {
		t.Fatalf("renewed: slot %d fence %d expiry %d ceiling %d; was %d %d %d %d",
			r.Slot(), r.Fence(), r.ExpiresAt(), r.Ceiling(), a.Slot(), a.Fence(), a.ExpiresAt(), a.Ceiling())
	}
	mustRelease(t, slots, a, a.Floor())
	if gone, ok, err := slots.Renew(ctx, r); gone != nil || ok || err != nil {
		t.Fatalf("Renew after the release: %v %v %v", gone, ok, err)
	}
}

// slot05Floors checks SLOT-05 on store: the next holder's floor is
// max(old floor, min(lastIssued, ceiling)); a stale lease releases nothing;
// releasing the same lease twice answers true and changes nothing.
func slot05Floors(t *testing.T, store *Store) {
	ctx := context.Background()
	slots := openSlots(t, store, "floors", Limit(1), TTL(10*time.Second), Tolerance(time.Second))

	// lastIssued below the ceiling: it becomes the next floor.
	a := mustAcquire(t, slots, newOwner(t, "a"))
	low := a.Floor() + 5
	if low >= a.Ceiling() {
		t.Fatalf("floor %d, ceiling %d", a.Floor(), a.Ceiling())
	}
	mustRelease(t, slots, a, low)
	// The same lease released again: true, and its higher lastIssued changes nothing.
	mustRelease(t, slots, a, a.Ceiling())
	b := mustAcquire(t, slots, newOwner(t, "b"))
	if want := max(a.Floor(), min(low, a.Ceiling())); b.Floor() != want {
		t.Fatalf("below the ceiling: floor %d, want %d", b.Floor(), want)
	}
	if b.Fence() <= a.Fence() {
		t.Fatalf("fence %d after %d", b.Fence(), a.Fence())
	}
	// A stale lease (someone else took the slot since) releases nothing.
	if released, err := slots.Release(ctx, a, a.Ceiling()); released || err != nil {
		t.Fatalf("stale Release: %v %v", released, err)
	}

	// lastIssued above the ceiling: the ceiling becomes the next floor.
	high := b.Ceiling() + 60_000
	mustRelease(t, slots, b, high)
	c := mustAcquire(t, slots, newOwner(t, "c"))
	if want := max(b.Floor(), min(high, b.Ceiling())); c.Floor() != want || want != b.Ceiling() {
		t.Fatalf("above the ceiling: floor %d, want %d", c.Floor(), want)
	}

	// lastIssued below the floor: the floor stays.
	mustRelease(t, slots, c, 1)
	d := mustAcquire(t, slots, newOwner(t, "d"))
	if d.Floor() != c.Floor() {
		t.Fatalf("below the floor: floor %d, want %d", d.Floor(), c.Floor())
	}
	// The older leases of the slot stay stale.
	for _, old := range []*SlotLease{a, b, c} {
		if released, err := slots.Release(ctx, old, math.MaxUint64); released || err != nil {
			t.Fatalf("stale Release of fence %d: %v %v", old.Fence(), released, err)
		}
	}
	mustRelease(t, slots, d, d.Floor())
}

// SLOT-05 on the embedded store.
func TestSlot05ReleaseSetsTheNextFloorEmbedded(t *testing.T) {
	store := Memory()
	defer store.Close()
	slot05Floors(t, store)
}

// SLOT-05 on a server store process.
func TestServerSlot05ReleaseSetsTheNextFloor(t *testing.T) {
	slot05Floors(t, connect(t, startServer(t)))
}

// SLOT-07: a frozen server store (SIGSTOP) makes each slot call fail
// Timeout within the namespace's timeout, recognised by IsTimeout; outcomes
// are not timeouts (Exhausted is false, NamespaceMismatch its own code),
// nor is a ctx that ends first (Cancelled).
func TestServerSlot07TimeoutOfAFrozenStore(t *testing.T) {
	ctx := context.Background()
	url, server := startServerProcess(t)
	store := connect(t, url)
	// The outcomes, with the default timeout (so that a slow machine does not time them out).
	slots := openSlots(t, store, "frozen", Limit(1))
	a := mustAcquire(t, slots, newOwner(t, "a"))
	lease, leased, err := slots.Acquire(ctx, newOwner(t, "b"))
	if lease != nil || leased || err != nil || IsTimeout(err) {
		t.Fatalf("Exhausted: %v %v %v", lease, leased, err)
	}
	wider := openSlots(t, store, "frozen", Limit(2))
	_, _, err = wider.Acquire(ctx, newOwner(t, "b"))
	if !errors.Is(err, ErrNamespaceMismatch) || IsTimeout(err) {
		t.Fatalf("NamespaceMismatch: %v (IsTimeout %v)", err, IsTimeout(err))
	}

	// The same namespace with a 300 ms timeout (not part of what SLOT-02 fixes), on a frozen server.
	// A timed-out call ends no sooner than its timeout; how much later is logged. The server
	// stays frozen until they ended: a call that waited for it would end only with hung's 30 s,
	// Cancelled, not Timeout.
	slots = openSlots(t, store, "frozen", Limit(1), Timeout(300*time.Millisecond))
	freeze(t, server)
	defer func() { _ = server.Signal(syscall.SIGCONT) }()
	hung, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	timedOut := func(what string, err error, took time.Duration) {
		t.Helper()
		var e *Error
		if !IsTimeout(err) || !errors.Is(err, ErrTimeout) || !errors.As(err, &e) || e.Code != CodeTimeout {
			t.Fatalf("%s on a frozen store: %v", what, err)
		}
		if !IsTimeout(fmt.Errorf("wrapped: %w", err)) {
			t.Fatalf("IsTimeout does not see through a wrap")
		}
		t.Logf("SLOT-07: %s timed out after %v (the timeout is 300ms)", what, took)
		if took < 250*time.Millisecond {
			t.Fatalf("%s timed out after %v, the timeout is 300ms", what, took)
		}
	}
	start := time.Now()
	_, _, err = slots.Acquire(hung, newOwner(t, "c"))
	timedOut("Acquire", err, time.Since(start))
	start = time.Now()
	_, _, err = slots.Renew(hung, a)
	timedOut("Renew", err, time.Since(start))
	start = time.Now()
	_, err = slots.Release(hung, a, a.Floor())
	timedOut("Release", err, time.Since(start))

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, _, err = slots.Acquire(short, newOwner(t, "c"))
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) || IsTimeout(err) {
		t.Fatalf("a ctx that ends first: %v", err)
	}

	if err := server.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Thawed, the store answers again. (What the timed-out calls did is
	// unknown to the caller: the server may have run them since.)
	after := openSlots(t, store, "after-thaw")
	for deadline := time.Now().Add(5 * time.Second); ; {
		_, leased, err := after.Acquire(ctx, newOwner(t, "d"))
		if err == nil && leased {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Acquire after SIGCONT: %v %v", leased, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ERR-01, ERR-03, SLOT-01: bad input to slot calls fails with its code,
// never a crash; NamespaceMismatch (SLOT-02) maps to ErrNamespaceMismatch.
// Wrong types do not compile in Go: their run-time forms are a zero Owner,
// a nil lease, a nil ctx, an option the call does not take.
func TestSlot01BadInputFailsWithItsCode(t *testing.T) {
	ctx := context.Background()
	store := Memory()
	check := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", what, err, want)
		}
		if IsTimeout(err) {
			t.Errorf("%s: IsTimeout(%v)", what, err)
		}
	}
	open := func(name string, opts ...Option) error {
		s, err := store.Slots(name, opts...)
		if err == nil {
			_ = s.Close()
		}
		return err
	}
	check("empty namespace", open(""), ErrEmptyName)
	check("invalid UTF-8 namespace", open("n\xff"), ErrInvalidArgument)
	check("huge namespace", open(strings.Repeat("n", 100_000)), ErrInvalidArgument)
	check("limit 0", open("n", Limit(0)), ErrInvalidArgument)
	check("limit 65537", open("n", Limit(65537)), ErrInvalidArgument)
	check("offset + limit overflow", open("n", Offset(math.MaxUint32)), ErrInvalidArgument)
	for _, bad := range []Option{TTL(999 * time.Millisecond), TTL(0), TTL(-time.Second), TTL(time.Hour + 1),
		Tolerance(-time.Second), Tolerance(time.Hour + 1), Timeout(0), Timeout(-time.Second)} {
		check("duration "+bad.name, open("n", bad), ErrInvalidTTL)
	}
	check("an option Slots does not take", open("n", Wait(time.Second)), ErrInvalidArgument)
	check("a zero option", open("n", Option{}), ErrInvalidArgument)
	for _, good := range [][]Option{{}, {Limit(1)}, {Limit(65536)}, {TTL(time.Second)}, {TTL(time.Hour)},
		{Tolerance(0)}, {Tolerance(time.Hour)}, {Offset(math.MaxUint32 - 1024)}, {Timeout(time.Millisecond)}} {
		check(fmt.Sprintf("%d good options", len(good)), open("n", good...), nil)
	}

	_, err := NewOwner("")
	check("empty owner key", err, ErrEmptyName)
	_, err = NewOwner("k\xc3\x28")
	check("invalid UTF-8 owner key", err, ErrInvalidArgument)
	_, err = NewOwner(strings.Repeat("k", 1025))
	check("huge owner key", err, ErrInvalidArgument)
	_, err = NewOwnerWithInstance("k", "")
	check("empty instance", err, ErrEmptyName)
	_, err = NewOwnerWithInstance("", "i")
	check("empty key with an instance", err, ErrEmptyName)
	_, err = NewOwnerWithInstance("k", strings.Repeat("i", 1025))
	check("huge instance", err, ErrInvalidArgument)
	fixed, err := NewOwnerWithInstance("k", "pod-7")
	if err != nil || fixed.Key() != "k" || fixed.Instance() != "pod-7" {
		t.Fatalf("NewOwnerWithInstance: %v %v", fixed, err)
	}

	slots := openSlots(t, store, "ids", Limit(4))
	owner := newOwner(t, "svc")
	acquire := func(ctx context.Context, owner Owner, opts ...Option) error {
		lease, leased, err := slots.Acquire(ctx, owner, opts...)
		if err != nil && (lease != nil || leased) {
			t.Errorf("a failed Acquire answered a lease")
		}
		return err
	}
	check("preferred = limit", acquire(ctx, owner, Preferred(4)), ErrInvalidArgument)
	check("preferred far outside", acquire(ctx, owner, Preferred(math.MaxUint32)), ErrInvalidArgument)
	check("zero Owner", acquire(ctx, Owner{}), ErrEmptyName)
	check("an option Acquire does not take", acquire(ctx, owner, Limit(4)), ErrInvalidArgument)
	var noCtx context.Context
	check("nil ctx", acquire(noCtx, owner), ErrInvalidArgument)
	done, cancel := context.WithCancel(ctx)
	cancel()
	err = acquire(done, owner)
	check("a ctx that ended", err, ErrCancelled)
	check("a ctx that ended (its cause)", err, context.Canceled)
	_, _, err = slots.Renew(ctx, nil)
	check("Renew of a nil lease", err, ErrInvalidArgument)
	_, err = slots.Release(ctx, nil, 0)
	check("Release of a nil lease", err, ErrInvalidArgument)

	lease := mustAcquire(t, slots, owner)
	for _, other := range [][]Option{{Limit(8)}, {Limit(4), Tolerance(2 * time.Second)}, {Limit(4), Offset(1)}} {
		mismatch := openSlots(t, store, "ids", other...)
		_, _, err := mismatch.Acquire(ctx, owner)
		check("NamespaceMismatch", err, ErrNamespaceMismatch)
	}

	check("close a lease", lease.Close(), nil)
	check("close a lease twice", lease.Close(), ErrClosed)
	_, _, err = slots.Renew(ctx, lease)
	check("Renew a closed lease", err, ErrClosed)
	_, err = slots.Release(ctx, lease, 0)
	check("Release a closed lease", err, ErrClosed)

	closing, err := store.Slots("closing")
	if err != nil {
		t.Fatal(err)
	}
	check("close the namespace", closing.Close(), nil)
	check("close the namespace twice", closing.Close(), ErrClosed)
	check("Acquire on a closed namespace", func() error { _, _, err := closing.Acquire(ctx, owner); return err }(), ErrClosed)

	check("close the store", store.Close(), nil)
	check("Acquire on a closed store", acquire(ctx, owner), ErrClosed)
	check("Slots of a closed store", open("n"), ErrClosed)
}
