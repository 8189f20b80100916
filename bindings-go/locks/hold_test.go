package locks

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// LOCK-19: an embedded hold needs no renewal; the fence grows from hold to hold (LOCK-02).
func TestLock19EmbeddedHoldAndFence(t *testing.T) {
	store := Memory()
	defer store.Close()
	lock, err := OpenLock(store, "summaries", TTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	var fences []uint64
	for i := 0; i < 3; i++ {
		err := lock.Hold(context.Background(), "chat-1", func(ctx context.Context, lease *Lease) error {
			if lease.Lost() {
				return errors.New("lost at once")
			}
			if _, ok := lease.Remaining(); ok {
				return errors.New("an embedded lease without maxHold has no deadline")
			}
			fences = append(fences, lease.Fence)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !(fences[0] > 0 && fences[1] > fences[0] && fences[2] > fences[1]) {
		t.Fatalf("fences do not grow: %v", fences)
	}
}

// LOCK-09: a lease kept past its hold keeps what it was, as the core's
// lease says once its holder ended it: the same fence, not lost, no time
// left (where it had no deadline while held); the same for TryHold's and
// each of HoldMany's.
func TestLock09ALeaseReadAfterItsHoldEndedKeepsWhatItWas(t *testing.T) {
	store := Memory()
	defer store.Close()
	lock, err := OpenLock(store, "after")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	ctx := context.Background()
	var kept []*Lease
	keep := func(_ context.Context, lease *Lease) error {
		kept = append(kept, lease)
		return nil
	}
	if err := lock.Hold(ctx, "k", keep); err != nil {
		t.Fatal(err)
	}
	if held, err := lock.TryHold(ctx, "k", keep); err != nil || !held {
		t.Fatalf("TryHold: %v, %v", held, err)
	}
	err = lock.HoldMany(ctx, []string{"a", "b"}, func(_ context.Context, leases []*Lease) error {
		kept = append(kept, leases...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, lease := range kept {
		left, ok := lease.Remaining()
		if lease.Fence == 0 || lease.Lost() || lease.LossReason() != NotLost || left != 0 || !ok {
			t.Fatalf("lease %d after its hold: fence %d, lost %v (%q), remaining %v (%v)",
				i, lease.Fence, lease.Lost(), lease.LossReason(), left, ok)
		}
	}
}

// LOCK-01, LOCK-11: holders of one key take turns; each is released when its function returns.
func TestLock01OneHolderAtATime(t *testing.T) {
	store := Memory()
	defer store.Close()
	lock, err := OpenLock(store, "l")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	inside, most := 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				err := lock.Hold(context.Background(), "k", func(ctx context.Context, lease *Lease) error {
					mu.Lock()
					inside++
					most = max(most, inside)
					mu.Unlock()
					time.Sleep(100 * time.Microsecond)
					mu.Lock()
					inside--
					mu.Unlock()
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if most != 1 {
		t.Fatalf("%d holders at once", most)
	}
}

func ExampleLock_Hold() {
	store := Memory()
	defer store.Close()
	summaries, err := OpenLock(store, "summaries", TTL(30*time.Second))
	if err != nil {
		panic(err)
	}
	err = summaries.Hold(context.Background(), "chat-1", func(ctx context.Context, lease *Lease) error {
		fmt.Println("holding", lease.Name, "with a fence:", lease.Fence > 0)
		return nil
	})
	fmt.Println(err)
	// Output:
	// holding chat-1 with a fence: true
	// <nil>
}

// A store and lock reachable only through a Hold in progress are not
// finalized (closed) before the hold ends.
func TestHoldKeepsItsStoreAlive(t *testing.T) {
	lock, err := OpenLock(Memory(), "l")
	if err != nil {
		t.Fatal(err)
	}
	err = lock.Hold(context.Background(), "k", func(ctx context.Context, lease *Lease) error {
		for range 3 {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		if lease.Lost() || ctx.Err() != nil {
			return errors.New("the store was closed during the hold")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
