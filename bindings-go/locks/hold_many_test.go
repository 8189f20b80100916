package locks

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// onEveryStore runs check on the embedded store and on a `leasehold serve`
// process, with two stores of it (two connections to the server; the
// embedded one twice), and the number of keys to ask for there: on the
// server store more than one HoldMany frame carries (511 keys).
func onEveryStore(t *testing.T, check func(t *testing.T, a, b *Store, many int)) {
	t.Run("embedded", func(t *testing.T) {
		store := Memory()
		t.Cleanup(func() { _ = store.Close() })
		check(t, store, store, 300)
	})
	t.Run("server", func(t *testing.T) {
		url := startServer(t)
		check(t, connect(t, url), connect(t, url), 1000)
	})
}

// manyKeys is n keys named for the test.
func manyKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return keys
}

// openLock is OpenLock, failing t on an error.
func openLock(t *testing.T, store *Store, name string, opts ...Option) *Lock {
	t.Helper()
	lock, err := OpenLock(store, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return lock
}

// mustBeFree takes every key of keys with lock within wait, as one HoldMany,
// and releases them: it fails t when one is still held by then.
func mustBeFree(t *testing.T, lock *Lock, keys []string, wait time.Duration) {
	t.Helper()
	err := lock.HoldMany(context.Background(), keys, func(context.Context, []*Lease) error { return nil }, Wait(wait))
	if err != nil {
		t.Fatalf("the keys are not free within %v: %v", wait, err)
	}
}

// LOCK-22: every key held at once, each its own lease (its own fence) in the
// order asked; while held another holder finds them held, and once HoldMany
// returned it takes each at once.
func TestLock22HoldManyHoldsEveryKeyInOrder(t *testing.T) {
	onEveryStore(t, func(t *testing.T, a, b *Store, many int) {
		keys := manyKeys("shard", many)
		lock, rival := openLock(t, a, "shards"), openLock(t, b, "shards")
		ran := false
		err := lock.HoldMany(context.Background(), keys, func(ctx context.Context, leases []*Lease) error {
			ran = true
			if len(leases) != len(keys) {
				t.Fatalf("%d leases for %d keys", len(leases), len(keys))
			}
			fences := make(map[uint64]bool, len(leases))
			for i, lease := range leases {
				if lease.Name != keys[i] {
					t.Fatalf("lease %d is of %q, not %q", i, lease.Name, keys[i])
				}
				if lease.Fence == 0 || fences[lease.Fence] {
					t.Fatalf("lease %d: fence %d is zero or another lease's", i, lease.Fence)
				}
				fences[lease.Fence] = true
				if lease.Lost() {
					t.Fatalf("lease %d is lost", i)
				}
			}
			for _, key := range []string{keys[0], keys[len(keys)/2], keys[len(keys)-1]} {
				held, err := rival.TryHold(ctx, key, func(context.Context, *Lease) error { return nil })
				if held || err != nil {
					t.Errorf("TryHold of %s while HoldMany holds it: held %v, err %v", key, held, err)
				}
			}
			return nil
		})
		if err != nil || !ran {
			t.Fatalf("HoldMany: ran %v, err %v", ran, err)
		}
		for _, key := range keys {
			held, err := rival.TryHold(context.Background(), key, func(context.Context, *Lease) error { return nil })
			if !held || err != nil {
				t.Fatalf("TryHold of %s after HoldMany: held %v, err %v", key, held, err)
			}
		}
		ran = false
		err = lock.HoldMany(context.Background(), nil, func(_ context.Context, leases []*Lease) error {
			ran = len(leases) == 0
			return nil
		})
		if err != nil || !ran {
			t.Fatalf("HoldMany of no keys: ran with none %v, err %v", ran, err)
		}
	})
}

// LOCK-22: all or none. One key is held elsewhere: HoldMany with a short
// Wait fails ErrWaitTimeout without running fn, and the other keys are free
// right after, long before any ttl could let them go.
func TestLock22HoldManyAllOrNone(t *testing.T) {
	onEveryStore(t, func(t *testing.T, a, b *Store, many int) {
		keys := manyKeys("shard", many)
		lock, rival := openLock(t, a, "shards"), openLock(t, b, "shards")
		blocked := keys[len(keys)/2]
		release := occupied(t, rival, blocked)
		defer release()
		err := lock.HoldMany(context.Background(), keys, func(context.Context, []*Lease) error {
			t.Error("fn ran without every key")
			return nil
		}, Wait(200*time.Millisecond))
		if !errors.Is(err, ErrWaitTimeout) {
			t.Fatalf("got %v, want ErrWaitTimeout", err)
		}
		others := make([]string, 0, len(keys)-1)
		for _, key := range keys {
			if key != blocked {
				others = append(others, key)
			}
		}
		// Released at once: within half the default 10 s ttl (a lease left
		// to run out would hold its key the whole ttl), or HoldMany fails
		// ErrWaitTimeout.
		mustBeFree(t, rival, others, 5*time.Second)
	})
}

// LOCK-22: a key named twice fails ErrInvalidArgument, an empty one
// ErrEmptyName, and nothing is held: every key is free at once.
func TestLock22HoldManyKeyNamedTwice(t *testing.T) {
	onEveryStore(t, func(t *testing.T, a, b *Store, _ int) {
		lock, rival := openLock(t, a, "shards"), openLock(t, b, "shards")
		never := func(context.Context, []*Lease) error {
			t.Error("fn ran on bad keys")
			return nil
		}
		err := lock.HoldMany(context.Background(), []string{"s1", "s2", "s1"}, never)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("a key named twice: got %v, want ErrInvalidArgument", err)
		}
		if err := lock.HoldMany(context.Background(), []string{"s1", ""}, never); !errors.Is(err, ErrEmptyName) {
			t.Fatalf("an empty key: got %v, want ErrEmptyName", err)
		}
		if err := lock.HoldMany(context.Background(), []string{"s1", "\xff"}, never); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("a key that is not UTF-8: got %v, want ErrInvalidArgument", err)
		}
		if err := lock.HoldMany(context.Background(), []string{"s1"}, nil); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("a nil function: got %v, want ErrInvalidArgument", err)
		}
		for _, key := range []string{"s1", "s2"} {
			held, err := rival.TryHold(context.Background(), key, func(context.Context, *Lease) error { return nil })
			if !held || err != nil {
				t.Fatalf("TryHold of %s after a refused HoldMany: held %v, err %v", key, held, err)
			}
		}
	})
}

// LOCK-22, LOCK-09, LOCK-10: the leases of a HoldMany revoked at their
// maxHold while fn waits: fn's ctx is cancelled with cause ErrLost, and
// HoldMany fails ErrLost with fn's own error kept as its cause.
func TestLock22HoldManyLossCancelsTheCtx(t *testing.T) {
	onEveryStore(t, func(t *testing.T, a, _ *Store, _ int) {
		lock := openLock(t, a, "shards", TTL(time.Second), MaxHold(1200*time.Millisecond))
		mine := errors.New("stopped by the loss")
		var cause error
		var held []*Lease
		err := lock.HoldMany(context.Background(), manyKeys("shard", 5), func(ctx context.Context, leases []*Lease) error {
			held = leases
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
			case <-time.After(10 * time.Second):
				t.Error("no loss within 10 s of a 1.2 s maxHold")
			}
			return mine
		})
		if !errors.Is(cause, ErrLost) {
			t.Fatalf("fn's ctx ended with %v, not ErrLost", cause)
		}
		if !errors.Is(err, ErrLost) || !errors.Is(err, mine) {
			t.Fatalf("HoldMany answered %v, want ErrLost with fn's error", err)
		}
		var e *Error
		if !errors.As(err, &e) || e.Reason != Revoked {
			t.Fatalf("the loss is not told as revoked: %v", err)
		}
		lost := 0
		for _, lease := range held {
			if lease.Lost() {
				lost++
			}
		}
		if lost == 0 {
			t.Fatal("no lease tells its loss after HoldMany")
		}
	})
}

// LOCK-22, LOCK-18: a ctx cancelled while HoldMany waits in line for one
// key fails it ErrCancelled (and the ctx's error), runs nothing and leaves
// every line: once the key's holder lets it go, nobody is granted it.
func TestLock22HoldManyCancelledCtxLeavesEveryLine(t *testing.T) {
	onEveryStore(t, func(t *testing.T, a, b *Store, many int) {
		keys := manyKeys("shard", many)
		lock, rival := openLock(t, a, "shards"), openLock(t, b, "shards")
		blocked := keys[0]
		release := occupied(t, rival, blocked)
		ctx, cancel := context.WithCancel(context.Background())
		gaveUp := make(chan error, 1)
		go func() {
			gaveUp <- lock.HoldMany(ctx, keys, func(context.Context, []*Lease) error {
				t.Error("fn ran without every key")
				return nil
			})
		}()
		time.Sleep(100 * time.Millisecond)
		cancel()
		err := <-gaveUp
		if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want ErrCancelled and context.Canceled", err)
		}
		// The give-up reaches the server store before the key is let go.
		time.Sleep(200 * time.Millisecond)
		release()
		held, err := rival.TryHold(context.Background(), blocked, func(context.Context, *Lease) error { return nil })
		if !held || err != nil {
			t.Fatalf("the key given up was granted on: held %v, err %v", held, err)
		}
		mustBeFree(t, rival, keys, 5*time.Second)
	})
}

// LOCK-22, LOCK-11: a panicking fn releases every key, and the panic goes on.
func TestLock22HoldManyPanicReleasesEveryKey(t *testing.T) {
	store := Memory()
	defer store.Close()
	lock := openLock(t, store, "shards")
	keys := manyKeys("shard", 3)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v", r)
			}
		}()
		_ = lock.HoldMany(context.Background(), keys, func(context.Context, []*Lease) error { panic("boom") })
	}()
	for _, key := range keys {
		held, err := lock.TryHold(context.Background(), key, func(context.Context, *Lease) error { return nil })
		if !held || err != nil {
			t.Fatalf("TryHold of %s after a panic: held %v, err %v", key, held, err)
		}
	}
}
