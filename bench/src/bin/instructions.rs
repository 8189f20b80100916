//! `make bench-instructions`: the instructions one uncontended hold cycle
//! costs, client and server together, counted by valgrind's callgrind
//! rather than timed (wall-clock times on a shared machine move 30 %
//! between runs; instruction counts do not).
//!
//! For each system, Leasehold's server store (`lock.begin` + `holding.end`
//! from a Rust client; and, as a diagnostic, the same server driven by the
//! bench's bare wire client) and Redis's lock recipe (`SET key token NX PX`
//! and the compare-and-delete script by `EVALSHA`, from the redis crate's
//! client), the server and a client both run under callgrind, twice: once
//! with `N` cycles and once with `2N`. The difference of the two runs'
//! counts, over `N`, is what one cycle costs: the start, connecting and
//! the exit cancel out. The counts go to `target/bench-instructions/`
//! (`callgrind_annotate` reads them) and the table to
//! `target/bench-instructions.md`.
//!
//! `cargo run --release -p leasehold-bench --features compare --bin instructions -- [CYCLES]`

#[allow(dead_code)]
#[path = "../compare/procs.rs"]
mod procs;
#[allow(dead_code)]
#[path = "../compare/systems.rs"]
mod systems;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use systems::Locker;

/// The systems counted, as the table names them: `wire` is Leasehold's
/// server driven by the bench's bare wire client (a diagnostic: its gap to
/// `leasehold` is what the client library costs).
const SYSTEMS: [&str; 3] = ["leasehold", "wire", "redis"];
/// The key every cycle holds.
const KEY: &str = "bench-key";

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")))
}

/// valgrind running callgrind, writing its counts to `out`.
fn callgrind(out: &Path) -> Vec<String> {
    vec![
        "valgrind".into(),
        "--tool=callgrind".into(),
        "-q".into(),
        format!("--callgrind-out-file={}", out.display()),
    ]
}

/// The instructions a callgrind output file counted (its `summary:` line).
fn counted(file: &Path) -> Result<u64> {
    let text = std::fs::read_to_string(file).with_context(|| format!("read {}", file.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("no summary line in {}", file.display()))
}

/// One run: a server and a client doing `cycles` cycles, both counted.
/// Returns (client, server) instructions.
async fn run(system: &str, cycles: u64, dir: &Path) -> Result<(u64, u64)> {
    let server_out = dir.join(format!("{system}-server-{cycles}.out"));
    let client_out = dir.join(format!("{system}-client-{cycles}.out"));
    let wrap = callgrind(&server_out);
    let server = match system {
        "leasehold" | "wire" => {
            procs::start_leasehold(&target_dir().join("release/leasehold"), &wrap)?
        }
        _ => procs::start_redis(&wrap).await?,
    };
    let me = std::env::current_exe()?;
    let status = Command::new("valgrind")
        .args(&callgrind(&client_out)[1..])
        .arg(&me)
        .args([
            "client",
            system,
            &server.port.to_string(),
            &cycles.to_string(),
        ])
        .status()
        .context("run the client under valgrind")?;
    if !status.success() {
        bail!("the {system} client failed: {status}");
    }
    server.terminate(Duration::from_secs(120))?;
    Ok((counted(&client_out)?, counted(&server_out)?))
}

/// The child: `cycles` hold cycles against the server on `port`, from a
/// task of the runtime, as `make bench-compare`'s clients and most
/// services run them (not from `block_on` on the main thread, where every
/// answer wakes a thread outside the runtime).
async fn client(system: &str, port: u16, cycles: u64) -> Result<()> {
    async fn cycle<L: Locker>(mut locker: L, cycles: u64) -> Result<()> {
        tokio::spawn(async move {
            for _ in 0..cycles {
                let held = locker.acquire(KEY).await?;
                locker.release(held).await?;
            }
            Ok(())
        })
        .await?
    }
    match system {
        "leasehold" => {
            let url = format!("leasehold://127.0.0.1:{port}");
            let mut clients = systems::leasehold_own(&url, 1).await?;
            cycle(clients.remove(0), cycles).await
        }
        "wire" => {
            let mut clients = systems::wire_clients(port, 1, false).await?;
            cycle(clients.remove(0), cycles).await
        }
        "redis" => {
            let mut clients = systems::redis_clients(port, 1).await?;
            cycle(clients.remove(0), cycles).await
        }
        other => bail!("unknown system {other:?}"),
    }
}

/// One system's cost of a cycle.
struct Cost {
    system: &'static str,
    client: f64,
    server: f64,
}

impl Cost {
    fn total(&self) -> f64 {
        self.client + self.server
    }
}

async fn measure(cycles: u64) -> Result<Vec<Cost>> {
    let dir = target_dir().join("bench-instructions");
    std::fs::create_dir_all(&dir)?;
    let mut costs = Vec::new();
    for system in SYSTEMS {
        let (c1, s1) = run(system, cycles, &dir).await?;
        let (c2, s2) = run(system, 2 * cycles, &dir).await?;
        let per = |a: u64, b: u64| (b as f64 - a as f64) / cycles as f64;
        eprintln!(
            "instructions: {system}: client {c1} then {c2}, server {s1} then {s2} ({cycles} and {} cycles)",
            2 * cycles
        );
        costs.push(Cost {
            system,
            client: per(c1, c2),
            server: per(s1, s2),
        });
    }
    Ok(costs)
}

fn markdown(cycles: u64, costs: &[Cost]) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Instructions per hold cycle, client and server (callgrind)\n\n\
         One key, uncontended, one client with a connection of its own, its cycles \
         run by a task of its tokio runtime. Each \
         system's server and client run under `valgrind --tool=callgrind` twice, \
         with {cycles} and {} cycles; a cycle's cost is the difference over {cycles}. \
         Leasehold: `lock.begin` + `holding.end` (Rust client, server store); wire \
         (a diagnostic): the same server and requests from the bench's bare wire \
         client, one request at a time with no driver, so that its gap to Leasehold's \
         client is what the client library costs; Redis: `SET key token NX PX 10000` \
         + the compare-and-delete script by `EVALSHA` (the `redis` crate's \
         multiplexed client, redis-server {}).\n",
        2 * cycles,
        procs::first_line_of("redis-server", &["--version"])
            .split_whitespace()
            .find_map(|w| w.strip_prefix("v="))
            .unwrap_or("?")
    );
    let _ = writeln!(
        md,
        "| system | client | server | client + server | system / Redis (client + server) |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---|");
    let redis = costs.iter().find(|c| c.system == "redis").map(Cost::total);
    for c in costs {
        let ratio = redis.map_or_else(|| "–".into(), |r| format!("{:.2}x", c.total() / r));
        let _ = writeln!(
            md,
            "| {} | {:.0} | {:.0} | {:.0} | {ratio} |",
            c.system,
            c.client,
            c.server,
            c.total()
        );
    }
    md
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("instructions: no tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.first().map(String::as_str) == Some("client") {
        let parsed = (|| -> Result<(String, u16, u64)> {
            match &args[1..] {
                [system, port, cycles] => Ok((system.clone(), port.parse()?, cycles.parse()?)),
                _ => bail!("usage: instructions client SYSTEM PORT CYCLES"),
            }
        })();
        let outcome =
            parsed.and_then(|(system, port, cycles)| rt.block_on(client(&system, port, cycles)));
        return match outcome {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("instructions client: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let cycles: u64 = match args.first().map(|n| n.parse()) {
        None => 2_000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: instructions [CYCLES]");
            return ExitCode::from(2);
        }
    };
    if !procs::on_path("valgrind") {
        eprintln!("instructions: valgrind is not installed (make setup installs it)");
        return ExitCode::FAILURE;
    }
    let costs = match rt.block_on(measure(cycles)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("instructions: {e:#}");
            procs::stop_all();
            return ExitCode::FAILURE;
        }
    };
    let md = markdown(cycles, &costs);
    println!("{md}");
    let out = target_dir().join("bench-instructions.md");
    if let Err(e) = std::fs::write(&out, &md) {
        eprintln!("instructions: could not write {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
