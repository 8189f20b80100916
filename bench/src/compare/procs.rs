//! The servers the comparison starts (Leasehold's, etcd, Redis), each on a
//! free loopback port with a temporary data directory, and stopped by a
//! guard: on drop (normal exit, an error, a panic unwinding) and on
//! SIGINT/SIGTERM (see [`stop_all`]).

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

/// Every server started and not yet stopped, for the signal handler.
/// Each with its temporary directory.
static RUNNING: Mutex<Vec<(Guarded, PathBuf)>> = Mutex::new(Vec::new());

/// A server process, taken (and reaped) by whoever stops it first.
type Guarded = Arc<Mutex<Option<Child>>>;

/// A server process, killed and reaped when dropped.
pub struct Server {
    /// What it is ("leasehold", "etcd", "redis").
    pub name: &'static str,
    /// Its client port on 127.0.0.1.
    pub port: u16,
    /// Its process id (for its CPU time).
    pub pid: u32,
    child: Guarded,
    /// Data directory and log; removed after the process is gone.
    dir: tempfile::TempDir,
}

impl Server {
    fn adopt(name: &'static str, port: u16, child: Child, dir: tempfile::TempDir) -> Server {
        let pid = child.id();
        let child = Arc::new(Mutex::new(Some(child)));
        RUNNING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((child.clone(), dir.path().to_path_buf()));
        Server {
            name,
            port,
            pid,
            child,
            dir,
        }
    }

    /// The server's log file (its stderr, and stdout for etcd and Redis).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The end of its log, for error messages.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log_path())
    }

    /// Stops the server with SIGTERM and waits (at most `within`) for it to
    /// exit, so that what it writes at exit (a profiler's counts) is written.
    pub fn terminate(self, within: Duration) -> Result<()> {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.pid)?);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)
            .with_context(|| format!("SIGTERM to {}", self.name))?;
        let deadline = Instant::now() + within;
        loop {
            let mut guard = self.child.lock().unwrap_or_else(|p| p.into_inner());
            match guard.as_mut().map(Child::try_wait) {
                Some(Ok(Some(_))) | None => return Ok(()),
                Some(Ok(None)) if Instant::now() < deadline => {}
                Some(Ok(None)) => bail!("{} did not exit within {within:?} of SIGTERM", self.name),
                Some(Err(e)) => return Err(e.into()),
            }
            drop(guard);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the process is still running.
    pub fn alive(&self) -> bool {
        let mut guard = self.child.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }
}

fn kill(child: &Mutex<Option<Child>>) {
    let mut guard = child.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(mut c) = guard.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        kill(&self.child);
        RUNNING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(c, _)| !Arc::ptr_eq(c, &self.child));
    }
}

/// Kills every server still running and removes its directory (for the
/// signal handler, which then exits without running destructors).
pub fn stop_all() {
    let running: Vec<_> = RUNNING
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain(..)
        .collect();
    for (c, dir) in running {
        kill(&c);
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// A port that was free on 127.0.0.1 a moment ago.
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Whether `program` is on the PATH.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The first line `program args` prints, e.g. its version.
pub fn first_line_of(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "unknown".into())
}

/// `program`, or `program` run by the command `wrap` (valgrind and its
/// options, say) when it is not empty.
fn command(program: impl AsRef<OsStr>, wrap: &[String]) -> Command {
    match wrap.split_first() {
        None => Command::new(program),
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(program);
            c
        }
    }
}

fn temp_dir(name: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("leasehold-compare-{name}-"))
        .tempdir()
        .context("make a temporary data directory")
}

/// What the benchmark's Leasehold server lets one connection hold
/// (`--max-keys-per-connection`; the server's default is 10,000).
pub const LEASEHOLD_MAX_KEYS: usize = 1_100_000;

/// Starts `leasehold serve` (the release binary `bin`, under `wrap` if
/// given) on a free loopback port, reading the port from its `listening on
/// 127.0.0.1:PORT` line.
pub fn start_leasehold(bin: &Path, wrap: &[String]) -> Result<Server> {
    let dir = temp_dir("leasehold")?;
    let data = dir.path().join("data");
    std::fs::create_dir(&data)?;
    let log = File::create(dir.path().join("server.log"))?;
    let mut child = command(bin, wrap)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        // The default (10,000) would refuse the 50,000 leases one Store
        // holds in the renewal workload.
        .args(["--max-keys-per-connection", &LEASEHOLD_MAX_KEYS.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .with_context(|| format!("start {}", bin.display()))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut server = Server::adopt("leasehold", 0, child, dir);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next();
        let _ = tx.send(first);
        // Keep reading, so the server never blocks on a full pipe.
        for _ in lines {}
    });
    let line = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Some(Ok(line))) => line,
        _ => bail!(
            "leasehold serve printed no `listening on` line; its log:\n{}",
            server.log_tail()
        ),
    };
    let port = line
        .trim()
        .strip_prefix("listening on ")
        .and_then(|addr| addr.rsplit(':').next())
        .and_then(|p| p.parse::<u16>().ok())
        .ok_or_else(|| anyhow!("unexpected first line from leasehold serve: {line:?}"))?;
    server.port = port;
    Ok(server)
}

/// The etcd to run: `LEASEHOLD_ETCD` (the etcd 3.6 `make etcd` builds), else `etcd` on the path.
pub fn etcd_binary() -> PathBuf {
    std::env::var_os("LEASEHOLD_ETCD")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("etcd"))
}

/// Whether an etcd can be started.
pub fn etcd_available() -> bool {
    let bin = etcd_binary();
    bin.is_absolute() || on_path("etcd")
}

/// Starts a one-member etcd cluster on free loopback ports; ready once it
/// answers a status request.
pub async fn start_etcd() -> Result<Server> {
    let dir = temp_dir("etcd")?;
    let client = free_port()?;
    let peer = free_port()?;
    let client_url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let log = File::create(dir.path().join("server.log"))?;
    let child = Command::new(etcd_binary())
        .arg("--name=bench")
        .arg(format!("--data-dir={}", dir.path().join("data").display()))
        .arg(format!("--listen-client-urls={client_url}"))
        .arg(format!("--advertise-client-urls={client_url}"))
        .arg(format!("--listen-peer-urls={peer_url}"))
        .arg(format!("--initial-advertise-peer-urls={peer_url}"))
        .arg(format!("--initial-cluster=bench={peer_url}"))
        .arg("--initial-cluster-state=new")
        .arg("--logger=zap")
        .arg("--log-level=warn")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("start etcd")?;
    let server = Server::adopt("etcd", client, child, dir);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let attempt = async {
            let mut c = etcd_client::Client::connect([client_url.as_str()], None).await?;
            c.status().await?;
            Ok::<_, etcd_client::Error>(())
        };
        match tokio::time::timeout(Duration::from_secs(2), attempt).await {
            Ok(Ok(())) => return Ok(server),
            _ if Instant::now() > deadline || !server.alive() => {
                bail!("etcd did not become ready; its log:\n{}", server.log_tail())
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Starts redis-server (under `wrap` if given) on a free loopback port
/// without persistence; ready once it answers PING.
pub async fn start_redis(wrap: &[String]) -> Result<Server> {
    let dir = temp_dir("redis")?;
    let port = free_port()?;
    let log = File::create(dir.path().join("server.log"))?;
    let child = command("redis-server", wrap)
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("start redis-server")?;
    let server = Server::adopt("redis", port, child, dir);
    let deadline = Instant::now() + Duration::from_secs(60);
    let url = format!("redis://127.0.0.1:{port}/");
    loop {
        let attempt = async {
            let client = redis::Client::open(url.as_str())?;
            let mut c = client.get_multiplexed_async_connection().await?;
            redis::cmd("PING").query_async::<String>(&mut c).await?;
            Ok::<_, redis::RedisError>(())
        };
        match tokio::time::timeout(Duration::from_secs(2), attempt).await {
            Ok(Ok(())) => return Ok(server),
            _ if Instant::now() > deadline || !server.alive() => bail!(
                "redis-server did not become ready; its log:\n{}",
                server.log_tail()
            ),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// The CPU time process `pid` ("self" for this one) has used: the sum of
/// its threads' run times from `/proc/PID/task/*/schedstat` (nanoseconds),
/// or else user + system time from `/proc/PID/stat` (clock ticks).
pub fn cpu_time(pid: &str) -> Result<Duration> {
    match threads_run_time(pid) {
        Some(d) => Ok(d),
        None => stat_cpu_time(pid),
    }
}

fn threads_run_time(pid: &str) -> Option<Duration> {
    let mut total: u64 = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let path = task.ok()?.path().join("schedstat");
        let Ok(text) = std::fs::read_to_string(path) else {
            continue; // the thread ended meanwhile
        };
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

fn stat_cpu_time(pid: &str) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| anyhow!("odd /proc/{pid}/stat"))?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After ")": field 3 (state) is index 0, so utime (14) is 11, stime (15) is 12.
    let ticks: u64 = fields
        .get(11..13)
        .ok_or_else(|| anyhow!("short /proc/{pid}/stat"))?
        .iter()
        .map(|f| f.parse::<u64>().unwrap_or(0))
        .sum();
    Ok(Duration::from_secs_f64(ticks as f64 / clock_ticks() as f64))
}

/// The kernel's clock ticks per second for `/proc` times (`getconf CLK_TCK`).
fn clock_ticks() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        first_line_of("getconf", &["CLK_TCK"])
            .trim()
            .parse()
            .unwrap_or(100)
    })
}

/// The resident memory of process `pid` ("self" for this one), in bytes
/// (`VmRSS` of /proc/PID/status).
pub fn rss_bytes(pid: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| anyhow!("no VmRSS in /proc/{pid}/status"))?;
    Ok(kb * 1024)
}
