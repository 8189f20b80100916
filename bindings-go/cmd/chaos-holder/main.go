// Command chaos-holder is the Go holder of the chaos harness (docs/chaos.md):
// it holds keys k0… of the lock "chaos" through the locks package, one at a
// time, until SIGTERM, recording its history in the harness's format (one
// JSON object a line, "ns" from CLOCK_MONOTONIC). The binding's own calls are
// out of its sight, so it records what its holder sees: the request (no
// request id), the grant (its fence), the function's start and end, the
// loss, the hold's outcome and the fenced write, through the harness's
// register (a file per key, replaced under flock only by a larger fence).
// Its holds are short, so that no renewal is needed to keep them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/leasehold/leasehold-go/locks"
)

// monotonicNs reads CLOCK_MONOTONIC, the one clock of every holder of a run.
func monotonicNs() uint64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	return uint64(ts.Sec)*1_000_000_000 + uint64(ts.Nsec)
}

// history appends events, one write(2) a line, so that SIGKILL loses none.
type history struct {
	file    *os.File
	process string
	pid     int
}

// event is one line; fields that do not apply are left out.
type event struct {
	Ns      uint64  `json:"ns"`
	Process string  `json:"process"`
	Pid     int     `json:"pid"`
	Kind    string  `json:"kind"`
	Key     string  `json:"key,omitempty"`
	Fence   *uint64 `json:"fence,omitempty"`
	Lease   string  `json:"lease,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	TTLMs   uint64  `json:"ttl_ms,omitempty"`
	Queue   *bool   `json:"queue,omitempty"`
}

func (h *history) record(e event) {
	e.Ns, e.Process, e.Pid = monotonicNs(), h.process, h.pid
	line, _ := json.Marshal(e)
	if _, err := h.file.Write(append(line, '\n')); err != nil {
		panic(err)
	}
}

// writeFenced is the register's fenced write: it lands only if fence is larger than the last.
func writeFenced(register, key string, fence uint64, h *history) error {
	f, err := os.OpenFile(filepath.Join(register, key), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, _ := f.ReadAt(buf, 0)
	last, _ := strconv.ParseUint(strings.TrimSpace(string(buf[:n])), 10, 64)
	reason := "refused"
	if fence > last {
		reason = "landed"
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.WriteAt([]byte(strconv.FormatUint(fence, 10)), 0); err != nil {
			return err
		}
	}
	h.record(event{Kind: "write", Key: key, Fence: &fence, Reason: reason})
	return nil
}

func main() {
	url := flag.String("url", "", "the store's URL")
	name := flag.String("name", "go-0", "this holder's name in the run")
	path := flag.String("history", "", "the history file to append to")
	register := flag.String("register", "", "the fenced register's directory")
	seed := flag.Uint64("seed", 0, "the seed of its choices")
	keys := flag.Int("keys", 4, "how many keys it contends for")
	ttlMs := flag.Uint64("ttl-ms", 1000, "the lock's ttl in milliseconds")
	flag.Parse()
	if err := run(*url, *name, *path, *register, *seed, *keys, *ttlMs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(url, name, path, register string, seed uint64, keys int, ttlMs uint64) error {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	h := &history{file: file, process: name, pid: os.Getpid()}
	var stop atomic.Bool
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM)
	go func() { <-signals; stop.Store(true) }()
	ctx := context.Background()
	var store *locks.Store
	for store == nil {
		if store, err = locks.Connect(ctx, url); err != nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	defer store.Close()
	lock, err := locks.OpenLock(store, "chaos", locks.TTL(time.Duration(ttlMs)*time.Millisecond), locks.Wait(5*time.Second))
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for !stop.Load() {
		key := fmt.Sprintf("k%d", rng.IntN(keys))
		holdFor := time.Duration(rng.IntN(3000)) * time.Microsecond
		try := rng.IntN(10) == 0
		queue := !try
		h.record(event{Kind: "request", Key: key, Queue: &queue, TTLMs: ttlMs})
		var fence *uint64
		held := func(ctx context.Context, lease *locks.Lease) error {
			f := lease.Fence
			fence = &f
			h.record(event{Kind: "granted", Key: key, Fence: fence, Lease: fmt.Sprintf("%x-%x", h.pid, f)})
			h.record(event{Kind: "start", Key: key, Fence: fence})
			time.Sleep(holdFor / 2)
			if !lease.Lost() {
				if err := writeFenced(register, key, f, h); err != nil {
					return err
				}
			}
			time.Sleep(holdFor / 2)
			h.record(event{Kind: "end", Key: key, Fence: fence})
			return nil
		}
		if try {
			ran, err := lock.TryHold(ctx, key, held)
			if err == nil && !ran {
				h.record(event{Kind: "outcome", Key: key, Reason: "not_held"})
				continue
			}
			outcome(h, key, fence, err)
		} else {
			outcome(h, key, fence, lock.Hold(ctx, key, held))
		}
	}
	return nil
}

// outcome records what a hold returned, and the loss it reports.
func outcome(h *history, key string, fence *uint64, err error) {
	switch {
	case err == nil:
		h.record(event{Kind: "outcome", Key: key, Fence: fence, Reason: "ok"})
	case errors.Is(err, locks.ErrLost) && fence != nil:
		h.record(event{Kind: "lost", Key: key, Fence: fence, Reason: "Lost"})
		h.record(event{Kind: "outcome", Key: key, Fence: fence, Reason: "Lost"})
	default:
		h.record(event{Kind: "outcome", Key: key, Fence: fence, Reason: err.Error()})
		time.Sleep(time.Duration(1+rand.IntN(20)) * time.Millisecond)
	}
}
