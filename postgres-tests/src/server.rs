//! PostgreSQL servers of a test's own, for the faults the shared one cannot
//! take: a primary and its synchronous standby (PG-08), a server killed and
//! started again, or frozen. Each lives in a temporary folder on a free
//! loopback port, trusts every connection there (role `leasehold` owns
//! database `leasehold`), runs as the OS user `postgres` when the test runs
//! as root (PostgreSQL refuses root), and is shut down with the test.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The OS user the servers run as when the tests run as root.
const OWNER: &str = "postgres";

/// One PostgreSQL server: its folder, data directory and port.
pub struct PgServer {
    dir: tempfile::TempDir,
    /// Its loopback port.
    pub port: u16,
    bindir: PathBuf,
}

fn bindir() -> PathBuf {
    let mut dirs: Vec<PathBuf> = fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (make setup)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("postgres").exists())
        .collect();
    dirs.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop()
        .expect("a PostgreSQL server under /usr/lib/postgresql")
}

pub(crate) fn is_root() -> bool {
    nix::unistd::Uid::effective().is_root()
}

/// `program` run as the servers' owner (root cannot run PostgreSQL or PgBouncer).
pub(crate) fn as_owner(program: &Path) -> Command {
    if is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", OWNER, "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

pub(crate) fn run(mut cmd: Command, what: &str) -> String {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A temporary folder the servers' OS user owns (when the tests run as root).
pub(crate) fn owned_tempdir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("leasehold-pg-")
        .tempdir()
        .expect("a temporary folder");
    if is_root() {
        let uid = run(
            {
                let mut c = Command::new("id");
                c.args(["-u", OWNER]);
                c
            },
            "id -u postgres",
        );
        let uid: u32 = uid.trim().parse().expect("a uid");
        std::os::unix::fs::chown(dir.path(), Some(uid), None).expect("chown the folder");
    }
    dir
}

impl PgServer {
    /// A new server (initdb), started, with `settings` added to its configuration.
    pub fn start(settings: &[&str]) -> PgServer {
        PgServer::start_with(settings, &[])
    }

    /// A new server that speaks TLS with the certificate and key given as
    /// PEM (`ssl = on`), started.
    pub fn start_tls(cert_pem: &str, key_pem: &str) -> PgServer {
        PgServer::start_with(
            &[
                "ssl = on",
                "ssl_cert_file = 'server.crt'",
                "ssl_key_file = 'server.key'",
            ],
            &[("server.crt", cert_pem), ("server.key", key_pem)],
        )
    }

    /// A new server with `settings` and `files` (name, text) in its data
    /// directory, owned by the server's user and readable by it alone.
    fn start_with(settings: &[&str], files: &[(&str, &str)]) -> PgServer {
        let server = PgServer {
            dir: owned_tempdir(),
            port: free_port(),
            bindir: bindir(),
        };
        let mut initdb = as_owner(&server.bindir.join("initdb"));
        initdb.arg("-D").arg(server.data()).args([
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
        ]);
        run(initdb, "initdb");
        for (name, text) in files {
            let path = server.data().join(name);
            fs::write(&path, text).expect("write a file of the server's");
            let mut own = Command::new("chmod");
            own.arg("600").arg(&path);
            run(own, "chmod 600");
            if is_root() {
                let mut chown = Command::new("chown");
                chown.arg(OWNER).arg(&path);
                run(chown, "chown");
            }
        }
        server.configure(settings);
        server.run();
        server.psql("CREATE ROLE leasehold LOGIN");
        server.psql("CREATE DATABASE leasehold OWNER leasehold");
        server
    }

    /// A standby of `primary` named `name` (`pg_basebackup -R`), started:
    /// it streams from the primary, which counts it as synchronous once
    /// its `synchronous_standby_names` names it (set it after the standby
    /// runs: a primary waiting for a standby that is not there commits nothing).
    pub fn standby_of(primary: &PgServer, name: &str) -> PgServer {
        let server = PgServer {
            dir: owned_tempdir(),
            port: free_port(),
            bindir: bindir(),
        };
        let mut backup = as_owner(&server.bindir.join("pg_basebackup"));
        backup
            .arg("-D")
            .arg(server.data())
            .arg("-d")
            .arg(format!(
                "host=127.0.0.1 port={} user=postgres application_name={name}",
                primary.port
            ))
            .args(["-R", "-X", "stream", "-c", "fast"]);
        run(backup, "pg_basebackup");
        server.run();
        server
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn configure(&self, settings: &[&str]) {
        let mut conf = vec![
            "listen_addresses = '127.0.0.1'".to_owned(),
            format!("unix_socket_directories = '{}'", self.dir.path().display()),
            "fsync = off".to_owned(),
            "max_connections = 200".to_owned(),
        ];
        conf.extend(settings.iter().map(|s| (*s).to_owned()));
        let file = self.data().join("postgresql.conf");
        let mut text = fs::read_to_string(&file).expect("postgresql.conf");
        text.push('\n');
        text.push_str(&conf.join("\n"));
        text.push('\n');
        fs::write(&file, text).expect("write postgresql.conf");
    }

    /// Starts the server on its port and waits until it accepts connections.
    /// After a kill -9, the killed server's backends may hold its shared
    /// memory for a moment: the start is tried again meanwhile.
    pub fn run(&self) {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let mut pg = as_owner(&self.bindir.join("pg_ctl"));
            pg.arg("start")
                .arg("-D")
                .arg(self.data())
                .arg("-l")
                .arg(self.dir.path().join("log"))
                .args(["-o", &format!("-p {}", self.port), "-w", "-t", "30"]);
            let out = pg.stdin(Stdio::null()).output().expect("pg_ctl start");
            if out.status.success() {
                return;
            }
            assert!(
                Instant::now() < until,
                "PostgreSQL does not start: {}",
                fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The URL of role `leasehold`'s database on this server.
    pub fn url(&self) -> String {
        format!("postgres://leasehold@127.0.0.1:{}/leasehold", self.port)
    }

    /// Runs `sql` as the superuser; answers what psql printed.
    pub fn psql(&self, sql: &str) -> String {
        let mut psql = Command::new(self.bindir.join("psql"));
        psql.args([
            "-X",
            "-q",
            "-t",
            "-A",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
        ])
        .args([
            "-p",
            &self.port.to_string(),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-c",
            sql,
        ]);
        run(psql, sql)
    }

    /// The postmaster's process id, from its pid file.
    fn postmaster(&self) -> Option<Pid> {
        let text = fs::read_to_string(self.data().join("postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok().map(Pid::from_raw)
    }

    /// The postmaster and every process it started (the first is the postmaster).
    pub fn processes(&self) -> Vec<Pid> {
        let Some(main) = self.postmaster() else {
            return Vec::new();
        };
        let mut all = vec![main];
        for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let stat = fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid …: the comm may hold spaces, the ppid follows the last ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if ppid == Some(main.as_raw()) {
                all.push(Pid::from_raw(pid));
            }
        }
        all
    }

    /// kill -9 of the postmaster and every backend, as a crash of its
    /// machine would end them (also when frozen); answered once they are gone.
    pub fn kill(&self) {
        let all = self.processes();
        assert!(!all.is_empty(), "no postmaster to kill");
        for &pid in &all {
            let _ = kill(pid, Signal::SIGKILL);
        }
        let until = Instant::now() + Duration::from_secs(10);
        for pid in all {
            while fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| !stat.contains(") Z "))
            {
                assert!(Instant::now() < until, "process {pid} outlived kill -9");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Whether the server takes writes (it is no standby, or was promoted).
    pub fn is_primary(&self) -> bool {
        self.psql("SELECT pg_is_in_recovery()").trim() == "f"
    }

    /// Freezes the server: SIGSTOP to the postmaster and every process it started.
    pub fn freeze(&self) {
        for pid in self.processes() {
            let _ = kill(pid, Signal::SIGSTOP);
        }
    }

    /// Thaws a frozen server.
    pub fn thaw(&self) {
        for pid in self.processes() {
            let _ = kill(pid, Signal::SIGCONT);
        }
    }

    /// Promotes a standby to primary, and waits until it takes writes.
    pub fn promote(&self) {
        self.psql("SELECT pg_promote(true, 30)");
    }

    /// Waits until this primary counts standby `name` as synchronous.
    pub fn wait_sync(&self, name: &str) {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let state = self.psql(&format!(
                "SELECT sync_state FROM pg_stat_replication WHERE application_name = '{name}'"
            ));
            if state.trim() == "sync" {
                return;
            }
            assert!(
                Instant::now() < until,
                "standby {name} is not synchronous: {state:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.thaw();
        if let Some(pid) = self.postmaster() {
            let _ = kill(pid, Signal::SIGQUIT);
        }
        let until = Instant::now() + Duration::from_secs(10);
        while self.processes().len() > 1 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
