//! The real `leasehold serve` process, started on a free loopback port.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running server process; killed when dropped.
pub struct ServerProcess {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    data_dir: PathBuf,
    extra: Vec<String>,
}

fn spawn(data_dir: &Path, listen: &str, extra: &[String]) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(["serve", "--listen", listen, "--data-dir"])
        .arg(data_dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start leasehold serve");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("the server printed its address")
            .expect("read stdout");
        if let Some(rest) = line.strip_prefix("listening on ") {
            break rest.trim().parse().expect("an address");
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

impl ServerProcess {
    /// Starts a server on a free port with a fresh data dir, passing `extra` flags.
    pub fn start(data_dir: &Path, extra: &[&str]) -> ServerProcess {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let (child, addr) = spawn(data_dir, "127.0.0.1:0", &extra);
        ServerProcess {
            child,
            addr,
            data_dir: data_dir.to_owned(),
            extra,
        }
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

    /// Starts the server again on the same port and data dir.
    pub fn restart(&mut self) {
        let (child, addr) = spawn(&self.data_dir, &self.addr.to_string(), &self.extra);
        assert_eq!(addr, self.addr);
        self.child = child;
    }

    /// Sends a signal and waits for the exit status.
    pub fn signal_and_wait(&mut self, signal: i32) -> std::process::ExitStatus {
        send_signal(self.child.id(), signal);
        self.child.wait().expect("wait for the server")
    }
}

/// Stops process `pid` with SIGSTOP and waits until it is stopped: the
/// signal takes effect a little after kill(1) returns, and a request sent
/// meanwhile would still be answered.
pub fn freeze(pid: u32) {
    send_signal(pid, 19);
    let stat = format!("/proc/{pid}/stat");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(&stat).expect("read /proc/PID/stat");
        // The state follows the parenthesised command name.
        let state = text
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next());
        if state == Some("T") {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "process {pid} did not stop: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Resumes a process stopped by [`freeze`].
pub fn thaw(pid: u32) {
    send_signal(pid, 18);
}

/// Sends `signal` to process `pid` with kill(1).
pub fn send_signal(pid: u32, signal: i32) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid} failed");
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}
