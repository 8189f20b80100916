//! Keeping many leases renewed from one client process, and what it costs
//! that process in CPU. Each measurement runs in a child process of its
//! own (`compare renew-child SYSTEM TARGET N TTL_MS SPAN_MS`), so that its
//! CPU time and memory are its own; the parent reads the server's CPU time
//! over the same span, and its memory before and after the leases were taken.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use futures::{StreamExt, TryStreamExt};
use leasehold::remote::ConnectOptions;
use leasehold::{HoldOptions, Store};

use super::procs;

/// The ttl of the renewed leases of the main runs; each is renewed every ttl/3.
pub const TTL: Duration = Duration::from_secs(3);

/// What one child measured, and the server's CPU over the same span.
#[derive(Debug, Clone)]
pub struct Renewed {
    /// Leases held.
    pub n: usize,
    /// Their ttl.
    pub ttl: Duration,
    /// How long they were kept renewed.
    pub span: Duration,
    /// The client process's CPU time over the span.
    pub client_cpu: Duration,
    /// The server process's CPU time over the span.
    pub server_cpu: Duration,
    /// Leases lost over the span (0 expected).
    pub lost: usize,
    /// How long taking all N took.
    pub setup: Duration,
    /// The client's resident memory per lease held (growth over taking them, bytes).
    pub client_bytes: f64,
    /// The server's resident memory per lease held (growth over taking
    /// them, bytes); none for a server of many processes sharing memory.
    pub server_bytes: Option<f64>,
}

/// The processes whose CPU time and memory are the server's.
#[derive(Debug, Clone, Copy)]
pub enum ServerProcs {
    /// One process (Leasehold's server, etcd, Redis).
    One(u32),
    /// The run's PostgreSQL: the postmaster and its backends.
    Postgres,
}

impl ServerProcs {
    fn pids(self) -> Vec<u32> {
        match self {
            ServerProcs::One(pid) => vec![pid],
            ServerProcs::Postgres => super::pg::pids(),
        }
    }

    /// Each process's CPU time now.
    fn cpu_times(self) -> Vec<(u32, Duration)> {
        self.pids()
            .into_iter()
            .filter_map(|pid| Some((pid, procs::cpu_time(&pid.to_string()).ok()?)))
            .collect()
    }

    /// The CPU time the processes used since `before` (a process started
    /// since counts whole; one that ended since is not counted).
    fn cpu_since(self, before: &[(u32, Duration)]) -> Duration {
        self.cpu_times()
            .into_iter()
            .map(|(pid, now)| {
                let was = before.iter().find(|(p, _)| *p == pid).map(|(_, d)| *d);
                now.saturating_sub(was.unwrap_or_default())
            })
            .sum()
    }

    /// The resident memory of a one-process server.
    fn rss(self) -> Result<Option<u64>> {
        match self {
            ServerProcs::One(pid) => Ok(Some(procs::rss_bytes(&pid.to_string())?)),
            ServerProcs::Postgres => Ok(None),
        }
    }
}

/// Runs one measurement in a child process: `system` names the client
/// (see [`child_main`]), `target` its URL, endpoint or port.
pub fn measure(
    system: &str,
    target: &str,
    n: usize,
    ttl: Duration,
    span: Duration,
    server: ServerProcs,
) -> Result<Renewed> {
    let exe = std::env::current_exe()?;
    let server_rss = server.rss()?;
    let mut child = Command::new(exe)
        .args(["renew-child", system, target, &n.to_string()])
        .arg(ttl.as_millis().to_string())
        .arg(span.as_millis().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("start the renewal child")?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // A child that neither finishes nor fails is killed: setup, the span,
    // the releases, and time to spare (a second per 10,000 leases, at least a minute).
    let spare = Duration::from_secs(60.max(n as u64 / 10_000));
    let deadline = Instant::now() + span + spare;
    let mut server_grew = None;
    let mut setup = None;
    let mut server_start = None;
    let mut spanned = None;
    let mut result = None;
    let mut timed_out = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match rx.recv_timeout(left) {
            Ok(line) => line?,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                timed_out = true;
                let _ = child.kill();
                break;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if let Some(rest) = line.strip_prefix("ready ") {
            server_start = Some(server.cpu_times());
            server_grew = server
                .rss()?
                .zip(server_rss)
                .map(|(now, was)| now.saturating_sub(was));
            setup = Some(Duration::from_micros(field(rest, "setup_us")?));
        } else if let Some(rest) = line.strip_prefix("span ") {
            let server_cpu = server.cpu_since(
                server_start
                    .as_ref()
                    .ok_or_else(|| anyhow!("span before ready"))?,
            );
            spanned = Some((
                Duration::from_millis(field(rest, "span_ms")?),
                Duration::from_micros(field(rest, "cpu_us")?),
                server_cpu,
            ));
        } else if let Some(rest) = line.strip_prefix("result ") {
            let (span, client_cpu, server_cpu) =
                spanned.ok_or_else(|| anyhow!("result before span"))?;
            result = Some(Renewed {
                n,
                ttl,
                span,
                client_cpu,
                server_cpu,
                lost: field(rest, "lost")? as usize,
                setup: setup.unwrap_or_default(),
                client_bytes: field(rest, "rss_grew")? as f64 / n.max(1) as f64,
                server_bytes: server_grew.map(|b| b as f64 / n.max(1) as f64),
            });
        }
    }
    let status = child.wait()?;
    match result {
        Some(r) if status.success() => Ok(r),
        _ if timed_out => bail!(
            "the {system} renewal child with {n} leases was killed after {} s without a result ({})",
            (span + spare).as_secs(),
            if setup.is_some() {
                "after it took all its leases"
            } else {
                "while it was still taking its leases"
            }
        ),
        _ => bail!("the {system} renewal child with {n} leases failed ({status})"),
    }
}

fn field(text: &str, name: &str) -> Result<u64> {
    text.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .ok_or_else(|| anyhow!("no {name} in {text:?}"))?
        .parse()
        .with_context(|| format!("bad {name} in {text:?}"))
}

/// The child's side: `args` are SYSTEM TARGET N TTL_MS SPAN_MS.
pub fn child_main(args: &[String]) -> Result<()> {
    let [system, target, n, ttl, span] = args else {
        bail!("usage: compare renew-child SYSTEM TARGET N TTL_MS SPAN_MS");
    };
    let n: usize = n.parse()?;
    let ttl = Duration::from_millis(ttl.parse()?);
    let span = Duration::from_millis(span.parse()?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = rt.block_on(async {
        match system.as_str() {
            "leasehold" | "leasehold on postgres" => leasehold(target, n, ttl, span).await,
            "postgres lock_until table" => {
                super::pg::lock_until_renew(target.parse()?, n, ttl, span).await
            }
            "etcd" => etcd(target, n, ttl, span).await,
            "redis" => redis_renew(target.parse()?, n, ttl, span).await,
            other => bail!("unknown system {other}"),
        }
    });
    if let Err(e) = &outcome {
        eprintln!("renew-child {system} {n}: {e:#}");
    }
    // Tasks left behind (a release retrying) must not hold up the exit.
    rt.shutdown_timeout(Duration::from_secs(1));
    outcome
}

/// This process's CPU time.
pub fn self_cpu() -> Duration {
    procs::cpu_time("self").unwrap_or_default()
}

/// This process's resident memory.
pub fn self_rss() -> u64 {
    procs::rss_bytes("self").unwrap_or_default()
}

/// Tells the parent every lease is taken, and how long that took.
pub fn ready(setup: Duration) {
    println!("ready setup_us={}", setup.as_micros());
}

/// The span is over: said before the leases are checked and let go, so
/// that the server's CPU over the span does not count their release.
pub fn spanned(span: Duration, cpu: Duration) {
    println!(
        "span span_ms={} cpu_us={}",
        span.as_millis(),
        cpu.as_micros()
    );
}

/// Tells the parent the leases lost and the memory they took.
pub fn report(lost: usize, rss_grew: u64) {
    println!("result lost={lost} rss_grew={rss_grew}");
}

/// Leasehold: N holdings of one `Store`, taken with one `begin_many` and
/// renewed by the holder engine every ttl/3 (by group: one frame a round).
async fn leasehold(url: &str, n: usize, ttl: Duration, span: Duration) -> Result<()> {
    let store = Store::connect(url, ConnectOptions::default()).await?;
    let lock = store.lock("renew").ttl(ttl).open()?;
    // The caller's list of keys is its own, made before the count starts
    // (as in `lease_memory`): each lease keeps a copy of its key, which is
    // counted. Redis's recipe keeps its list as the leases' only state, so
    // there the list is counted.
    let keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
    let rss = self_rss();
    let t = Instant::now();
    let holdings = lock.begin_many(&keys, &HoldOptions::default()).await?;
    drop(keys);
    let rss_grew = self_rss().saturating_sub(rss);
    ready(t.elapsed());
    let cpu = self_cpu();
    let t = Instant::now();
    tokio::time::sleep(span).await;
    spanned(t.elapsed(), self_cpu() - cpu);
    let lost_flag = holdings.iter().filter(|h| h.lease().lost()).count();
    // Ending a holding whose lease was lost (here or at the store) fails `Lost`.
    let ended: Vec<leasehold::Result<()>> = futures::stream::iter(holdings)
        .map(|h| h.end())
        .buffer_unordered(256)
        .collect()
        .await;
    let lost_end = ended.iter().filter(|r| r.is_err()).count();
    report(lost_flag.max(lost_end), rss_grew);
    store.close().await;
    Ok(())
}

/// etcd: N keys attached to ONE lease, kept alive every ttl/3 on one
/// keep-alive stream. Lost: keys missing at the end, or a keep-alive that
/// answered ttl 0.
async fn etcd(endpoint: &str, n: usize, ttl: Duration, span: Duration) -> Result<()> {
    use etcd_client::{GetOptions, PutOptions, Txn, TxnOp};
    let mut client = etcd_client::Client::connect([endpoint], None).await?;
    let rss = self_rss();
    let t = Instant::now();
    let lease = client.lease_grant(ttl.as_secs() as i64, None).await?.id();
    let keys: Vec<usize> = (0..n).collect();
    // etcd's default --max-txn-ops is 128.
    futures::stream::iter(keys.chunks(128))
        .map(|chunk| {
            let mut c = client.clone();
            let ops: Vec<TxnOp> = chunk
                .iter()
                .map(|i| {
                    TxnOp::put(
                        format!("renew/k{i}"),
                        "held",
                        Some(PutOptions::new().with_lease(lease)),
                    )
                })
                .collect();
            async move { c.txn(Txn::new().and_then(ops)).await }
        })
        .buffer_unordered(8)
        .try_collect::<Vec<_>>()
        .await?;
    let (mut keeper, mut answers) = client.lease_keep_alive(lease).await?;
    let rss_grew = self_rss().saturating_sub(rss);
    ready(t.elapsed());
    let cpu = self_cpu();
    let t = Instant::now();
    let mut expired = false;
    let mut tick = tokio::time::interval(ttl / 3);
    tick.tick().await;
    while t.elapsed() + ttl / 3 <= span + Duration::from_millis(50) {
        tick.tick().await;
        keeper.keep_alive().await?;
        match answers.message().await? {
            Some(a) if a.ttl() > 0 => {}
            _ => expired = true,
        }
    }
    tokio::time::sleep(span.saturating_sub(t.elapsed())).await;
    spanned(t.elapsed(), self_cpu() - cpu);
    let count = client
        .get(
            "renew/",
            Some(GetOptions::new().with_prefix().with_count_only()),
        )
        .await?
        .count() as usize;
    let lost = if expired { n } else { n.saturating_sub(count) };
    report(lost, rss_grew);
    client.lease_revoke(lease).await?;
    Ok(())
}

/// Redis: N keys taken with `SET NX PX` (pipelines of 1,000), all PEXPIRE'd every ttl/3 in one
/// pipeline. Lost: a PEXPIRE that found no key, or keys missing at the end.
async fn redis_renew(port: u16, n: usize, ttl: Duration, span: Duration) -> Result<()> {
    let mut conn = super::systems::redis_connection(port).await?;
    let ttl_ms = ttl.as_millis() as u64;
    let rss = self_rss();
    let keys: Vec<String> = (0..n).map(|i| format!("renew:k{i}")).collect();
    let t = Instant::now();
    for chunk in keys.chunks(1000) {
        let mut p = redis::pipe();
        for k in chunk {
            p.cmd("SET")
                .arg(k)
                .arg("held")
                .arg("NX")
                .arg("PX")
                .arg(ttl_ms)
                .ignore();
        }
        p.query_async::<()>(&mut conn).await?;
    }
    let rss_grew = self_rss().saturating_sub(rss);
    ready(t.elapsed());
    let cpu = self_cpu();
    let t = Instant::now();
    let mut lost = 0;
    let mut tick = tokio::time::interval(ttl / 3);
    tick.tick().await;
    while t.elapsed() + ttl / 3 <= span + Duration::from_millis(50) {
        tick.tick().await;
        let mut p = redis::pipe();
        for k in &keys {
            p.cmd("PEXPIRE").arg(k).arg(ttl_ms);
        }
        let renewed: Vec<i64> = p.query_async(&mut conn).await?;
        lost += renewed.iter().filter(|r| **r != 1).count();
    }
    tokio::time::sleep(span.saturating_sub(t.elapsed())).await;
    spanned(t.elapsed(), self_cpu() - cpu);
    let mut present = 0;
    for chunk in keys.chunks(1000) {
        let c: usize = redis::cmd("EXISTS")
            .arg(chunk)
            .query_async(&mut conn)
            .await?;
        present += c;
    }
    report(lost.max(n - present), rss_grew);
    for chunk in keys.chunks(1000) {
        redis::cmd("DEL")
            .arg(chunk)
            .query_async::<()>(&mut conn)
            .await?;
    }
    Ok(())
}
