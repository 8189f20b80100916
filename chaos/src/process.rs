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
}

fn spawn(binary: &Path, data_dir: &Path, listen: &str) -> anyhow::Result<(Child, SocketAddr)> {
    let mut child = Command::new(binary)
        .args(["serve", "--listen", listen, "--data-dir"])
        .arg(data_dir)
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
    /// Starts `binary serve` on a free loopback port with data dir `data_dir`.
    pub fn start(binary: &Path, data_dir: &Path) -> anyhow::Result<ServerProcess> {
        let (child, addr) = spawn(binary, data_dir, "127.0.0.1:0")?;
        Ok(ServerProcess {
            child,
            addr,
            binary: binary.to_owned(),
            data_dir: data_dir.to_owned(),
        })
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

    /// Starts the server again on the same port and data dir, retrying
    /// while the port is not free yet.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match spawn(&self.binary, &self.data_dir, &self.addr.to_string()) {
                Ok((child, _)) => {
                    self.child = child;
                    return Ok(());
                }
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Where the `leasehold` binary is: `$LEASEHOLD_BIN`, else beside this program.
pub fn server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("LEASEHOLD_BIN") {
        return path.into();
    }
    let me = std::env::current_exe().expect("this program's path");
    me.with_file_name("leasehold")
}

/// Sends `signal` to `pid`; a process already gone is no error.
pub fn signal(pid: u32, signal: Signal) {
    let _ = kill(Pid::from_raw(pid as i32), signal);
}

/// Stops `pid` with SIGSTOP and waits until it is stopped: the signal
/// takes effect a little after kill(2) returns, and a request sent
/// meanwhile would still be answered.
pub fn freeze(pid: u32) {
    signal(pid, Signal::SIGSTOP);
    let stat = format!("/proc/{pid}/stat");
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let Ok(text) = std::fs::read_to_string(&stat) else {
            return;
        };
        // The state follows the parenthesised command name.
        let state = text
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next());
        if state == Some("T") {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Resumes a process stopped by [`freeze`].
pub fn thaw(pid: u32) {
    signal(pid, Signal::SIGCONT);
}
