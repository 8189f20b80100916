// Package pgtest tests package fencing against the real PostgreSQL `make postgres`
// starts, through lib/pq: a module of its own, so that the leasehold-go module
// needs no PostgreSQL driver (make fencing-go-test).
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"github.com/leasehold/leasehold-go/fencing"
	"github.com/leasehold/leasehold-go/locks"
)

// postgresURL is the URL of `make postgres`'s cluster: $LEASEHOLD_POSTGRES_URL,
// else $CARGO_TARGET_DIR/postgres/url; the test fails when there is none.
func postgresURL(t *testing.T) string {
	if url := os.Getenv("LEASEHOLD_POSTGRES_URL"); url != "" {
		return url
	}
	dir := os.Getenv("CARGO_TARGET_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "target")
	}
	file := filepath.Join(dir, "postgres", "url")
	url, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no PostgreSQL URL in LEASEHOLD_POSTGRES_URL or %s (make postgres): %v", file, err)
	}
	return strings.TrimSpace(string(url))
}

// table opens the database and a fresh table of the test's own (key, fence numeric(20), text).
func table(t *testing.T) (*sql.DB, fencing.Table) {
	url := postgresURL(t)
	if !strings.Contains(url, "sslmode=") {
		url += "?sslmode=disable"
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	name := fmt.Sprintf("go_%d", time.Now().UnixNano())
	if _, err := db.Exec("CREATE TABLE " + name + " (key text PRIMARY KEY, fence numeric(20) NOT NULL, text text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DROP TABLE " + name) })
	return db, fencing.Table{Name: name}
}

// row is the row of key: its fence (as decimal text) and text, or "" and "" when there is none.
func row(t *testing.T, db *sql.DB, tb fencing.Table, key string) (string, string) {
	var fence, text string
	err := db.QueryRow("SELECT fence::text, text FROM "+tb.Name+" WHERE key = $1", key).Scan(&fence, &text)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return fence, text
}

func mustRefuse(t *testing.T, err error, fence uint64) {
	t.Helper()
	var refused *fencing.RefusedError
	if !errors.Is(err, fencing.ErrRefused) || !errors.As(err, &refused) || refused.Fence != fence {
		t.Fatalf("want a refusal of fence %d, got %v", fence, err)
	}
}

func TestLargerFenceLandsSmallerOrEqualIsRefused(t *testing.T) {
	ctx := context.Background()
	db, tb := table(t)
	for _, w := range []struct {
		fence uint64
		text  string
	}{{5, "five"}, {7, "seven"}} {
		if err := fencing.Write(ctx, db, tb, "k", w.fence, fencing.Set("text", w.text)); err != nil {
			t.Fatal(err)
		}
	}
	for _, stale := range []uint64{7, 6, 1} {
		mustRefuse(t, fencing.Write(ctx, db, tb, "k", stale, fencing.Set("text", "stale")), stale)
		mustRefuse(t, fencing.Update(ctx, db, tb, "k", stale, fencing.Set("text", "stale")), stale)
	}
	if f, text := row(t, db, tb, "k"); f != "7" || text != "seven" {
		t.Fatalf("row is %s %q, want 7 seven", f, text)
	}
	if err := fencing.Update(ctx, db, tb, "k", 8, fencing.Set("text", "eight")); err != nil {
		t.Fatal(err)
	}
	if f, text := row(t, db, tb, "k"); f != "8" || text != "eight" {
		t.Fatalf("row is %s %q, want 8 eight", f, text)
	}
}

func TestUpdateRefusesAMissingRow(t *testing.T) {
	db, tb := table(t)
	mustRefuse(t, fencing.Update(context.Background(), db, tb, "k", 1, fencing.Set("text", "x")), 1)
	if f, _ := row(t, db, tb, "k"); f != "" {
		t.Fatalf("a refused update made a row with fence %s", f)
	}
}

// Fences with the high bit set (server fences from 2038 on), which database/sql
// cannot bind as uint64, keep their order.
func TestFencesAboveInt64KeepTheirOrder(t *testing.T) {
	ctx := context.Background()
	db, tb := table(t)
	if err := fencing.Write(ctx, db, tb, "k", math.MaxInt64, fencing.Set("text", "int64 max")); err != nil {
		t.Fatal(err)
	}
	if err := fencing.Write(ctx, db, tb, "k", math.MaxUint64, fencing.Set("text", "uint64 max")); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, fencing.Write(ctx, db, tb, "k", math.MaxInt64+1, fencing.Set("text", "stale")), math.MaxInt64+1)
	if f, text := row(t, db, tb, "k"); f != "18446744073709551615" || text != "uint64 max" {
		t.Fatalf("row is %s %q", f, text)
	}
}

// A refused write inside a transaction: the transaction rolls back and nothing changed.
func TestRefusedWriteInATransaction(t *testing.T) {
	ctx := context.Background()
	db, tb := table(t)
	if err := fencing.Write(ctx, db, tb, "k", 10, fencing.Set("text", "ten")); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, fencing.Update(ctx, tx, tb, "k", 9, fencing.Set("text", "nine")), 9)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if f, text := row(t, db, tb, "k"); f != "10" || text != "ten" {
		t.Fatalf("row is %s %q, want 10 ten", f, text)
	}
}

// The paused holder: A holds the key with a 1 s ttl and stops renewing past
// its lease, B holds it and writes with its larger fence; A's late write is
// refused and the table keeps B's.
func TestHolderPausedPastItsLeaseIsRefused(t *testing.T) {
	ctx := context.Background()
	db, tb := table(t)
	store := locks.Memory()
	defer store.Close()
	a, ok, err := store.TryLock(ctx, "chat-1", time.Second)
	if err != nil || !ok {
		t.Fatalf("A: %v %v", ok, err)
	}
	defer a.Close()
	if err := fencing.Write(ctx, db, tb, "chat-1", a.Fence, fencing.Set("text", "a, on time")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // A is paused past its ttl
	b, ok, err := store.TryLock(ctx, "chat-1", time.Second)
	if err != nil || !ok {
		t.Fatalf("B: %v %v (A's lease should have run out)", ok, err)
	}
	defer b.Close()
	if b.Fence <= a.Fence {
		t.Fatalf("B's fence %d is not above A's %d", b.Fence, a.Fence)
	}
	if err := fencing.Write(ctx, db, tb, "chat-1", b.Fence, fencing.Set("text", "b")); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, fencing.Write(ctx, db, tb, "chat-1", a.Fence, fencing.Set("text", "a, late")), a.Fence)
	if f, text := row(t, db, tb, "chat-1"); f != fmt.Sprint(b.Fence) || text != "b" {
		t.Fatalf("row is %s %q, want B's %d b", f, text, b.Fence)
	}
}
