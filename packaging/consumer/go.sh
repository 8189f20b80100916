#!/usr/bin/env bash
# `make dist-test`, Go (run by packaging/consumer/run.sh): a fresh module in
# $WORK_DIR gets github.com/leasehold/leasehold-go@v$VERSION from the module
# proxy `make dist-go` wrote ($DIST/go), with every Go cache inside $WORK_DIR
# and no other proxy or checksum database, then runs the README's Go example
# against the server at $LEASEHOLD_URL: one `fence N` line per hold. Needs Go
# and a C compiler (cgo), no Rust. For ARCH aarch64 the program is
# cross-compiled (GOARCH=arm64, Debian's aarch64-linux-gnu-gcc) and runs
# under qemu with the arm64 root folder's C library.
set -euo pipefail
: "${DIST:?}" "${VERSION:?}" "${WORK_DIR:?}" "${LEASEHOLD_URL:?}"
module=github.com/leasehold/leasehold-go
GO=${GO:-go}
ARCH=${ARCH:-x86_64}
. "$(dirname "$0")/../platforms.sh"
export GOARCH
GOARCH=$(go_arch "$ARCH")
[ "$ARCH" = x86_64 ] || export CC=$ARCH-linux-gnu-gcc

# Only the file proxy, and no checksum database for the module (it is not
# published, so sum.golang.org cannot know it): GONOSUMDB, not GOPRIVATE,
# which would also mean GONOPROXY and fetch from github.com directly.
export GOENV=off GOFLAGS=-modcacherw GOTOOLCHAIN=local CGO_ENABLED=1
export GOPATH="$WORK_DIR/gopath" GOMODCACHE="$WORK_DIR/gopath/pkg/mod" GOCACHE="$WORK_DIR/gocache"
export GOPROXY="file://$DIST/go" GONOSUMDB="$module" GOPRIVATE= GONOPROXY=
mkdir -p "$WORK_DIR/consumer"
cd "$WORK_DIR/consumer"

cat >main.go <<'EOF'
// The README's ten lines of Go, made runnable: a lock on the server store at
// $LEASEHOLD_URL, "chat-1" held twice and "chat-2" tried, each fence printed.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"runtime"
	"time"

	"github.com/leasehold/leasehold-go/locks"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	fmt.Printf("platform %s\n", runtime.GOARCH)
	store, err := locks.Connect(ctx, os.Getenv("LEASEHOLD_URL"))
	if err != nil {
		return err
	}
	defer store.Close()
	summaries, err := locks.OpenLock(store, "summaries", locks.TTL(30*time.Second))
	if err != nil {
		return err
	}
	printFence := func(ctx context.Context, lease *locks.Lease) error {
		fmt.Printf("fence %d\n", lease.Fence)
		return nil
	}
	for range 2 {
		err = summaries.Hold(ctx, "chat-1", printFence)
		if errors.Is(err, locks.ErrLost) {
			log.Print("another holder may have run beside us")
		}
		if err != nil {
			return err
		}
	}
	held, err := summaries.TryHold(ctx, "chat-2", printFence)
	if err != nil {
		return err
	}
	if !held {
		return errors.New("chat-2 was held elsewhere")
	}
	return nil
}
EOF

"$GO" mod init example.com/consumer >&2
"$GO" get "$module@v$VERSION" >&2
"$GO" mod tidy >&2
"$GO" vet . >&2
"$GO" build -o consumer . >&2
run_on "$ARCH" ./consumer
