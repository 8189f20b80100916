package locks

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// lock21TTL is the ttl of LOCK-21's tests; lock21Bound is the contract's
// bound on Hold after the kill: the holder's deadline is at most ttl -
// margin (the default margin, a tenth of the ttl) after it (the grant or
// renewal it counts from was sent before the kill), and a Hold that waited
// for its release, or for the store, would end a ttl or a connect timeout
// (5 s) after that deadline. Half a ttl past the deadline tells the two
// apart and leaves a loaded machine's scheduling a second (the Rust test:
// server/tests/holder_engine.rs).
const (
	lock21TTL   = 2 * time.Second
	lock21Bound = lock21TTL - lock21TTL/10 + lock21TTL/2
)

// killServer kills the server process (SIGKILL) and answers when.
func killServer(t *testing.T, server *os.Process) time.Time {
	t.Helper()
	if err := server.Kill(); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// The function waits for the loss (its ctx is done with cause ErrLost)
// after a kill -9 of the server; Hold fails ErrLost by the holder's
// deadline (lock21Bound).
// LOCK-21
func TestLock21AKilledStoreFailsTheHoldAtTheDeadline(t *testing.T) {
	url, server := startServerProcess(t)
	store := connect(t, url)
	lock, err := OpenLock(store, "go-lock-21", TTL(lock21TTL))
	if err != nil {
		t.Fatal(err)
	}
	var killedAt time.Time
	var cause error
	err = lock.Hold(context.Background(), "k", func(ctx context.Context, lease *Lease) error {
		killedAt = killServer(t, server)
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(10 * time.Second):
			t.Error("the loss did not reach the function")
		}
		return nil
	})
	elapsed := time.Since(killedAt)
	if killedAt.IsZero() {
		t.Fatalf("the function did not run: %v", err)
	}
	if !errors.Is(cause, ErrLost) {
		t.Fatalf("the ctx's cause is %v, not ErrLost", cause)
	}
	if !errors.Is(err, ErrLost) {
		t.Fatalf("Hold answered %v after the kill, not ErrLost", err)
	}
	t.Logf("LOCK-21: Hold returned %v after the kill (bound %v)", elapsed, lock21Bound)
	if elapsed >= lock21Bound {
		t.Fatalf("Hold returned %v after the kill, ttl %v", elapsed, lock21TTL)
	}
}

// The function returns at once after a kill -9 of the server; Hold fails
// ErrLost (expired) by the holder's deadline (lock21Bound), not after a
// release that cannot reach the store.
// LOCK-21
func TestLock21AnUnreachableStoreBoundsTheReleaseByTheDeadline(t *testing.T) {
	url, server := startServerProcess(t)
	store := connect(t, url)
	lock, err := OpenLock(store, "go-lock-21", TTL(lock21TTL))
	if err != nil {
		t.Fatal(err)
	}
	var killedAt time.Time
	err = lock.Hold(context.Background(), "k", func(ctx context.Context, lease *Lease) error {
		killedAt = killServer(t, server)
		return nil
	})
	elapsed := time.Since(killedAt)
	if killedAt.IsZero() {
		t.Fatalf("the function did not run: %v", err)
	}
	var e *Error
	if !errors.Is(err, ErrLost) || !errors.As(err, &e) || e.Reason != Expired {
		t.Fatalf("Hold answered %v after the kill, not ErrLost (expired)", err)
	}
	t.Logf("LOCK-21: Hold returned %v after the kill (bound %v)", elapsed, lock21Bound)
	if elapsed >= lock21Bound {
		t.Fatalf("Hold returned %v after the kill, ttl %v", elapsed, lock21TTL)
	}
}
