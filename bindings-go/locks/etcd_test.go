package locks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freePort answers a loopback TCP port that nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd runs one etcd member ($LEASEHOLD_ETCD, 3.6, which `make etcd`
// builds) on free loopback ports with a fresh data dir, killed when the test
// ends; it answers the client endpoint "127.0.0.1:PORT" once it accepts
// connections.
func startEtcd(t testing.TB) string {
	t.Helper()
	return startEtcdFrom(t, "LEASEHOLD_ETCD")
}

// startEtcdFrom is startEtcd with the etcd binary the variable env names
// (LEASEHOLD_ETCD_34: Debian's 3.4, which `make etcd` installs).
func startEtcdFrom(t testing.TB, env string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		t.Fatalf("%s is not set: it names an etcd binary the etcd tests start (make etcd provides it; make go-test sets it)", env)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no etcd binary at %s=%s (make etcd provides it): %v", env, bin, err)
	}
	client, peer := freePort(t), freePort(t)
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	cmd := exec.Command(bin,
		"--name", "m0", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "m0="+peerURL, "--initial-cluster-state", "new",
		"--heartbeat-interval", "50", "--election-timeout", "500",
		"--logger", "zap", "--log-level", "error")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("etcd does not start: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	endpoint := fmt.Sprintf("127.0.0.1:%d", client)
	for deadline := time.Now().Add(15 * time.Second); ; {
		conn, err := net.DialTimeout("tcp", endpoint, 100*time.Millisecond)
		if err == nil {
			conn.Close()
			return endpoint
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd does not accept connections on %s: %v", endpoint, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// etcdCluster is a running etcd-cluster (etcd-tests/src/bin/etcd-cluster.rs):
// three etcd members on loopback, told what to do by one command a line on
// its stdin, each answered by one line.
type etcdCluster struct {
	t testing.TB
	// hosts is "127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2", member 0 first.
	hosts string
	// electionTimeout is the members' --election-timeout.
	electionTimeout time.Duration
	stdin           io.WriteCloser
	lines           <-chan string
}

// startEtcdCluster runs $LEASEHOLD_ETCD_CLUSTER (make etcd-cluster builds
// it; it starts $LEASEHOLD_ETCD) and reads its ready line; the cluster is
// stopped when the test ends.
func startEtcdCluster(t testing.TB) *etcdCluster {
	t.Helper()
	bin := os.Getenv("LEASEHOLD_ETCD_CLUSTER")
	if bin == "" {
		t.Fatal("LEASEHOLD_ETCD_CLUSTER is not set: it names the etcd-cluster tool the etcd fault tests start (make etcd-cluster builds it; make go-test sets it)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no etcd-cluster at LEASEHOLD_ETCD_CLUSTER=%s (make etcd-cluster builds it): %v", bin, err)
	}
	cmd := exec.Command(bin)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("etcd-cluster does not start: %v", err)
	}
	// The end of its stdin stops the tool, which stops its members (thawing
	// a frozen one) and removes their data; killed after 10 s, it would
	// leave them running.
	t.Cleanup(func() {
		_ = stdin.Close()
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		scan := bufio.NewScanner(stdout)
		for scan.Scan() {
			lines <- scan.Text()
		}
	}()
	c := &etcdCluster{t: t, stdin: stdin, lines: lines}
	ready := regexp.MustCompile(`^ready etcd://(\S+) election-timeout=(\d+)ms$`).FindStringSubmatch(c.answer("ready line"))
	if ready == nil {
		t.Fatal("etcd-cluster did not say it is ready")
	}
	ms, _ := strconv.Atoi(ready[2])
	c.hosts, c.electionTimeout = ready[1], time.Duration(ms)*time.Millisecond
	return c
}

// answer is the tool's next line (what: the line awaited), failing the
// test if it exits or says nothing for 30 s.
func (c *etcdCluster) answer(what string) string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("etcd-cluster exited, no %s", what)
		}
		return line
	case <-time.After(30 * time.Second):
		c.t.Fatalf("etcd-cluster: no %s within 30 s", what)
	}
	return ""
}

// command sends one command ("leader", "lead N", "kill N", "restart N",
// "freeze N", "thaw N") and answers its answer ("leader N", "ok"); an
// "error: ..." answer fails the test. Only from the test's goroutine.
func (c *etcdCluster) command(line string) string {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatalf("etcd-cluster: %s: %v", line, err)
	}
	answer := c.answer(fmt.Sprintf("answer to %q", line))
	if strings.HasPrefix(answer, "error") {
		c.t.Fatalf("etcd-cluster answered %q to %q", answer, line)
	}
	return answer
}

// url is the store URL of the cluster under prefix.
func (c *etcdCluster) url(prefix string) string {
	return "etcd://" + c.hosts + "/" + prefix
}

// etcdURL is the store URL of a fresh etcd member, under a prefix of this test's own.
func etcdURL(t testing.TB) string {
	return "etcd://" + startEtcd(t) + "/dist01-go-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// DIST-01: an etcd:// URL opens a store with the same lock, manual, slot and ID APIs.
func TestDist01EtcdStoreHoldsManualAndSlots(t *testing.T) {
	url := etcdURL(t)
	checkRemoteStore(t, connect(t, url), connect(t, url))
}

// DIST-01, DIST-08: Connect's AcceptOldEtcd reaches the driver: an etcd 3.4
// older than 3.4.32 is refused (ErrProtocol, naming the option) without it
// and opened with it.
func TestDist01AcceptOldEtcdOpensAnOldEtcd(t *testing.T) {
	url := "etcd://" + startEtcdFrom(t, "LEASEHOLD_ETCD_34") + "/dist01-go-old"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if store, err := Connect(ctx, url); !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "accept_old_etcd") {
		if store != nil {
			_ = store.Close()
		}
		t.Fatalf("Connect to etcd 3.4 without AcceptOldEtcd: %v", err)
	}
	store := connect(t, url, AcceptOldEtcd())
	lock, err := OpenLock(store, "old", TTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Hold(ctx, "k", func(_ context.Context, lease *Lease) error {
		if lease.Fence == 0 {
			t.Error("no fence")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Connect takes the etcd options and refuses them nowhere else.
func TestConnectTakesTheEtcdOptions(t *testing.T) {
	if _, err := OpenLock(Memory(), "l", User("u", "p")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("OpenLock with User: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// No etcd listens there: the options are taken, the connection fails.
	_, err := Connect(ctx, fmt.Sprintf("etcd://127.0.0.1:%d/p", freePort(t)),
		User("u", "p"), CA([]byte("x")), ClientCert([]byte("c"), []byte("k")), AcceptOldEtcd())
	if err == nil || errors.Is(err, ErrInvalidArgument) && strings.Contains(err.Error(), "does not take") {
		t.Fatalf("Connect with the etcd options: %v", err)
	}
}
