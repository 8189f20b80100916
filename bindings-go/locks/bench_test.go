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

// benchIDs opens a generator on the embedded store in the default layout,
// with a lead of up to an hour (TTL and MaxLead of 1 h), so that a
// benchmark measures the call rather than the layout's cap of 4,096 IDs
// per millisecond per node (beyond which Next fails ErrNotReady).
func benchIDs(b *testing.B) *IDGenerator {
	store := Memory()
	b.Cleanup(func() { _ = store.Close() })
	ids, err := store.IDs(context.Background(), "bench-ids", Layout(DefaultLayout), TTL(time.Hour), MaxLead(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ids.Close() })
	return ids
}

// One ID per op through Next (one cgo call), layout 41/10/12 ms.
func BenchmarkIDsNext(b *testing.B) {
	ids := benchIDs(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ids.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// 1,024 IDs per op through NextInto (one cgo call per batch), layout
// 41/10/12 ms; ns/id is the cost of one ID.
func BenchmarkIDsNextInto(b *testing.B) {
	ids := benchIDs(b)
	buf := make([]uint64, 1024)
	total := 0
	b.ReportAllocs()
	for b.Loop() {
		n, err := ids.NextInto(buf)
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/id")
}
