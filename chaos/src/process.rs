//! Processes the harness starts and hits: the real `leasehold serve` on a
//! loopback port, and signals (SIGSTOP, SIGCONT, SIGKILL) to any process.
//! The server's own tests (`server/tests`) start their servers here too.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// How long a server may take to exit after a signal before
/// [`ServerProcess::signal_and_wait`] gives up.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// How to start a server: `BINARY serve --listen ADDR --data-dir DIR
/// EXTRA...`, with none of the caller's `LEASEHOLD_*` variables (so that only
/// the flags and the variables set here configure it), stdout read by the
/// harness, and stderr discarded unless sent to a file.
#[derive(Debug, Clone)]
pub struct ServeCommand {
    binary: PathBuf,
    data_dir: PathBuf,
    extra: Vec<String>,
    env: Vec<(String, String)>,
    stderr: Option<PathBuf>,
}

impl ServeCommand {
    /// [`server_binary`] `serve` on data dir `data_dir` with flags `extra`.
    pub fn new(data_dir: &Path, extra: &[&str]) -> ServeCommand {
        ServeCommand {
            binary: server_binary(),
            data_dir: data_dir.to_owned(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
            stderr: None,
        }
    }

    /// Runs `binary` instead of [`server_binary`].
    pub fn binary(mut self, binary: &Path) -> ServeCommand {
        self.binary = binary.to_owned();
        self
    }

    /// Sets the environment variable `name` to `value` for the server.
    pub fn env(mut self, name: &str, value: &str) -> ServeCommand {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Appends the server's stderr (its log) to `file`, across restarts.
    pub fn stderr_to(mut self, file: &Path) -> ServeCommand {
        self.stderr = Some(file.to_owned());
        self
    }

    /// The command that serves on `listen`, stdout and stderr not yet set.
    fn command(&self, listen: &str) -> Command {
        let mut cmd = Command::new(&self.binary);
        cmd.args(["serve", "--listen", listen, "--data-dir"])
            .arg(&self.data_dir)
            .args(&self.extra)
            .stdin(Stdio::null());
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("LEASEHOLD_") {
                cmd.env_remove(name);
            }
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Starts the server on a free loopback port and waits until it listens.
    pub fn start(self) -> anyhow::Result<ServerProcess> {
        let (child, listening) = self.spawn("127.0.0.1:0")?;
        Ok(ServerProcess {
            child,
            addr: listening.addr,
            metrics: listening.metrics,
            serve: self,
        })
    }

    /// Runs the server to its exit, for a run that must fail (a bad flag, a
    /// data dir in use): its status and everything it wrote; an error if it
    /// is still running after `within` (it is then killed).
    pub fn run_to_exit(&self, within: Duration) -> anyhow::Result<Output> {
        let mut child = self
            .command("127.0.0.1:0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| anyhow::anyhow!("start {} serve: {e}", self.binary.display()))?;
        let stdout = read_all(child.stdout.take().expect("stdout is piped"));
        let stderr = read_all(child.stderr.take().expect("stderr is piped"));
        let status = match wait_within(&mut child, within)? {
            Some(status) => status,
            None => {
                let _ = child.kill();
                let _ = child.wait();
                anyhow::bail!(
                    "{} serve still runs after {within:?}",
                    self.binary.display()
                );
            }
        };
        Ok(Output {
            status,
            stdout: stdout.join().expect("the stdout reader ends"),
            stderr: stderr.join().expect("the stderr reader ends"),
        })
    }

    fn spawn(&self, listen: &str) -> anyhow::Result<(Child, Listening)> {
        let stderr = match &self.stderr {
            Some(file) => Stdio::from(OpenOptions::new().create(true).append(true).open(file)?),
            None => Stdio::null(),
        };
        let mut child = self
            .command(listen)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| anyhow::anyhow!("start {} serve: {e}", self.binary.display()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let mut metrics = None;
        let addr = loop {
            let Some(line) = lines.next() else {
                let status = child.wait()?;
                anyhow::bail!(
                    "{} serve exited ({status}) before listening",
                    self.binary.display()
                );
            };
            let line = line?;
            if let Some(rest) = line.strip_prefix("metrics on ") {
                metrics = Some(rest.trim().parse()?);
            }
            if let Some(rest) = line.strip_prefix("listening on ") {
                break rest.trim().parse()?;
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Ok((child, Listening { addr, metrics }))
    }
}

/// The addresses a server printed on starting.
struct Listening {
    addr: SocketAddr,
    metrics: Option<SocketAddr>,
}

/// Reads `from` to its end on a thread of its own.
fn read_all(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = from.read_to_end(&mut out);
        out
    })
}

/// The child's exit status, or `None` if it still runs after `within`.
fn wait_within(child: &mut Child, within: Duration) -> std::io::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A running server process; killed when dropped.
pub struct ServerProcess {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Where it serves metrics, when started with `--metrics-listen`.
    pub metrics: Option<SocketAddr>,
    serve: ServeCommand,
}

impl ServerProcess {
    /// Starts [`server_binary`]`serve` on a free loopback port with data
    /// dir `data_dir`, passing `extra` flags; panics if it does not start.
    pub fn start(data_dir: &Path, extra: &[&str]) -> ServerProcess {
        ServeCommand::new(data_dir, extra)
            .start()
            .unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// Starts `binary serve` on a free loopback port with data dir
    /// `data_dir`, passing `extra` flags.
    pub fn start_from(
        binary: &Path,
        data_dir: &Path,
        extra: &[&str],
    ) -> anyhow::Result<ServerProcess> {
        ServeCommand::new(data_dir, extra).binary(binary).start()
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

    /// Starts the server again as it was started, on the same port,
    /// retrying for up to 10 s while the port is not free yet; panics if
    /// it does not start.
    pub fn restart(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.serve.spawn(&self.addr.to_string()) {
                Ok((child, listening)) => {
                    assert_eq!(
                        listening.addr, self.addr,
                        "the server restarted on another address"
                    );
                    self.child = child;
                    self.metrics = listening.metrics;
                    return;
                }
                Err(e) if Instant::now() > deadline => panic!("the server did not restart: {e:#}"),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Sends `signal` to the server and waits for its exit status; panics
    /// if it has not exited within 10 s.
    pub fn signal_and_wait(&mut self, signal: Signal) -> ExitStatus {
        self.send(signal);
        self.wait()
    }

    /// Stops the server with SIGTERM and waits for its exit status; panics
    /// if it has not exited within 10 s.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal_and_wait(Signal::SIGTERM)
    }

    /// Sends `signal` to the server, without waiting.
    pub fn send(&self, signal: Signal) {
        self::signal(self.child.id(), signal);
    }

    /// Waits for the server to exit; panics if it has not within 10 s.
    pub fn wait(&mut self) -> ExitStatus {
        match wait_within(&mut self.child, EXIT_WAIT) {
            Ok(Some(status)) => status,
            Ok(None) => panic!("the server did not exit within {EXIT_WAIT:?}"),
            Err(e) => panic!("wait for the server: {e}"),
        }
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
