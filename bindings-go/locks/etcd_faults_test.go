package locks

// DIST-09 through Go with traffic in flight: six holders in three stores
// take turns on two keys (10 ms holds, waiters always in line) while one
// member of a 3-member etcd cluster (etcd-tests' etcd-cluster,
// startEtcdCluster) is killed or frozen, and then comes back. A member's
// fault must cost the holders an election and a round trip, never a failed
// call: every Hold succeeds, fences grow, no two holds of a key overlap,
// and the longest Hold call stays under the election plus one second: two
// election timeouts (etcd elects one to two election timeouts after the
// leader's last heartbeat: each follower's timer is randomized in that
// span), or the cluster's own outage when it was longer (etcd-cluster's
// outage command: a split vote, a loaded machine).
//
// The clients' calls go to member 0, the URL's first, while it answers, so
// each fault is placed where it hurts: the leader killed while the clients
// talk to a follower that forwards to it, and the clients' own member
// frozen while it leads (the Rust tests of the same:
// etcd-tests/tests/member_faults.rs).

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// How long the holders take turns, and when the fault comes and ends.
const (
	faultsRun   = 7 * time.Second
	faultAt     = 2500 * time.Millisecond
	faultFor    = 3 * time.Second
	faultsWork  = 10 * time.Millisecond
	faultsTTL   = 5 * time.Second
	faultsBound = 60 * time.Second
)

// faultHold is one Hold call: its key, when it began and how long it took,
// and its fence and function's start and end, or its error.
type faultHold struct {
	key        string
	began      time.Time
	took       time.Duration
	fence      uint64
	start, end time.Time
	err        error
}

func faultHolder(ctx context.Context, lock *Lock, keys [2]string, until time.Time, mu *sync.Mutex, holds *[]faultHold) {
	for turn := 0; time.Now().Before(until) && ctx.Err() == nil; turn++ {
		h := faultHold{key: keys[turn%2], began: time.Now()}
		h.err = lock.Hold(ctx, h.key, func(ctx context.Context, lease *Lease) error {
			h.start = time.Now()
			select {
			case <-time.After(faultsWork):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			h.fence, h.end = lease.Fence, time.Now()
			return nil
		})
		h.took = time.Since(h.began)
		mu.Lock()
		*holds = append(*holds, h)
		mu.Unlock()
	}
}

// runFault moves the leadership to member lead, starts the holders, sends
// fault at 2.5 s and mend 3 s later, and checks every Hold.
func runFault(t *testing.T, name string, lead int, fault, mend string) {
	cluster := startEtcdCluster(t)
	cluster.command(fmt.Sprintf("lead %d", lead))
	url := fmt.Sprintf("%s?attempt-timeout=%dms",
		cluster.url("dist09-go-"+name+"-"+strconv.FormatInt(time.Now().UnixNano(), 36)),
		cluster.electionTimeout.Milliseconds()/2)
	stores := []*Store{connect(t, url), connect(t, url), connect(t, url)}
	ctx, cancel := context.WithTimeout(context.Background(), faultsBound)
	var wg sync.WaitGroup
	// A failed command ends the test: the holders stop before the stores close.
	defer wg.Wait()
	defer cancel()
	var mu sync.Mutex
	var holds []faultHold
	start := time.Now()
	for i, store := range stores {
		for j := 0; j < 2; j++ {
			lock, err := OpenLock(store, "jobs", TTL(faultsTTL))
			if err != nil {
				t.Fatal(err)
			}
			keys := [2]string{"a", "b"}
			if (i+j)%2 == 1 {
				keys = [2]string{"b", "a"}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				faultHolder(ctx, lock, keys, start.Add(faultsRun), &mu, &holds)
			}()
		}
	}
	time.Sleep(time.Until(start.Add(faultAt)))
	at := time.Now()
	cluster.command(fault)
	time.Sleep(time.Until(at.Add(faultFor)))
	cluster.command(mend)
	wg.Wait()
	outage, err := time.ParseDuration(strings.TrimPrefix(cluster.command("outage"), "outage "))
	if err != nil {
		t.Fatalf("etcd-cluster's outage: %v", err)
	}
	checkFault(t, name, max(2*cluster.electionTimeout, outage), at, holds)
}

// checkFault checks every Hold; election is two election timeouts, or the
// cluster's own outage when it was longer (etcd-cluster's outage command).
func checkFault(t *testing.T, name string, election time.Duration, at time.Time, holds []faultHold) {
	t.Helper()
	var failed []string
	var longest time.Duration
	through := 0
	for _, h := range holds {
		if h.err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v after %v, begun %v from the fault", h.key, h.err, h.took, h.began.Sub(at)))
		}
		longest = max(longest, h.took)
		if !h.began.Add(h.took).Before(at) && !h.began.After(at.Add(faultFor)) {
			through++
		}
	}
	t.Logf("%s: %d holds, %d failed, %d in flight through the fault, longest hold call %v, the election %v",
		name, len(holds), len(failed), through, longest, election)
	if len(failed) > 0 {
		t.Fatalf("%s: holds failed:\n%s", name, strings.Join(failed, "\n"))
	}
	if through <= 20 {
		t.Fatalf("%s: only %d holds ran through the fault", name, through)
	}
	for _, key := range []string{"a", "b"} {
		var ran []faultHold
		for _, h := range holds {
			if h.key == key {
				ran = append(ran, h)
			}
		}
		sort.Slice(ran, func(i, j int) bool { return ran[i].start.Before(ran[j].start) })
		for i := 1; i < len(ran); i++ {
			before, after := ran[i-1], ran[i]
			if after.fence <= before.fence {
				t.Fatalf("%s: key %s: fence %d after %d", name, key, after.fence, before.fence)
			}
			if after.start.Before(before.end) {
				t.Fatalf("%s: key %s: the hold of fence %d began before fence %d's ended", name, key, after.fence, before.fence)
			}
		}
	}
	var slow []string
	for _, h := range holds {
		if h.took >= election+time.Second {
			slow = append(slow, fmt.Sprintf("%s: %v, begun %v from the fault", h.key, h.took, h.began.Sub(at)))
		}
	}
	if len(slow) > 0 {
		t.Fatalf("%s: Hold calls longer than the election (%v) and a second:\n%s", name, election, strings.Join(slow, "\n"))
	}
}

// DIST-09: kill -9 of the leader (member 1) while the clients' calls go to
// a follower (member 0) that forwards them to it; restarted 3 s later.
func TestDist09KillingTheLeaderUnderLoadFailsNoHold(t *testing.T) {
	runFault(t, "kill-leader", 1, "kill 1", "restart 1")
}

// DIST-09: the clients' own member frozen (SIGSTOP) while it leads, thawed
// 3 s later: their calls and their watch stream move to another member.
func TestDist09FreezingTheClientsLeaderUnderLoadFailsNoHold(t *testing.T) {
	runFault(t, "freeze-leader", 0, "freeze 0", "thaw 0")
}
