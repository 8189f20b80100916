package locks

import (
	"context"
	"testing"
	"time"
)

// holdInBackground runs lock.Hold(key, fn) in a goroutine; the first channel
// gets the lease when fn starts, the second Hold's error.
func holdInBackground(ctx context.Context, lock *Lock, key string, fn HeldFunc) (<-chan *Lease, <-chan error) {
	started, done := make(chan *Lease, 1), make(chan error, 1)
	go func() {
		done <- lock.Hold(ctx, key, func(ctx context.Context, lease *Lease) error {
			started <- lease
			return fn(ctx, lease)
		})
	}()
	return started, done
}

// within is the lease ch gives, failing t if none comes within 5 s.
func within(t *testing.T, what string, ch <-chan *Lease) *Lease {
	t.Helper()
	select {
	case lease := <-ch:
		return lease
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not happen", what)
	}
	return nil
}

// newOwner is NewOwner(key), failing t on an error.
func newOwner(t *testing.T, key string) Owner {
	t.Helper()
	o, err := NewOwner(key)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// openSlots opens the namespace name, closed when t ends.
func openSlots(t *testing.T, store *Store, name string, opts ...Option) *Slots {
	t.Helper()
	slots, err := store.Slots(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slots.Close() })
	return slots
}

// mustAcquire is an Acquire that must lease a slot.
func mustAcquire(t *testing.T, slots *Slots, owner Owner, opts ...Option) *SlotLease {
	t.Helper()
	lease, leased, err := slots.Acquire(context.Background(), owner, opts...)
	if err != nil || !leased || lease == nil {
		t.Fatalf("Acquire for %s: lease %v, leased %v, err %v", owner.Key(), lease, leased, err)
	}
	if lease.Namespace() != slots.Name() || lease.Owner() != owner {
		t.Fatalf("the lease names %q / %v", lease.Namespace(), lease.Owner())
	}
	return lease
}

// mustRelease is a Release that must succeed.
func mustRelease(t *testing.T, slots *Slots, lease *SlotLease, lastIssued uint64) {
	t.Helper()
	released, err := slots.Release(context.Background(), lease, lastIssued)
	if err != nil || !released {
		t.Fatalf("Release: %v %v", released, err)
	}
}

// checkRemoteStore runs, on two stores of one remote store (etcd,
// PostgreSQL), what every store does: a held key that the other store's
// TryHold finds held, a manual lease, a slot and 100 IDs, with fences
// growing throughout (DIST-01, PG-01).
func checkRemoteStore(t *testing.T, store, other *Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var fences []uint64
	grew := func(what string, fence uint64) {
		t.Helper()
		if fence == 0 || (len(fences) > 0 && fence <= fences[len(fences)-1]) {
			t.Fatalf("%s: fence %d after %v", what, fence, fences)
		}
		fences = append(fences, fence)
	}

	lock, err := OpenLock(store, "summaries", TTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	rival, err := OpenLock(other, "summaries", TTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	err = lock.Hold(ctx, "chat-1", func(ctx context.Context, lease *Lease) error {
		ran = true
		grew("Hold", lease.Fence)
		held, err := rival.TryHold(ctx, "chat-1", func(context.Context, *Lease) error {
			t.Error("TryHold ran its function on a held key")
			return nil
		})
		if held || err != nil {
			t.Errorf("TryHold on a held key: held %v, err %v", held, err)
		}
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("Hold: ran %v, err %v", ran, err)
	}
	held, err := rival.TryHold(ctx, "chat-1", func(_ context.Context, lease *Lease) error {
		grew("TryHold after the release", lease.Fence)
		return nil
	})
	if !held || err != nil {
		t.Fatalf("TryHold on a released key: held %v, err %v", held, err)
	}

	manual, ok, err := store.TryLock(ctx, "batch", 2*time.Second)
	if !ok || err != nil {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	grew("TryLock", manual.Fence)
	if _, ok, err := other.TryLock(ctx, "batch", 2*time.Second); ok || err != nil {
		t.Fatalf("TryLock on a held name: %v %v", ok, err)
	}
	if err := manual.Extend(ctx, 3*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := manual.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	next, err := other.Lock(ctx, "batch", 2*time.Second, Wait(10*time.Second))
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	grew("Lock", next.Fence)
	if err := next.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}

	slots := openSlots(t, store, "nodes", Limit(4))
	slot := mustAcquire(t, slots, newOwner(t, "worker-a"))
	if slot.Slot() >= 4 {
		t.Fatalf("slot %d of 4", slot.Slot())
	}
	grew("Slots.Acquire", slot.Fence())
	mustRelease(t, slots, slot, 0)

	ids, err := store.IDs(ctx, "orders", Limit(4))
	if err != nil {
		t.Fatalf("IDs: %v", err)
	}
	defer ids.Close()
	var last uint64
	for i := 0; i < 100; i++ {
		id, err := ids.NextWait(ctx)
		if err != nil {
			t.Fatalf("NextWait: %v", err)
		}
		if id <= last {
			t.Fatalf("id %d after %d", id, last)
		}
		last = id
	}
}
