//! A real etcd member (`$LEASEHOLD_ETCD`, which `make etcd` builds) on free
//! loopback ports with a fresh data dir, killed when dropped.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running etcd member.
pub struct EtcdProcess {
    /// The client endpoint, `127.0.0.1:PORT`.
    pub endpoint: String,
    child: Child,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// The etcd binary the variable `env` names, which must be a file.
fn binary(env: &str) -> PathBuf {
    let path = std::env::var_os(env).map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "{env} is not set: it names an etcd binary the etcd tests start \
             (`make etcd` provides it and sets it)"
        )
    });
    assert!(
        path.is_file(),
        "no etcd binary at {env}={} (`make etcd` provides it)",
        path.display()
    );
    path
}

impl EtcdProcess {
    /// Starts one member of `$LEASEHOLD_ETCD` (3.6) and waits until its
    /// client port accepts connections.
    pub fn start() -> EtcdProcess {
        EtcdProcess::start_from("LEASEHOLD_ETCD")
    }

    /// As [`EtcdProcess::start`], with the binary the variable `env` names
    /// (`LEASEHOLD_ETCD_34`: Debian's 3.4).
    pub fn start_from(env: &str) -> EtcdProcess {
        let binary = binary(env);
        let dir = tempfile::tempdir().expect("a temp dir");
        let (client, peer) = (free_port(), free_port());
        let client_url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let cluster = format!("m0={peer_url}");
        let mut child = Command::new(&binary)
            .arg("--name")
            .arg("m0")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &client_url])
            .args(["--advertise-client-urls", &client_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &cluster])
            .args(["--initial-cluster-state", "new"])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .args(["--logger", "zap", "--log-level", "error"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("etcd at {} does not start: {e}", binary.display()));
        let endpoint = format!("127.0.0.1:{client}");
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(&endpoint).is_err() {
            let exited = child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("etcd did not accept connections on {endpoint} ({exited:?})");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        EtcdProcess {
            endpoint,
            child,
            _dir: dir,
        }
    }

    /// The store URL of this member under `prefix`.
    pub fn url(&self, prefix: &str) -> String {
        format!("etcd://{}/{prefix}", self.endpoint)
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
