package locks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

func connect(t *testing.T, url string, opts ...Option) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store, err := Connect(ctx, url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// LOCK-06 on the server store: a 1 s lease is renewed in the background
// while the function runs for 2.5 s; LOCK-01: a second holder waits meanwhile.
func TestServerLock06RenewsWhileHeld(t *testing.T) {
	url := startServer(t)
	a, b := connect(t, url), connect(t, url)
	la, _ := OpenLock(a, "summaries", TTL(time.Second))
	lb, _ := OpenLock(b, "summaries", TTL(time.Second))
	err := la.Hold(context.Background(), "chat-1", func(ctx context.Context, lease *Lease) error {
		if lease.Fence == 0 {
			t.Error("no fence")
		}
		held, err := lb.TryHold(ctx, "chat-1", func(context.Context, *Lease) error { return nil })
		if held || err != nil {
			t.Errorf("LOCK-17 over the server: held %v, err %v", held, err)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(2500 * time.Millisecond):
		}
		if left, ok := lease.Remaining(); !ok || left <= 0 || left > time.Second {
			t.Errorf("remaining %v %v", left, ok)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// LOCK-12, LOCK-09, LOCK-10 on the server store: revoked at maxHold, the
// function's ctx ends with cause ErrLost and Hold fails ErrLost. How long
// it took is logged; a loss that never comes fails after 30 s (a hang).
func TestServerLock12MaxHoldIsALoss(t *testing.T) {
	store := connect(t, startServer(t))
	lock, err := OpenLock(store, "l", TTL(time.Second), MaxHold(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = lock.Hold(context.Background(), "k", func(ctx context.Context, lease *Lease) error {
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
			t.Error("no loss within 30 s")
		}
		if !errors.Is(context.Cause(ctx), ErrLost) {
			t.Errorf("cause %v", context.Cause(ctx))
		}
		return nil
	})
	if !errors.Is(err, ErrLost) {
		t.Fatalf("got %v, want ErrLost", err)
	}
	t.Logf("LOCK-12: revoked after %v (maxHold 1 s)", time.Since(start))
}

// LOCK-14: a read-only token may not hold, nothing is granted; a bad token
// is refused at connect.
func TestServerLock14ReadOnlyTokenMayNotHold(t *testing.T) {
	url := startServer(t, "--tokens", tokensFile(t))
	ctx := context.Background()
	if _, err := Connect(ctx, url, Token("wrong")); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("bad token: %v", err)
	}
	if _, err := Connect(ctx, url); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("no token: %v", err)
	}
	reader := connect(t, url, Token("reader-token"))
	lock, _ := OpenLock(reader, "l")
	ran := false
	nothing := func(context.Context, *Lease) error { ran = true; return nil }
	if err := lock.Hold(ctx, "k", nothing); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("Hold: %v", err)
	}
	if held, err := lock.TryHold(ctx, "k", nothing); held || !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("TryHold: %v %v", held, err)
	}
	if _, _, err := reader.TryLock(ctx, "m", time.Minute); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("TryLock: %v", err)
	}
	if ran {
		t.Fatal("a read-only hold ran its function")
	}
	writer := connect(t, url, Token("writer-token"))
	wl, _ := OpenLock(writer, "l")
	if held, err := wl.TryHold(ctx, "k", func(context.Context, *Lease) error { return nil }); !held || err != nil {
		t.Fatalf("writer: %v %v (the reader's attempts left something behind?)", held, err)
	}
}

// WHO-01, WHO-02 on the server store: Holder answers nil for a free key,
// and for a held one the identity its holder connected with, its fence and
// how many wait; a read-only connection may ask. A store connected without
// an identity is known as hostname:pid.
func TestServerWho02HolderNamesTheIdentity(t *testing.T) {
	url := startServer(t, "--tokens", tokensFile(t))
	ctx := context.Background()
	writer := connect(t, url, Token("writer-token"), Identity("billing-3"))
	other := connect(t, url, Token("writer-token"))
	reader := connect(t, url, Token("reader-token"))
	wl, _ := OpenLock(writer, "who", TTL(5*time.Second))
	ol, _ := OpenLock(other, "who", TTL(5*time.Second))
	rl, _ := OpenLock(reader, "who")
	if h, err := rl.Holder(ctx, "k"); h != nil || err != nil {
		t.Fatalf("a free key: %+v %v", h, err)
	}
	waiting := make(chan error, 1)
	err := wl.Hold(ctx, "k", func(ctx context.Context, lease *Lease) error {
		go func() {
			waiting <- ol.Hold(context.Background(), "k", func(context.Context, *Lease) error { return nil })
		}()
		deadline := time.Now().Add(10 * time.Second)
		for {
			h, err := rl.Holder(ctx, "k")
			if err != nil {
				return err
			}
			if h == nil || h.Identity != "billing-3" || h.Fence != lease.Fence {
				t.Fatalf("held by billing-3 at fence %d, Holder says %+v", lease.Fence, h)
			}
			if !h.HasExpiry || h.ExpiresIn > 5*time.Second {
				t.Errorf("expiry: %+v", h)
			}
			if h.Waiting == 1 {
				return nil
			}
			if time.Now().After(deadline) {
				t.Fatalf("the waiter never showed: %+v", h)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	err = ol.Hold(ctx, "k", func(ctx context.Context, lease *Lease) error {
		h, err := rl.Holder(ctx, "k")
		want := fmt.Sprintf("%s:%d", host, os.Getpid())
		if err != nil || h == nil || h.Identity != want {
			t.Errorf("held by %s, Holder says %+v %v", want, h, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// LOCK-18 and MANUAL-* on the server store: a cancelled wait leaves the
// line; manual leases take turns.
func TestServerLock18CancelAndManualLeases(t *testing.T) {
	url := startServer(t)
	ctx := context.Background()
	a, b := connect(t, url), connect(t, url)
	first, held, err := a.TryLock(ctx, "batch", 10*time.Second)
	if !held || err != nil {
		t.Fatal(held, err)
	}
	waiting, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(waiting, "batch", 10*time.Second); !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if err := first.Extend(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lease, err := b.Lock(ctx, "batch", 10*time.Second)
		if err == nil && lease.Fence <= first.Fence {
			err = errors.New("the fence did not grow")
		}
		if err == nil {
			err = lease.Unlock(ctx)
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// Connect: a URL that is not a store's fails ErrInvalidArgument; a ctx
// that ends while connecting fails ErrCancelled.
func TestServerConnectErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Connect(ctx, "http://127.0.0.1:1"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad URL: %v", err)
	}
	if _, err := Connect(ctx, "leasehold://127.0.0.1:1", TTL(time.Second)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an option Connect does not take: %v", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Connect(done, "leasehold://127.0.0.1:1"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("done ctx: %v", err)
	}
}
