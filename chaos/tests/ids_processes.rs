//! IDGEN-01 across processes (issue #15): `ids_worker` processes issue IDs
//! from one namespace of a real store, each logging every ID it issued,
//! while one is SIGKILLed (and replaced), one is SIGSTOPped past its ttl
//! and resumed, and the store is restarted (the server on its data dir; on
//! etcd, the leader member). Then every log is read and checked: no ID
//! twice across all logs (IDGEN-01), each generator's IDs strictly increase
//! on its node (IDGEN-03), the generators of one node issue in disjoint
//! ranges, in the order the logs prove they held it, and the frozen
//! generator issued nothing stamped after its deadline (IDGEN-02).
//!
//! The server test starts `leasehold serve` from beside the test binary
//! (`cargo build -p leasehold-server`) or `$LEASEHOLD_BIN`; the etcd test
//! starts `$LEASEHOLD_ETCD` (`make etcd`). The log format is the worker's
//! (`chaos/src/bin/ids_worker.rs`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use etcd_tests::{Cluster, Etcd};
use leasehold::idgen::IdLayout;
use leasehold_chaos::clock::now_ns;
use leasehold_chaos::process::{self, ServeCommand, ServerProcess};
use nix::sys::signal::Signal;

/// The log's record kinds (as the worker writes them).
const OPENING: u32 = 1;
const OPENED: u32 = 2;
const ID: u32 = 3;
const MARK: u32 = 4;
const ENDED: u32 = 5;
/// An `ENDED` record's value for a generator that failed `Lost`.
const ENDED_LOST: u64 = 1;

/// The workers' slot ttl and tolerance: a worker frozen for [`FREEZE`] has
/// lost its slot when it resumes.
const TTL: Duration = Duration::from_secs(3);
const TOLERANCE: Duration = Duration::from_secs(1);
const FREEZE: Duration = Duration::from_secs(6);
/// Workers, and the slots of the namespace: one worker always waits for a slot.
const WORKERS: usize = 5;
const LIMIT: u32 = 4;

/// A worker process and its log.
struct Worker {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Worker {
    fn start(dir: &Path, url: &str, layout: &str, name: &str, seed: u64) -> Worker {
        let log = dir.join(format!("{name}.log"));
        let stderr = std::fs::File::create(dir.join(format!("{name}.stderr"))).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_ids_worker"))
            .args(["--url", url, "--namespace", "orders", "--layout", layout])
            .arg("--log")
            .arg(&log)
            .args(["--ttl-ms", &TTL.as_millis().to_string()])
            .args(["--tolerance-ms", &TOLERANCE.as_millis().to_string()])
            .args(["--limit", &LIMIT.to_string(), "--seed", &seed.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("start ids_worker");
        Worker {
            name: name.to_owned(),
            child,
            log,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then its exit status (within 10 s).
    fn stop(&mut self) -> std::process::ExitStatus {
        process::signal(self.pid(), Signal::SIGTERM);
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < until,
                "{} did not exit on SIGTERM",
                self.name
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One generator as a worker's log shows it.
#[derive(Debug, Clone)]
struct Generator {
    worker: String,
    number: u32,
    /// When its (last) open began, `CLOCK_MONOTONIC` ns.
    opening_ns: u64,
    node: u32,
    ids: Vec<u64>,
    /// When its last batch was logged (0: none).
    last_mark_ns: u64,
    /// How it ended, if the log says.
    ended: Option<u64>,
}

impl Generator {
    fn first(&self) -> u64 {
        self.ids[0]
    }

    fn last(&self) -> u64 {
        self.ids[self.ids.len() - 1]
    }
}

impl fmt::Display for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} generator {} (node {}",
            self.worker, self.number, self.node
        )?;
        if !self.ids.is_empty() {
            write!(
                f,
                ", {} IDs {}..={}",
                self.ids.len(),
                self.first(),
                self.last()
            )?;
        }
        write!(f, ")")
    }
}

/// The generators a worker's log shows opened (a torn last record ignored).
fn read_log(worker: &str, path: &Path) -> Vec<Generator> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let mut generators: Vec<Generator> = Vec::new();
    let mut opening = BTreeMap::new();
    for record in bytes.chunks_exact(16) {
        let kind = u32::from_le_bytes(record[..4].try_into().unwrap());
        let number = u32::from_le_bytes(record[4..8].try_into().unwrap());
        let value = u64::from_le_bytes(record[8..].try_into().unwrap());
        match kind {
            OPENING => {
                opening.insert(number, value);
            }
            OPENED => generators.push(Generator {
                worker: worker.to_owned(),
                number,
                opening_ns: opening[&number],
                node: u32::try_from(value).unwrap(),
                ids: Vec::new(),
                last_mark_ns: 0,
                ended: None,
            }),
            ID | MARK | ENDED => {
                let g = generators
                    .last_mut()
                    .filter(|g| g.number == number)
                    .unwrap_or_else(|| {
                        panic!("{worker}: a record of generator {number} before it opened")
                    });
                match kind {
                    ID => g.ids.push(value),
                    MARK => g.last_mark_ns = value,
                    _ => g.ended = Some(value),
                }
            }
            _ => panic!("{worker}: a record of kind {kind}"),
        }
    }
    generators
}

/// What the logs show, and every rule they break.
#[derive(Default)]
struct Report {
    ids: usize,
    generators: usize,
    /// Successive generators of one node in different workers.
    handoffs: usize,
    duplicates: usize,
    violations: Vec<String>,
}

impl Report {
    fn violation(&mut self, what: String) {
        if self.violations.len() < 20 {
            self.violations.push(what);
        }
    }
}

/// Checks the generators of every log against IDGEN-01 and IDGEN-03, and
/// the order of the generators of each node.
fn check(generators: &[Generator], layout: IdLayout) -> Report {
    let mut report = Report {
        generators: generators.len(),
        ..Report::default()
    };
    // IDGEN-01: no ID twice, across every log.
    let mut owner: HashMap<u64, usize> = HashMap::new();
    for (i, g) in generators.iter().enumerate() {
        report.ids += g.ids.len();
        for &id in &g.ids {
            if let Some(&j) = owner.get(&id) {
                report.duplicates += 1;
                report.violation(format!(
                    "ID {id} ({:?}) twice (IDGEN-01): {} and {g}",
                    layout.parts(id),
                    generators[j]
                ));
            } else {
                owner.insert(id, i);
            }
        }
    }
    // IDGEN-03: each generator's IDs strictly increase, all on its node.
    for g in generators {
        for pair in g.ids.windows(2) {
            if pair[0] >= pair[1] {
                report.violation(format!("{g}: {} then {} (IDGEN-03)", pair[0], pair[1]));
            }
        }
        if let Some(&id) = g.ids.iter().find(|&&id| layout.parts(id).node != g.node) {
            report.violation(format!("{g}: ID {id} of node {}", layout.parts(id).node));
        }
    }
    // Per node: the generators' ranges are disjoint, and a generator that
    // opened after another logged its last batch issued above it (the
    // second held the slot after the first).
    let mut by_node: BTreeMap<u32, Vec<&Generator>> = BTreeMap::new();
    for g in generators.iter().filter(|g| !g.ids.is_empty()) {
        by_node.entry(g.node).or_default().push(g);
    }
    for on_node in by_node.values_mut() {
        on_node.sort_by_key(|g| g.first());
        for pair in on_node.windows(2) {
            if pair[0].worker != pair[1].worker {
                report.handoffs += 1;
            }
            if pair[0].last() >= pair[1].first() {
                report.violation(format!("{} and {} overlap", pair[0], pair[1]));
            }
        }
        for earlier in on_node.iter() {
            for later in on_node.iter() {
                if earlier.last_mark_ns < later.opening_ns && earlier.last() >= later.first() {
                    report.violation(format!(
                        "{later} opened after {earlier} issued its last IDs, yet issued below them"
                    ));
                }
            }
        }
    }
    report
}

/// Milliseconds since the Unix epoch.
fn wall_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// The store under the workers, and its fault.
enum Store {
    Server(ServerProcess),
    Etcd(Cluster),
}

impl Store {
    /// kill -9 of the server (restarted on its data dir) or of the etcd
    /// leader (restarted on its data dir after a second).
    async fn kill_and_restart(&mut self) -> String {
        match self {
            Store::Server(server) => {
                server.kill9();
                server.restart();
                "the server killed (-9) and restarted on its data dir".to_owned()
            }
            Store::Etcd(cluster) => {
                let leader = cluster.wait_for_leader(Duration::from_secs(10)).await;
                cluster.kill(leader);
                tokio::time::sleep(Duration::from_secs(1)).await;
                cluster.restart(leader);
                format!("etcd leader m{leader} killed (-9) and restarted on its data dir")
            }
        }
    }
}

fn all_generators(workers: &[Worker]) -> Vec<Generator> {
    workers
        .iter()
        .flat_map(|w| read_log(&w.name, &w.log))
        .collect()
}

/// The worker whose log shows it issuing now (its last batch within
/// 200 ms), among `among`, waiting for one up to 10 s.
fn issuing_now(workers: &[Worker], among: &[usize]) -> usize {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        for &i in among {
            let generators = read_log(&workers[i].name, &workers[i].log);
            if let Some(g) = generators.last() {
                if g.ended.is_none() && g.last_mark_ns + 200_000_000 > now_ns() {
                    return i;
                }
            }
        }
        assert!(Instant::now() < until, "no worker issues IDs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Workers on `url` under the faults; then every log checked.
async fn run(mut store: Store, url: &str, layout_name: &str, layout: IdLayout) {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let mut workers: Vec<Worker> = (0..WORKERS)
        .map(|i| Worker::start(dir.path(), url, layout_name, &format!("w{i}"), i as u64))
        .collect();
    tokio::time::sleep(Duration::from_secs(3)).await;

    // SIGKILL a worker that holds a slot; a replacement starts at once and
    // waits with the others for a slot (the killed one's, after its expiry).
    let killed = issuing_now(&workers, &(0..WORKERS).collect::<Vec<_>>());
    let killed_ns = now_ns();
    let _ = workers[killed].child.kill();
    let _ = workers[killed].child.wait();
    let killed_generator = read_log(&workers[killed].name, &workers[killed].log)
        .pop()
        .expect("the killed worker opened a generator");
    workers.push(Worker::start(dir.path(), url, layout_name, "w5", 5));
    tokio::time::sleep(Duration::from_secs(1)).await;

    // SIGSTOP another for twice its ttl: its slot expires meanwhile.
    let others: Vec<usize> = (0..WORKERS).filter(|&i| i != killed).collect();
    let frozen = issuing_now(&workers, &others);
    process::freeze(workers[frozen].pid());
    let frozen_ms = wall_ms();
    tokio::time::sleep(FREEZE).await;
    let thawed_ns = now_ns();
    process::thaw(workers[frozen].pid());
    tokio::time::sleep(Duration::from_secs(2)).await;

    // The store killed and restarted.
    let restarted_ns = now_ns();
    let restart_began = Instant::now();
    let restart = store.kill_and_restart().await;

    // Until IDs were logged after the restart (for 2 s), the frozen worker
    // issued again and the killed worker's node went on; at most 25 s.
    let went_on = |generators: &[Generator]| {
        let frozen_reopened = generators.iter().any(|g| {
            g.worker == workers[frozen].name && g.opening_ns > thawed_ns && !g.ids.is_empty()
        });
        let node_went_on = generators.iter().any(|g| {
            g.node == killed_generator.node && g.opening_ns > killed_ns && !g.ids.is_empty()
        });
        frozen_reopened && node_went_on
    };
    let until = Instant::now() + Duration::from_secs(25);
    let mut resumed = None;
    while Instant::now() < until {
        let generators = all_generators(&workers);
        let after: usize = generators
            .iter()
            .filter(|g| g.opening_ns > restarted_ns)
            .map(|g| g.ids.len())
            .sum();
        if resumed.is_none() && after > 0 {
            resumed = Some(Instant::now());
        }
        if resumed.is_some_and(|at| at.elapsed() > Duration::from_secs(2)) && went_on(&generators) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let resumed_after = match resumed {
        Some(at) => format!("{:.1} s", (at - restart_began).as_secs_f64()),
        None => "never".to_owned(),
    };
    for (i, w) in workers.iter_mut().enumerate() {
        if i != killed {
            let status = w.stop();
            assert!(status.success(), "{} exited {status}", w.name);
        }
    }
    drop(store);

    let generators = all_generators(&workers);
    let report = check(&generators, layout);
    let after = |ns: u64| -> usize {
        generators
            .iter()
            .filter(|g| g.opening_ns > ns)
            .map(|g| g.ids.len())
            .sum()
    };
    let (after_kill, after_thaw, after_restart) =
        (after(killed_ns), after(thawed_ns), after(restarted_ns));
    let per_worker: String = workers
        .iter()
        .map(|w| {
            let mine: Vec<&Generator> = generators.iter().filter(|g| g.worker == w.name).collect();
            let ids: usize = mine.iter().map(|g| g.ids.len()).sum();
            let lost = mine.iter().filter(|g| g.ended == Some(ENDED_LOST)).count();
            let stderr = std::fs::read_to_string(dir.path().join(format!("{}.stderr", w.name)))
                .unwrap_or_default();
            format!(
                "  {}: {} generators ({lost} lost), {ids} IDs{}{}\n",
                w.name,
                mine.len(),
                if stderr.is_empty() { "" } else { "; stderr: " },
                stderr.trim()
            )
        })
        .collect();
    println!(
        "layout {}: {} IDs logged by {} workers, {} generators opened, {} handoffs between workers; \
         faults: 1 worker killed ({}), 1 frozen {FREEZE:?} ({}), {restart} (IDs again after {}); \
         IDs from generators opened after the kill {after_kill}, after the thaw {after_thaw}, \
         after the restart {after_restart}; duplicates {}; {:.1} s\n{per_worker}",
        layout.describe(),
        report.ids,
        workers.len(),
        report.generators,
        report.handoffs,
        workers[killed].name,
        workers[frozen].name,
        resumed_after,
        report.duplicates,
        started.elapsed().as_secs_f64(),
    );
    if !report.violations.is_empty() {
        // The logs are the evidence: kept, and named.
        let logs = dir.keep();
        panic!(
            "{} violations (duplicates {}; the logs are in {}):\n{}",
            report.violations.len(),
            report.duplicates,
            logs.display(),
            report.violations.join("\n")
        );
    }
    assert_eq!(report.duplicates, 0);

    // The killed worker's slot went on with a later holder, above it.
    assert!(
        !killed_generator.ids.is_empty(),
        "the killed worker had logged no ID"
    );
    assert!(
        generators.iter().any(|g| g.node == killed_generator.node
            && g.opening_ns > killed_ns
            && !g.ids.is_empty()),
        "nobody issued on node {} after {killed_generator} was killed",
        killed_generator.node
    );
    // The frozen worker's generator ended Lost, issued nothing stamped after
    // its deadline (IDGEN-02: before it froze plus the ttl), and the
    // worker opened another that issued.
    let frozen_log = read_log(&workers[frozen].name, &workers[frozen].log);
    let held = frozen_log
        .iter()
        .rfind(|g| g.opening_ns < thawed_ns)
        .expect("the frozen worker held a generator");
    assert_eq!(
        held.ended,
        Some(ENDED_LOST),
        "{held} frozen past its ttl did not end Lost"
    );
    let deadline_ms = frozen_ms + u64::try_from(TTL.as_millis()).unwrap();
    if let Some(&id) = held
        .ids
        .iter()
        .find(|&&id| layout.parts(id).timestamp_ms > deadline_ms)
    {
        panic!(
            "{held} issued ID {id} stamped {} ms, after its deadline (frozen at {frozen_ms} ms + ttl)",
            layout.parts(id).timestamp_ms
        );
    }
    assert!(
        frozen_log
            .iter()
            .any(|g| g.opening_ns > thawed_ns && !g.ids.is_empty()),
        "the frozen worker issued nothing from a new generator after it resumed"
    );
    assert!(after_kill > 0 && after_thaw > 0, "no IDs after the faults");
    assert!(
        after_restart > 0,
        "no IDs from generators opened after the restart"
    );
}

// IDGEN-01: on the real server store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idgen_01_workers_killed_frozen_and_a_restarted_server_never_repeat_an_id() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServeCommand::new(&dir.path().join("data"), &[])
        .stderr_to(&dir.path().join("server.log"))
        .start()
        .unwrap_or_else(|e| panic!("{e:#} (is target/*/leasehold built?)"));
    let url = server.url();
    run(Store::Server(server), &url, "default", IdLayout::DEFAULT).await;
}

// IDGEN-01: on a 3-member etcd cluster, its leader killed and restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idgen_01_workers_killed_frozen_and_a_killed_etcd_leader_never_repeat_an_id() {
    let cluster = Cluster::start(Etcd::Current, 3).await;
    let url = cluster.url("ids-processes");
    run(Store::Etcd(cluster), &url, "js-safe", IdLayout::js_safe()).await;
}

// IDGEN-01, IDGEN-03: the check itself fails on logs that break them: an ID
// twice, a generator going down, two generators of a node overlapping, and
// a later holder of a node issuing below an earlier one.
#[test]
fn idgen_01_the_check_finds_a_repeated_id_and_generators_out_of_order() {
    let layout = IdLayout::DEFAULT;
    let generator =
        |worker: &str, node: u32, opening_ns: u64, last_mark_ns: u64, ticks: &[u64]| Generator {
            worker: worker.to_owned(),
            number: 1,
            opening_ns,
            node,
            ids: ticks.iter().map(|&t| layout.compose(t, node, 0)).collect(),
            last_mark_ns,
            ended: None,
        };
    let sound = [
        generator("a", 0, 10, 20, &[1, 2, 3]),
        generator("b", 0, 30, 40, &[4, 5]),
        generator("c", 1, 10, 20, &[1, 2, 3]),
    ];
    let report = check(&sound, layout);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!((report.ids, report.handoffs), (8, 1));

    let twice = [sound[0].clone(), generator("b", 0, 30, 40, &[3, 4])];
    let report = check(&twice, layout);
    assert_eq!(report.duplicates, 1);
    assert!(
        report.violations[0].contains("twice (IDGEN-01)"),
        "{:?}",
        report.violations
    );

    let down = [generator("a", 0, 10, 20, &[2, 1])];
    let report = check(&down, layout);
    assert!(
        report.violations[0].contains("(IDGEN-03)"),
        "{:?}",
        report.violations
    );

    let overlap = [sound[0].clone(), generator("b", 0, 30, 40, &[2])];
    assert!(check(&overlap, layout)
        .violations
        .iter()
        .any(|v| v.contains("overlap")));

    let below = [
        generator("a", 0, 10, 20, &[5, 6]),
        generator("b", 0, 30, 40, &[1, 2]),
    ];
    let report = check(&below, layout);
    assert!(
        report.violations.iter().any(|v| v.contains("issued below")),
        "{:?}",
        report.violations
    );
}
