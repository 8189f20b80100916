//go:build leasehold_testing

package locks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// ERR-01: every code of the C ABI (= leasehold::ErrorKind::ALL) has its Go
// code and sentinel, and an error errors.Is its own sentinel only.
func TestErr01EveryCodeHasASentinel(t *testing.T) {
	names := abiCodeNames()
	if len(names) != len(codes) {
		t.Fatalf("the ABI has %d codes, Go knows %d", len(names), len(codes))
	}
	for i, name := range names[1:] {
		c := codes[i+1]
		if string(c) != name {
			t.Errorf("code %d: ABI %q, Go %q", i+1, name, c)
		}
		s := c.Sentinel()
		if s == nil {
			t.Fatalf("no sentinel for %s", c)
		}
		err := &Error{Code: c, Message: "m"}
		for _, other := range codes[1:] {
			if errors.Is(err, other.Sentinel()) != (other == c) {
				t.Errorf("errors.Is(%s error, %s sentinel) is wrong", c, other)
			}
		}
	}
	if len(sentinels) != len(codes)-1 {
		t.Errorf("%d sentinels for %d codes", len(sentinels), len(codes)-1)
	}
}

// ERR-03: bad input through the binding fails with a code, never a crash.
func TestErr03BadInputFailsWithACode(t *testing.T) {
	ctx := context.Background()
	store := Memory()
	lock, err := OpenLock(store, "l")
	if err != nil {
		t.Fatal(err)
	}
	nothing := func(context.Context, *Lease) error { return nil }
	check := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", what, err, want)
		}
	}
	check("invalid UTF-8 key", lock.Hold(ctx, "k\xff\xfe", nothing), ErrInvalidArgument)
	check("empty key", lock.Hold(ctx, "", nothing), ErrEmptyName)
	check("huge key", lock.Hold(ctx, strings.Repeat("k", 100_000), nothing), ErrInvalidArgument)
	check("nil function", lock.Hold(ctx, "k", nil), ErrInvalidArgument)
	check("an option Hold does not take", lock.Hold(ctx, "k", nothing, TTL(time.Second)), ErrInvalidArgument)
	check("a zero option", lock.Hold(ctx, "k", nothing, Option{}), ErrInvalidArgument)
	var noCtx context.Context
	check("nil ctx", lock.Hold(noCtx, "k", nothing), ErrInvalidArgument)
	_, err = OpenLock(nil, "l")
	check("nil store", err, ErrInvalidArgument)
	_, err = OpenLock(store, "\xc3\x28")
	check("invalid UTF-8 lock name", err, ErrInvalidArgument)
	_, _, err = store.TryLock(ctx, "x\x80", time.Minute)
	check("invalid UTF-8 lease name", err, ErrInvalidArgument)
	check("a panic inside the library", panicInLibrary(), ErrInternal)
	for _, name := range []string{"two\nlines", strings.Repeat("x", 257)} {
		_, err = Connect(ctx, "leasehold://127.0.0.1:1", Identity(name))
		check("a bad identity", err, ErrInvalidArgument)
	}

	err = lock.Hold(ctx, "k", func(ctx context.Context, lease *Lease) error {
		check("Extend of a held lease", lease.Extend(ctx, time.Minute), ErrInvalidArgument)
		check("Unlock of a held lease", lease.Unlock(ctx), ErrInvalidArgument)
		return nil
	})
	check("hold", err, nil)

	lease, held, err := store.TryLock(ctx, "m", time.Minute)
	if err != nil || !held {
		t.Fatal(held, err)
	}
	check("close a lease", lease.Close(), nil)
	check("close a lease twice", lease.Close(), ErrClosed)
	check("use a lease after close", lease.Unlock(ctx), ErrClosed)

	check("close the lock", lock.Close(), nil)
	check("close the lock twice", lock.Close(), ErrClosed)
	check("hold on a closed lock", lock.Hold(ctx, "k", nothing), ErrClosed)

	other, err := OpenLock(store, "other")
	if err != nil {
		t.Fatal(err)
	}
	check("close the store", store.Close(), nil)
	check("close the store twice", store.Close(), ErrClosed)
	check("hold on a closed store", other.Hold(ctx, "k", nothing), ErrClosed)
	_, err = OpenLock(store, "l")
	check("open a lock of a closed store", err, ErrClosed)
	_, _, err = store.TryLock(ctx, "m", time.Minute)
	check("TryLock on a closed store", err, ErrClosed)
}

// LOCK-13: durations out of range are refused at OpenLock, before anything is sent.
func TestLock13OptionBounds(t *testing.T) {
	store := Memory()
	defer store.Close()
	for _, bad := range [][]Option{
		{TTL(999 * time.Millisecond)}, {TTL(0)}, {TTL(-time.Second)}, {TTL(time.Hour + 1)},
		{TTL(10 * time.Second), MaxHold(9 * time.Second)}, {MaxHold(5 * time.Second)},
		{TTL(10 * time.Second), Margin(5 * time.Second)}, {Wait(-time.Second)},
	} {
		if _, err := OpenLock(store, "l", bad...); !errors.Is(err, ErrInvalidTTL) {
			t.Errorf("%d options: got %v, want ErrInvalidTTL", len(bad), err)
		}
	}
	for _, good := range [][]Option{{TTL(time.Second)}, {TTL(time.Hour)}, {MaxHold(10 * time.Second)}, {}} {
		if _, err := OpenLock(store, "l", good...); err != nil {
			t.Errorf("%v", err)
		}
	}
	if _, err := OpenLock(store, ""); !errors.Is(err, ErrEmptyName) {
		t.Errorf("empty lock name: %v", err)
	}
	if _, err := ParseDuration("soon"); !errors.Is(err, ErrInvalidTTL) {
		t.Errorf("ParseDuration: %v", err)
	}
}
