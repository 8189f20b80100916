//! Leasehold's server store side by side with etcd's and Redis's lock
//! recipes, and Leasehold on PostgreSQL beside PostgreSQL's two lock
//! recipes (advisory locks; a `lock_until` table), on this machine, in one run:
//!
//! 1. hold cycles (acquire + release) per second and their p50/p99, with 1
//!    client and with 16 concurrent clients on distinct keys;
//! 2. handoff: 16 clients contend for one key; the time from the holder's
//!    release call to the next holder's grant;
//! 3. how many leases one client process keeps renewed, and its CPU cost;
//! 4. on PostgreSQL, what one hold cycle writes: commits and WAL bytes;
//! 5. the floor: a plain loopback TCP round trip (16-byte ping/pong).
//!
//! It starts every server itself (the release `leasehold` binary next to
//! this one, `etcd`, `redis-server`, PostgreSQL's `initdb` and `pg_ctl`,
//! fsync on) on free loopback ports with temporary
//! data directories, and stops them on exit, error, panic or SIGINT/SIGTERM.
//! A system whose server cannot be started is skipped, with the reason.
//!
//! Run: `make bench-compare` (installs etcd, Redis and protoc when missing,
//! builds the server, then runs
//! `cargo run --release -p leasehold-bench --features compare --bin compare`).
//! Options: `--measure-ms N` (3000: the time counted per workload, split
//! over the rounds), `--warmup-ms N` (300, before each round), `--rounds N`
//! (3: every workload runs once per round, all systems interleaved, so
//! that load from outside falls on all alike), `--renew-ms N` (6000),
//! `--leases 1000,10000,50000`, `--million N` (1000000: the leases of the
//! long Leasehold run, ttl 10 s; 0 skips it), `--million-ms N` (60000),
//! `--markdown FILE` (where the
//! Markdown section goes; `target/bench-compare.md` by default),
//! `--only TEXT` (only the systems whose name holds TEXT, and the floor).

#[path = "../compare/pg.rs"]
mod pg;
#[path = "../compare/procs.rs"]
#[allow(dead_code)] // shared with `ids` and `instructions`, each using a part
mod procs;
#[path = "../compare/renew.rs"]
mod renew;
#[path = "../compare/stats.rs"]
mod stats;
#[path = "../compare/systems.rs"]
mod systems;
#[path = "../compare/workloads.rs"]
mod workloads;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use procs::Server;
use stats::{show, show_rate, Samples};
use systems::Locker;
use workloads::{Measured, Window};

/// Concurrent clients in the 16-client workloads.
const CLIENTS: usize = 16;

/// The diagnostic rows: Leasehold's server driven by a minimal wire client.
const WIRE: &str = "leasehold server, bare wire client (diagnostic)";
/// The bare wire client with a task of its own reading its frames.
const WIRE_TASK: &str = "leasehold server, bare wire client with a reader task (diagnostic)";

/// The loopback floor's rows.
const FLOOR: &str = "loopback TCP";

/// Leasehold's PostgreSQL store, on the run's PostgreSQL.
const LH_PG: &str = "leasehold on postgres";
/// PostgreSQL's advisory-lock recipe (`pg::AdvisoryClient`).
const ADVISORY: &str = "postgres advisory lock";
/// PostgreSQL's `lock_until` table recipe (`pg::LockUntilClient`).
const LOCK_UNTIL: &str = "postgres lock_until table";

/// The 1, 5 and 15 minute load averages.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The ttl of the long run's leases.
const MILLION_TTL: Duration = Duration::from_secs(10);

struct Config {
    window: Window,
    rounds: u32,
    renew_span: Duration,
    leases: Vec<usize>,
    /// How many leases the long Leasehold run keeps (0: no such run).
    million: usize,
    million_span: Duration,
    markdown: PathBuf,
    /// Only the systems whose name holds this (and the floor).
    only: Option<String>,
}

impl Config {
    fn parse(args: &[String]) -> Result<Config> {
        let mut c = Config {
            window: Window {
                warmup: Duration::from_millis(300),
                measure: Duration::from_millis(3000),
            },
            rounds: 3,
            renew_span: Duration::from_millis(6000),
            leases: vec![1_000, 10_000, 50_000],
            million: 1_000_000,
            million_span: Duration::from_secs(60),
            markdown: target_dir().join("bench-compare.md"),
            only: None,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut value = || {
                it.next()
                    .ok_or_else(|| anyhow!("{flag} needs a value"))
                    .cloned()
            };
            match flag.as_str() {
                "--measure-ms" => c.window.measure = Duration::from_millis(value()?.parse()?),
                "--warmup-ms" => c.window.warmup = Duration::from_millis(value()?.parse()?),
                "--rounds" => c.rounds = value()?.parse()?,
                "--renew-ms" => c.renew_span = Duration::from_millis(value()?.parse()?),
                "--leases" => {
                    c.leases = value()?
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::parse)
                        .collect::<Result<_, _>>()?
                }
                "--million" => c.million = value()?.parse()?,
                "--million-ms" => c.million_span = Duration::from_millis(value()?.parse()?),
                "--markdown" => c.markdown = PathBuf::from(value()?),
                "--only" => c.only = Some(value()?),
                other => bail!("unknown option {other}"),
            }
        }
        Ok(c)
    }
}

/// The cargo target directory this binary was built into (`target/`).
fn target_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()))
        .unwrap_or_else(|| PathBuf::from("target"))
}

/// One line of the results table.
struct Row {
    system: String,
    workload: String,
    per_sec: Option<f64>,
    p50: Option<Duration>,
    p99: Option<Duration>,
}

impl Row {
    fn new(system: &str, workload: &str, per_sec: Option<f64>, s: &mut Samples) -> Row {
        Row {
            system: system.into(),
            workload: workload.into(),
            per_sec,
            p50: s.p50(),
            p99: s.p99(),
        }
    }
}

/// The servers that started, and why the others did not.
struct Servers {
    leasehold: Option<Server>,
    etcd: Option<Server>,
    redis: Option<Server>,
    postgres: Option<pg::Postgres>,
    skipped: Vec<String>,
}

async fn start_servers() -> Servers {
    let mut skipped = Vec::new();
    let bin = std::env::var_os("LEASEHOLD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("release").join("leasehold"));
    let leasehold = if bin.is_file() {
        procs::start_leasehold(&bin, &[])
            .map_err(|e| skipped.push(format!("leasehold: {e:#}")))
            .ok()
    } else {
        skipped.push(format!(
            "leasehold: no server binary at {} (cargo build --release -p leasehold-server)",
            bin.display()
        ));
        None
    };
    let etcd = if procs::etcd_available() {
        procs::start_etcd()
            .await
            .map_err(|e| skipped.push(format!("etcd: {e:#}")))
            .ok()
    } else {
        skipped.push("etcd: not installed (make etcd)".into());
        None
    };
    let redis = if procs::on_path("redis-server") {
        procs::start_redis(&[])
            .await
            .map_err(|e| skipped.push(format!("redis: {e:#}")))
            .ok()
    } else {
        skipped.push("redis: not installed (apt-get install redis-server)".into());
        None
    };
    let postgres =
        if procs::on_path("pg_config") || std::path::Path::new("/usr/lib/postgresql").is_dir() {
            tokio::task::spawn_blocking(pg::start)
                .await
                .map_err(anyhow::Error::from)
                .and_then(|started| started)
                .map_err(|e| skipped.push(format!("postgres: {e:#}")))
                .ok()
        } else {
            skipped.push("postgres: not installed (apt-get install postgresql)".into());
            None
        };
    Servers {
        leasehold,
        etcd,
        redis,
        postgres,
        skipped,
    }
}

fn keys(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// Everything measured.
#[derive(Default)]
struct Results {
    rows: Vec<Row>,
    floor_p50: Option<Duration>,
    /// Round trips per second of the floor with 16 clients.
    floor_per_sec_16: Option<f64>,
    /// Grant p50 with 1 client, per system.
    grant_p50: Vec<(String, Option<Duration>)>,
    /// Cycles per second with 16 clients: system, setup, value.
    per_sec_16: Vec<(String, String, f64)>,
    /// Handoff p50: system, setup, value.
    handoff: Vec<(String, String, Option<Duration>)>,
    /// Handoff percentiles, for the distribution's plot.
    handoff_spread: Vec<Spread>,
    /// Load averages (/proc/loadavg) before and after the run.
    load: (String, String),
    renewed: Vec<(String, String, renew::Renewed)>,
    /// What `--only` asked for.
    only: Option<String>,
    /// Cycles per second with 1 client, per system.
    per_sec_1: Vec<(String, f64)>,
    /// What one hold cycle writes on PostgreSQL, per system.
    pg_writes: Vec<(String, pg::CycleWrites)>,
    /// The run's PostgreSQL version (empty: none ran).
    pg_version: String,
    problems: Vec<String>,
}

impl Results {
    /// Whether `system` is measured in this run (`--only`).
    fn wanted(&self, system: &str) -> bool {
        system == FLOOR
            || self
                .only
                .as_ref()
                .is_none_or(|o| system.contains(o.as_str()))
    }

    fn failed(&mut self, what: &str, e: anyhow::Error) {
        eprintln!("  {what} FAILED: {e:#}");
        self.problems.push(format!("{what}: {e:#}"));
    }

    /// Turns what a plan measured over all rounds into table rows.
    fn record(&mut self, plan: &Plan, m: &mut Measured) {
        let (system, setup) = (plan.system, plan.setup.as_str());
        match plan.kind {
            Kind::Floor => {
                if setup == "1 client" {
                    self.floor_p50 = m.grant.p50();
                } else {
                    self.floor_per_sec_16 = Some(m.per_sec());
                }
                let what = format!("round trip (16 B ping/pong), {setup}");
                self.rows
                    .push(Row::new(system, &what, Some(m.per_sec()), &mut m.grant));
            }
            Kind::Cycle1 => {
                self.rows.push(Row::new(
                    system,
                    "hold cycle, 1 client",
                    Some(m.per_sec()),
                    &mut m.main,
                ));
                self.rows.push(Row::new(
                    system,
                    "grant (acquire call → return), 1 client",
                    None,
                    &mut m.grant,
                ));
                self.grant_p50.push((system.into(), m.grant.p50()));
                self.per_sec_1.push((system.into(), m.per_sec()));
            }
            Kind::Cycle16 => {
                let what = format!("hold cycle, {setup}");
                self.rows
                    .push(Row::new(system, &what, Some(m.per_sec()), &mut m.main));
                self.per_sec_16
                    .push((system.into(), setup.into(), m.per_sec()));
            }
            Kind::Handoff => {
                if m.overlaps > 0 {
                    self.problems.push(format!(
                        "{system} ({setup}): {} grants while another client held the key",
                        m.overlaps
                    ));
                }
                let what = format!("handoff (release → next grant), {setup}");
                self.rows
                    .push(Row::new(system, &what, Some(m.per_sec()), &mut m.main));
                self.handoff
                    .push((system.into(), setup.into(), m.main.p50()));
                let spread = SPREAD
                    .iter()
                    .filter_map(|&p| Some((p, m.main.percentile(p)?)))
                    .collect();
                self.handoff_spread
                    .push((system.into(), setup.into(), spread));
            }
        }
    }
}

/// One system's handoff distribution: system, setup, (percentile, value).
type Spread = (String, String, Vec<(f64, Duration)>);

/// The percentiles of a handoff's distribution in the run's data.
const SPREAD: [f64; 11] = [
    1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0,
];

/// The run's numbers as JSON (`target/bench-compare.json`), which
/// `bench/plots.py` draws: the rows, the handoff distributions, the renewals.
fn data(res: &Results) -> serde_json::Value {
    use serde_json::json;
    let us = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e6);
    json!({
        "floor_p50_us": us(res.floor_p50),
        "rows": res.rows.iter().map(|r| json!({
            "system": r.system,
            "workload": r.workload,
            "per_sec": r.per_sec,
            "p50_us": us(r.p50),
            "p99_us": us(r.p99),
        })).collect::<Vec<_>>(),
        "handoff": res.handoff_spread.iter().map(|(system, setup, spread)| json!({
            "system": system,
            "setup": setup,
            "percentiles": spread.iter().map(|(p, d)| json!([p, d.as_secs_f64() * 1e6])).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "renewed": res.renewed.iter().map(|(system, how, r)| {
            let span = r.span.as_secs_f64();
            json!({
                "system": system,
                "how": how,
                "leases": r.n,
                "ttl_s": r.ttl.as_secs_f64(),
                "client_core": r.client_cpu.as_secs_f64() / span,
                "server_core": r.server_cpu.as_secs_f64() / span,
                "client_bytes": r.client_bytes,
                "server_bytes": r.server_bytes,
                "lost": r.lost,
            })
        }).collect::<Vec<_>>(),
    })
}

/// What a plan measures, which decides its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Floor,
    Cycle1,
    Cycle16,
    Handoff,
}

/// One timed workload on one system, over clients opened once.
struct Plan {
    system: &'static str,
    setup: String,
    kind: Kind,
    run: workloads::Run,
    measured: Measured,
    failed: bool,
}

/// Opens the clients of a plan, or notes why it could not.
async fn plan<L, Fut>(
    res: &mut Results,
    plans: &mut Vec<Plan>,
    (system, setup, kind): (&'static str, &str, Kind),
    open: Fut,
) where
    L: Locker,
    Fut: std::future::Future<Output = Result<Vec<L>>>,
{
    if !res.wanted(system) {
        return;
    }
    let clients = match open.await {
        Ok(c) => c,
        Err(e) => return res.failed(&format!("{system}, {setup}: opening the clients"), e),
    };
    let run = match kind {
        Kind::Handoff => workloads::handoff_run(clients, "contended"),
        _ => {
            let n = clients.len();
            workloads::cycles_run(clients, keys(&format!("{kind:?}"), n))
        }
    };
    plans.push(Plan {
        system,
        setup: setup.into(),
        kind,
        run,
        measured: Measured::default(),
        failed: false,
    });
}

async fn run(config: &Config) -> Result<Results> {
    let mut res = Results {
        only: config.only.clone(),
        ..Results::default()
    };
    res.load.0 = loadavg();

    eprintln!("starting the servers");
    let servers = start_servers().await;
    for s in &servers.skipped {
        eprintln!("  skipped {s}");
        res.problems.push(format!("skipped {s}"));
    }
    let lh_url = servers
        .leasehold
        .as_ref()
        .map(|s| format!("leasehold://127.0.0.1:{}", s.port));
    let etcd_url = servers
        .etcd
        .as_ref()
        .map(|s| format!("http://127.0.0.1:{}", s.port));
    let redis_port = servers.redis.as_ref().map(|s| s.port);
    let wire_port = servers.leasehold.as_ref().map(|s| s.port);
    let echo = systems::start_echo()?;

    eprintln!("opening the clients");
    let mut plans = Vec::new();
    let p = &mut plans;
    let r = &mut res;
    let floor = FLOOR;
    let echo_clients = |n: usize| async move {
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(systems::EchoClient::connect(echo).await?);
        }
        Ok(out)
    };
    plan(r, p, (floor, "1 client", Kind::Floor), echo_clients(1)).await;
    plan(
        r,
        p,
        (floor, "16 clients", Kind::Floor),
        echo_clients(CLIENTS),
    )
    .await;
    if let Some(url) = &lh_url {
        let lh = "leasehold";
        plan(
            r,
            p,
            (lh, "1 client", Kind::Cycle1),
            systems::leasehold_shared(url, 1),
        )
        .await;
        let (one, own) = ("16 tasks on one Store", "16 Stores (16 connections)");
        plan(
            r,
            p,
            (lh, one, Kind::Cycle16),
            systems::leasehold_shared(url, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (lh, own, Kind::Cycle16),
            systems::leasehold_own(url, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (lh, one, Kind::Handoff),
            systems::leasehold_shared(url, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (lh, own, Kind::Handoff),
            systems::leasehold_own(url, CLIENTS),
        )
        .await;
    }
    if let Some(port) = wire_port {
        let all = "16 connections";
        plan(
            r,
            p,
            (WIRE, "1 client", Kind::Cycle1),
            systems::wire_clients(port, 1, false),
        )
        .await;
        plan(
            r,
            p,
            (WIRE_TASK, "1 client", Kind::Cycle1),
            systems::wire_clients(port, 1, true),
        )
        .await;
        plan(
            r,
            p,
            (WIRE, all, Kind::Cycle16),
            systems::wire_clients(port, CLIENTS, false),
        )
        .await;
        plan(
            r,
            p,
            (WIRE, all, Kind::Handoff),
            systems::wire_clients(port, CLIENTS, false),
        )
        .await;
    }
    if let Some(url) = &etcd_url {
        let (e, all) = ("etcd", "16 clients (16 connections)");
        plan(
            r,
            p,
            (e, "1 client", Kind::Cycle1),
            systems::etcd_clients(url, 1),
        )
        .await;
        plan(
            r,
            p,
            (e, all, Kind::Cycle16),
            systems::etcd_clients(url, CLIENTS),
        )
        .await;
        let waiting = "16 clients, watch for delete";
        plan(
            r,
            p,
            (e, waiting, Kind::Handoff),
            systems::etcd_clients(url, CLIENTS),
        )
        .await;
    }
    if let Some(port) = servers.etcd.as_ref().map(|s| s.port) {
        let url = format!("etcd://127.0.0.1:{port}/bench");
        let le = "leasehold on etcd";
        let (one, own) = ("16 tasks on one Store", "16 Stores (16 connections)");
        plan(
            r,
            p,
            (le, "1 client", Kind::Cycle1),
            systems::leasehold_shared(&url, 1),
        )
        .await;
        plan(
            r,
            p,
            (le, one, Kind::Cycle16),
            systems::leasehold_shared(&url, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (le, own, Kind::Cycle16),
            systems::leasehold_own(&url, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (le, own, Kind::Handoff),
            systems::leasehold_own(&url, CLIENTS),
        )
        .await;
    }
    if let Some(port) = redis_port {
        let (rd, all) = ("redis", "16 clients (16 connections)");
        plan(
            r,
            p,
            (rd, "1 client", Kind::Cycle1),
            systems::redis_clients(port, 1),
        )
        .await;
        plan(
            r,
            p,
            (rd, all, Kind::Cycle16),
            systems::redis_clients(port, CLIENTS),
        )
        .await;
        let waiting = "16 clients, retry every 1 ms";
        plan(
            r,
            p,
            (rd, waiting, Kind::Handoff),
            systems::redis_clients(port, CLIENTS),
        )
        .await;
    }

    if let Some(server) = &servers.postgres {
        let (url, port) = (server.leasehold_url(), server.port);
        let (one, own) = ("16 tasks on one Store", "16 Stores (16 pools)");
        plan(
            r,
            p,
            (LH_PG, "1 client", Kind::Cycle1),
            systems::leasehold_shared(&url, 1),
        )
        .await;
        plan(
            r,
            p,
            (LH_PG, one, Kind::Cycle16),
            systems::leasehold_shared(&url, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (LH_PG, own, Kind::Cycle16),
            systems::leasehold_own(&url, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (LH_PG, one, Kind::Handoff),
            systems::leasehold_shared(&url, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (LH_PG, own, Kind::Handoff),
            systems::leasehold_own(&url, CLIENTS),
        )
        .await;
        let all = "16 clients (16 connections)";
        plan(
            r,
            p,
            (ADVISORY, "1 client", Kind::Cycle1),
            pg::advisory_clients(port, 1),
        )
        .await;
        plan(
            r,
            p,
            (ADVISORY, all, Kind::Cycle16),
            pg::advisory_clients(port, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (ADVISORY, "16 clients, blocked in the server", Kind::Handoff),
            pg::advisory_clients(port, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (LOCK_UNTIL, "1 client", Kind::Cycle1),
            pg::lock_until_clients(port, 1),
        )
        .await;
        plan(
            r,
            p,
            (LOCK_UNTIL, all, Kind::Cycle16),
            pg::lock_until_clients(port, CLIENTS),
        )
        .await;
        plan(
            r,
            p,
            (LOCK_UNTIL, "16 clients, retry every 1 ms", Kind::Handoff),
            pg::lock_until_clients(port, CLIENTS),
        )
        .await;
    }

    // Interleaved rounds, so that load from outside the benchmark, which
    // comes and goes, falls on every system alike.
    let rounds = config.rounds.max(1);
    let w = Window {
        warmup: config.window.warmup,
        measure: config.window.measure / rounds,
    };
    for round in 1..=rounds {
        eprintln!("round {round} of {rounds}");
        for plan in plans.iter_mut().filter(|p| !p.failed) {
            match (plan.run)(w).await {
                Ok(m) => {
                    eprintln!(
                        "  {}, {:?}, {}: {:.0}/s, p50 {}",
                        plan.system,
                        plan.kind,
                        plan.setup,
                        m.per_sec(),
                        show(m.main.clone().p50())
                    );
                    plan.measured.add(m);
                }
                Err(e) => {
                    plan.failed = true;
                    let what = format!("{}, {:?}, {}", plan.system, plan.kind, plan.setup);
                    res.failed(&what, e);
                }
            }
        }
    }
    // The table's order: floor, hold cycles, then handoffs.
    plans.sort_by_key(|p| match p.kind {
        Kind::Floor => 0,
        Kind::Cycle1 | Kind::Cycle16 => 1,
        Kind::Handoff => 2,
    });
    for mut plan in plans {
        if !plan.failed {
            let mut m = std::mem::take(&mut plan.measured);
            res.record(&plan, &mut m);
        }
    }

    if let Some(server) = &servers.postgres {
        res.pg_version = pg::version(server.port).await;
        eprintln!("what one hold cycle writes on PostgreSQL");
        if let Err(e) = count_pg_writes(&mut res, server).await {
            res.failed("counting PostgreSQL's writes", e);
        }
    }

    eprintln!("leases kept renewed by one client process");
    let one = |s: &Option<Server>| s.as_ref().map(|s| renew::ServerProcs::One(s.pid));
    let on_pg = servers
        .postgres
        .as_ref()
        .map(|_| renew::ServerProcs::Postgres);
    let runs: Vec<(&str, &str, Option<String>, Option<renew::ServerProcs>)> = vec![
        (
            "leasehold",
            "N holdings on one Store, each renewed every ttl/3 (batched)",
            lh_url.clone(),
            one(&servers.leasehold),
        ),
        (
            "etcd",
            "N keys on ONE lease, one keep-alive every ttl/3",
            etcd_url.clone(),
            one(&servers.etcd),
        ),
        (
            "redis",
            "N keys, N PEXPIREs in one pipeline every ttl/3",
            redis_port.map(|p| p.to_string()),
            one(&servers.redis),
        ),
        (
            LH_PG,
            "N holdings on one Store, renewed by group every ttl/3",
            servers.postgres.as_ref().map(pg::Postgres::leasehold_url),
            on_pg,
        ),
        (
            LOCK_UNTIL,
            "N rows, one UPDATE per 1,000 rows every ttl/3",
            servers.postgres.as_ref().map(|s| s.port.to_string()),
            on_pg,
        ),
    ];
    let mut planned: Vec<(usize, Duration, Duration, usize)> = config
        .leases
        .iter()
        .flat_map(|&n| (0..runs.len()).map(move |i| (n, renew::TTL, Duration::ZERO, i)))
        .collect();
    if config.million > 0 {
        planned.push((config.million, MILLION_TTL, config.million_span, 0));
    }
    for (n, ttl, span, i) in planned {
        let (system, how, target, pid) = &runs[i];
        {
            let (Some(target), Some(pid)) = (target, pid) else {
                continue;
            };
            if !res.wanted(system) {
                continue;
            }
            let span = if span.is_zero() {
                config.renew_span
            } else {
                span
            };
            let (system, target, procs) = (*system, target.clone(), *pid);
            let measured = tokio::task::spawn_blocking(move || {
                renew::measure(system, &target, n, ttl, span, procs)
            })
            .await
            .context("the renewal measurement panicked")?;
            match measured {
                Ok(r) => {
                    eprintln!(
                        "  {system}, {n}: client CPU {:?}, lost {}",
                        r.client_cpu, r.lost
                    );
                    if r.lost > 0 {
                        res.problems
                            .push(format!("{system}: {} of {n} renewed leases lost", r.lost));
                    }
                    res.renewed.push((system.to_string(), how.to_string(), r));
                }
                Err(e) => res.failed(&format!("{system} renewal of {n} leases"), e),
            }
        }
    }

    for s in [&servers.leasehold, &servers.etcd, &servers.redis]
        .into_iter()
        .flatten()
    {
        if !s.alive() {
            res.problems.push(format!(
                "the {} server died during the run; its log:\n{}",
                s.name,
                s.log_tail()
            ));
        }
    }
    drop(servers);
    pg::stop();
    res.load.1 = loadavg();
    Ok(res)
}

/// Counts what [`pg::COUNTED_CYCLES`] hold cycles of one client write on
/// PostgreSQL, for each system on it, one after the other.
async fn count_pg_writes(res: &mut Results, server: &pg::Postgres) -> Result<()> {
    let admin = pg::connect(server.port).await?;
    let url = server.leasehold_url();
    if res.wanted(LH_PG) {
        for client in systems::leasehold_shared(&url, 1).await? {
            let w = pg::count_writes(&admin, client).await?;
            res.pg_writes.push((LH_PG.into(), w));
        }
    }
    if res.wanted(ADVISORY) {
        for client in pg::advisory_clients(server.port, 1).await? {
            let w = pg::count_writes(&admin, client).await?;
            res.pg_writes.push((ADVISORY.into(), w));
        }
    }
    if res.wanted(LOCK_UNTIL) {
        for client in pg::lock_until_clients(server.port, 1).await? {
            let w = pg::count_writes(&admin, client).await?;
            res.pg_writes.push((LOCK_UNTIL.into(), w));
        }
    }
    Ok(())
}

fn ratio(a: Option<Duration>, b: Option<Duration>) -> Option<f64> {
    Some(a?.as_secs_f64() / b?.as_secs_f64())
}

fn show_ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "–".into(), |r| format!("{r:.2}"))
}

fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "NOT met",
        None => "not measured",
    }
}

/// Today's date (UTC), from the system clock.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days to civil date (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    format!("{cores} cores ({cpu}), Linux {kernel}")
}

/// The PostgreSQL section: Leasehold on PostgreSQL against the two
/// recipes on the same server, and what a hold cycle writes.
fn pg_markdown(md: &mut String, res: &Results) {
    let handoff = |system: &str| -> Vec<(&str, Option<Duration>)> {
        res.handoff
            .iter()
            .filter(|(s, _, _)| s == system)
            .map(|(_, setup, p50)| (setup.as_str(), *p50))
            .collect()
    };
    let lh = handoff(LH_PG);
    if lh.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n### On PostgreSQL\n\nLeasehold's PostgreSQL store against the two recipes teams \
         lock with on PostgreSQL, on the same server in the same run.\n"
    );
    let _ = writeln!(md, "| ratio | value | target | |");
    let _ = writeln!(md, "|---|---:|---|---|");
    for recipe in [ADVISORY, LOCK_UNTIL] {
        let Some((_, theirs)) = handoff(recipe).first().copied() else {
            continue;
        };
        for (setup, ours) in &lh {
            let r = ratio(*ours, theirs);
            let _ = writeln!(
                md,
                "| handoff p50, {LH_PG} ({setup}) / {recipe} | {} | < 1 | {} |",
                show_ratio(r),
                verdict(r.map(|r| r < 1.0))
            );
        }
    }
    let one = |system: &str| {
        res.per_sec_1
            .iter()
            .find(|(s, _)| s == system)
            .map(|(_, v)| *v)
    };
    if let (Some(ours), Some(advisory)) = (one(LH_PG), one(ADVISORY)) {
        let r = advisory / ours;
        let _ = writeln!(
            md,
            "| 1-client cycle time, {LH_PG} / {ADVISORY} (their cycles/s over ours) | {r:.2} | ≤ 1.5 | {} |",
            verdict(Some(r <= 1.5))
        );
    }
    if !res.pg_writes.is_empty() {
        let _ = writeln!(
            md,
            "\nWhat one hold cycle writes ({} cycles of one client on one key, one system at a \
             time; counted from the next transaction id and the WAL position before and after, \
             so a Leasehold store's renewals and sweeps over the span count too). Each commit \
             that wrote waits for a WAL flush (fsync is on).\n",
            pg::COUNTED_CYCLES
        );
        let _ = writeln!(
            md,
            "| system | commits that wrote, per cycle | WAL bytes per cycle |"
        );
        let _ = writeln!(md, "|---|---:|---:|");
        for (system, w) in &res.pg_writes {
            let _ = writeln!(md, "| {system} | {:.2} | {:.0} |", w.commits, w.wal_bytes);
        }
    }
}

fn markdown(config: &Config, res: &Results) -> String {
    let mut md = String::new();
    let w = config.window;
    let _ = writeln!(md, "## Server store vs etcd, Redis and PostgreSQL\n");
    let _ = writeln!(
        md,
        "Measured {} on {}: server and clients on the same machine, over loopback.",
        today(),
        machine()
    );
    let _ = writeln!(
        md,
        "Load average (1/5/15 min) before the run: {}; after: {} (on 2 cores; above ~0.5, \
         other work was running beside the benchmark and the numbers are noisier).",
        res.load.0, res.load.1
    );
    let _ = writeln!(
        md,
        "Versions: leasehold at commit {} (release build; uncommitted changes in the tree \
         count too); etcd {}; {}; PostgreSQL {}.\n",
        procs::first_line_of("git", &["rev-parse", "--short", "HEAD"]),
        procs::first_line_of(&procs::etcd_binary().to_string_lossy(), &["--version"])
            .trim_start_matches("etcd Version: ")
            .trim(),
        procs::first_line_of("redis-server", &["--version"])
            .split(" sha=")
            .next()
            .unwrap_or("redis")
            .trim(),
        if res.pg_version.is_empty() {
            "not run"
        } else {
            &res.pg_version
        }
    );
    let _ = writeln!(
        md,
        "Command: `make bench-compare` (that is, `cargo build --release -p leasehold-server` then \
         `cargo run --release -q -p leasehold-bench --features compare --bin compare`). Every \
         timed workload runs {} rounds, the systems interleaved round by round; each round \
         warms up {} ms, then counts the operations that start and end within the next {} ms \
         ({} ms counted in all). All clients are connected before the first round.\n",
        config.rounds,
        w.warmup.as_millis(),
        (w.measure / config.rounds.max(1)).as_millis(),
        w.measure.as_millis()
    );
    let _ = writeln!(md, "| system | workload | ops/s | p50 | p99 |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|");
    for r in &res.rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            r.system,
            r.workload,
            r.per_sec.map_or_else(|| "–".into(), show_rate),
            show(r.p50),
            show(r.p99)
        );
    }

    let floor = res.floor_p50;
    let redis16 = res
        .per_sec_16
        .iter()
        .find(|(s, _, _)| s == "redis")
        .map(|(_, _, v)| *v);
    let _ = writeln!(md, "\n| ratio | value | target | |");
    let _ = writeln!(md, "|---|---:|---|---|");
    for (system, setup, v) in res.per_sec_16.iter().filter(|(s, _, _)| s != "redis") {
        let r = redis16.map(|redis| v / redis);
        let (target, met) = if system == "leasehold" {
            ("≥ 2", verdict(r.map(|r| r >= 2.0)))
        } else {
            ("", "(for comparison)")
        };
        let _ = writeln!(
            md,
            "| cycles/s at 16 clients, {system} ({setup}) / redis | {} | {target} | {met} |",
            show_ratio(r)
        );
    }
    if let Some(trips) = res.floor_per_sec_16 {
        // A hold cycle is two round trips (grant, release), one after the
        // other on each connection: at best half the floor's round trips.
        let r = redis16.map(|redis| trips / 2.0 / redis);
        let _ = writeln!(
            md,
            "| cycles/s at 16 clients, the loopback floor (16 connections, 2 round trips per cycle) / redis | {} |  | (the most 16 connections can do) |",
            show_ratio(r)
        );
    }
    for (name, p50) in &res.grant_p50 {
        let r = ratio(*p50, floor);
        let (target, met) = if name == "leasehold" {
            ("≤ 1.3", verdict(r.map(|r| r <= 1.3)))
        } else {
            ("", "(for comparison)")
        };
        let _ = writeln!(
            md,
            "| grant p50 in loopback round trips, {name}, 1 client | {} | {target} | {met} |",
            show_ratio(r)
        );
    }
    for (system, setup, p50) in &res.handoff {
        let r = ratio(*p50, floor);
        let (target, met) = if system == "leasehold" {
            ("≤ 1.5", verdict(r.map(|r| r <= 1.5)))
        } else {
            ("", "(for comparison)")
        };
        let _ = writeln!(
            md,
            "| handoff p50 in loopback round trips, {system} ({setup}) | {} | {target} | {met} |",
            show_ratio(r)
        );
    }
    let _ = writeln!(
        md,
        "\nThe loopback round trip p50 the ratios divide by: {}.",
        show(floor)
    );
    pg_markdown(&mut md, res);

    if !res.renewed.is_empty() {
        let _ = writeln!(
            md,
            "\nLeases kept renewed by one client process (ttl 3 s, renewed every 1 s, for ~{} s; \
             the last Leasehold line: ttl {} s for ~{} s). \
             Each line runs in a child process of its own that does nothing else; CPU is the sum \
             of its threads' run time (/proc/PID/task/*/schedstat), and the server's over the \
             same span. \"Taking them all\" is the time to acquire the N leases first (Leasehold: \
             one `lock.begin_many(keys)`, 511 keys a frame, 4 frames in flight; etcd: txns of 128 puts, 8 in flight; Redis: pipelines \
             of 1,000 `SET NX PX`). The Leasehold server runs with `--max-keys-per-connection {}` \
             (default 10,000), so that one Store may hold them all. Memory is the growth of \
             each process's resident set (VmRSS) over taking the leases, per lease.\n",
            config.renew_span.as_secs(),
            MILLION_TTL.as_secs(),
            config.million_span.as_secs(),
            procs::LEASEHOLD_MAX_KEYS
        );
        let _ = writeln!(
            md,
            "| system | how | leases | ttl | client CPU | client CPU per lease-renewal | server CPU | lost | taking them all | client memory per lease | server memory per lease |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (system, how, r) in &res.renewed {
            let span = r.span.as_secs_f64();
            let renewals = r.n as f64 * span / (r.ttl.as_secs_f64() / 3.0);
            let _ = writeln!(
                md,
                "| {system} | {how} | {} | {} s | {:.1}% of a core | {:.3} µs | {:.1}% of a core | {} | {} | {:.0} B | {} |",
                show_rate(r.n as f64),
                r.ttl.as_secs(),
                100.0 * r.client_cpu.as_secs_f64() / span,
                r.client_cpu.as_secs_f64() * 1e6 / renewals,
                100.0 * r.server_cpu.as_secs_f64() / span,
                r.lost,
                show(Some(r.setup)),
                r.client_bytes,
                r.server_bytes
                    .map_or_else(|| "–".into(), |b| format!("{b:.0} B"))
            );
        }
    }
    let _ = writeln!(
        md,
        "\nHow each system is driven:\n\n\
         - Leasehold: `Store::connect(\"leasehold://127.0.0.1:PORT\", ConnectOptions::default())`, \
           `lock.begin(key, &HoldOptions::default())` then `holding.end()`; default ttl 10 s. \
           \"16 tasks on one Store\" share one multiplexed connection (the natural use); \
           \"16 Stores\" have a connection each.\n\
         - Leasehold server, bare wire client (diagnostic): the same server driven by a minimal \
           client in this benchmark (one connection, one request at a time, Hold with queue, \
           wait for the pushed Granted, Release; no driver, holder engine or renewal), to tell \
           the server's and the wire's share from the client library's. \
           \"With a reader task\": the same client, but a task of its own reads the frames and \
           hands each to the caller's task through a channel, as Leasehold's client library \
           does; its gap to the bare wire client is what that hop costs.\n\
         - etcd: lease grant (ttl 10 s), txn put-if-absent (compare create_revision == 0), then \
           delete + lease revoke: four round trips and four raft commits (fsync'd WAL, data dir in \
           /tmp) per cycle. A waiter watches the key for a delete from the revision its failed txn \
           saw, then tries the txn again (every waiter wakes on each delete). One \
           `etcd_client::Client` (connection) per client. For renewals, etcd's way is many keys \
           on ONE lease with one keep-alive, unlike Leasehold's and Redis's one lease per key.\n\
         - Redis: `SET key token NX PX 10000`, release by the Lua compare-and-delete script \
           (EVALSHA); no persistence (`--save '' --appendonly no`). Redis pushes nothing when a \
           key is freed, so a waiter retries every {} ms. One multiplexed connection (TCP_NODELAY) \
           per client. Renewal is a plain PEXPIRE per key (no token check).\n\
         - Leasehold on PostgreSQL: the same calls on `postgres://leasehold@127.0.0.1:PORT/leasehold?schema=bench` \
           (a pool of 8 connections per Store and one that LISTENs): one transaction per grant \
           and per release, a waiter's grant pushed by NOTIFY.\n\
         - PostgreSQL advisory lock: `SELECT pg_advisory_lock(hashtextextended(key, 0))`, which \
           waits in the server while another session holds the key, then \
           `pg_advisory_unlock`; prepared statements, a connection per client. No fence, no \
           deadline, not replicated; held as long as the session.\n\
         - PostgreSQL `lock_until` table (ShedLock's JDBC recipe with the database's time): \
           `INSERT … ON CONFLICT (name) DO UPDATE … WHERE lock_until <= now()` to take (ttl 10 s), \
           `UPDATE … SET lock_until = now() WHERE name = $1 AND locked_by = $2` to release; a \
           waiter retries every {} ms; prepared statements, a connection per client. Renewal: one \
           `UPDATE … WHERE name = ANY($1)` per 1,000 rows. The advisory lock has no renewal row: \
           it needs none, and 50,000 locks would not fit the server's lock table \
           (max_locks_per_transaction × max_connections).\n\
           PostgreSQL runs with fsync on (a server of the run's own, made by initdb in /tmp), \
           max_connections 500.\n\
         - Floor: a 16-byte ping/pong over loopback TCP with TCP_NODELAY, to an echo server on \
           its own thread in the benchmark process.\n\
         - Handoff: each holder releases at once, then asks again only after another client got \
           the key, so each sample is a handoff between two clients with 15 waiting.",
        systems::POLL_RETRY.as_millis(),
        systems::POLL_RETRY.as_millis()
    );
    if !res.problems.is_empty() {
        let _ = writeln!(md, "\nProblems seen in this run:\n");
        for p in &res.problems {
            let _ = writeln!(md, "- {}", p.replace('\n', "\n  "));
        }
    }
    md
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("renew-child") {
        return match renew::child_main(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("renew-child: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let config = match Config::parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("compare: {e:#}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("compare: no tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = rt.block_on(async {
        tokio::spawn(async {
            use tokio::signal::unix::{signal, SignalKind};
            let Ok(mut term) = signal(SignalKind::terminate()) else {
                return;
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            eprintln!("compare: interrupted; stopping the servers");
            procs::stop_all();
            pg::stop();
            std::process::exit(130);
        });
        run(&config).await
    });
    let res = match outcome {
        Ok(r) => r,
        Err(e) => {
            eprintln!("compare: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let md = markdown(&config, &res);
    println!("{md}");
    if let Err(e) = std::fs::write(&config.markdown, &md) {
        eprintln!(
            "compare: could not write {}: {e}",
            config.markdown.display()
        );
    } else {
        eprintln!("(written to {})", config.markdown.display());
    }
    let json = config.markdown.with_extension("json");
    match serde_json::to_string_pretty(&data(&res)) {
        Ok(text) => match std::fs::write(&json, text + "\n") {
            Ok(()) => eprintln!("(and its numbers to {})", json.display()),
            Err(e) => eprintln!("compare: could not write {}: {e}", json.display()),
        },
        Err(e) => eprintln!("compare: could not encode the numbers: {e}"),
    }
    ExitCode::SUCCESS
}
