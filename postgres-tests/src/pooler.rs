//! PgBouncer in transaction mode in front of a PostgreSQL (PG-02): each
//! transaction of a client runs on whichever server connection is free,
//! so a store that kept anything in a session would see it vanish.

use std::fs;
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::server::{as_owner, free_port, owned_tempdir, run};

/// A PgBouncer of a test's own (Debian's `pgbouncer`), stopped with it.
pub struct PgBouncer {
    dir: tempfile::TempDir,
    /// Its loopback port.
    pub port: u16,
}

impl PgBouncer {
    /// Starts PgBouncer on a free loopback port in transaction mode, in
    /// front of database `leasehold` on `127.0.0.1:upstream_port`, with
    /// `server_connections` server connections for all its clients (role
    /// `leasehold`, trusted); answers once it accepts connections.
    pub fn start(upstream_port: u16, server_connections: u32) -> PgBouncer {
        let pooler = PgBouncer {
            dir: owned_tempdir(),
            port: free_port(),
        };
        let dir = pooler.dir.path();
        let users = dir.join("users.txt");
        fs::write(&users, "\"leasehold\" \"\"\n").expect("write the user list");
        let ini = dir.join("pgbouncer.ini");
        fs::write(
            &ini,
            format!(
                "[databases]\n\
                 leasehold = host=127.0.0.1 port={upstream_port} dbname=leasehold\n\
                 [pgbouncer]\n\
                 listen_addr = 127.0.0.1\n\
                 listen_port = {port}\n\
                 unix_socket_dir =\n\
                 auth_type = trust\n\
                 auth_file = {users}\n\
                 pool_mode = transaction\n\
                 default_pool_size = {server_connections}\n\
                 max_client_conn = 500\n\
                 ignore_startup_parameters = extra_float_digits\n\
                 logfile = {log}\n\
                 pidfile = {pid}\n",
                port = pooler.port,
                users = users.display(),
                log = dir.join("log").display(),
                pid = dir.join("pid").display(),
            ),
        )
        .expect("write pgbouncer.ini");
        let mut start = as_owner(Path::new(&program()));
        start.arg("-d").arg(&ini);
        run(start, "pgbouncer -d");
        let until = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", pooler.port)).is_err() {
            assert!(
                Instant::now() < until,
                "PgBouncer does not listen: {}",
                fs::read_to_string(dir.join("log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        pooler
    }

    /// The URL of database `leasehold` through the pooler.
    pub fn url(&self) -> String {
        format!("postgres://leasehold@127.0.0.1:{}/leasehold", self.port)
    }

    fn pid(&self) -> Option<Pid> {
        let text = fs::read_to_string(self.dir.path().join("pid")).ok()?;
        text.trim().parse().ok().map(Pid::from_raw)
    }
}

/// Debian's PgBouncer: on the path, or where the package puts it.
fn program() -> String {
    let sbin = "/usr/sbin/pgbouncer";
    if Path::new(sbin).exists() {
        sbin.to_owned()
    } else {
        "pgbouncer".to_owned()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            let _ = kill(pid, Signal::SIGKILL);
        }
    }
}
