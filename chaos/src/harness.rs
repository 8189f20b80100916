//! The harness: a real store, a fault proxy in front of it, holder
//! processes contending for its keys through the proxy, and a scheduler
//! that injects faults at random from a seed; at the end it collects the
//! histories and runs the checker.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::broken::Breakage;
use crate::check::{self, Report};
use crate::history::{self, Event, Kind, Recorder};
use crate::postgres::Fenced;
use crate::process::{self, ServerProcess};
use crate::proxy::Proxy;
use etcd_tests::{Cluster, Etcd};
use postgres_tests::server::PgServer;

/// The store a run is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreKind {
    /// `leasehold serve`.
    Server,
    /// A 3-member etcd cluster (`$LEASEHOLD_ETCD`, which `make etcd` builds).
    Etcd,
    /// A PostgreSQL server of the run's own (Debian's `postgresql`).
    Postgres,
}

impl StoreKind {
    /// How the checker judges a run on this store: on etcd a single
    /// member's fault fails no call; on PostgreSQL a killed server keeps
    /// its leases.
    pub fn check_options(self) -> check::Options {
        check::Options {
            quorum: self == StoreKind::Etcd,
            kills_keep_leases: self == StoreKind::Postgres,
            ..check::Options::default()
        }
    }
}

/// The store of a run and the proxies in front of it.
enum Backend {
    Server(ServerProcess),
    Etcd(Cluster),
    Postgres(PgServer),
}

impl Backend {
    async fn start(kind: StoreKind, data: &Path) -> anyhow::Result<(Backend, Vec<Proxy>)> {
        Ok(match kind {
            StoreKind::Server => {
                let server = ServerProcess::start_from(&process::server_binary(), data, &[])?;
                let proxy = Proxy::start(server.addr).await;
                (Backend::Server(server), vec![proxy])
            }
            StoreKind::Etcd => {
                let cluster = Cluster::start(Etcd::Current, 3).await;
                let mut proxies = Vec::new();
                for m in &cluster.members {
                    let addr = SocketAddr::from(([127, 0, 0, 1], m.client_port));
                    proxies.push(Proxy::start_raw(addr).await);
                }
                (Backend::Etcd(cluster), proxies)
            }
            StoreKind::Postgres => {
                let server = tokio::task::block_in_place(|| PgServer::start(&[]));
                let addr = SocketAddr::from(([127, 0, 0, 1], server.port));
                let proxy = Proxy::start_raw(addr).await;
                (Backend::Postgres(server), vec![proxy])
            }
        })
    }
}

/// A kind of fault the scheduler injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Fault {
    /// Every connection through the proxy is closed.
    Cut,
    /// Traffic both ways is delayed for a while.
    Delay,
    /// The next reply from the store is dropped with its connection.
    Drop,
    /// The link delivers nothing either way for a while, then breaks.
    Blackhole,
    /// New connections are refused for a while.
    Refuse,
    /// A holder process is stopped (SIGSTOP) for a while, then resumed.
    Freeze,
    /// A holder process is killed (SIGKILL) and started again.
    KillHolder,
    /// The store is killed (SIGKILL) and started again on its data dir; on
    /// etcd, one member (the leader one time in two), started again later.
    KillServer,
    /// On etcd, one member (the leader one time in two) stopped (SIGSTOP)
    /// for three seconds, then resumed; on PostgreSQL, the server and its
    /// backends, for as long.
    FreezeMember,
    /// On etcd, the link to one member black-holed for a while, then cut.
    BlackholeMember,
}

impl Fault {
    /// Every kind.
    pub const ALL: [Fault; 10] = [
        Fault::Cut,
        Fault::Delay,
        Fault::Drop,
        Fault::Blackhole,
        Fault::Refuse,
        Fault::Freeze,
        Fault::KillHolder,
        Fault::KillServer,
        Fault::FreezeMember,
        Fault::BlackholeMember,
    ];
}

/// A run's settings.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// How long the holders contend, in seconds.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// The seed of every random choice (faults, holders' keys and times).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The store.
    #[arg(long, value_enum, default_value_t = StoreKind::Server)]
    pub store: StoreKind,
    /// How many Rust holder processes.
    #[arg(long, default_value_t = 8)]
    pub holders: u32,
    /// How many Python holder processes (`chaos/holders/holder.py`) besides.
    #[arg(long, default_value_t = 0)]
    pub python_holders: u32,
    /// The Python that runs them, with the binding installed.
    #[arg(long, env = "CHAOS_PYTHON", default_value = "python3")]
    pub python: PathBuf,
    /// How many Go holder processes (`bindings-go/cmd/chaos-holder`) besides.
    #[arg(long, default_value_t = 0)]
    pub go_holders: u32,
    /// The Go holder's binary.
    #[arg(long, env = "CHAOS_GO_HOLDER", default_value = "chaos-holder")]
    pub go_holder: PathBuf,
    /// How many Node holder processes (`chaos/holders/holder.js`) besides.
    #[arg(long, default_value_t = 0)]
    pub node_holders: u32,
    /// The Node that runs them.
    #[arg(long, env = "CHAOS_NODE", default_value = "node")]
    pub node: PathBuf,
    /// How many keys they contend for.
    #[arg(long, default_value_t = 6)]
    pub keys: u32,
    /// The lock's ttl in milliseconds (default: 1000 on the server store,
    /// 3000 on etcd, whose holders must outlast an election and a stuck
    /// try, docs/etcd.md, and on PostgreSQL, whose server's restart takes
    /// a second or so).
    #[arg(long)]
    pub ttl_ms: Option<u64>,
    /// One hold in this many runs longer than the ttl.
    #[arg(long, default_value_t = 200)]
    pub long_every: u32,
    /// The fault kinds to inject (all when not given).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub faults: Option<Vec<Fault>>,
    /// Inject no faults at all.
    #[arg(long)]
    pub no_faults: bool,
    /// The mean time between faults, in milliseconds.
    #[arg(long, default_value_t = 300)]
    pub fault_every_ms: u64,
    /// Where the run's histories, register and data go (emptied first).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The Rust and Node holders write their fences to this PostgreSQL
    /// (`make postgres`), whose table the checker then reads; else the Rust
    /// holders write to the file register and the Node ones write nothing.
    #[arg(long)]
    pub postgres: Option<String>,
    /// Breaks the store on purpose (the checker's own tests).
    #[arg(long, value_enum)]
    pub broken: Option<Breakage>,
}

struct Holder {
    name: String,
    incarnation: u32,
    child: Child,
}

impl Drop for Holder {
    fn drop(&mut self) {
        process::thaw(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Rig {
    args: RunArgs,
    histories: PathBuf,
    register: PathBuf,
    recorder: Recorder,
    backend: Backend,
    proxies: Vec<Proxy>,
    ttl_ms: u64,
    holders: Vec<Holder>,
    rng: StdRng,
    /// Frozen holders' pids and when to thaw them.
    frozen: HashMap<u32, Instant>,
    /// Lasting proxy faults and when they end.
    lasting: HashMap<Fault, Instant>,
    /// The etcd member a fault is on, and when it ends: one at a time, so
    /// that a quorum is always within reach but for the proxies' faults.
    member_fault: Option<MemberFault>,
    /// When the frozen PostgreSQL server is thawed.
    server_frozen_until: Option<Instant>,
}

/// What is done to one etcd member.
#[derive(Debug, Clone, Copy)]
enum MemberState {
    Killed,
    Frozen,
    Blackholed,
}

/// A fault on one etcd member, until when.
#[derive(Debug, Clone, Copy)]
struct MemberFault {
    member: usize,
    state: MemberState,
    until: Instant,
}

/// How long a frozen etcd member stays stopped.
const MEMBER_FROZEN_FOR: Duration = Duration::from_secs(3);

/// The bound of one try of an etcd call at one member: half the cluster's
/// election timeout (docs/etcd.md).
const ETCD_ATTEMPT_TIMEOUT: &str = "250ms";

/// The bound of one try of a call to PostgreSQL: a sixth of the run's
/// default ttl, as docs/postgres.md advises.
const POSTGRES_ATTEMPT_TIMEOUT: &str = "500ms";

fn fault(kind: &str) -> Event {
    Event::new(Kind::Fault).reason(kind)
}

impl Rig {
    /// The URL holders connect to: through the proxies.
    fn url(&self) -> String {
        match self.backend {
            Backend::Server(_) => self.proxies[0].url(),
            Backend::Etcd(_) => {
                let hosts: Vec<String> = self
                    .proxies
                    .iter()
                    .map(|p| p.url().trim_start_matches("leasehold://").to_owned())
                    .collect();
                format!(
                    "etcd://{}/chaos-{}?attempt-timeout={ETCD_ATTEMPT_TIMEOUT}",
                    hosts.join(","),
                    self.args.seed
                )
            }
            Backend::Postgres(_) => format!(
                "postgres://leasehold@{}/leasehold?schema=chaos_{}&attempt-timeout={POSTGRES_ATTEMPT_TIMEOUT}",
                self.proxies[0].addr(),
                self.args.seed
            ),
        }
    }

    /// Applies `f` to every proxy.
    fn proxies(&self, f: impl Fn(&Proxy)) {
        self.proxies.iter().for_each(f);
    }

    /// Starts holder `index` (the Rust ones first, then the Python ones,
    /// the Go ones, the Node ones).
    fn spawn_holder(&self, index: u32, incarnation: u32) -> anyhow::Result<Holder> {
        let go = self.args.holders + self.args.python_holders;
        let node = go + self.args.go_holders;
        let (name, mut cmd) = if index >= node {
            let mut cmd = Command::new(&self.args.node);
            cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("holders/holder.js"));
            if let Some(url) = &self.args.postgres {
                cmd.args(["--postgres", url]);
            }
            (format!("node-{}", index - node), cmd)
        } else if index >= go {
            (
                format!("go-{}", index - go),
                Command::new(&self.args.go_holder),
            )
        } else if index >= self.args.holders {
            let mut cmd = Command::new(&self.args.python);
            cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("holders/holder.py"));
            (format!("python-{}", index - self.args.holders), cmd)
        } else {
            let mut cmd = Command::new(std::env::current_exe()?);
            cmd.arg("holder")
                .args(["--long-every", &self.args.long_every.to_string()]);
            if let Some(url) = &self.args.postgres {
                cmd.args(["--postgres", url]);
            }
            if let Some(b) = self.args.broken {
                let value = clap::ValueEnum::to_possible_value(&b).expect("a named value");
                cmd.args(["--broken", value.get_name()]);
            }
            (format!("rust-{index}"), cmd)
        };
        cmd.args(["--url", &self.url(), "--name", &name])
            .arg("--history")
            .arg(self.histories.join(format!("{name}.{incarnation}.jsonl")))
            .arg("--register")
            .arg(&self.register)
            .args([
                "--seed",
                &(self.args.seed * 1000 + index as u64 * 37 + incarnation as u64).to_string(),
            ])
            .args(["--keys", &self.args.keys.to_string()])
            .args(["--ttl-ms", &self.ttl_ms.to_string()])
            .stdin(Stdio::null());
        Ok(Holder {
            name,
            incarnation,
            child: cmd.spawn()?,
        })
    }

    fn heal_due(&mut self, now: Instant) {
        if let (Some(until), Backend::Postgres(server)) = (self.server_frozen_until, &self.backend)
        {
            if until <= now {
                server.thaw();
                self.server_frozen_until = None;
                self.recorder.record(fault("thaw_server"));
            }
        }
        if let (Some(f), Backend::Etcd(cluster)) = (self.member_fault, &mut self.backend) {
            if f.until <= now {
                let i = f.member;
                let ended = match f.state {
                    MemberState::Killed => {
                        cluster.restart(i);
                        "restart_member"
                    }
                    MemberState::Frozen => {
                        cluster.thaw(i);
                        "thaw_member"
                    }
                    MemberState::Blackholed => {
                        self.proxies[i].blackhole(false);
                        "blackhole_member_end"
                    }
                };
                self.member_fault = None;
                self.recorder.record(fault(ended).target(i as u32));
            }
        }
        let due: Vec<u32> = self
            .frozen
            .iter()
            .filter(|(_, &t)| t <= now)
            .map(|(&p, _)| p)
            .collect();
        for pid in due {
            self.frozen.remove(&pid);
            process::thaw(pid);
            self.recorder.record(fault("thaw").target(pid));
        }
        let due: Vec<Fault> = self
            .lasting
            .iter()
            .filter(|(_, &t)| t <= now)
            .map(|(&f, _)| f)
            .collect();
        for f in due {
            self.lasting.remove(&f);
            match f {
                Fault::Delay => {
                    self.proxies(|p| p.delay(Duration::ZERO));
                    self.recorder.record(fault("delay_end"));
                }
                Fault::Blackhole => {
                    self.proxies(|p| p.blackhole(false));
                    self.recorder.record(fault("blackhole_end"));
                }
                Fault::Refuse => {
                    self.proxies(|p| p.refuse(false));
                    self.recorder.record(fault("refuse_end"));
                }
                _ => {}
            }
        }
    }

    async fn inject(&mut self, kind: Fault) -> anyhow::Result<()> {
        let now = Instant::now();
        let ttl = self.ttl_ms;
        let lasting = Duration::from_millis(self.rng.gen_range(ttl / 5..ttl * 5 / 2));
        match kind {
            Fault::Cut => {
                self.recorder.record(fault("cut"));
                self.proxies(Proxy::cut);
            }
            Fault::Drop if matches!(self.backend, Backend::Server(_)) => {
                self.recorder.record(fault("drop"));
                self.proxies[0].drop_next(|_| true);
            }
            Fault::Delay | Fault::Blackhole | Fault::Refuse
                if !self.lasting.contains_key(&kind) =>
            {
                self.lasting.insert(kind, now + lasting);
                match kind {
                    Fault::Delay => {
                        let d = Duration::from_millis(self.rng.gen_range(5..ttl / 4));
                        self.recorder.record(fault("delay"));
                        self.proxies(|p| p.delay(d));
                    }
                    Fault::Blackhole => {
                        self.recorder.record(fault("blackhole"));
                        self.proxies(|p| p.blackhole(true));
                    }
                    _ => {
                        self.recorder.record(fault("refuse"));
                        self.proxies(|p| p.refuse(true));
                    }
                }
            }
            Fault::Freeze => {
                let i = self.rng.gen_range(0..self.holders.len());
                let pid = self.holders[i].child.id();
                if !self.frozen.contains_key(&pid) {
                    self.recorder.record(fault("freeze").target(pid));
                    tokio::task::block_in_place(|| process::freeze(pid));
                    self.frozen.insert(pid, now + lasting);
                }
            }
            Fault::KillHolder => {
                let i = self.rng.gen_range(0..self.holders.len());
                let pid = self.holders[i].child.id();
                self.recorder.record(fault("kill_holder").target(pid));
                let _ = self.holders[i].child.kill();
                let _ = self.holders[i].child.wait();
                self.frozen.remove(&pid);
                let incarnation = self.holders[i].incarnation + 1;
                self.holders[i] = self.spawn_holder(i as u32, incarnation)?;
                self.recorder.record(fault("restart_holder").target(pid));
            }
            Fault::KillServer => {
                let down = Duration::from_millis(self.rng.gen_range(0..ttl / 2));
                match &mut self.backend {
                    Backend::Server(server) => {
                        self.recorder.record(fault("kill_server"));
                        tokio::task::block_in_place(|| {
                            server.kill9();
                            std::thread::sleep(down);
                            server.restart();
                        });
                        self.recorder.record(fault("restart_server"));
                    }
                    Backend::Postgres(server) => {
                        self.recorder.record(fault("kill_server"));
                        tokio::task::block_in_place(|| {
                            server.kill();
                            std::thread::sleep(down);
                            server.run();
                        });
                        self.server_frozen_until = None;
                        self.recorder.record(fault("restart_server"));
                    }
                    Backend::Etcd(_) => self.member(MemberState::Killed, now + down * 4).await,
                }
            }
            Fault::FreezeMember => {
                if let Backend::Postgres(server) = &self.backend {
                    if self.server_frozen_until.is_none() {
                        self.recorder.record(fault("freeze_server"));
                        tokio::task::block_in_place(|| server.freeze());
                        self.server_frozen_until = Some(now + MEMBER_FROZEN_FOR);
                    }
                } else {
                    self.member(MemberState::Frozen, now + MEMBER_FROZEN_FOR)
                        .await
                }
            }
            Fault::BlackholeMember => self.member(MemberState::Blackholed, now + lasting).await,
            _ => {}
        }
        Ok(())
    }

    /// Puts one etcd member, the leader one time in two, in `state` until
    /// `until`, unless a member fault is on already (or the store is not etcd).
    async fn member(&mut self, state: MemberState, until: Instant) {
        let Backend::Etcd(cluster) = &mut self.backend else {
            return;
        };
        if self.member_fault.is_some() {
            return;
        }
        let leader = if self.rng.gen_bool(0.5) {
            cluster.leader().await
        } else {
            None
        };
        let member = leader.unwrap_or_else(|| self.rng.gen_range(0..cluster.members.len()));
        // A black-holed member is cut off from the holders only (its proxy
        // is theirs): it still leads or follows, so its event does not say which.
        let kind = match (state, leader.is_some()) {
            (MemberState::Killed, true) => "kill_leader",
            (MemberState::Killed, false) => "kill_member",
            (MemberState::Frozen, true) => "freeze_leader",
            (MemberState::Frozen, false) => "freeze_member",
            (MemberState::Blackholed, _) => "blackhole_member",
        };
        self.recorder.record(fault(kind).target(member as u32));
        match state {
            MemberState::Killed => cluster.kill(member),
            MemberState::Frozen => tokio::task::block_in_place(|| cluster.freeze(member)),
            MemberState::Blackholed => self.proxies[member].blackhole(true),
        }
        self.member_fault = Some(MemberFault {
            member,
            state,
            until,
        });
    }

    /// Starts again every holder that exited on its own, recording its
    /// exit (`holder_exit`, the exit status on stderr): a finding to look into.
    fn restart_exited(&mut self) -> anyhow::Result<()> {
        for i in 0..self.holders.len() {
            let Ok(Some(status)) = self.holders[i].child.try_wait() else {
                continue;
            };
            let pid = self.holders[i].child.id();
            eprintln!(
                "holder {} (pid {pid}) exited on its own: {status}",
                self.holders[i].name
            );
            self.recorder.record(fault("holder_exit").target(pid));
            self.frozen.remove(&pid);
            let incarnation = self.holders[i].incarnation + 1;
            self.holders[i] = self.spawn_holder(i as u32, incarnation)?;
        }
        Ok(())
    }

    /// Thaws, stops (SIGTERM, then SIGKILL after 10 s) and reaps every holder.
    fn stop_holders(&mut self) {
        self.heal_due(Instant::now() + Duration::from_secs(3600));
        for h in &self.holders {
            process::signal(h.child.id(), Signal::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for h in &mut self.holders {
            while h.child.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    self.recorder
                        .record(fault("kill_holder").target(h.child.id()));
                    let _ = h.child.kill();
                    let _ = h.child.wait();
                    eprintln!("holder {} did not stop in time: killed", h.name);
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// Prepares `out` for a run: emptied, with `histories/`, `register/` and `data/`.
fn prepare(out: &Path) -> anyhow::Result<()> {
    if out.exists() {
        std::fs::remove_dir_all(out)?;
    }
    for sub in ["histories", "register", "data"] {
        std::fs::create_dir_all(out.join(sub))?;
    }
    Ok(())
}

/// The directory a run writes to when `--out` is not given.
pub fn default_out(args: &RunArgs) -> PathBuf {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    target
        .join("chaos")
        .join(format!("{:?}-{}", args.store, args.seed).to_lowercase())
}

/// Runs the harness and checks the histories.
pub async fn run(args: RunArgs) -> anyhow::Result<Report> {
    let out = args.out.clone().unwrap_or_else(|| default_out(&args));
    prepare(&out)?;
    let histories = out.join("histories");
    let (backend, proxies) = Backend::start(args.store, &out.join("data")).await?;
    let ttl_ms = args.ttl_ms.unwrap_or(match args.store {
        StoreKind::Server => 1000,
        StoreKind::Etcd | StoreKind::Postgres => 3000,
    });
    let mut rig = Rig {
        recorder: Recorder::create(&histories.join("harness.jsonl"), "harness")?,
        register: out.join("register"),
        histories,
        backend,
        proxies,
        ttl_ms,
        member_fault: None,
        server_frozen_until: None,
        holders: Vec::new(),
        rng: StdRng::seed_from_u64(args.seed),
        frozen: HashMap::new(),
        lasting: HashMap::new(),
        args: args.clone(),
    };
    if let Some(url) = &args.postgres {
        Fenced::prepare(url, args.keys).await?;
    }
    let all = args.holders + args.python_holders + args.go_holders + args.node_holders;
    for i in 0..all {
        let holder = rig.spawn_holder(i, 0)?;
        rig.holders.push(holder);
    }
    let kinds: Vec<Fault> = match (&args.faults, args.no_faults) {
        (_, true) => Vec::new(),
        (Some(kinds), _) => kinds.clone(),
        (None, _) => Fault::ALL.to_vec(),
    };
    let end = Instant::now() + Duration::from_secs(args.seconds);
    while Instant::now() < end {
        let pause = rig.rng.gen_range(0..args.fault_every_ms * 2);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        rig.heal_due(Instant::now());
        rig.restart_exited()?;
        if let Some(&kind) = kinds.choose(&mut rig.rng) {
            rig.inject(kind).await?;
        }
    }
    tokio::task::block_in_place(|| rig.stop_holders());
    if let Some(url) = &args.postgres {
        Fenced::record_rows(url, &rig.recorder).await?;
    }
    let histories = rig.histories.clone();
    drop(rig);
    let events = history::read_dir(&histories)?;
    Ok(check::check(&events, &args.store.check_options()))
}
