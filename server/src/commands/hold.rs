//! `leasehold hold LOCK KEY -- CMD ARGS…`: runs CMD while holding the key,
//! like `flock`, `etcdctl lock` or `consul lock`, but fenced: CMD finds the
//! fence in `LEASEHOLD_FENCE`. When the lease is lost, CMD gets SIGTERM, and
//! SIGKILL after `--grace`.
//!
//! Exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | CMD's own | CMD ran and the lease was held throughout (128 + N when CMD died of signal N) |
//! | 70 | the lease was lost while CMD ran (CMD was stopped) |
//! | 75 | `--try`: the key is held; CMD did not run |
//! | 124 | `--wait` passed in line; CMD did not run |
//! | 125 | leasehold failed: bad option, store unreachable or refusing |
//! | 126 | CMD could not be started |
//! | 127 | CMD was not found |

use futures::future::{FutureExt, LocalBoxFuture};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use leasehold::{ErrorKind, HoldOptions, Holding, Lock, Store};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::Command;
use tokio::signal::unix::{signal, SignalKind};

use super::{parse_duration, StoreArgs};

/// The lease was lost while CMD ran.
pub const EXIT_LOST: u8 = 70;
/// `--try` and the key is held.
pub const EXIT_HELD: u8 = 75;
/// `--wait` passed in line.
pub const EXIT_WAIT_TIMEOUT: u8 = 124;
/// leasehold itself failed.
pub const EXIT_FAILED: u8 = 125;
/// CMD could not be started.
pub const EXIT_CANNOT_RUN: u8 = 126;
/// CMD was not found.
pub const EXIT_NOT_FOUND: u8 = 127;

/// The options of `leasehold hold`.
#[derive(Debug, Clone, clap::Args)]
pub struct HoldArgs {
    /// The lock's name.
    pub lock: String,
    /// The key to hold.
    pub key: String,
    /// The lease's ttl (1s to 1h); renewed every ttl/3 while CMD runs.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub ttl: Duration,
    /// Revoke the lease this long after its grant, whatever its renewals.
    #[arg(long, value_parser = parse_duration)]
    pub max_hold: Option<Duration>,
    /// The longest time to wait in line (unbounded when left out).
    #[arg(long, value_parser = parse_duration, conflicts_with = "try_only")]
    pub wait: Option<Duration>,
    /// Do not wait: when the key is held, exit 75 without running CMD.
    #[arg(long = "try")]
    pub try_only: bool,
    /// How long CMD has to stop after SIGTERM before SIGKILL.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub grace: Duration,
    /// Where the store is and how to be admitted.
    #[command(flatten)]
    pub store: StoreArgs,
    /// The command and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    pub command: Vec<String>,
}

/// Runs `leasehold hold` and answers its exit code.
/// Boxed, so that it is compiled here, once, not in the binary that
/// awaits it (docs/architecture.md, "Where the code is compiled").
pub fn run(args: HoldArgs) -> LocalBoxFuture<'static, u8> {
    run_hold(args).boxed_local()
}

async fn run_hold(args: HoldArgs) -> u8 {
    let store = match args.store.connect().await {
        Ok(store) => store,
        Err(e) => return fail(&e),
    };
    let code = hold(&store, &args).await;
    store.close().await;
    code
}

fn fail(e: &leasehold::Error) -> u8 {
    eprintln!("leasehold hold: {e}");
    EXIT_FAILED
}

fn open(store: &Store, args: &HoldArgs) -> leasehold::Result<Lock> {
    let mut builder = store.lock(&args.lock).ttl(args.ttl);
    if let Some(m) = args.max_hold {
        builder = builder.max_hold(m);
    }
    builder.open()
}

async fn hold(store: &Store, args: &HoldArgs) -> u8 {
    let lock = match open(store, args) {
        Ok(lock) => lock,
        Err(e) => return fail(&e),
    };
    let holding = if args.try_only {
        match lock.try_begin(&args.key).await {
            Ok(Some(h)) => h,
            Ok(None) => {
                eprintln!(
                    "leasehold hold: {}/{} is held; not running the command",
                    args.lock, args.key
                );
                return EXIT_HELD;
            }
            Err(e) => return fail(&e),
        }
    } else {
        let options = HoldOptions {
            wait: args.wait,
            cancel: None,
        };
        match lock.begin(&args.key, &options).await {
            Ok(h) => h,
            Err(e) if e.kind() == ErrorKind::WaitTimeout => {
                eprintln!("leasehold hold: {e}");
                return EXIT_WAIT_TIMEOUT;
            }
            Err(e) => return fail(&e),
        }
    };
    run_command(holding, args).await
}

async fn run_command(holding: Holding, args: &HoldArgs) -> u8 {
    let lease = holding.lease().clone();
    let spawned = Command::new(&args.command[0])
        .args(&args.command[1..])
        .env("LEASEHOLD_FENCE", lease.fence().to_string())
        .env("LEASEHOLD_LOCK", &args.lock)
        .env("LEASEHOLD_KEY", &args.key)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            eprintln!("leasehold hold: cannot run {:?}: {e}", args.command[0]);
            let _ = holding.end().await;
            return if e.kind() == std::io::ErrorKind::NotFound {
                EXIT_NOT_FOUND
            } else {
                EXIT_CANNOT_RUN
            };
        }
    };
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let term = || {
        if let Some(pid) = pid {
            let _ = kill(pid, Signal::SIGTERM);
        }
    };
    let (mut sigterm, mut sigint, mut sighup) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        _ => {
            term();
            let _ = holding.end().await;
            eprintln!("leasehold hold: cannot watch signals");
            return EXIT_FAILED;
        }
    };
    let lost = lease.lost_signal();
    tokio::pin!(lost);
    let mut lost_seen = false;
    let kill_at = tokio::time::sleep(Duration::MAX);
    tokio::pin!(kill_at);
    let mut kill_armed = false;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            _ = &mut lost, if !lost_seen => {
                lost_seen = true;
                let why = lease
                    .loss_reason()
                    .map_or_else(String::new, |r| format!(" ({r}: {})", r.describe()));
                eprintln!("leasehold hold: the lease was lost{why}; stopping the command");
                term();
                kill_at.as_mut().reset(tokio::time::Instant::now() + args.grace);
                kill_armed = true;
            }
            _ = &mut kill_at, if kill_armed => {
                kill_armed = false;
                let _ = child.start_kill();
            }
            _ = sigterm.recv() => term(),
            _ = sigint.recv() => term(),
            _ = sighup.recv() => term(),
        }
    };
    let ended = holding.end().await;
    if lease.lost() || ended.as_ref().is_err_and(|e| e.kind() == ErrorKind::Lost) {
        return EXIT_LOST;
    }
    match status {
        Ok(status) => exit_code(status),
        Err(e) => {
            eprintln!("leasehold hold: lost track of the command: {e}");
            EXIT_FAILED
        }
    }
}

/// CMD's exit code, or 128 + N when a signal N ended it.
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(255),
        (None, None) => 1,
    }
}
