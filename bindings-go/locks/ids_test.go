//go:build leasehold_testing

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

// openIDs is store.IDs(name, opts...) that must succeed, closed when t ends.
func openIDs(t *testing.T, store *Store, name string, opts ...Option) *IDGenerator {
	t.Helper()
	ids, err := store.IDs(context.Background(), name, opts...)
	if err != nil {
		t.Fatalf("IDs(%q): %v", name, err)
	}
	t.Cleanup(func() { _ = ids.Close() })
	return ids
}

// openIDsRetrying opens a generator, retrying while every slot is held
// (ErrNotReady) for at most 10 s.
func openIDsRetrying(store *Store, name string, opts ...Option) (*IDGenerator, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids, err := store.IDs(context.Background(), name, opts...)
		if !errors.Is(err, ErrNotReady) || time.Now().After(deadline) {
			return ids, err
		}
		// A generator dropped unclosed holds its slot until its finalizer ran.
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}

// increasing fails t unless ids strictly increase (IDGEN-03).
func increasing(t *testing.T, what string, ids []uint64) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("IDGEN-03 %s: ID %d (%d) is not above ID %d (%d)", what, i, ids[i], i-1, ids[i-1])
		}
	}
}

// unique fails t if two of the batches share an ID (IDGEN-01).
func unique(t *testing.T, batches [][]uint64) int {
	t.Helper()
	seen := make(map[uint64]int)
	for b, ids := range batches {
		for _, id := range ids {
			if other, dup := seen[id]; dup {
				t.Fatalf("IDGEN-01: ID %d issued by generators %d and %d", id, other, b)
			}
			seen[id] = b
		}
	}
	return len(seen)
}

// idgen01 runs workers generators of one namespace of fewer slots in
// goroutines, each closing its generator and opening a new one between
// rounds (a new one may get a slot another just released, above the floor
// it passed on), taking IDs with Next, NextWait and NextInto: every ID of
// every generator is unique (IDGEN-01) and each generator's strictly
// increase (IDGEN-03).
func idgen01(t *testing.T, store *Store, opts ...Option) {
	const workers, rounds, perRound = 6, 4, 3000
	opts = append([]Option{Limit(3)}, opts...)
	var wg sync.WaitGroup
	batches := make([][]uint64, workers*rounds)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				got, err := idgen01Round(store, opts, perRound, r)
				if err != nil {
					errs <- fmt.Errorf("worker %d round %d: %w", w, r, err)
					return
				}
				batches[w*rounds+r] = got
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, b := range batches {
		increasing(t, fmt.Sprintf("generator %d", i), b)
	}
	if n := unique(t, batches); n != workers*rounds*perRound {
		t.Fatalf("%d unique IDs, want %d", n, workers*rounds*perRound)
	}
}

// idgen01Round opens a generator, takes n IDs from it and closes it
// (round 3 of each worker drops it unclosed, for the finalizer to free).
func idgen01Round(store *Store, opts []Option, n, round int) ([]uint64, error) {
	ids, err := openIDsRetrying(store, "idgen-01", opts...)
	if err != nil {
		return nil, err
	}
	parts := func(id uint64) error {
		p, err := ids.Layout().Parts(id)
		if err == nil && p.Node != ids.Node() {
			err = fmt.Errorf("ID %d carries node %d, the generator's is %d", id, p.Node, ids.Node())
		}
		return err
	}
	got := make([]uint64, 0, n)
	buf := make([]uint64, 100)
	ctx := context.Background()
	for len(got) < n {
		switch len(got) % 3 {
		case 0:
			id, err := ids.NextWait(ctx)
			if err != nil {
				return nil, err
			}
			got = append(got, id)
		case 1:
			id, err := ids.Next()
			if errors.Is(err, ErrNotReady) {
				continue
			}
			if err != nil {
				return nil, err
			}
			got = append(got, id)
		default:
			k, err := ids.NextInto(buf[:min(len(buf), n-len(got))])
			if errors.Is(err, ErrNotReady) {
				continue
			}
			if err != nil {
				return nil, err
			}
			got = append(got, buf[:k]...)
		}
	}
	if err := parts(got[len(got)-1]); err != nil {
		return nil, err
	}
	if round == 3 {
		// Freed by the finalizer: sealed, released in the background.
		return got, nil
	}
	return got, ids.Close()
}

// IDGEN-01, IDGEN-03 on the embedded store.
func TestIdgen01UniqueAcrossGeneratorsEmbedded(t *testing.T) {
	store := Memory()
	defer store.Close()
	idgen01(t, store)
}

// IDGEN-01, IDGEN-03 on a server store process.
func TestServerIdgen01UniqueAcrossGenerators(t *testing.T) {
	idgen01(t, connect(t, startServer(t)), TTL(2*time.Second))
}

// idgen03 shares one generator between goroutines: each goroutine's IDs
// strictly increase (IDGEN-03), all are unique, and each carries the
// generator's node and a timestamp within its lease.
func idgen03(t *testing.T, store *Store) {
	ids := openIDs(t, store, "idgen-03", Offset(5), Limit(8), OwnerKey("orders"))
	if ids.Node() < 5 || ids.Node() >= 13 || ids.Layout() != DefaultLayout {
		t.Fatalf("node %d, layout %+v", ids.Node(), ids.Layout())
	}
	if ids.Owner().Key() != "orders" || ids.Owner().Instance() == "" || ids.Namespace() != "idgen-03" {
		t.Fatalf("owner %+v, namespace %q", ids.Owner(), ids.Namespace())
	}
	lease := ids.Lease()
	if lease == nil || lease.Node() != ids.Node() || lease.Owner() != ids.Owner() || lease.Fence() == 0 {
		t.Fatalf("lease %+v", lease)
	}
	defer lease.Close()
	if ids.LastIssued() != 0 || ids.Lost() || ids.LossReason() != NotLost {
		t.Fatalf("before the first ID: last issued %d, lost %v", ids.LastIssued(), ids.Lost())
	}
	const goroutines, each = 4, 5000
	batches := make([][]uint64, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(batches[g]) < each {
				id, err := ids.NextWait(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				batches[g] = append(batches[g], id)
			}
		}()
	}
	wg.Wait()
	for g, b := range batches {
		increasing(t, fmt.Sprintf("goroutine %d", g), b)
	}
	unique(t, batches)
	var largest uint64
	for _, b := range batches {
		largest = max(largest, b[len(b)-1])
	}
	p, err := ids.Layout().Parts(largest)
	if err != nil {
		t.Fatal(err)
	}
	if p.Node != ids.Node() || p.TimestampMs <= lease.Floor() || p.TimestampMs > ids.Lease().Ceiling() {
		t.Fatalf("IDGEN-02: parts %+v, lease floor %d", p, lease.Floor())
	}
	if last := ids.LastIssued(); last < p.TimestampMs {
		t.Fatalf("last issued %d, below the last ID's timestamp %d", last, p.TimestampMs)
	}
}

// IDGEN-03 on the embedded store.
func TestIdgen03StrictlyIncreasingEmbedded(t *testing.T) {
	store := Memory()
	defer store.Close()
	idgen03(t, store)
}

// IDGEN-03 on a server store process.
func TestServerIdgen03StrictlyIncreasing(t *testing.T) {
	idgen03(t, connect(t, startServer(t)))
}

// idgen04 issues far ahead of the store's clock, then hands the slot on:
// a first generator with a large MaxLead issues with NextInto until
// ErrNotReady (its lease's ceiling, which each renewal moves on), and closes, passing its last tick on as
// the floor; a second one with no lead finds the floor ahead of the
// store's clock: Next fails ErrNotReady (retryable), and NextWait returns,
// above every ID of the first, once the store's clock passed the floor
// (IDGEN-04, IDGEN-01).
func idgen04(t *testing.T, store *Store) {
	opts := []Option{Limit(1), TTL(time.Second), Tolerance(500 * time.Millisecond)}
	first := openIDs(t, store, "idgen-04", append(opts, MaxLead(time.Minute))...)
	buf := make([]uint64, 1<<20)
	var last uint64
	for {
		n, err := first.NextInto(buf)
		if errors.Is(err, ErrNotReady) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if buf[0] <= last {
			t.Fatalf("IDGEN-03: batch starts at %d, after %d", buf[0], last)
		}
		last = buf[n-1]
	}
	ahead, _ := first.Layout().Parts(last)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := openIDsRetrying(store, "idgen-04", append(opts, MaxLead(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if second.Lease().Floor() < ahead.TimestampMs {
		t.Fatalf("SLOT-05: floor %d, below the last tick issued %d", second.Lease().Floor(), ahead.TimestampMs)
	}
	_, err = second.Next()
	var e *Error
	if !errors.Is(err, ErrNotReady) || !errors.As(err, &e) || e.Code != CodeNotReady {
		t.Fatalf("Next with the floor ahead: %v, want ErrNotReady", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := second.NextWait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id <= last {
		t.Fatalf("IDGEN-01: the second generator's %d is not above the first's %d", id, last)
	}
}

// IDGEN-04 (NotReady, the wait) on the embedded store.
func TestIdgen04NotReadyThenWaitEmbedded(t *testing.T) {
	store := Memory()
	defer store.Close()
	idgen04(t, store)
}

// IDGEN-04 (NotReady, the wait) on a server store process.
func TestServerIdgen04NotReadyThenWait(t *testing.T) {
	idgen04(t, connect(t, startServer(t)))
}

// IDGEN-04: a layout whose time range was used up long ago: every call
// fails ErrOverflow, the waiting one too, at once.
func idgen04Overflow(t *testing.T, store *Store) {
	layout := CustomLayout(4, 10, 12)
	layout.EpochMs = 1_000_000_000_000 // 2001: 16 ms of ticks ran out long ago
	ids := openIDs(t, store, "idgen-04-overflow", Layout(layout))
	if _, err := ids.Next(); !errors.Is(err, ErrOverflow) {
		t.Fatalf("Next: %v, want ErrOverflow", err)
	}
	if _, err := ids.NextInto(make([]uint64, 4)); !errors.Is(err, ErrOverflow) {
		t.Fatalf("NextInto: %v, want ErrOverflow", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ids.NextWait(ctx); !errors.Is(err, ErrOverflow) {
		t.Fatalf("NextWait: %v, want ErrOverflow", err)
	}
}

// IDGEN-04 (Overflow) on the embedded store.
func TestIdgen04OverflowEmbedded(t *testing.T) {
	store := Memory()
	defer store.Close()
	idgen04Overflow(t, store)
}

// IDGEN-04 (Overflow) on a server store process.
func TestServerIdgen04Overflow(t *testing.T) {
	idgen04Overflow(t, connect(t, startServer(t)))
}

// IDGEN-04 on a virtual clock that stands still: with no lead, one tick's
// sequence used up, Next fails ErrNotReady and NextWait waits; a ctx that
// ends gives the wait up (ErrCancelled, with the ctx's cause), and once
// the clock moves the wait returns the next tick's first ID.
func TestIdgen04CancelNextWait(t *testing.T) {
	store, clock := slotStore(t)
	layout := DefaultLayout
	layout.EpochMs = 1_700_000_000_000 // before the virtual clock's origin (2024)
	ids := openIDs(t, store, "idgen-04-wait", Layout(layout), MaxLead(0))
	buf := make([]uint64, 5000)
	issued := 0
	for {
		n, err := ids.NextInto(buf)
		if errors.Is(err, ErrNotReady) {
			if issued > 0 {
				break
			}
			// The floor's tick is the store's now: the first ID comes at the next.
			if err := clock.Advance(time.Millisecond, advancePause); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		issued += n
	}
	if per := 1 << layout.SequenceBits; issued != per {
		t.Fatalf("one tick issued %d IDs, its sequence holds %d", issued, per)
	}
	if _, err := ids.Next(); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Next: %v, want ErrNotReady", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := ids.NextWait(ctx); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NextWait past its ctx: %v, want ErrCancelled and DeadlineExceeded", err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := ids.NextWait(done); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("NextWait with an ended ctx: %v", err)
	}
	got := make(chan error, 1)
	var id uint64
	go func() {
		var err error
		id, err = ids.NextWait(context.Background())
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("NextWait returned (%v) while the clock stood still", err)
	case <-time.After(30 * time.Millisecond):
	}
	if err := clock.Advance(time.Millisecond, advancePause); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("NextWait did not return once the clock moved")
	}
	p, err := layout.Parts(id)
	if err != nil || p.Sequence != 0 || id <= buf[0] {
		t.Fatalf("the waited ID %d: parts %+v, %v", id, p, err)
	}
}

// ERR-03 and ERR-01 codes through the binding: bad layouts and options,
// use after Close (ErrLost; a second Close does nothing), nil receivers
// and contexts, a closed store, a layout the namespace was not first used with.
func TestIdgenErr03BadInput(t *testing.T) {
	ctx := context.Background()
	store := Memory()
	for _, bad := range []IDLayout{
		CustomLayout(0, 10, 12),
		CustomLayout(42, 10, 12),
		{TimeBits: 41, NodeBits: 10, SequenceBits: 12},
		{TimeBits: 41, NodeBits: 10, SequenceBits: 12, TickMs: 3_600_001},
	} {
		if _, err := store.IDs(ctx, "err-03", Layout(bad)); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("layout %+v: %v, want ErrInvalidArgument", bad, err)
		}
		if _, err := bad.Parts(1); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Parts of layout %+v: %v, want ErrInvalidArgument", bad, err)
		}
	}
	for _, c := range []struct {
		opts []Option
		want error
	}{
		{[]Option{Limit(1025)}, ErrInvalidArgument},                                // 10 node bits hold 1024
		{[]Option{Layout(JSSafeLayout), Offset(60), Limit(5)}, ErrInvalidArgument}, // 6 hold 64
		{[]Option{MaxLead(-time.Second)}, ErrInvalidTTL},
		{[]Option{TTL(time.Millisecond)}, ErrInvalidTTL},
		{[]Option{OwnerKey("")}, ErrEmptyName},
		{[]Option{Margin(time.Second)}, ErrInvalidArgument}, // not an option of IDs
		{[]Option{{}}, ErrInvalidArgument},
	} {
		if _, err := store.IDs(ctx, "err-03", c.opts...); !errors.Is(err, c.want) {
			t.Fatalf("options %v: %v, want %v", c.opts, err, c.want)
		}
	}
	if _, err := store.IDs(ctx, "", Limit(1)); !errors.Is(err, ErrEmptyName) {
		t.Fatalf("empty name: %v", err)
	}
	if _, err := store.IDs(nil, "err-03"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil ctx: %v", err)
	}
	ids := openIDs(t, store, "err-03", Layout(JSSafeLayout))
	if _, err := store.IDs(ctx, "err-03", Layout(SecondsLayout)); !errors.Is(err, ErrNamespaceMismatch) {
		t.Fatalf("another layout: %v, want ErrNamespaceMismatch", err)
	}
	id, err := ids.Next()
	if err != nil || id >= 1<<53 {
		t.Fatalf("a JS-safe ID: %d, %v", id, err)
	}
	if _, err := ids.NextWait(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("NextWait(nil): %v", err)
	}
	if n, err := ids.NextInto(nil); n != 0 || err != nil {
		t.Fatalf("NextInto(nil): %d, %v", n, err)
	}
	if err := ids.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ids.Close(); err != nil {
		t.Fatalf("a second Close: %v, want nil", err)
	}
	if _, err := ids.Next(); !errors.Is(err, ErrLost) {
		t.Fatalf("Next after Close: %v, want ErrLost", err)
	}
	if _, err := ids.NextInto(make([]uint64, 2)); !errors.Is(err, ErrLost) {
		t.Fatalf("NextInto after Close: %v, want ErrLost", err)
	}
	if _, err := ids.NextWait(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("NextWait after Close: %v, want ErrLost", err)
	}
	var none *IDGenerator
	if _, err := none.Next(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil Next: %v", err)
	}
	if _, err := none.NextInto(make([]uint64, 1)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil NextInto: %v", err)
	}
	if _, err := none.NextWait(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil NextWait: %v", err)
	}
	if err := none.Close(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil Close: %v", err)
	}
	var noStore *Store
	if _, err := noStore.IDs(ctx, "err-03"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil store: %v", err)
	}
	// A generator whose store closes under it: lost (Closed), its Close fails ErrLost.
	open := openIDs(t, store, "err-03-open")
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := open.Next(); !errors.Is(err, ErrLost) {
		t.Fatalf("Next after the store closed: %v, want ErrLost", err)
	}
	if !open.Lost() || open.LossReason() != Closed {
		t.Fatalf("lost %v, reason %q", open.Lost(), open.LossReason())
	}
	if err := open.Close(); !errors.Is(err, ErrLost) {
		t.Fatalf("Close after the store closed: %v, want ErrLost", err)
	}
	if _, err := store.IDs(ctx, "err-03"); !errors.Is(err, ErrClosed) {
		t.Fatalf("IDs on a closed store: %v, want ErrClosed", err)
	}
}

// The layouts are the core's: their splits, and Parts inverting an ID.
func TestIdgenLayouts(t *testing.T) {
	for _, c := range []struct {
		l       IDLayout
		t, n, s uint8
		tickMs  uint32
	}{
		{DefaultLayout, 41, 10, 12, 1},
		{JSSafeLayout, 41, 6, 6, 1},
		{SecondsLayout, 31, 10, 22, 1000},
		{CustomLayout(40, 8, 15), 40, 8, 15, 1},
	} {
		if c.l.TimeBits != c.t || c.l.NodeBits != c.n || c.l.SequenceBits != c.s || c.l.TickMs != c.tickMs || c.l.EpochMs != DefaultLayout.EpochMs {
			t.Fatalf("layout %+v", c.l)
		}
	}
	if DefaultLayout.EpochMs != 1_767_225_600_000 {
		t.Fatalf("the default epoch %d", DefaultLayout.EpochMs)
	}
	id := uint64(5)<<22 | uint64(3)<<12 | 7
	p, err := DefaultLayout.Parts(id)
	if err != nil || p != (IDParts{Tick: 5, TimestampMs: DefaultLayout.EpochMs + 5, Node: 3, Sequence: 7}) {
		t.Fatalf("parts %+v, %v", p, err)
	}
	p, err = SecondsLayout.Parts(uint64(2)<<32 | 1)
	if err != nil || p.Tick != 2 || p.TimestampMs != SecondsLayout.EpochMs+2000 || p.Sequence != 1 {
		t.Fatalf("seconds parts %+v, %v", p, err)
	}
}
