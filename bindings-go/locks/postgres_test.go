package locks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// postgresStoreURL answers the URL of the PostgreSQL `make postgres` runs
// ($LEASEHOLD_POSTGRES_URL, which make go-test sets) with a schema no other
// test uses.
func postgresStoreURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("LEASEHOLD_POSTGRES_URL")
	if base == "" {
		t.Fatal("LEASEHOLD_POSTGRES_URL is not set: it names the PostgreSQL the tests use (make postgres starts it; make go-test sets it)")
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "schema=pg01_go_" + hex.EncodeToString(id[:])
}

// PG-01: a postgres:// URL opens a store with the same lock, manual, slot and ID APIs.
func TestPg01PostgresStoreHoldsManualSlotsAndIDs(t *testing.T) {
	url := postgresStoreURL(t)
	checkRemoteStore(t, connect(t, url), connect(t, strings.Replace(url, "postgres://", "postgresql://", 1)))
}

// PG-01, ERR-01: a bad PostgreSQL URL fails ErrInvalidArgument before
// anything is sent, and an unreachable database fails ErrUnavailable.
func TestPg01BadPostgresURLsFailClearly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		url  string
		want error
		says string
	}{
		{"postgres://u@127.0.0.1/db?schema=Not-An-Identifier", ErrInvalidArgument, "schema"},
		{"postgres://u@127.0.0.1/db?no_such_option=1", ErrInvalidArgument, "no_such_option"},
		{"postgres://u@127.0.0.1:1/db?connect_timeout=2", ErrUnavailable, "PostgreSQL"},
	} {
		store, err := Connect(ctx, c.url)
		if store != nil {
			_ = store.Close()
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Connect(%q): %v, want %v naming %q", c.url, err, c.want, c.says)
		}
	}
}
