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
