//! The driver conformance suite: what every store driver (embedded, server,
//! distributed engine) must do at the level of [`leasehold::driver::Driver`],
//! so that the holder engine above it keeps every contract.
//!
//! A [`Harness`] gives a fresh driver and a way to move its time; [`run`]
//! asks for one harness per check and runs every check, on the caller's
//! runtime, each under a real-time guard. On a [`Time::Virtual`] clock the
//! time-bound checks are exact and instant; on [`Time::Real`] they sleep real
//! time (leases of 1 s, a few seconds per check), for stores that keep their
//! own clock, such as the server store.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::Arc;
//! use leasehold::{clock::VirtualClock, Identity, MemoryDriver, MemoryOptions};
//! use spec_tests::conformance::{self, Harness, Time, IDENTITY};
//!
//! let report = conformance::run(|| async {
//!     let clock = VirtualClock::new();
//!     let options = MemoryOptions::default()
//!         .clock(clock.clone().into())
//!         .identity(Identity::new(IDENTITY).unwrap());
//!     let driver = MemoryDriver::new(options, &tokio::runtime::Handle::current());
//!     Harness { driver: Arc::new(driver), time: Time::Virtual(clock) }
//! })
//! .await;
//! report.assert_ok();
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use leasehold::clock::VirtualClock;
use leasehold::driver::{
    Driver, GiveUp, Grant, Granted, HoldAnswer, HoldRequest, KeyName, Waiting,
};
use leasehold::{ErrorKind, LeaseId, LossReason, RequestId};
use tokio::sync::oneshot::error::TryRecvError;

/// How a harness moves time.
#[derive(Debug, Clone)]
pub enum Time {
    /// The driver runs on this virtual clock: the suite advances it.
    Virtual(VirtualClock),
    /// The driver keeps real time: the suite sleeps.
    Real,
}

impl Time {
    /// Lets `d` pass.
    pub async fn pass(&self, d: Duration) {
        match self {
            Time::Virtual(clock) => clock.advance(d).await,
            Time::Real => tokio::time::sleep(d).await,
        }
    }

    /// Gives what the store pushes time to arrive, without moving a virtual clock.
    pub async fn settle(&self) {
        match self {
            Time::Virtual(_) => crate::runner::settle().await,
            Time::Real => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }

    fn is_virtual(&self) -> bool {
        matches!(self, Time::Virtual(_))
    }
}

/// The identity every harness's driver must be opened with
/// (`ConnectOptions::identity`, `MemoryOptions::identity`): the checks of
/// WHO-01 and WHO-02 look for it on the leases they take.
pub const IDENTITY: &str = "conformance holder";

/// A fresh driver to check, and its time. Its driver was opened with
/// [`IDENTITY`].
#[derive(Clone)]
pub struct Harness {
    /// The driver.
    pub driver: Arc<dyn Driver>,
    /// How its time moves.
    pub time: Time,
}

/// The longest real time one check may take.
pub const CHECK_GUARD: Duration = Duration::from_secs(30);
/// The longest real time a pushed grant or loss may take to arrive, counted
/// from what lets it come (a release, a close, or, behind a lease that ran
/// out, its holder hearing the loss): a bound on "it is pushed" (a store
/// that does not push never delivers), not on speed. It never counts from a
/// ttl: when a store lets an expired lease go is [`EXPIRY_GUARD`]'s.
pub const PUSH_GUARD: Duration = Duration::from_secs(5);
/// The longest real time a store may take, once a lease's ttl has passed,
/// to let the lease go and tell its holder: a bound on "it runs out" (a
/// store that never expires never tells), not on speed, since each store
/// expires leases on its own schedule. The slowest here is etcd 3.4
/// (`lease/lessor.go`): every 500 ms it looks for expired leases and hands
/// them to its server, which revokes each through raft (one commit, which
/// deletes the lease's keys); a lease found still there 3 s after it was
/// handed over (its revoke dropped, failed or not yet committed) is handed
/// over again (`expiredLeaseRetryInterval`). So etcd lets a lease go 0 to
/// 0.5 s past its ttl and a commit later, plus 3 s for each hand-over that
/// did not go through. 10 s covers the first hand-over and two more
/// (0.5 + 3 + 3 s) with 3.5 s left for the last one's commit: an etcd that
/// has not let the lease go by then is stuck, not slow. Two expiries and a
/// push fit in [`CHECK_GUARD`].
pub const EXPIRY_GUARD: Duration = Duration::from_secs(10);
/// The ttl of leases that must not run out during a check.
const LONG: Duration = Duration::from_secs(60);
/// The ttl of leases that a check lets run out.
const SHORT: Duration = Duration::from_secs(1);

/// What [`run`] found.
#[derive(Debug, Default)]
#[must_use = "a report fails nothing until asserted"]
pub struct Report {
    /// The checks that passed.
    pub passed: Vec<&'static str>,
    /// The checks that failed, with why.
    pub failed: Vec<(&'static str, String)>,
    /// The checks that do not apply to the driver, with why.
    pub skipped: Vec<(&'static str, &'static str)>,
}

impl Report {
    /// Panics, listing every failed check, unless all that ran passed.
    pub fn assert_ok(&self) {
        if !self.failed.is_empty() {
            panic!("{self}");
        }
        assert!(!self.passed.is_empty(), "no conformance check ran");
    }

    /// The names of the checks that were skipped.
    pub fn skipped_names(&self) -> Vec<&'static str> {
        self.skipped.iter().map(|(name, _)| *name).collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "conformance: {} passed, {} failed, {} skipped",
            self.passed.len(),
            self.failed.len(),
            self.skipped.len()
        )?;
        for (name, why) in &self.failed {
            writeln!(f, "  FAILED {name}: {why}")?;
        }
        for (name, why) in &self.skipped {
            writeln!(f, "  skipped {name}: {why}")?;
        }
        Ok(())
    }
}

/// Why a check did not pass.
enum NotPassed {
    Failed(String),
    Skipped(&'static str),
}

impl From<String> for NotPassed {
    fn from(s: String) -> NotPassed {
        NotPassed::Failed(s)
    }
}

type Checked = Result<(), NotPassed>;
type CheckFuture = Pin<Box<dyn Future<Output = Checked>>>;
type Check = fn(Harness) -> CheckFuture;

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(NotPassed::Failed(format!($($msg)+)));
        }
    };
}

mod slots;

/// Every check, by name.
fn checks() -> Vec<(&'static str, Check)> {
    vec![
        ("grant_not_held_queued", |h| {
            Box::pin(grant_not_held_queued(h))
        }),
        ("line_is_fifo", |h| Box::pin(line_is_fifo(h))),
        ("grant_is_pushed_on_release", |h| {
            Box::pin(grant_is_pushed_on_release(h))
        }),
        ("renew_by_lease_id", |h| Box::pin(renew_by_lease_id(h))),
        ("unknown_id_is_lost_and_changes_nothing", |h| {
            Box::pin(unknown_id_is_lost_and_changes_nothing(h))
        }),
        ("give_up_leaves_the_line", |h| {
            Box::pin(give_up_leaves_the_line(h))
        }),
        ("grant_that_raced_give_up_is_released", |h| {
            Box::pin(grant_that_raced_give_up_is_released(h))
        }),
        ("request_id_retry_gets_the_same_lease", |h| {
            Box::pin(request_id_retry_gets_the_same_lease(h))
        }),
        ("hold_many_answers_each_as_hold_would", |h| {
            Box::pin(hold_many_answers_each_as_hold_would(h))
        }),
        ("fences_grow", |h| Box::pin(fences_grow(h))),
        ("lease_expires_at_its_ttl", |h| {
            Box::pin(lease_expires_at_its_ttl(h))
        }),
        ("max_hold_revokes", |h| Box::pin(max_hold_revokes(h))),
        ("no_ttl_never_expires", |h| {
            Box::pin(no_ttl_never_expires(h))
        }),
        ("holders_lists_one_holder_per_key", |h| {
            Box::pin(holders_lists_one_holder_per_key(h))
        }),
        ("holder_names_identity_fence_and_line", |h| {
            Box::pin(holder_names_identity_fence_and_line(h))
        }),
        ("slot_acquire_order", |h| {
            Box::pin(slots::slot_acquire_order(h))
        }),
        ("slot_namespace_is_fixed", |h| {
            Box::pin(slots::slot_namespace_is_fixed(h))
        }),
        ("slot_changes_are_atomic_and_store_stamped", |h| {
            Box::pin(slots::slot_changes_are_atomic_and_store_stamped(h))
        }),
        ("slot_renew_keeps_the_fence", |h| {
            Box::pin(slots::slot_renew_keeps_the_fence(h))
        }),
        ("slot_release_sets_the_floor", |h| {
            Box::pin(slots::slot_release_sets_the_floor(h))
        }),
        ("slot_expiry_leaves_the_ceiling", |h| {
            Box::pin(slots::slot_expiry_leaves_the_ceiling(h))
        }),
        ("slot_fences_grow", |h| Box::pin(slots::slot_fences_grow(h))),
        ("close_ends_everything", |h| {
            Box::pin(close_ends_everything(h))
        }),
    ]
}

/// The names of every check, in the order [`run`] runs them.
pub fn check_names() -> Vec<&'static str> {
    checks().into_iter().map(|(name, _)| name).collect()
}

/// Runs every check, each on a fresh harness from `make_harness`, and closes
/// each harness's driver after its check.
pub async fn run<F, Fut>(mut make_harness: F) -> Report
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Harness>,
{
    let mut report = Report::default();
    for (name, check) in checks() {
        let harness = make_harness().await;
        let driver = harness.driver.clone();
        match tokio::time::timeout(CHECK_GUARD, check(harness)).await {
            Ok(Ok(())) => report.passed.push(name),
            Ok(Err(NotPassed::Failed(why))) => report.failed.push((name, why)),
            Ok(Err(NotPassed::Skipped(why))) => report.skipped.push((name, why)),
            Err(_) => report
                .failed
                .push((name, format!("did not finish within {CHECK_GUARD:?}"))),
        }
        driver.close().await;
    }
    report
}

/// Unique keys per harness, so that checks against a shared store never meet.
struct Keys(u128);

impl Keys {
    fn new() -> Keys {
        Keys(RequestId::random().0)
    }

    fn key(&self, k: &str) -> KeyName {
        KeyName::new("conformance", format!("{:032x}/{k}", self.0))
    }
}

fn request(name: &KeyName, ttl: Option<Duration>, queue: bool) -> HoldRequest {
    HoldRequest {
        name: name.clone(),
        request_id: RequestId::random(),
        ttl,
        max_hold: None,
        queue,
        group: None,
    }
}

fn show(a: &HoldAnswer) -> &'static str {
    match a {
        HoldAnswer::Granted(_) => "Granted",
        HoldAnswer::NotHeld => "NotHeld",
        HoldAnswer::Queued { .. } => "Queued",
    }
}

async fn hold(h: &Harness, req: &HoldRequest) -> Result<HoldAnswer, NotPassed> {
    h.driver
        .hold(req.clone())
        .await
        .map_err(|e| NotPassed::Failed(format!("hold failed: {e}")))
}

async fn granted(h: &Harness, req: &HoldRequest) -> Result<Granted, NotPassed> {
    match hold(h, req).await? {
        HoldAnswer::Granted(g) => Ok(g),
        other => Err(format!("expected Granted, got {}", show(&other)).into()),
    }
}

async fn not_held(h: &Harness, name: &KeyName) -> Checked {
    let req = request(name, Some(LONG), false);
    match hold(h, &req).await? {
        HoldAnswer::NotHeld => Ok(()),
        other => {
            if let HoldAnswer::Granted(g) = &other {
                let _ = h.driver.release(g.grant.lease_id).await;
            }
            Err(format!("expected NotHeld (the key is held), got {}", show(&other)).into())
        }
    }
}

async fn queued(h: &Harness, req: &HoldRequest) -> Result<Waiting, NotPassed> {
    match hold(h, req).await? {
        HoldAnswer::Queued { waiting, .. } => Ok(waiting),
        other => Err(format!("expected Queued, got {}", show(&other)).into()),
    }
}

fn needs_push(h: &Harness) -> Checked {
    if h.driver.capabilities().push {
        Ok(())
    } else {
        Err(NotPassed::Skipped("the driver does not push grants"))
    }
}

/// Waits (in real time, bounded) for a grant pushed to a waiter.
async fn pushed(rx: &mut Waiting) -> Result<Granted, NotPassed> {
    match tokio::time::timeout(PUSH_GUARD, rx).await {
        Ok(Ok(Ok(g))) => Ok(g),
        Ok(Ok(Err(e))) => Err(format!("the waiter got an error: {e}").into()),
        Ok(Err(_)) => Err("the waiter's channel closed without a grant"
            .to_string()
            .into()),
        Err(_) => Err(format!("no grant was pushed within {PUSH_GUARD:?}").into()),
    }
}

/// Whether a waiter has got nothing yet.
fn nothing_yet(rx: &mut Waiting, who: &str) -> Checked {
    match rx.try_recv() {
        Err(TryRecvError::Empty) => Ok(()),
        Ok(Ok(g)) => Err(format!("{who} was granted (fence {}) out of turn", g.grant.fence).into()),
        Ok(Err(e)) => Err(format!("{who} failed: {e}").into()),
        Err(TryRecvError::Closed) => Err(format!("{who}'s channel closed").into()),
    }
}

async fn release(h: &Harness, lease: LeaseId) -> Checked {
    h.driver
        .release(lease)
        .await
        .map_err(|e| NotPassed::Failed(format!("release failed: {e}")))
}

fn expect_lost_code<T: fmt::Debug>(what: &str, got: leasehold::Result<T>) -> Checked {
    match got {
        Err(e) if e.kind() == ErrorKind::Lost => Ok(()),
        other => Err(format!("{what}: expected Lost, got {other:?}").into()),
    }
}

async fn loss_of(lost: &mut leasehold::driver::LossReceiver) -> Result<LossReason, NotPassed> {
    match tokio::time::timeout(PUSH_GUARD, lost).await {
        Ok(Ok(reason)) => Ok(reason),
        Ok(Err(_)) => Err("the loss channel closed without a reason"
            .to_string()
            .into()),
        Err(_) => Err(format!("no loss was pushed within {PUSH_GUARD:?}").into()),
    }
}

/// Waits (in real time, bounded by [`EXPIRY_GUARD`]) for the loss of a
/// lease whose ttl has passed.
async fn expiry_of(lost: &mut leasehold::driver::LossReceiver) -> Result<LossReason, NotPassed> {
    match tokio::time::timeout(EXPIRY_GUARD, lost).await {
        Ok(Ok(reason)) => Ok(reason),
        Ok(Err(_)) => Err("the loss channel closed without a reason"
            .to_string()
            .into()),
        Err(_) => Err(format!(
            "no loss was pushed {EXPIRY_GUARD:?} past the lease's ttl: the store did not \
             let it go"
        )
        .into()),
    }
}

fn grant_matches(got: &Grant, want: &Grant) -> Checked {
    ensure!(
        got.lease_id == want.lease_id && got.fence == want.fence,
        "expected lease {:?} fence {}, got lease {:?} fence {}",
        want.lease_id,
        want.fence,
        got.lease_id,
        got.fence
    );
    Ok(())
}

// LOCK-01, LOCK-17, LOCK-20: a free key is granted; a held key answers NotHeld
// to a request that does not queue and Queued to one that does; another key is free.
async fn grant_not_held_queued(h: Harness) -> Checked {
    let keys = Keys::new();
    let k = keys.key("k");
    let first = granted(&h, &request(&k, Some(LONG), false)).await?;
    not_held(&h, &k).await?;
    let waiter = request(&k, Some(LONG), true);
    let answer = hold(&h, &waiter).await?;
    if h.driver.capabilities().push {
        ensure!(
            matches!(answer, HoldAnswer::Queued { .. }),
            "a queued request on a held key got {}",
            show(&answer)
        );
        let out = h.driver.give_up(waiter.request_id).await;
        ensure!(
            matches!(out, Ok(GiveUp::LeftLine)),
            "giving the waiter up: {out:?}"
        );
    } else {
        ensure!(
            matches!(answer, HoldAnswer::NotHeld),
            "a driver that cannot push answered {} to a queued request",
            show(&answer)
        );
    }
    let other = granted(&h, &request(&keys.key("other"), Some(LONG), false)).await?;
    ensure!(
        other.grant.fence > first.grant.fence,
        "fences {} then {}",
        first.grant.fence,
        other.grant.fence
    );
    release(&h, first.grant.lease_id).await?;
    release(&h, other.grant.lease_id).await?;
    let again = granted(&h, &request(&k, Some(LONG), false)).await?;
    release(&h, again.grant.lease_id).await
}

// LOCK-01: the line is first come, first served: each release grants the
// request that arrived first, and nobody behind it.
async fn line_is_fifo(h: Harness) -> Checked {
    needs_push(&h)?;
    let keys = Keys::new();
    let k = keys.key("k");
    let mut lease = granted(&h, &request(&k, Some(LONG), false)).await?.grant;
    let mut line = Vec::new();
    for _ in 0..4 {
        line.push(queued(&h, &request(&k, Some(LONG), true)).await?);
    }
    for turn in 0..line.len() {
        release(&h, lease.lease_id).await?;
        let (now, behind) = line[turn..].split_first_mut().expect("turn < len");
        let next = pushed(now).await?;
        h.time.settle().await;
        for (i, rx) in behind.iter_mut().enumerate() {
            nothing_yet(rx, &format!("waiter {}", turn + i + 1))?;
        }
        ensure!(
            next.grant.fence > lease.fence,
            "fence {} after {}",
            next.grant.fence,
            lease.fence
        );
        lease = next.grant;
    }
    release(&h, lease.lease_id).await
}

// LOCK-11: the next in line is granted at once by the store on a release:
// pushed, with no time passing.
async fn grant_is_pushed_on_release(h: Harness) -> Checked {
    needs_push(&h)?;
    let keys = Keys::new();
    let k = keys.key("k");
    let first = granted(&h, &request(&k, Some(LONG), false)).await?;
    let mut rx = queued(&h, &request(&k, Some(LONG), true)).await?;
    h.time.settle().await;
    nothing_yet(&mut rx, "the waiter")?;
    release(&h, first.grant.lease_id).await?;
    // The virtual clock does not move: only a push can deliver this grant.
    let next = pushed(&mut rx).await?;
    not_held(&h, &k).await?;
    release(&h, next.grant.lease_id).await
}

// LOCK-06, LOCK-08: renew names the lease id and sets its expiry to now + ttl,
// keeping its id and fence; the lease outlives its first ttl.
async fn renew_by_lease_id(h: Harness) -> Checked {
    let keys = Keys::new();
    let k = keys.key("k");
    let first = granted(&h, &request(&k, Some(SHORT), false)).await?.grant;
    for _ in 0..3 {
        h.time.pass(SHORT * 6 / 10).await;
        let renewed = h
            .driver
            .renew(first.lease_id, Some(SHORT))
            .await
            .map_err(|e| format!("renewing a live lease: {e}"))?;
        grant_matches(&renewed, &first)?;
        if let Time::Virtual(clock) = &h.time {
            let want = h.driver.clock().now() + SHORT;
            ensure!(
                renewed.expires_at == Some(want),
                "renewed to {:?}, not now + ttl {want:?} (clock {:?})",
                renewed.expires_at,
                clock.now()
            );
        }
    }
    // 1.8 ttl after the grant: the renewals kept it.
    not_held(&h, &k).await?;
    let own = h
        .driver
        .renew(first.lease_id, None)
        .await
        .map_err(|e| format!("renewing by the lease's own ttl: {e}"))?;
    grant_matches(&own, &first)?;
    release(&h, first.lease_id).await
}

// LOCK-08: renew and release of an unknown, released or wrong id fail Lost and
// change nothing; a fence used as an id renews and releases nothing.
async fn unknown_id_is_lost_and_changes_nothing(h: Harness) -> Checked {
    let keys = Keys::new();
    let k = keys.key("k");
    let held = granted(&h, &request(&k, Some(LONG), false)).await?.grant;
    let fence_as_id = LeaseId(u128::from(held.fence));
    for id in [LeaseId::random(), fence_as_id] {
        expect_lost_code("renew of a wrong id", h.driver.renew(id, Some(LONG)).await)?;
        expect_lost_code("release of a wrong id", h.driver.release(id).await)?;
    }
    not_held(&h, &k).await?;
    h.driver
        .renew(held.lease_id, Some(LONG))
        .await
        .map_err(|e| format!("the holder's renewal after wrong ids: {e}"))?;
    release(&h, held.lease_id).await?;
    expect_lost_code(
        "release of a released id",
        h.driver.release(held.lease_id).await,
    )?;
    expect_lost_code(
        "renew of a released id",
        h.driver.renew(held.lease_id, Some(LONG)).await,
    )?;
    let newer = granted(&h, &request(&k, Some(LONG), false)).await?.grant;
    expect_lost_code(
        "release of the older holder's id",
        h.driver.release(held.lease_id).await,
    )?;
    not_held(&h, &k).await?;
    release(&h, newer.lease_id).await
}

// LOCK-18: a request that gives up leaves the line: it is never granted, and
// the one behind it is next.
async fn give_up_leaves_the_line(h: Harness) -> Checked {
    needs_push(&h)?;
    let keys = Keys::new();
    let k = keys.key("k");
    let held = granted(&h, &request(&k, Some(LONG), false)).await?.grant;
    let quitter = request(&k, Some(LONG), true);
    let mut quitter_rx = queued(&h, &quitter).await?;
    let mut next_rx = queued(&h, &request(&k, Some(LONG), true)).await?;
    let out = h.driver.give_up(quitter.request_id).await;
    ensure!(
        matches!(out, Ok(GiveUp::LeftLine)),
        "giving up a waiting request: {out:?}"
    );
    release(&h, held.lease_id).await?;
    let next = pushed(&mut next_rx).await?;
    h.time.settle().await;
    ensure!(
        !matches!(quitter_rx.try_recv(), Ok(Ok(_))),
        "the request that gave up was granted"
    );
    let unknown = h.driver.give_up(RequestId::random()).await;
    ensure!(
        matches!(unknown, Ok(GiveUp::Unknown)),
        "giving up an unknown request: {unknown:?}"
    );
    not_held(&h, &k).await?;
    release(&h, next.grant.lease_id).await
}

// LOCK-18: a grant that raced a give-up is released at once, never leaked:
// whether the grant reached the waiter's channel or the waiter had gone.
async fn grant_that_raced_give_up_is_released(h: Harness) -> Checked {
    needs_push(&h)?;
    let keys = Keys::new();
    let k = keys.key("k");
    // The grant is pushed into the waiter's channel, then the request gives
    // up, as a waiter does whose caller stopped waiting as the grant came.
    // The check waits for the push (a fixed pause was outlasted by a loaded
    // machine: the give-up then found the request still in line).
    let held = granted(&h, &request(&k, Some(LONG), false)).await?.grant;
    let racer = request(&k, Some(LONG), true);
    let mut racer_rx = queued(&h, &racer).await?;
    release(&h, held.lease_id).await?;
    let pushed_to_racer = pushed(&mut racer_rx).await?.grant;
    let out = h
        .driver
        .give_up(racer.request_id)
        .await
        .map_err(|e| format!("give_up: {e}"))?;
    let raced = match out {
        GiveUp::Released(id) if id == pushed_to_racer.lease_id => Some(id),
        GiveUp::Released(id) => {
            return Err(format!(
                "giving up released lease {id:?}, not the one pushed ({:?})",
                pushed_to_racer.lease_id
            )
            .into())
        }
        GiveUp::Unknown => None,
        GiveUp::LeftLine => {
            return Err("the request was still in line after its grant was pushed"
                .to_string()
                .into())
        }
    };
    let after = granted(&h, &request(&k, Some(LONG), false))
        .await
        .map_err(|_| "the grant that raced the give-up was leaked".to_string())?;
    if let Some(id) = raced {
        expect_lost_code("renew of the raced grant", h.driver.renew(id, None).await)?;
    }
    // The waiter's channel is gone before the grant: the store lets the grant go.
    // On the virtual clock the release's grant is made once the runtime
    // settles, so the give-up must find it made. On a real clock nothing
    // tells the check when the store granted a waiter whose channel is
    // gone: a give-up that comes first finds the request in line and takes
    // it out (LeftLine). Either way the key must then be free (`last`).
    let gone = request(&k, Some(LONG), true);
    drop(queued(&h, &gone).await?);
    release(&h, after.grant.lease_id).await?;
    h.time.settle().await;
    let out = h.driver.give_up(gone.request_id).await;
    ensure!(
        matches!(out, Ok(GiveUp::Released(_) | GiveUp::Unknown))
            || (!h.time.is_virtual() && matches!(out, Ok(GiveUp::LeftLine))),
        "giving up a request granted after its channel went: {out:?}"
    );
    let last = granted(&h, &request(&k, Some(LONG), false))
        .await
        .map_err(|_| "a grant to a waiter that had gone was leaked".to_string())?;
    release(&h, last.grant.lease_id).await
}

// LOCK-03: a request asked again with the same request id gets the lease it
// already got (same id, same fence), or keeps its place in line.
/// More keys than one `HoldMany` frame of the server store carries.
const MANY: usize = 600;

// LOCK-22: many requests at once are answered each as a hold of its own
// would be, in the order asked: mixed terms, held keys, a line, a retry by
// request id, and more keys than one frame carries.
async fn hold_many_answers_each_as_hold_would(h: Harness) -> Checked {
    let keys = Keys::new();
    let (free, taken, line) = (keys.key("free"), keys.key("taken"), keys.key("line"));
    let holder = granted(&h, &request(&taken, Some(LONG), false))
        .await?
        .grant;
    let asked = vec![
        request(&free, Some(LONG), false),
        request(&taken, Some(LONG), false),
        request(&line, Some(LONG), true),
        request(&taken, Some(LONG), true),
    ];
    let mut answers = h.driver.hold_many(&asked).await.into_iter();
    let mut next = || match answers.next() {
        Some(Ok(answer)) => Ok(answer),
        Some(Err(e)) => Err(NotPassed::Failed(format!("hold_many failed: {e}"))),
        None => Err(NotPassed::Failed("hold_many answered too few".into())),
    };
    let HoldAnswer::Granted(first) = next()? else {
        return Err("a free key was not granted".to_string().into());
    };
    ensure!(
        matches!(next()?, HoldAnswer::NotHeld),
        "a held key asked without waiting was not NotHeld"
    );
    let HoldAnswer::Granted(third) = next()? else {
        return Err("a free key asked with waiting was not granted"
            .to_string()
            .into());
    };
    let waiter = next()?;
    ensure!(
        answers.next().is_none(),
        "hold_many answered more than it was asked"
    );
    let again = h.driver.hold_many(&asked[..1]).await;
    match again.as_slice() {
        [Ok(HoldAnswer::Granted(g))] => grant_matches(&g.grant, &first.grant)?,
        other => return Err(format!("a retried request: {} answers", other.len()).into()),
    }
    release(&h, holder.lease_id).await?;
    match waiter {
        HoldAnswer::Queued {
            waiting: mut rx, ..
        } => {
            let pushed = pushed(&mut rx).await?;
            ensure!(
                pushed.grant.fence > holder.fence,
                "the waiter's fence {} is not above its predecessor's {}",
                pushed.grant.fence,
                holder.fence
            );
            release(&h, pushed.grant.lease_id).await?;
        }
        HoldAnswer::NotHeld => ensure!(
            !h.driver.capabilities().push,
            "a store that pushes grants answered NotHeld to a waiting request"
        ),
        HoldAnswer::Granted(g) => {
            let _ = release(&h, g.grant.lease_id).await;
            return Err("a held key was granted".to_string().into());
        }
    }
    release(&h, first.grant.lease_id).await?;
    release(&h, third.grant.lease_id).await?;
    let names: Vec<KeyName> = (0..MANY).map(|i| keys.key(&format!("many-{i}"))).collect();
    let many: Vec<HoldRequest> = names.iter().map(|k| request(k, Some(LONG), true)).collect();
    let mut leases = Vec::with_capacity(MANY);
    for (i, answer) in h.driver.hold_many(&many).await.into_iter().enumerate() {
        match answer {
            Ok(HoldAnswer::Granted(g)) => {
                ensure!(
                    g.grant.request_id == many[i].request_id,
                    "answer {i} is another request's"
                );
                leases.push(g.grant.lease_id);
            }
            Ok(other) => return Err(format!("free key {i}: {}", show(&other)).into()),
            Err(e) => return Err(format!("free key {i}: {e}").into()),
        }
    }
    let distinct: std::collections::HashSet<LeaseId> = leases.iter().copied().collect();
    ensure!(distinct.len() == MANY, "{MANY} grants shared lease ids");
    not_held(&h, &names[MANY - 1]).await?;
    for lease in leases {
        release(&h, lease).await?;
    }
    Ok(())
}

async fn request_id_retry_gets_the_same_lease(h: Harness) -> Checked {
    let keys = Keys::new();
    let k = keys.key("k");
    let req = request(&k, Some(LONG), true);
    let first = granted(&h, &req).await?.grant;
    let again = granted(&h, &req).await?.grant;
    grant_matches(&again, &first)?;
    not_held(&h, &k).await?;
    if !h.driver.capabilities().push {
        return release(&h, first.lease_id).await;
    }
    let waiter = request(&k, Some(LONG), true);
    let mut first_rx = queued(&h, &waiter).await?;
    let mut retry_rx = queued(&h, &waiter).await?;
    let mut behind = queued(&h, &request(&k, Some(LONG), true)).await?;
    release(&h, first.lease_id).await?;
    // The grant may come on either answer's channel, but only once; on a
    // real clock it is waited for as `pushed` waits (a fixed pause was
    // outlasted by a loaded machine).
    let until = std::time::Instant::now() + PUSH_GUARD;
    let got = loop {
        h.time.settle().await;
        match (first_rx.try_recv(), retry_rx.try_recv()) {
            (Ok(Ok(g)), Err(_)) | (Err(_), Ok(Ok(g))) => break g.grant,
            (Ok(Ok(_)), Ok(Ok(_))) => {
                return Err("one request was granted twice".to_string().into())
            }
            (Err(TryRecvError::Empty), Err(_)) | (Err(_), Err(TryRecvError::Empty))
                if !h.time.is_virtual() && std::time::Instant::now() < until => {}
            (a, b) => {
                return Err(format!("the retried request was not granted: {a:?} / {b:?}").into())
            }
        }
    };
    nothing_yet(&mut behind, "the request behind the retried one")?;
    let retried = granted(&h, &waiter).await?.grant;
    grant_matches(&retried, &got)?;
    release(&h, got.lease_id).await?;
    let last = pushed(&mut behind).await?;
    release(&h, last.grant.lease_id).await
}

// LOCK-02: every fence is larger than every fence granted before: on other
// keys, on the same key again, and on grants pushed to a waiter.
async fn fences_grow(h: Harness) -> Checked {
    let keys = Keys::new();
    let mut fences = Vec::new();
    for i in 0..3 {
        let g = granted(&h, &request(&keys.key(&format!("k{i}")), Some(LONG), false)).await?;
        fences.push(g.grant.fence);
        release(&h, g.grant.lease_id).await?;
    }
    let k = keys.key("k0");
    let g = granted(&h, &request(&k, Some(LONG), false)).await?;
    fences.push(g.grant.fence);
    if h.driver.capabilities().push {
        let mut rx = queued(&h, &request(&k, Some(LONG), true)).await?;
        release(&h, g.grant.lease_id).await?;
        let next = pushed(&mut rx).await?;
        fences.push(next.grant.fence);
        release(&h, next.grant.lease_id).await?;
    } else {
        release(&h, g.grant.lease_id).await?;
    }
    ensure!(
        fences.windows(2).all(|w| w[1] > w[0]),
        "fences do not grow: {fences:?}"
    );
    Ok(())
}

// LOCK-05, LOCK-16 (and MANUAL-03's expiry): a lease given a ttl ends at it
// unless renewed; its holder hears `Expired`; it is never renewed afterwards,
// even when nobody took the key; the next grant has a larger fence; and a
// waiter behind a lease is not granted while that lease lasts, and is
// granted once the store lets it go. When the store lets a lease go is its
// own schedule ([`EXPIRY_GUARD`]); the waiter's grant is pushed within
// [`PUSH_GUARD`] of the holder hearing the loss, not of the ttl.
async fn lease_expires_at_its_ttl(h: Harness) -> Checked {
    let keys = Keys::new();
    let k = keys.key("k");
    let mut first = granted(&h, &request(&k, Some(SHORT), false)).await?;
    h.time.pass(SHORT * 6 / 10).await;
    not_held(&h, &k).await?;
    h.time.pass(SHORT * 6 / 10).await;
    let reason = expiry_of(&mut first.lost).await?;
    ensure!(
        reason == LossReason::Expired,
        "an expired lease was lost {reason}"
    );
    expect_lost_code(
        "renew after the expiry",
        h.driver.renew(first.grant.lease_id, Some(LONG)).await,
    )?;
    let clock = h.driver.clock().clone();
    let asked = clock.now();
    let mut second = granted(&h, &request(&k, Some(SHORT), false)).await?;
    ensure!(
        second.grant.fence > first.grant.fence,
        "fence {} after {}",
        second.grant.fence,
        first.grant.fence
    );
    if !h.driver.capabilities().push {
        return Ok(());
    }
    let mut rx = queued(&h, &request(&k, Some(LONG), true)).await?;
    h.time.pass(SHORT * 6 / 10).await;
    // No store lets the lease go before its ttl has passed since it was
    // asked for: a grant seen before then came while the lease lasted. One
    // seen later (a check held up on a loaded machine) may be on time.
    let early = match rx.try_recv() {
        Err(TryRecvError::Empty) => None,
        Ok(Ok(g)) if clock.now().saturating_since(asked) >= SHORT => Some(g),
        Ok(Ok(g)) => {
            return Err(format!(
                "the waiter was granted (fence {}) while the lease before it lasted",
                g.grant.fence
            )
            .into())
        }
        Ok(Err(e)) => return Err(format!("the waiter failed: {e}").into()),
        Err(TryRecvError::Closed) => return Err("the waiter's channel closed".to_string().into()),
    };
    h.time.pass(SHORT * 6 / 10).await;
    let reason = expiry_of(&mut second.lost).await?;
    let lost_after = clock.now().saturating_since(asked);
    ensure!(
        reason == LossReason::Expired,
        "an expired lease was lost {reason}"
    );
    let third = match early {
        Some(g) => g,
        None => pushed(&mut rx).await.map_err(|e| match e {
            NotPassed::Failed(why) => NotPassed::Failed(format!(
                "the waiter, once the lease before it was let go (its holder heard \
                 the loss {lost_after:?} after asking for it, ttl {SHORT:?}): {why}"
            )),
            skipped => skipped,
        })?,
    };
    if !h.time.is_virtual() {
        println!(
            "lease_expires_at_its_ttl: a lease of {SHORT:?} let go {lost_after:?} after it was \
             asked for, the waiter behind it granted {:?} after",
            clock.now().saturating_since(asked)
        );
    }
    ensure!(
        third.grant.fence > second.grant.fence,
        "fence {} after {}",
        third.grant.fence,
        second.grant.fence
    );
    release(&h, third.grant.lease_id).await
}

// LOCK-12: the store revokes a lease at grant + maxHold whatever its renewals,
// says so (`Revoked`), and tells the holder how long is left in each answer.
async fn max_hold_revokes(h: Harness) -> Checked {
    let keys = Keys::new();
    let k = keys.key("k");
    let max_hold = SHORT * 2;
    let req = HoldRequest {
        max_hold: Some(max_hold),
        ..request(&k, Some(SHORT), false)
    };
    let mut first = granted(&h, &req).await?;
    let left = first.grant.revoke_in;
    ensure!(
        left.is_some_and(|l| l <= max_hold && l > max_hold / 2),
        "revoke_in {left:?} at the grant of maxHold {max_hold:?}"
    );
    if h.time.is_virtual() {
        ensure!(left == Some(max_hold), "revoke_in {left:?} at the grant");
    }
    for _ in 0..2 {
        h.time.pass(SHORT * 6 / 10).await;
        let renewed = h
            .driver
            .renew(first.grant.lease_id, Some(SHORT))
            .await
            .map_err(|e| format!("renewal before maxHold: {e}"))?;
        ensure!(
            renewed.revoke_in.is_some_and(|l| l < max_hold),
            "revoke_in {:?} after a renewal",
            renewed.revoke_in
        );
    }
    // 2.1 ttl after the grant: past maxHold, before the last renewal's expiry.
    h.time.pass(SHORT * 9 / 10).await;
    let reason = loss_of(&mut first.lost).await?;
    ensure!(reason == LossReason::Revoked, "lost {reason}, not revoked");
    expect_lost_code(
        "renew after maxHold",
        h.driver.renew(first.grant.lease_id, Some(SHORT)).await,
    )?;
    let next = granted(&h, &request(&k, Some(LONG), false)).await?;
    release(&h, next.grant.lease_id).await
}

// LOCK-19: on a store whose holders live in its process (no renewal), a lease
// asked without a ttl never runs out.
async fn no_ttl_never_expires(h: Harness) -> Checked {
    if h.driver.capabilities().renewal {
        return Err(NotPassed::Skipped(
            "a renewal-capable store's leases always have a ttl",
        ));
    }
    let keys = Keys::new();
    let k = keys.key("k");
    let first = granted(&h, &request(&k, None, false)).await?;
    ensure!(
        first.grant.expires_at.is_none(),
        "a lease without ttl expires at {:?}",
        first.grant.expires_at
    );
    let long = if h.time.is_virtual() {
        Duration::from_secs(7200)
    } else {
        SHORT * 2
    };
    h.time.pass(long).await;
    not_held(&h, &k).await?;
    h.driver
        .renew(first.grant.lease_id, None)
        .await
        .map_err(|e| format!("the lease is gone: {e}"))?;
    release(&h, first.grant.lease_id).await
}

// LOCK-01: the store's listing shows each held key once, with its holder's
// fence, and forgets a key once it is released.
async fn holders_lists_one_holder_per_key(h: Harness) -> Checked {
    let keys = Keys::new();
    let (k1, k2) = (keys.key("k1"), keys.key("k2"));
    let a = granted(&h, &request(&k1, Some(LONG), false)).await?.grant;
    let b = granted(&h, &request(&k2, Some(LONG), false)).await?.grant;
    let mine = |list: Vec<leasehold::driver::HolderInfo>| -> Vec<(String, u64)> {
        list.into_iter()
            .filter(|i| i.lock == *k1.lock && (i.key == *k1.key || i.key == *k2.key))
            .map(|i| (i.key, i.fence))
            .collect()
    };
    let listed = h
        .driver
        .holders(Some(&k1.lock))
        .await
        .map_err(|e| format!("holders: {e}"))?;
    let want = vec![(k1.key.to_string(), a.fence), (k2.key.to_string(), b.fence)];
    ensure!(mine(listed) == want, "the listing is not {want:?}");
    release(&h, a.lease_id).await?;
    let listed = h
        .driver
        .holders(None)
        .await
        .map_err(|e| format!("holders: {e}"))?;
    let want = vec![(k2.key.to_string(), b.fence)];
    ensure!(
        mine(listed) == want,
        "after a release the listing is not {want:?}"
    );
    release(&h, b.lease_id).await
}

/// `holder` of `name`, failing the check when the store fails.
async fn holder_of(
    h: &Harness,
    name: &KeyName,
) -> Result<Option<leasehold::driver::HolderInfo>, NotPassed> {
    h.driver
        .holder(name)
        .await
        .map_err(|e| NotPassed::Failed(format!("holder: {e}")))
}

// WHO-01, WHO-02: a lease records the identity its driver was opened with;
// `holder` answers a free key with none, and a held one with that identity,
// its fence and how many wait (after a waiter joins and after it leaves);
// the listing shows the same identity.
async fn holder_names_identity_fence_and_line(h: Harness) -> Checked {
    let keys = Keys::new();
    let k = keys.key("k");
    let free = holder_of(&h, &k).await?;
    ensure!(free.is_none(), "a key nobody held has a holder: {free:?}");
    let a = granted(&h, &request(&k, Some(LONG), false)).await?.grant;
    let Some(info) = holder_of(&h, &k).await? else {
        return Err("a held key has no holder".to_string().into());
    };
    ensure!(
        (
            info.lock.as_str(),
            info.key.as_str(),
            info.fence,
            info.identity.as_str()
        ) == (&*k.lock, &*k.key, a.fence, IDENTITY),
        "the holder is {info:?}, not the lease of fence {} taken as {IDENTITY:?}",
        a.fence
    );
    ensure!(info.waiting == 0, "nobody waits, yet {info:?}");
    ensure!(
        info.expires_in.is_none_or(|left| left <= LONG),
        "the store keeps the lease longer than its ttl: {info:?}"
    );
    let listed = h
        .driver
        .holders(Some(&k.lock))
        .await
        .map_err(|e| format!("holders: {e}"))?;
    ensure!(
        listed
            .iter()
            .any(|l| l.key == *k.key && l.identity == IDENTITY && l.fence == a.fence),
        "the listing does not show the holder as {IDENTITY:?}: {listed:?}"
    );
    if h.driver.capabilities().push {
        let waiter = request(&k, Some(LONG), true);
        let _rx = queued(&h, &waiter).await?;
        let info = holder_of(&h, &k).await?;
        ensure!(
            info.as_ref()
                .is_some_and(|i| i.waiting == 1 && i.fence == a.fence),
            "with one waiter the holder is {info:?}"
        );
        let out = h.driver.give_up(waiter.request_id).await;
        ensure!(
            matches!(out, Ok(GiveUp::LeftLine)),
            "giving up the waiter: {out:?}"
        );
        let info = holder_of(&h, &k).await?;
        ensure!(
            info.as_ref().is_some_and(|i| i.waiting == 0),
            "after the waiter left the holder is {info:?}"
        );
    }
    release(&h, a.lease_id).await?;
    let after = holder_of(&h, &k).await?;
    ensure!(after.is_none(), "a released key has a holder: {after:?}");
    Ok(())
}

// LOCK-19 (the store ends its leases when it closes), ERR-01: close ends every
// lease (`Closed`), fails every waiter, and every later call fails `Closed`.
async fn close_ends_everything(h: Harness) -> Checked {
    let keys = Keys::new();
    let k = keys.key("k");
    let mut held = granted(&h, &request(&k, Some(LONG), false)).await?;
    let waiter = if h.driver.capabilities().push {
        Some(queued(&h, &request(&k, Some(LONG), true)).await?)
    } else {
        None
    };
    h.driver.close().await;
    let reason = loss_of(&mut held.lost).await?;
    ensure!(reason == LossReason::Closed, "lost {reason}, not closed");
    if let Some(mut rx) = waiter {
        match tokio::time::timeout(PUSH_GUARD, &mut rx).await {
            Ok(Ok(Err(e))) if e.kind() == ErrorKind::Closed => {}
            Ok(Ok(Ok(_))) => {
                return Err("a waiter was granted by a closed store".to_string().into())
            }
            other => return Err(format!("the waiter heard {other:?}, not Closed").into()),
        }
    }
    let after = h.driver.hold(request(&k, Some(LONG), false)).await;
    ensure!(
        matches!(&after, Err(e) if e.kind() == ErrorKind::Closed),
        "hold after close: {:?}",
        after.map(|a| show(&a))
    );
    let renew = h.driver.renew(held.grant.lease_id, None).await;
    ensure!(
        matches!(&renew, Err(e) if e.kind() == ErrorKind::Closed),
        "renew after close: {renew:?}"
    );
    Ok(())
}
