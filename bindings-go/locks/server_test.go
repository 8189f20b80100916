package locks

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serverBinary is the `leasehold` binary of the workspace (cargo build -p
// leasehold-server): $LEASEHOLD_BIN, else $CARGO_TARGET_DIR/debug/leasehold,
// else ../../target/debug/leasehold.
func serverBinary(t testing.TB) string {
	if bin := os.Getenv("LEASEHOLD_BIN"); bin != "" {
		return bin
	}
	dir := os.Getenv("CARGO_TARGET_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "target")
	}
	bin, err := filepath.Abs(filepath.Join(dir, "debug", "leasehold"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no server binary at %s (cargo build -p leasehold-server): %v", bin, err)
	}
	return bin
}

// startServer runs `leasehold serve` on a free loopback port with a fresh
// data dir and extra flags, killed when the test ends; it answers the URL.
func startServer(t testing.TB, extra ...string) string {
	t.Helper()
	url, _ := startServerProcess(t, extra...)
	return url
}

// startServerProcess is startServer, answering the process too (to stop
// and continue it); the cleanup continues a stopped server, then kills it.
// freeze stops a server process (SIGSTOP) and waits until it is stopped:
// the signal takes effect a little after kill returns, and a request sent
// meanwhile would still be answered.
func freeze(t testing.TB, server *os.Process) {
	t.Helper()
	if err := server.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", server.Pid)
	for deadline := time.Now().Add(5 * time.Second); ; {
		text, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		// The state follows the parenthesised command name.
		rest := string(text[bytes.LastIndexByte(text, ')')+1:])
		if fields := strings.Fields(rest); len(fields) > 0 && fields[0] == "T" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server %d did not stop: %s", server.Pid, text)
		}
		time.Sleep(time.Millisecond)
	}
}

func startServerProcess(t testing.TB, extra ...string) (string, *os.Process) {
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, extra...)
	cmd := exec.Command(serverBinary(t), args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		scan := bufio.NewScanner(out)
		for scan.Scan() {
			if addr, ok := strings.CutPrefix(scan.Text(), "listening on "); ok {
				lines <- addr
			}
		}
	}()
	select {
	case addr := <-lines:
		return "leasehold://" + strings.TrimSpace(addr), cmd.Process
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not say where it listens")
	}
	return "", nil
}

// tokensFile writes a server tokens file: "writer" may hold, "reader" may only read.
func tokensFile(t testing.TB) string {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("writer-token write\nreader-token read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
