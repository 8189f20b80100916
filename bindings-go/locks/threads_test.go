package locks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// osThreads is the process's thread count, from /proc/self/status.
func osThreads(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(status, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Threads:")); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(rest)))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads: line in /proc/self/status")
	return 0
}

// 10,000 goroutines in line on one key hold no OS thread each: the C
// library's waiting calls return at once and complete through a callback
// (lh_lock_begin_async), so the process's thread count stays small while
// they wait, and every one of them is granted the key in turn (LOCK-01).
func TestLock01TenThousandWaitersHoldNoThreads(t *testing.T) {
	const waiters = 10000
	store := Memory()
	defer store.Close()
	lock, _ := OpenLock(store, "threads")
	release := occupied(t, lock, "k")
	before := osThreads(t)

	var started, granted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started.Add(1)
			errs <- lock.Hold(context.Background(), "k", func(context.Context, *Lease) error {
				granted.Add(1)
				return nil
			})
		}()
	}
	// The peak from the first goroutine until a second after the last started.
	peak := 0
	var quiet time.Time
	for settle := time.Now().Add(30 * time.Second); time.Now().Before(settle); time.Sleep(10 * time.Millisecond) {
		peak = max(peak, osThreads(t))
		if started.Load() < waiters {
			continue
		}
		if quiet.IsZero() {
			quiet = time.Now().Add(time.Second)
		} else if time.Now().After(quiet) {
			break
		}
	}
	if started.Load() != waiters {
		t.Fatalf("only %d of %d goroutines started", started.Load(), waiters)
	}
	if granted.Load() != 0 {
		t.Fatalf("%d waiters were granted a held key", granted.Load())
	}
	t.Logf("threads: %d before the waiters, at most %d while %d waited", before, peak, waiters)
	if peak > before+256 {
		t.Fatalf("%d OS threads while %d goroutines waited (%d before): the waits hold threads", peak, waiters, before)
	}
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if granted.Load() != waiters {
		t.Fatalf("%d of %d waiters were granted", granted.Load(), waiters)
	}
}

// LOCK-17, LOCK-18: TryHold waits for no line, but it does wait for the
// store's answer; while a server store cannot answer (stopped), ctx ending
// fails it ErrCancelled with the ctx's error, nothing runs, and the grant
// the store makes later is released.
func TestLock18TryHoldEndsWithItsCtx(t *testing.T) {
	url, server := startServerProcess(t)
	store, err := Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const ttl = 10 * time.Second
	lock, _ := OpenLock(store, "l", TTL(ttl))
	freeze(t, server)
	defer func() { _ = server.Signal(syscall.SIGCONT) }()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	ran := false
	began := time.Now()
	held, err := lock.TryHold(ctx, "k", func(context.Context, *Lease) error {
		ran = true
		return nil
	})
	if held || ran || !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held %v, ran %v, err %v: want ErrCancelled and context.DeadlineExceeded", held, ran, err)
	}
	// Ended by its ctx, not by what could end it next: the client's connect
	// timeout (5 s), which leaves a loaded machine 4.8 s past the ctx's 200 ms.
	// (A TryHold that waited for the store would never end: it stays frozen.)
	waited := time.Since(began)
	t.Logf("LOCK-18: TryHold ended %v after it began (its ctx: 200ms)", waited)
	if waited >= 5*time.Second {
		t.Fatalf("TryHold took %v to end after its ctx's 200ms", waited)
	}
	// The grant the store makes once it runs again is released, not left
	// to run out: the key is free again well within its 10 s ttl (half of it:
	// a late grant left to run out would hold the key the whole ttl).
	_ = server.Signal(syscall.SIGCONT)
	for deadline := time.Now().Add(ttl / 2); ; time.Sleep(50 * time.Millisecond) {
		held, err := lock.TryHold(context.Background(), "k", func(context.Context, *Lease) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the late grant still holds the key")
		}
	}
}
