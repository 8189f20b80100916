//! A 3-member etcd cluster on loopback for the bindings' fault tests, run
//! by commands on stdin, one a line, each answered by one line on stdout:
//!
//! ```text
//! (on start)   ready etcd://127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2 election-timeout=500ms
//! leader       leader N          the index of the leader
//! lead N       ok                member N leads (etcd's move-leader)
//! kill N       ok                kill -9 of member N
//! restart N    ok                member N started again on its data dir
//! freeze N     ok                SIGSTOP of member N
//! thaw N       ok                SIGCONT of member N
//! outage       outage Tms        how long after the last kill or freeze the
//!                                members it spared took a write again
//!                                (etcd_tests::Outage; within 10 s)
//! quit         (exits)           so does the end of stdin; the members stop
//! ```
//!
//! A bad command is answered `error: …`. The members are those of
//! `etcd_tests::Cluster` (`$LEASEHOLD_ETCD`, which `make etcd` builds).

use std::io::Write;
use std::time::Duration;

use etcd_tests::{Cluster, Etcd};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::task::JoinHandle;

/// The members' `--election-timeout` (etcd_tests::Cluster).
const ELECTION_TIMEOUT_MS: u64 = 500;
/// How long an outage is measured before the probe gives up.
const OUTAGE_WITHIN: Duration = Duration::from_secs(10);

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut cluster = Cluster::start(Etcd::Current, 3).await;
    let hosts: Vec<String> = cluster.members.iter().map(|m| m.endpoint()).collect();
    say(&format!(
        "ready etcd://{} election-timeout={ELECTION_TIMEOUT_MS}ms",
        hosts.join(",")
    ));
    let mut outage: Option<JoinHandle<Duration>> = None;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or("");
        let member = words
            .next()
            .and_then(|w| w.parse::<usize>().ok())
            .filter(|i| *i < cluster.members.len());
        let running = |i: usize, c: &Cluster| c.members[i].pid().is_some();
        match (command, member) {
            ("quit", _) => break,
            ("leader", _) => {
                let leader = cluster.wait_for_leader(Duration::from_secs(10)).await;
                say(&format!("leader {leader}"));
            }
            ("lead", Some(i)) => {
                cluster.move_leader_to(i).await;
                say("ok");
            }
            ("kill", Some(i)) if running(i, &cluster) => {
                let probe = cluster.outage(i).await;
                cluster.kill(i);
                outage = Some(tokio::spawn(probe.measure(OUTAGE_WITHIN)));
                say("ok");
            }
            ("restart", Some(i)) if !running(i, &cluster) => {
                cluster.restart(i);
                say("ok");
            }
            ("freeze", Some(i)) if running(i, &cluster) => {
                let probe = cluster.outage(i).await;
                cluster.freeze(i);
                outage = Some(tokio::spawn(probe.measure(OUTAGE_WITHIN)));
                say("ok");
            }
            ("outage", _) => match outage.take() {
                Some(probe) => match probe.await {
                    Ok(took) => say(&format!("outage {}ms", took.as_millis())),
                    Err(e) => say(&format!("error: the outage probe failed: {e}")),
                },
                None => say("error: no kill or freeze to measure"),
            },
            ("thaw", Some(i)) if running(i, &cluster) => {
                cluster.thaw(i);
                say("ok");
            }
            _ => say(&format!("error: cannot do {line:?}")),
        }
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
