// Command demo-holder is the Go holder of `make demo`: it holds random keys
// of the lock "summaries" on the server store at $LEASEHOLD_STORE for
// $DEMO_SECONDS seconds, and inside each hold writes its fence to the fenced
// resource $DEMO_DIR/<key>, refusing a fence not larger than the last.
package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold-go/locks"
)

var keys = []string{"chat-1", "chat-2", "chat-3"}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// errRejected: the resource saw a fence at least as large (two holders overlapped).
var errRejected = errors.New("REJECTED")

// writeFenced writes fence to the resource of key unless a fence at least as large is there.
func writeFenced(dir, key string, fence uint64) error {
	path := filepath.Join(dir, key)
	last := uint64(0)
	if data, err := os.ReadFile(path); err == nil {
		last, _ = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	}
	if fence <= last {
		return fmt.Errorf("%w fence %d for %s: the resource has seen %d", errRejected, fence, key, last)
	}
	return os.WriteFile(path, []byte(strconv.FormatUint(fence, 10)), 0o644)
}

func run(name, dir string, seconds int) error {
	ctx := context.Background()
	store, err := locks.Connect(ctx, env("LEASEHOLD_STORE", "leasehold://127.0.0.1:7450"))
	if err != nil {
		return err
	}
	defer store.Close()
	summaries, err := locks.OpenLock(store, "summaries", locks.TTL(5*time.Second))
	if err != nil {
		return err
	}
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	for time.Now().Before(end) {
		key := keys[rand.IntN(len(keys))]
		asked := time.Now()
		err := summaries.Hold(ctx, key, func(ctx context.Context, lease *locks.Lease) error {
			fmt.Printf("[go-%s] holds summaries/%s fence=%d waited=%dms at=%d\n", name, key, lease.Fence, time.Since(asked).Milliseconds(), time.Now().UnixMilli())
			written := writeFenced(dir, key, lease.Fence)
			time.Sleep(time.Duration(20+rand.IntN(61)) * time.Millisecond)
			fmt.Printf("[go-%s] done summaries/%s fence=%d at=%d\n", name, key, lease.Fence, time.Now().UnixMilli())
			return written
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func main() {
	name := env("DEMO_NAME", "1")
	seconds, err := strconv.Atoi(env("DEMO_SECONDS", "4"))
	if err != nil {
		seconds = 4
	}
	if err := run(name, env("DEMO_DIR", "."), seconds); err != nil {
		if errors.Is(err, errRejected) {
			fmt.Printf("[go-%s] %v\n", name, err)
		}
		fmt.Fprintf(os.Stderr, "[go-%s] %v\n", name, err)
		os.Exit(1)
	}
}
