package locks

import (
	"context"
	"testing"
	"time"
)

// benchCycle measures Hold on one uncontended key: begin, the function, end.
func benchCycle(b *testing.B, store *Store) {
	lock, err := OpenLock(store, "bench", TTL(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	fn := func(context.Context, *Lease) error { return nil }
	for b.Loop() {
		if err := lock.Hold(ctx, "k", fn); err != nil {
			b.Fatal(err)
		}
	}
}

// The hold cycle through Go, on the embedded store and on a server store
// process (make bench-go runs it next to the same cycle in Rust).
func BenchmarkHoldCycle(b *testing.B) {
	b.Run("embedded", func(b *testing.B) {
		store := Memory()
		defer store.Close()
		benchCycle(b, store)
	})
	b.Run("server", func(b *testing.B) {
		store, err := Connect(context.Background(), startServer(b))
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		benchCycle(b, store)
	})
}
