//! Real etcd members for the tests, on free loopback ports: a cluster of
//! one or three started from a binary (`LEASEHOLD_ETCD`, the etcd 3.6 that
//! `make etcd` builds; `LEASEHOLD_ETCD_34`, Debian's 3.4), members killed,
//! frozen, restarted on their data dirs, and the leader found or moved.

use std::future::Future;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Which etcd to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Etcd {
    /// The current line (3.6), built by `make etcd`.
    Current,
    /// Debian's `etcd-server` (3.4), which DIST-08 refuses unless accepted.
    Debian34,
}

impl Etcd {
    /// The binary's path; panics, saying how to get it, when it is missing.
    pub fn binary(self) -> PathBuf {
        let (var, hint) = match self {
            Etcd::Current => (
                "LEASEHOLD_ETCD",
                "run `make etcd` (or `make test`), which builds it",
            ),
            Etcd::Debian34 => (
                "LEASEHOLD_ETCD_34",
                "install Debian's etcd-server (`make test` does)",
            ),
        };
        let path = std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| match self {
                Etcd::Current => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/etcd/etcd"),
                Etcd::Debian34 => PathBuf::from("/usr/bin/etcd"),
            });
        assert!(
            path.is_file(),
            "no etcd at {} ({var}): {hint}",
            path.display()
        );
        path
    }
}

/// One member of a test cluster.
#[derive(Debug)]
pub struct Member {
    /// Its name in the cluster.
    pub name: String,
    /// Where clients reach it.
    pub client_port: u16,
    peer_port: u16,
    data_dir: PathBuf,
    child: Option<Child>,
}

impl Member {
    /// `127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// How it ended, if it was started and has exited.
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }
}

/// The PEM files of a TLS cluster: its CA, and a server and a client
/// certificate the CA signed (the server's for 127.0.0.1 and localhost).
#[derive(Debug, Clone)]
pub struct Tls {
    /// The CA certificate clients trust.
    pub ca_pem: String,
    /// A client certificate for etcd's `--client-cert-auth`.
    pub client_cert_pem: String,
    /// Its key.
    pub client_key_pem: String,
    server_cert_pem: String,
    server_key_pem: String,
}

impl Tls {
    /// A new CA with a server and a client certificate.
    pub fn generate() -> Tls {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca =
            CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("a key")).expect("a CA");
        let server_key = KeyPair::generate().expect("a key");
        let server = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("server params")
            .signed_by(&server_key, &ca)
            .expect("a server certificate");
        let client_key = KeyPair::generate().expect("a key");
        let client = CertificateParams::new(vec!["leasehold-client".to_owned()])
            .expect("client params")
            .signed_by(&client_key, &ca)
            .expect("a client certificate");
        Tls {
            ca_pem: ca.pem(),
            client_cert_pem: client.pem(),
            client_key_pem: client_key.serialize_pem(),
            server_cert_pem: server.pem(),
            server_key_pem: server_key.serialize_pem(),
        }
    }

    fn client_options(&self) -> etcd_client::TlsOptions {
        etcd_client::TlsOptions::new()
            .ca_certificate(etcd_client::Certificate::from_pem(&self.ca_pem))
            .identity(etcd_client::Identity::from_pem(
                &self.client_cert_pem,
                &self.client_key_pem,
            ))
    }
}

/// A cluster of real etcd members on loopback.
#[derive(Debug)]
pub struct Cluster {
    /// The members, in the order they were made.
    pub members: Vec<Member>,
    etcd: Etcd,
    binary: PathBuf,
    initial: String,
    tls: Option<Tls>,
    dir: tempfile::TempDir,
}

/// `n` free loopback ports, all different: each is bound until all are
/// chosen. One at a time, the kernel may give a port it gave a moment
/// before (about one three-member cluster in 650 had two members on one
/// port, and the second never started).
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free loopback port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("a bound port").port())
        .collect()
}

/// The index of the member the answers in `statuses` name as the leader.
fn leader_of(statuses: &[Option<etcd_client::StatusResponse>]) -> Option<usize> {
    let leader = statuses
        .iter()
        .flatten()
        .map(|s| s.leader())
        .find(|l| *l != 0)?;
    statuses
        .iter()
        .position(|s| s.as_ref().and_then(|s| s.header()).map(|h| h.member_id()) == Some(leader))
}

/// How many times [`Cluster::start`] starts a cluster on new ports when
/// one of its members did not start (a port another process took between
/// its choice and the member's bind).
const START_TRIES: usize = 3;

impl Cluster {
    /// Starts `n` members of `etcd` and waits until the cluster has a leader.
    pub async fn start(etcd: Etcd, n: usize) -> Cluster {
        Cluster::start_with(etcd, n, None).await
    }

    /// Starts `n` members whose clients must speak TLS and present a
    /// certificate the CA of `tls` signed.
    pub async fn start_tls(etcd: Etcd, n: usize, tls: Tls) -> Cluster {
        Cluster::start_with(etcd, n, Some(tls)).await
    }

    async fn start_with(etcd: Etcd, n: usize, tls: Option<Tls>) -> Cluster {
        for tries in 1.. {
            let mut cluster = Cluster::spawn_all(etcd, n, tls.clone());
            match cluster.wait_until_every_member_serves().await {
                Ok(()) => return cluster,
                Err(why) if tries < START_TRIES => {
                    eprintln!("etcd cluster: {why}; starting it again on new ports")
                }
                Err(why) => panic!("etcd cluster: {why}, {tries} times"),
            }
        }
        unreachable!("the loop returns or panics")
    }

    /// Starts `n` members on new ports in a new folder.
    fn spawn_all(etcd: Etcd, n: usize, tls: Option<Tls>) -> Cluster {
        let binary = etcd.binary();
        let dir = tempfile::tempdir().expect("a temporary folder");
        let ports = free_ports(2 * n);
        let members: Vec<Member> = ports
            .chunks(2)
            .enumerate()
            .map(|(i, ports)| Member {
                name: format!("m{i}"),
                client_port: ports[0],
                peer_port: ports[1],
                data_dir: dir.path().join(format!("m{i}")),
                child: None,
            })
            .collect();
        let initial = members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = Cluster {
            members,
            etcd,
            binary,
            initial,
            tls,
            dir,
        };
        for i in 0..n {
            cluster.spawn(i);
        }
        cluster
    }

    /// Waits until every member answers a status request and one of them
    /// leads; fails when a member exited (with the end of its log) or after
    /// 30 s. A leader alone is not enough: two members of three elect one
    /// while the third never started.
    async fn wait_until_every_member_serves(&mut self) -> Result<(), String> {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            for i in 0..self.members.len() {
                if let Some(status) = self.members[i].exited() {
                    let log = std::fs::read_to_string(self.log_of(i)).unwrap_or_default();
                    let tail: Vec<&str> = log.lines().rev().take(3).collect();
                    return Err(format!(
                        "member {i} exited at start ({status}): {}",
                        tail.join(" / ")
                    ));
                }
            }
            let statuses = self.statuses().await;
            if statuses.iter().all(Option::is_some) && leader_of(&statuses).is_some() {
                return Ok(());
            }
            if Instant::now() >= until {
                return Err("not every member answered with a leader known after 30 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Where member `i` logs its errors.
    fn log_of(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("m{i}.log"))
    }

    /// Member `i`'s log, opened to append (a restart adds to it).
    fn log_file(&self, i: usize) -> std::fs::File {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_of(i))
            .expect("open a member's log")
    }

    /// Which etcd runs.
    pub fn etcd(&self) -> Etcd {
        self.etcd
    }

    fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }

    fn spawn(&mut self, i: usize) {
        let m = &self.members[i];
        let client = format!("{}://127.0.0.1:{}", self.scheme(), m.client_port);
        let peer = format!("http://127.0.0.1:{}", m.peer_port);
        let mut command = Command::new(&self.binary);
        if let Some(tls) = &self.tls {
            let write = |name: &str, pem: &str| {
                let path = self.dir.path().join(name);
                std::fs::write(&path, pem).expect("write a PEM file");
                path
            };
            command
                .arg("--cert-file")
                .arg(write("server.pem", &tls.server_cert_pem))
                .arg("--key-file")
                .arg(write("server-key.pem", &tls.server_key_pem))
                .arg("--trusted-ca-file")
                .arg(write("ca.pem", &tls.ca_pem))
                .arg("--client-cert-auth");
        }
        let child = command
            .args(["--name", &m.name])
            .arg("--data-dir")
            .arg(&m.data_dir)
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--initial-cluster", &self.initial])
            .args([
                "--initial-cluster-state",
                "new",
                "--initial-cluster-token",
                "leasehold-tests",
            ])
            // A 1 s ttl is honoured only with fast elections (etcd's minimum
            // lease ttl is 1.5 election timeouts).
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .args(["--logger", "zap", "--log-level", "error"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(self.log_file(i))
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.binary.display()));
        self.members[i].child = Some(child);
    }

    /// `etcd://` (`etcds://` with TLS) with every member, and `prefix` as the key prefix.
    pub fn url(&self, prefix: &str) -> String {
        let hosts: Vec<String> = self.members.iter().map(Member::endpoint).collect();
        let scheme = if self.tls.is_some() { "etcds" } else { "etcd" };
        format!("{scheme}://{}/{prefix}", hosts.join(","))
    }

    /// The client endpoints of the running members.
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .filter(|m| m.child.is_some())
            .map(|m| format!("{}://{}", self.scheme(), m.endpoint()))
            .collect()
    }

    fn admin_options(&self, timeout: Duration) -> etcd_client::ConnectOptions {
        let options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(timeout);
        match &self.tls {
            Some(tls) => options.with_tls(tls.client_options()),
            None => options,
        }
    }

    /// An admin client on the running members.
    pub async fn client(&self) -> etcd_client::Client {
        let options =
            etcd_client::ConnectOptions::new().with_connect_timeout(Duration::from_secs(2));
        etcd_client::Client::connect(self.endpoints(), Some(options))
            .await
            .expect("an admin client")
    }

    /// Clients of every member but `struck`, made before a fault strikes
    /// it, for [`Outage::measure`] (each try bounded by [`Outage::TRY`]).
    pub async fn outage(&self, struck: usize) -> Outage {
        self.probe(struck, Outage::TRY).await
    }

    /// Clients of every member but `struck` (an index past the members
    /// spares them all), each try of theirs bounded by `try_bound`, made
    /// before a fault strikes: for [`Outage::record`], beside a client
    /// whose tries have that bound.
    pub async fn probe(&self, struck: usize, try_bound: Duration) -> Outage {
        let mut spared = Vec::new();
        for (i, m) in self
            .members
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != struck)
        {
            let endpoint = format!("{}://{}", self.scheme(), m.endpoint());
            let options = self.admin_options(try_bound);
            match etcd_client::Client::connect([endpoint], Some(options)).await {
                Ok(client) => spared.push(client),
                Err(e) => panic!("connect to member {i}: {e}"),
            }
        }
        Outage { spared, try_bound }
    }

    /// How many records stand in the line of `key` of `lock` in the store
    /// at `prefix` (the URL's path, as given to [`Cluster::url`]): its
    /// holder's and its waiters' (the layout in `core/src/etcd/keys.rs`;
    /// `lock` and `key` must need no percent-encoding).
    pub async fn line_len(&self, prefix: &str, lock: &str, key: &str) -> usize {
        let line = format!("/{prefix}/lines/{lock}/{key}/");
        let options = etcd_client::GetOptions::new()
            .with_prefix()
            .with_keys_only();
        match self.client().await.get(line, Some(options)).await {
            Ok(r) => r.kvs().len(),
            Err(_) => 0,
        }
    }

    /// [`Cluster::line_len`] as the line stood at etcd revision `revision`
    /// (a grant's fence is the revision of the transaction that granted it,
    /// DIST-03: the line as that grant found it).
    pub async fn line_len_at(&self, prefix: &str, lock: &str, key: &str, revision: i64) -> usize {
        let line = format!("/{prefix}/lines/{lock}/{key}/");
        let options = etcd_client::GetOptions::new()
            .with_prefix()
            .with_keys_only()
            .with_revision(revision);
        let read = self.client().await.get(line, Some(options)).await;
        read.expect("read the line at a revision").kvs().len()
    }

    /// Waits until the line of `key` holds `records` records (a waiter's
    /// hold was answered `Queued` once its record is written), or panics
    /// after 30 s. Tests that need waiters in a given order wait for each
    /// one's record this way before the next asks: a pause instead would
    /// be too short on a loaded machine.
    pub async fn wait_for_line(&self, prefix: &str, lock: &str, key: &str, records: usize) {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let len = self.line_len(prefix, lock, key).await;
            if len >= records {
                return;
            }
            assert!(
                Instant::now() < until,
                "the line of {lock}/{key} has {len} records after 30 s, not {records}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The index of the current leader, asking each running member.
    pub async fn leader(&self) -> Option<usize> {
        leader_of(&self.statuses().await)
    }

    /// Each member's answer to a status request: `None` when it is not
    /// running or did not answer within 500 ms.
    async fn statuses(&self) -> Vec<Option<etcd_client::StatusResponse>> {
        let mut statuses = Vec::new();
        for m in &self.members {
            if m.child.is_none() {
                statuses.push(None);
                continue;
            }
            let endpoint = format!("{}://{}", self.scheme(), m.endpoint());
            let options = self.admin_options(Duration::from_millis(500));
            statuses.push(
                match etcd_client::Client::connect([endpoint], Some(options)).await {
                    Ok(mut c) => c.status().await.ok(),
                    Err(_) => None,
                },
            );
        }
        statuses
    }

    /// Waits until a leader is known, or panics after `within`.
    pub async fn wait_for_leader(&self, within: Duration) -> usize {
        let until = Instant::now() + within;
        loop {
            if let Some(i) = self.leader().await {
                return i;
            }
            assert!(
                Instant::now() < until,
                "the etcd cluster has no leader after {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Makes member `i` the leader (etcd's move-leader, asked of the
    /// current leader) and waits until it is. A move that fails (the
    /// member asked lost its term meanwhile) is asked again, of whoever
    /// leads then, for up to 30 s.
    pub async fn move_leader_to(&self, i: usize) {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let leader = self.wait_for_leader(Duration::from_secs(10)).await;
            if leader == i {
                return;
            }
            match self.ask_to_move_leader(leader, i).await {
                Ok(()) => break,
                Err(e) => assert!(Instant::now() < until, "move the leader: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let until = Instant::now() + Duration::from_secs(10);
        while self.leader().await != Some(i) {
            assert!(
                Instant::now() < until,
                "member {i} did not become the leader"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Asks member `leader`, the leader, to hand leadership to member `i`.
    async fn ask_to_move_leader(&self, leader: usize, i: usize) -> Result<(), etcd_client::Error> {
        let mut admin = self.client().await;
        let members = admin.member_list().await?;
        let target = members
            .members()
            .iter()
            .find(|m| m.name() == self.members[i].name)
            .expect("member i in the member list")
            .id();
        let endpoint = format!("{}://{}", self.scheme(), self.members[leader].endpoint());
        let options = self.admin_options(Duration::from_secs(5));
        let mut to_leader = etcd_client::Client::connect([endpoint], Some(options)).await?;
        to_leader.move_leader(target).await.map(drop)
    }

    /// kill -9 of member `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts member `i` again on its data dir.
    pub fn restart(&mut self, i: usize) {
        assert!(self.members[i].child.is_none(), "member {i} still runs");
        self.spawn(i);
    }

    /// SIGSTOP of member `i`, returning once the process is stopped.
    pub fn freeze(&self, i: usize) {
        let pid = self.members[i].pid().expect("a running member");
        signal(pid, Signal::SIGSTOP);
        let status = format!("/proc/{pid}/stat");
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            let stopped = std::fs::read_to_string(&status)
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()
                        .map(|rest| rest.trim_start().starts_with('T'))
                })
                .unwrap_or(false);
            if stopped {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("member {i} did not stop");
    }

    /// SIGCONT of member `i`.
    pub fn thaw(&self, i: usize) {
        let pid = self.members[i].pid().expect("a running member");
        signal(pid, Signal::SIGCONT);
    }
}

fn signal(pid: u32, signal: Signal) {
    let pid = Pid::from_raw(i32::try_from(pid).expect("a pid"));
    kill(pid, signal).expect("signal an etcd member");
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            if let Some(pid) = self.members[i].pid() {
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGCONT);
            }
            self.kill(i);
        }
    }
}

/// The cluster's own outage after a fault: how long the members a fault
/// spared took to take a write again. Tests that bound a client's cost
/// through a fault by an election measure the election this way when the
/// cluster is slower than etcd's nominal span (a split vote, a loaded machine).
pub struct Outage {
    spared: Vec<etcd_client::Client>,
    try_bound: Duration,
}

impl Outage {
    /// The bound of one try of [`Cluster::outage`]'s probe.
    pub const TRY: Duration = Duration::from_millis(100);

    /// Writes to the spared members in turn, each try bounded, from now
    /// until one is taken or `within` has passed; the time it took.
    pub async fn measure(mut self, within: Duration) -> Duration {
        let since = Instant::now();
        let mut turn = 0usize;
        while since.elapsed() < within {
            let n = self.spared.len();
            let put = self.spared[turn % n].put("etcd-tests-outage", turn.to_string(), None);
            if let Ok(Ok(_)) = tokio::time::timeout(self.try_bound, put).await {
                break;
            }
            turn += 1;
        }
        since.elapsed()
    }

    /// Writes to the spared members in turn, each try bounded, from now
    /// until `stop` completes, pausing `pause` after each write taken: when
    /// the cluster took this process's writes. Run beside a client in the
    /// same process, it is that client's witness: a machine too loaded to
    /// serve the client's calls delays these writes alike.
    pub async fn record(mut self, pause: Duration, stop: impl Future<Output = ()>) -> Writes {
        let mut stop = std::pin::pin!(stop);
        let from = Instant::now();
        let mut taken = Vec::new();
        let mut turn = 0usize;
        loop {
            let n = self.spared.len();
            let put = self.spared[turn % n].put("etcd-tests-outage", turn.to_string(), None);
            turn += 1;
            tokio::select! {
                _ = &mut stop => break,
                put = tokio::time::timeout(self.try_bound, put) => {
                    if let Ok(Ok(_)) = put {
                        taken.push(Instant::now());
                        tokio::select! {
                            _ = &mut stop => break,
                            _ = tokio::time::sleep(pause) => {}
                        }
                    }
                }
            }
        }
        Writes {
            from,
            to: Instant::now(),
            taken,
        }
    }
}

/// When the members a fault spared took writes ([`Outage::record`]).
#[derive(Debug, Clone)]
pub struct Writes {
    /// When the recording began.
    pub from: Instant,
    /// When it ended.
    pub to: Instant,
    /// When each write was taken, in order.
    pub taken: Vec<Instant>,
}

impl Writes {
    /// The longest stretch of `[from, to]` (cut to the recording's own
    /// span) in which no write was taken.
    pub fn longest_gap(&self, from: Instant, to: Instant) -> Duration {
        let (from, to) = (from.max(self.from), to.min(self.to));
        let mut last = from;
        let mut longest = Duration::ZERO;
        for &at in self.taken.iter().filter(|at| **at > from && **at <= to) {
            longest = longest.max(at - last);
            last = at;
        }
        longest.max(to.saturating_duration_since(last))
    }

    /// How long after the recording began the first write was taken
    /// (the whole recording when none was).
    pub fn first_after(&self) -> Duration {
        self.taken
            .first()
            .unwrap_or(&self.to)
            .duration_since(self.from)
    }
}
