//! The Rust runner of the shared scenarios: each scenario runs on its own
//! current-thread tokio runtime, on an embedded store whose virtual clock only
//! the `advance` step moves, so that every run is the same run.
//!
//! Nothing here sleeps in real time. Whether a call got its key or still waits
//! is read after letting every runnable task run ([`settle`]); a real-time
//! guard ([`STEP_GUARD`]) only turns a step that hangs into a failure.
//!
//! ```
//! let text = r#"{
//!   "id": "doc-runner", "contracts": ["LOCK-01"], "title": "a second holder waits",
//!   "store": {"renewal": false, "push": true},
//!   "steps": [
//!     {"step": "open_lock", "lock": "l"},
//!     {"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect": "granted"},
//!     {"step": "hold", "holder": "b", "lock": "l", "key": "k", "expect": "waiting"},
//!     {"step": "end", "holder": "a"},
//!     {"step": "expect_granted", "holder": "b"}
//!   ]
//! }"#;
//! let scenario = spec_tests::scenario::Scenario::from_json(text).unwrap();
//! spec_tests::runner::run(&scenario).unwrap();
//! ```

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::task::Poll;
use std::time::Duration;

use leasehold::clock::VirtualClock;
use leasehold::remote::ConnectOptions;
use leasehold::{
    CancellationToken, Error, ErrorKind, HoldOptions, Holding, Lease, Lock, ManualLease,
    MemoryOptions, Store,
};
use leasehold_bridge::options::LockOptions;
use serde::Serialize;
use tokio::task::JoinHandle;

use crate::scenario::{
    Code, Dur, EndBy, EndExpect, Reason, Remaining, Scenario, Step, StoreSpec, TryExpect,
    WaitExpect,
};

/// The longest real time one step may take before the run fails as hung.
pub const STEP_GUARD: Duration = Duration::from_secs(5);

/// Where a scenario run failed: which scenario, which step, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The scenario's id (or its file, when it did not load).
    pub scenario: String,
    /// The index of the step that failed, from 0; `None` when the file did not load.
    pub step: Option<usize>,
    /// The step as JSON, for the report.
    pub step_json: Option<String>,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.step, &self.step_json) {
            (Some(i), Some(json)) => write!(
                f,
                "scenario {}: step {i} {json}: {}",
                self.scenario, self.message
            ),
            _ => write!(f, "scenario {}: {}", self.scenario, self.message),
        }
    }
}

impl std::error::Error for Failure {}

/// The folder of the shared scenario files.
pub fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// Every scenario file, sorted by name.
pub fn scenario_files() -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(scenario_dir())? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Loads a scenario file; its id must be the file's name without `.json`.
pub fn load(path: &Path) -> Result<Scenario, Failure> {
    let file = path.display().to_string();
    let fail = |message: String| Failure {
        scenario: file.clone(),
        step: None,
        step_json: None,
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let scenario = Scenario::from_json(&text).map_err(|e| fail(e.to_string()))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if scenario.id != stem {
        return Err(fail(format!(
            "the id {:?} is not the file's name {stem:?}",
            scenario.id
        )));
    }
    Ok(scenario)
}

/// Loads and runs the scenario file `file` of [`scenario_dir`].
pub fn run_file(file: &str) -> Result<(), Failure> {
    run(&load(&scenario_dir().join(file))?)
}

/// How long the runner waits for the server store's pushes to arrive before
/// it looks (loopback round trips take well under a millisecond).
pub const SERVER_SETTLE: Duration = Duration::from_millis(150);

/// Whether a scenario can run on the server store: it needs pushed grants
/// and moves no virtual clock (the server keeps real time), closes and
/// reopens no store, and reads no exact remaining time.
pub fn applies_to_server(scenario: &Scenario) -> bool {
    scenario.store.push
        && scenario.steps.iter().all(|s| {
            !matches!(
                s,
                Step::Advance { .. }
                    | Step::Close {}
                    | Step::Reopen {}
                    | Step::ExpectRemaining { .. }
            )
        })
}

/// Runs a scenario on its own current-thread runtime, on the embedded store.
pub fn run(scenario: &Scenario) -> Result<(), Failure> {
    run_on(scenario, None)
}

/// Runs a scenario on the server store at `url` (see [`applies_to_server`]).
pub fn run_on_server(scenario: &Scenario, url: &str) -> Result<(), Failure> {
    run_on(scenario, Some(url))
}

fn run_on(scenario: &Scenario, server: Option<&str>) -> Result<(), Failure> {
    quiet_scenario_panics();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure {
            scenario: scenario.id.clone(),
            step: None,
            step_json: None,
            message: format!("cannot start a runtime: {e}"),
        })?;
    runtime.block_on(async {
        let mut world = World::new(scenario.store, server)
            .await
            .map_err(|message| Failure {
                scenario: scenario.id.clone(),
                step: None,
                step_json: None,
                message,
            })?;
        for (i, step) in scenario.steps.iter().enumerate() {
            let outcome = tokio::time::timeout(STEP_GUARD, world.step(step)).await;
            let message = match outcome {
                Ok(Ok(())) => continue,
                Ok(Err(message)) => message,
                Err(_) => format!("did not finish within {STEP_GUARD:?} of real time"),
            };
            return Err(Failure {
                scenario: scenario.id.clone(),
                step: Some(i),
                step_json: serde_json::to_string(step).ok(),
                message,
            });
        }
        world.store.close().await;
        Ok(())
    })
}

/// Lets every task that can run, run: what the store pushed arrives, what a
/// cancellation woke ends, before the runner looks.
pub async fn settle() {
    for _ in 0..128 {
        tokio::task::yield_now().await;
    }
}

/// The output of `f` if it is ready at its first poll.
async fn ready_now<F: Future>(f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    std::future::poll_fn(move |cx| match f.as_mut().poll(cx) {
        Poll::Ready(v) => Poll::Ready(Some(v)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

/// The marker of the panics that `end` with `"by": "panic"` raises on purpose.
const PANIC_MARK: &str = "spec-tests: the held function panics";

/// Keeps the panics the runner raises on purpose out of the test output.
fn quiet_scenario_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("");
            if !text.starts_with(PANIC_MARK) {
                previous(info);
            }
        }));
    });
}

/// The error of a held function, told apart from the store's.
#[derive(Debug)]
pub enum HeldError {
    /// A Leasehold error (`Lost`, …).
    Store(Error),
    /// The function's own error.
    Function(FunctionError),
}

/// A held function's own error: what a scenario's `"by": "error"` raises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionError(pub String);

impl fmt::Display for FunctionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FunctionError {}

impl From<Error> for HeldError {
    fn from(e: Error) -> HeldError {
        HeldError::Store(e)
    }
}

impl fmt::Display for HeldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeldError::Store(e) => e.fmt(f),
            HeldError::Function(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for HeldError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HeldError::Store(e) => std::error::Error::source(e),
            HeldError::Function(_) => None,
        }
    }
}

/// Where a holder's call is.
enum Phase<T> {
    /// The call waits (in line, or polling).
    Waiting {
        task: JoinHandle<leasehold::Result<T>>,
        cancel: CancellationToken,
    },
    /// It got its key or lease.
    Granted(T),
    /// It failed.
    Failed(Error),
    /// The holder's function ended (holders of a key only).
    Ended,
}

impl<T> Phase<T> {
    fn label(&self) -> String {
        match self {
            Phase::Waiting { .. } => "waiting".into(),
            Phase::Granted(_) => "granted".into(),
            Phase::Failed(e) => format!("failed {e}"),
            Phase::Ended => "ended".into(),
        }
    }
}

/// A holder of a key: its call's phase, and its lease once granted.
struct KeyHolder {
    phase: Phase<Holding>,
    lease: Option<Lease>,
}

/// A scenario's actor.
enum Actor {
    Key(KeyHolder),
    Manual(Phase<ManualLease>),
}

/// How a lock was opened, to open it again on a new store: its name and
/// options, mapped onto the core's builder as every binding maps them.
#[derive(Clone)]
struct LockSpec {
    name: String,
    options: LockOptions,
}

impl LockSpec {
    fn open(&self, store: &Store) -> leasehold::Result<Lock> {
        self.options.clone().open(store, &self.name)
    }
}

/// What a call did, written as the scenarios write it, to compare with what they expect.
#[derive(Debug, PartialEq, Eq)]
struct Outcome(String);

impl Outcome {
    fn of<T: Serialize>(expect: &T) -> Outcome {
        match serde_json::to_value(expect) {
            Ok(serde_json::Value::String(s)) => Outcome(s),
            other => Outcome(format!("{other:?}")),
        }
    }

    fn error(kind: ErrorKind) -> Outcome {
        Outcome(format!("error {}", kind.code()))
    }

    /// What the step expects: its `expect` (or `default`), or its `expect_error`.
    fn expected<T: Serialize>(
        expect: &Option<T>,
        expect_error: &Option<Code>,
        default: &str,
    ) -> Outcome {
        match (expect, expect_error) {
            (_, Some(code)) => Outcome::error(code.0),
            (Some(e), None) => Outcome::of(e),
            (None, None) => Outcome(default.to_owned()),
        }
    }
}

/// Compares what happened with what was expected, naming the error's message on a mismatch.
fn compare(want: &Outcome, got: &Outcome, detail: Option<&Error>) -> Result<(), String> {
    if want == got {
        return Ok(());
    }
    let detail = detail.map(|e| format!(" ({e})")).unwrap_or_default();
    Err(format!("expected {}, got {}{detail}", want.0, got.0))
}

fn parse_dur(d: &Dur) -> Result<Duration, String> {
    d.parse()
        .map_err(|e| format!("bad duration {:?}: {e}", d.0))
}

/// A duration option of a call: parsed as a binding parses a string, whose
/// failure is the call's `InvalidTtl`.
fn option_dur(d: &Option<Dur>) -> leasehold::Result<Option<Duration>> {
    d.as_ref().map(Dur::parse).transpose()
}

struct World {
    spec: StoreSpec,
    /// The server store the scenario runs on, or `None` for the embedded one.
    server: Option<String>,
    clock: VirtualClock,
    store: Store,
    locks: HashMap<String, (LockSpec, Lock)>,
    holders: HashMap<String, Actor>,
    fences: HashMap<String, u64>,
}

fn open_store(spec: StoreSpec, clock: &VirtualClock) -> Store {
    Store::memory_with(
        MemoryOptions::default()
            .clock(clock.clone().into())
            .renewal(spec.renewal)
            .push(spec.push),
    )
}

impl World {
    async fn new(spec: StoreSpec, server: Option<&str>) -> Result<World, String> {
        let clock = VirtualClock::new();
        let store = match server {
            Some(url) => Store::connect(url, ConnectOptions::default())
                .await
                .map_err(|e| format!("cannot connect to the server store {url}: {e}"))?,
            None => open_store(spec, &clock),
        };
        Ok(World {
            spec,
            server: server.map(str::to_owned),
            store,
            clock,
            locks: HashMap::new(),
            holders: HashMap::new(),
            fences: HashMap::new(),
        })
    }

    /// Lets what the store pushed arrive: on the embedded store, every task
    /// that can run runs; over a connection, a real pause of [`SERVER_SETTLE`].
    async fn settle(&self) {
        match self.server {
            Some(_) => tokio::time::sleep(SERVER_SETTLE).await,
            None => settle().await,
        }
    }

    fn lock(&self, alias: &str) -> Result<Lock, String> {
        self.locks
            .get(alias)
            .map(|(_, lock)| lock.clone())
            .ok_or_else(|| format!("no lock {alias:?} was opened"))
    }

    fn new_holder(&self, name: &str) -> Result<(), String> {
        if self.holders.contains_key(name) {
            return Err(format!("holder {name:?} exists already"));
        }
        Ok(())
    }

    fn actor(&mut self, name: &str) -> Result<&mut Actor, String> {
        self.holders
            .get_mut(name)
            .ok_or_else(|| format!("no holder {name:?}"))
    }

    fn key_holder(&mut self, name: &str) -> Result<&mut KeyHolder, String> {
        match self.actor(name)? {
            Actor::Key(k) => Ok(k),
            Actor::Manual(_) => Err(format!("{name:?} holds a manual lease, not a key")),
        }
    }

    fn manual(&mut self, name: &str) -> Result<ManualLease, String> {
        match self.actor(name)? {
            Actor::Manual(Phase::Granted(lease)) => Ok(lease.clone()),
            Actor::Manual(other) => Err(format!("{name:?} has no lease: {}", other.label())),
            Actor::Key(_) => Err(format!("{name:?} holds a key, not a manual lease")),
        }
    }

    /// Takes in the outcome of a holder's waiting call if it has one by now.
    async fn resolve(&mut self, name: &str) -> Result<(), String> {
        let actor = self.actor(name)?;
        let fence = match actor {
            Actor::Key(k) => {
                resolve(&mut k.phase).await;
                match &k.phase {
                    Phase::Granted(h) if k.lease.is_none() => {
                        k.lease = Some(h.lease().clone());
                        Some(h.lease().fence())
                    }
                    _ => None,
                }
            }
            Actor::Manual(phase) => {
                let was_waiting = matches!(phase, Phase::Waiting { .. });
                resolve(phase).await;
                match phase {
                    Phase::Granted(lease) if was_waiting => Some(lease.fence()),
                    _ => None,
                }
            }
        };
        if let Some(fence) = fence {
            self.fences.insert(name.to_owned(), fence);
        }
        Ok(())
    }

    fn phase_label(&mut self, name: &str) -> Result<(String, Option<Error>), String> {
        Ok(match self.actor(name)? {
            Actor::Key(k) => (phase_outcome(&k.phase), phase_error(&k.phase)),
            Actor::Manual(p) => (phase_outcome(p), phase_error(p)),
        })
    }

    async fn step(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::OpenLock {
                lock,
                name,
                ttl,
                max_hold,
                wait,
                margin,
                expect,
                expect_error,
            } => {
                if self.locks.contains_key(lock) {
                    return Err(format!("lock {lock:?} is open already"));
                }
                let want = Outcome::expected(expect, expect_error, "ok");
                let opened = (|| {
                    let spec = LockSpec {
                        name: name.clone().unwrap_or_else(|| lock.clone()),
                        options: LockOptions {
                            ttl: option_dur(ttl)?,
                            max_hold: option_dur(max_hold)?,
                            wait: option_dur(wait)?,
                            margin: option_dur(margin)?,
                        },
                    };
                    let opened = spec.open(&self.store)?;
                    Ok::<_, Error>((spec, opened))
                })();
                match opened {
                    Ok(pair) => {
                        compare(&want, &Outcome("ok".into()), None)?;
                        self.locks.insert(lock.clone(), pair);
                    }
                    Err(e) => compare(&want, &Outcome::error(e.kind()), Some(&e))?,
                }
                Ok(())
            }
            Step::Hold {
                holder,
                lock,
                key,
                wait,
                expect,
                expect_error,
            } => {
                self.new_holder(holder)?;
                let lock = self.lock(lock)?;
                let cancel = CancellationToken::new();
                let options = option_dur(wait).map(|wait| HoldOptions {
                    wait,
                    cancel: Some(cancel.clone()),
                });
                let key = key.clone();
                let task = tokio::spawn(async move { lock.begin(&key, &options?).await });
                self.holders.insert(
                    holder.clone(),
                    Actor::Key(KeyHolder {
                        phase: Phase::Waiting { task, cancel },
                        lease: None,
                    }),
                );
                self.started(holder, expect, expect_error).await
            }
            Step::Acquire {
                holder,
                name,
                ttl,
                wait,
                expect,
                expect_error,
            } => {
                self.new_holder(holder)?;
                let store = self.store.clone();
                let cancel = CancellationToken::new();
                let args = ttl.parse().and_then(|ttl| {
                    let wait = option_dur(wait)?;
                    Ok((
                        ttl,
                        HoldOptions {
                            wait,
                            cancel: Some(cancel.clone()),
                        },
                    ))
                });
                let name = name.clone();
                let task = tokio::spawn(async move {
                    let (ttl, options) = args?;
                    store.acquire(&name, ttl, &options).await
                });
                self.holders.insert(
                    holder.clone(),
                    Actor::Manual(Phase::Waiting { task, cancel }),
                );
                self.started(holder, expect, expect_error).await
            }
            Step::TryHold {
                holder,
                lock,
                key,
                expect,
                expect_error,
            } => {
                self.new_holder(holder)?;
                let lock = self.lock(lock)?;
                let want = Outcome::expected(expect, expect_error, "");
                match lock.try_begin(key).await {
                    Ok(Some(holding)) => {
                        compare(&want, &Outcome::of(&TryExpect::Granted), None)?;
                        self.fences.insert(holder.clone(), holding.lease().fence());
                        let lease = Some(holding.lease().clone());
                        self.holders.insert(
                            holder.clone(),
                            Actor::Key(KeyHolder {
                                phase: Phase::Granted(holding),
                                lease,
                            }),
                        );
                    }
                    Ok(None) => compare(&want, &Outcome::of(&TryExpect::NotHeld), None)?,
                    Err(e) => compare(&want, &Outcome::error(e.kind()), Some(&e))?,
                }
                Ok(())
            }
            Step::TryAcquire {
                holder,
                name,
                ttl,
                expect,
                expect_error,
            } => {
                self.new_holder(holder)?;
                let want = Outcome::expected(expect, expect_error, "");
                let got = match ttl.parse() {
                    Ok(ttl) => self.store.try_acquire(name, ttl).await,
                    Err(e) => Err(e),
                };
                match got {
                    Ok(Some(lease)) => {
                        compare(&want, &Outcome::of(&TryExpect::Granted), None)?;
                        self.fences.insert(holder.clone(), lease.fence());
                        self.holders
                            .insert(holder.clone(), Actor::Manual(Phase::Granted(lease)));
                    }
                    Ok(None) => compare(&want, &Outcome::of(&TryExpect::NotHeld), None)?,
                    Err(e) => compare(&want, &Outcome::error(e.kind()), Some(&e))?,
                }
                Ok(())
            }
            Step::End {
                holder,
                by,
                message,
                expect,
                expect_error,
                expect_cause,
            } => {
                self.end(holder, *by, message, expect, expect_error, expect_cause)
                    .await
            }
            Step::Cancel { holder } => {
                let cancel = match self.actor(holder)? {
                    Actor::Key(KeyHolder {
                        phase: Phase::Waiting { cancel, .. },
                        ..
                    })
                    | Actor::Manual(Phase::Waiting { cancel, .. }) => cancel.clone(),
                    _ => return Err(format!("{holder:?} is not waiting")),
                };
                cancel.cancel();
                self.settle().await;
                Ok(())
            }
            Step::ExpectGranted { holder } => self.expect_phase(holder, "granted").await,
            Step::ExpectWaiting { holder } => self.expect_phase(holder, "waiting").await,
            Step::ExpectFailed { holder, error } => {
                self.settle().await;
                self.resolve(holder).await?;
                let (got, detail) = self.phase_label(holder)?;
                compare(&Outcome::error(error.0), &Outcome(got), detail.as_ref())
            }
            Step::ExpectLost { holder, reason } => self.expect_lost(holder, Some(*reason)).await,
            Step::ExpectNotLost { holder } => self.expect_lost(holder, None).await,
            Step::ExpectRemaining { holder, remaining } => {
                self.settle().await;
                let lease = self.lease_of(holder)?;
                let want = match remaining {
                    Remaining(s) if s == "none" => None,
                    Remaining(s) => Some(parse_dur(&Dur(s.clone()))?),
                };
                let got = lease.remaining();
                if got != want {
                    return Err(format!("expected {want:?} left, got {got:?}"));
                }
                Ok(())
            }
            Step::ExpectFenceGreater { holder, than } => {
                let fence = |name: &String| {
                    self.fences
                        .get(name)
                        .copied()
                        .ok_or_else(|| format!("holder {name:?} was never granted"))
                };
                let (later, earlier) = (fence(holder)?, fence(than)?);
                if later <= earlier {
                    return Err(format!(
                        "{holder:?}'s fence {later} is not larger than {than:?}'s {earlier}"
                    ));
                }
                Ok(())
            }
            Step::Advance { by } => {
                let by = parse_dur(by)?;
                self.clock.advance(by).await;
                Ok(())
            }
            Step::Extend {
                holder,
                by,
                tasks,
                expect,
                expect_error,
            } => {
                let lease = self.manual(holder)?;
                let by = by.parse();
                let want = Outcome::expected(expect, expect_error, "ok");
                let calls = (0..tasks.unwrap_or(1)).map(|_| {
                    let (lease, by) = (lease.clone(), by.as_ref().map_err(|e| e.kind()).copied());
                    tokio::spawn(async move {
                        match by {
                            Ok(by) => lease.extend(by).await,
                            Err(kind) => Err(Error::new(kind, "bad duration")),
                        }
                    })
                });
                let calls: Vec<_> = calls.collect();
                for (i, call) in calls.into_iter().enumerate() {
                    let got = call.await.map_err(|e| format!("task {i}: {e}"))?;
                    unit_outcome(&want, got).map_err(|e| format!("task {i}: {e}"))?;
                }
                self.settle().await;
                Ok(())
            }
            Step::Release {
                holder,
                tasks,
                expect,
                expect_error,
            } => {
                let lease = self.manual(holder)?;
                let want = Outcome::expected(expect, expect_error, "ok");
                let calls: Vec<_> = (0..tasks.unwrap_or(1))
                    .map(|_| {
                        let lease = lease.clone();
                        tokio::spawn(async move { lease.release().await })
                    })
                    .collect();
                for (i, call) in calls.into_iter().enumerate() {
                    let got = call.await.map_err(|e| format!("task {i}: {e}"))?;
                    unit_outcome(&want, got).map_err(|e| format!("task {i}: {e}"))?;
                }
                self.settle().await;
                Ok(())
            }
            Step::Close {} => {
                self.store.close().await;
                self.settle().await;
                Ok(())
            }
            Step::Reopen {} => {
                self.store.close().await;
                self.settle().await;
                self.store = open_store(self.spec, &self.clock);
                for (alias, (spec, lock)) in self.locks.iter_mut() {
                    *lock = spec
                        .open(&self.store)
                        .map_err(|e| format!("lock {alias:?} does not open again: {e}"))?;
                }
                Ok(())
            }
        }
    }

    /// After a call that may wait started: checks it got its key, waits, or failed as expected.
    async fn started(
        &mut self,
        holder: &str,
        expect: &Option<WaitExpect>,
        expect_error: &Option<Code>,
    ) -> Result<(), String> {
        self.settle().await;
        self.resolve(holder).await?;
        let want = Outcome::expected(expect, expect_error, "");
        let (got, detail) = self.phase_label(holder)?;
        let failed = got.starts_with("error");
        compare(&want, &Outcome(got), detail.as_ref())?;
        if failed {
            // A holder that got nothing is not registered: its name may be used again.
            self.holders.remove(holder);
        }
        Ok(())
    }

    async fn expect_phase(&mut self, holder: &str, want: &str) -> Result<(), String> {
        self.settle().await;
        self.resolve(holder).await?;
        let (got, detail) = self.phase_label(holder)?;
        compare(&Outcome(want.into()), &Outcome(got), detail.as_ref())
    }

    fn lease_of(&mut self, holder: &str) -> Result<Lease, String> {
        self.key_holder(holder)?
            .lease
            .clone()
            .ok_or_else(|| format!("{holder:?} was never granted"))
    }

    async fn expect_lost(&mut self, holder: &str, reason: Option<Reason>) -> Result<(), String> {
        self.settle().await;
        let lease = self.lease_of(holder)?;
        let got = lease.loss_reason();
        let signalled = ready_now(lease.lost_signal()).await.is_some();
        let token = lease.lost_token().is_cancelled();
        match reason {
            None if got.is_none() && !signalled && !token => Ok(()),
            None => Err(format!(
                "the lease was lost ({got:?}; signal {signalled}, token {token})"
            )),
            Some(r) => {
                let want = r.loss_reason();
                if got != Some(want) {
                    return Err(format!("expected the lease lost {want}, got {got:?}"));
                }
                if !lease.lost() || !signalled || !token {
                    return Err(format!(
                        "the loss did not reach the function: lost() {}, signal {signalled}, token {token}",
                        lease.lost()
                    ));
                }
                if lease.remaining() != Some(Duration::ZERO) {
                    return Err(format!(
                        "a lost lease has {:?} left, not zero",
                        lease.remaining()
                    ));
                }
                Ok(())
            }
        }
    }

    async fn end(
        &mut self,
        holder: &str,
        by: EndBy,
        message: &Option<String>,
        expect: &Option<EndExpect>,
        expect_error: &Option<Code>,
        expect_cause: &Option<String>,
    ) -> Result<(), String> {
        let k = self.key_holder(holder)?;
        let holding = match std::mem::replace(&mut k.phase, Phase::Ended) {
            Phase::Granted(h) => h,
            other => {
                let label = other.label();
                k.phase = other;
                return Err(format!("{holder:?} holds nothing to end: {label}"));
            }
        };
        let message = message
            .clone()
            .unwrap_or_else(|| "the held function failed".into());
        let want = Outcome::expected(expect, expect_error, "ok");
        let got: Result<(), HeldError> = match by {
            EndBy::Return => holding.finish(Ok(())).await,
            EndBy::Error => {
                holding
                    .finish(Err(HeldError::Function(FunctionError(message))))
                    .await
            }
            EndBy::Panic => {
                let task = tokio::spawn(async move {
                    let _holding = holding;
                    panic!("{PANIC_MARK}: {message}");
                });
                let got = task.await;
                self.settle().await;
                return match got {
                    Err(e) if e.is_panic() => compare(&want, &Outcome::of(&EndExpect::Panic), None),
                    other => Err(format!("the panic did not go on unwinding: {other:?}")),
                };
            }
            EndBy::Cancel => {
                let task = tokio::spawn(async move {
                    let _holding = holding;
                    std::future::pending::<()>().await
                });
                self.settle().await;
                task.abort();
                let got = task.await;
                self.settle().await;
                return match got {
                    Err(e) if e.is_cancelled() => {
                        compare(&want, &Outcome::of(&EndExpect::Cancelled), None)
                    }
                    other => Err(format!("the task was not cancelled: {other:?}")),
                };
            }
        };
        self.settle().await;
        match got {
            Ok(()) => compare(&want, &Outcome::of(&EndExpect::Ok), None),
            Err(HeldError::Function(FunctionError(m))) => {
                compare(&want, &Outcome::of(&EndExpect::FunctionError), None)
                    .map_err(|e| format!("{e} ({m})"))
            }
            Err(HeldError::Store(e)) => {
                compare(&want, &Outcome::error(e.kind()), Some(&e))?;
                let Some(cause) = expect_cause else {
                    return Ok(());
                };
                match e.cause().and_then(|c| c.downcast_ref::<HeldError>()) {
                    Some(HeldError::Function(FunctionError(m))) if m == cause => Ok(()),
                    other => Err(format!(
                        "expected the function's error {cause:?} as the cause, got {other:?}"
                    )),
                }
            }
        }
    }
}

/// Takes in a waiting call's outcome if its task finished.
async fn resolve<T>(phase: &mut Phase<T>) {
    let finished = matches!(phase, Phase::Waiting { task, .. } if task.is_finished());
    if !finished {
        return;
    }
    let Phase::Waiting { task, .. } = std::mem::replace(phase, Phase::Ended) else {
        return;
    };
    *phase = match task.await {
        Ok(Ok(granted)) => Phase::Granted(granted),
        Ok(Err(e)) => Phase::Failed(e),
        Err(e) => Phase::Failed(Error::new(
            ErrorKind::Internal,
            format!("the call's task failed: {e}"),
        )),
    };
}

fn phase_outcome<T>(phase: &Phase<T>) -> String {
    match phase {
        Phase::Waiting { .. } => Outcome::of(&WaitExpect::Waiting).0,
        Phase::Granted(_) => Outcome::of(&WaitExpect::Granted).0,
        Phase::Failed(e) => Outcome::error(e.kind()).0,
        Phase::Ended => "ended".into(),
    }
}

fn phase_error<T>(phase: &Phase<T>) -> Option<Error> {
    match phase {
        Phase::Failed(e) => Some(Error::new(e.kind(), e.message())),
        _ => None,
    }
}

fn unit_outcome(want: &Outcome, got: leasehold::Result<()>) -> Result<(), String> {
    match got {
        Ok(()) => compare(want, &Outcome("ok".into()), None),
        Err(e) => compare(want, &Outcome::error(e.kind()), Some(&e)),
    }
}
