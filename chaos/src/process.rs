//! Processes the harness starts and hits: the real `leasehold serve` on a
//! loopback port, and signals (SIGSTOP, SIGCONT, SIGKILL) to any process.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// A running server process; killed when dropped.
pub struct ServerProcess {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    binary: PathBuf,
    data_dir: PathBuf,
    extra: Vec<String>,
}

fn spawn(
    binary: &Path,
    data_dir: &Path,
    listen: &str,
    extra: &[String],
) -> anyhow::Result<(Child, SocketAddr)> {
    let mut child = Command::new(binary)
        .args(["serve", "--listen", listen, "--data-dir"])
        .arg(data_dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| anyhow::anyhow!("start {} serve: {e}", binary.display()))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        let Some(line) = lines.next() else {
            let status = child.wait()?;
            anyhow::bail!(
                "{} serve exited ({status}) before listening",
                binary.display()
            );
        };
        if let Some(rest) = line?.strip_prefix("listening on ") {
            break rest.trim().parse()?;
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Ok((child, addr))
}

impl ServerProcess {
    /// Starts [`server_binary`]`serve` on a free loopback port with data
    /// dir `data_dir`, passing `extra` flags; panics if it does not start.
    pub fn start(data_dir: &Path, extra: &[&str]) -> ServerProcess {
        ServerProcess::start_from(&server_binary(), data_dir, extra)
            .unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// Starts `binary serve` on a free loopback port with data dir
    /// `data_dir`, passing `extra` flags.
    pub fn start_from(
        binary: &Path,
        data_dir: &Path,
        extra: &[&str],
    ) -> anyhow::Result<ServerProcess> {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let (child, addr) = spawn(binary, data_dir, "127.0.0.1:0", &extra)?;
        Ok(ServerProcess {
            child,
            addr,
            binary: binary.to_owned(),
            data_dir: data_dir.to_owned(),
            extra,
        })
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        format!("leasehold://{}", self.addr)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process with SIGKILL and waits for it.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same port, data dir and flags,
    /// retrying for up to 10 s while the port is not free yet; panics if
    /// it does not start.
    pub fn restart(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match spawn(
                &self.binary,
                &self.data_dir,
                &self.addr.to_string(),
                &self.extra,
            ) {
                Ok((child, addr)) => {
                    assert_eq!(addr, self.addr, "the server restarted on another address");
                    self.child = child;
                    return;
                }
                Err(e) if Instant::now() > deadline => panic!("the server did not restart: {e:#}"),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Sends `signal` to the server and waits for its exit status.
    pub fn signal_and_wait(&mut self, signal: Signal) -> std::process::ExitStatus {
        self::signal(self.child.id(), signal);
        self.child.wait().expect("wait for the server")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Where the `leasehold` binary is: `$LEASEHOLD_BIN`, else beside this
/// program, or beside the folder `deps/` it is in (a cargo test).
pub fn server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("LEASEHOLD_BIN") {
        return path.into();
    }
    let me = std::env::current_exe().expect("this program's path");
    let dir = me.parent().expect("a program is in a folder");
    let beside = dir.join("leasehold");
    match dir.parent() {
        Some(up) if !beside.is_file() && dir.ends_with("deps") => up.join("leasehold"),
        _ => beside,
    }
}

/// Sends `signal` to `pid`; a process already gone is no error.
pub fn signal(pid: u32, signal: Signal) {
    let _ = kill(Pid::from_raw(pid as i32), signal);
}

/// Stops `pid` with SIGSTOP and waits until it is stopped (panics after
/// 5 s): the signal takes effect a little after kill(2) returns, and a
/// request sent meanwhile would still be answered. A process already gone
/// returns at once.
pub fn freeze(pid: u32) {
    signal(pid, Signal::SIGSTOP);
    let stat = format!("/proc/{pid}/stat");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let Ok(text) = std::fs::read_to_string(&stat) else {
            return;
        };
        // The state follows the parenthesised command name.
        let state = text
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next());
        // Stopped, or already dead (a zombie no signal stops).
        if matches!(state, Some("T" | "Z" | "X")) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} did not stop: {text}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Resumes a process stopped by [`freeze`].
pub fn thaw(pid: u32) {
    signal(pid, Signal::SIGCONT);
}
