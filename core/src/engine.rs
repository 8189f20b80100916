//! The holder engine: asking for a key and waiting in line (LOCK-17, LOCK-18),
//! keeping the holder's deadline and renewing in the background (LOCK-04,
//! LOCK-06), turning every end of a lease into one loss (LOCK-09), and letting
//! it go on every exit path (LOCK-11).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use rand::Rng;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use crate::clock::Instant;
use crate::driver::{Driver, Granted, HoldAnswer, Waiting};
use crate::error::{Error, ErrorKind, Result};
use crate::group::Group;
use crate::held::{Held, HeldState};
use crate::ids::RequestId;
use crate::lease::{Lease, LeaseState};
use crate::loss::LossReason;
use crate::renewal::{renew_loop, HolderDeadlines, Renewal, Renewed};
use crate::table::{HoldRequest, KeyName};

/// How a call waits for a key.
#[derive(Debug, Clone, Default)]
pub struct HoldOptions {
    /// The longest time to spend in line; past it the call fails
    /// `WaitTimeout` (LOCK-18). `None`: the lock's own `wait`.
    pub wait: Option<Duration>,
    /// Fires to give up waiting: the call fails `Cancelled` and leaves the line.
    pub cancel: Option<CancellationToken>,
}

/// The first and the last backoff step of polling for a key (MANUAL-02).
const POLL_FIRST: Duration = Duration::from_millis(10);
const POLL_CAP: Duration = Duration::from_millis(250);

/// A request waiting in line. Dropped unread, it gives the request up and
/// releases a grant that raced the give-up, never leaking it (LOCK-18).
struct InLine {
    driver: Arc<dyn Driver>,
    runtime: Handle,
    request_id: RequestId,
    rx: Option<Waiting>,
}

impl InLine {
    /// Leaves the line now, releasing a grant that came meanwhile.
    async fn leave(mut self) {
        if let Some(rx) = self.rx.take() {
            leave_line(self.driver.clone(), self.request_id, rx).await;
        }
    }
}

impl Drop for InLine {
    fn drop(&mut self) {
        if let Some(rx) = self.rx.take() {
            self.runtime
                .spawn(leave_line(self.driver.clone(), self.request_id, rx));
        }
    }
}

async fn leave_line(driver: Arc<dyn Driver>, request_id: RequestId, mut rx: Waiting) {
    rx.close();
    if let Ok(Ok(granted)) = rx.try_recv() {
        let _ = driver.release(granted.grant.lease_id).await;
    }
    let _ = driver.give_up(request_id).await;
}

/// What a holding needs of its store, shared by all of them: the driver,
/// and the runtime its background work runs on (one pointer a holding).
pub(crate) struct StoreLink {
    pub(crate) driver: Arc<dyn Driver>,
    pub(crate) runtime: Handle,
}

/// What [`acquire`] got: a grant and when the request that secured it was sent.
pub(crate) struct Acquired {
    pub(crate) granted: Granted,
    pub(crate) sent_at: Instant,
}

/// Asks for a key, waiting in line when `queue` (pushed grant, or polling with
/// jittered backoff on drivers that cannot push). `Ok(None)`: not held (try).
pub(crate) async fn acquire(
    driver: &Arc<dyn Driver>,
    runtime: &Handle,
    request: &HoldRequest,
    wait: Option<Duration>,
    cancel: Option<&CancellationToken>,
) -> Result<Option<Acquired>> {
    let wait = Wait::from(driver, wait);
    let (answer, sent_at) = ask(driver, runtime, request, &wait, cancel).await?;
    match answer {
        HoldAnswer::Granted(granted) => Ok(Some(Acquired { granted, sent_at })),
        HoldAnswer::NotHeld if !request.queue => Ok(None),
        // Waiting is boxed: the future of a hold had at once (most holds,
        // and every one a binding boxes to poll) stays a few hundred bytes.
        answer => {
            Box::pin(wait_in_line(
                driver,
                runtime,
                request.clone(),
                &wait,
                cancel,
                answer,
                sent_at,
            ))
            .await
        }
    }
}

/// How long a call may wait in line, from when it started.
struct Wait {
    /// The bound, as the caller gave it (for the error).
    bound: Option<Duration>,
    /// When the bound runs out, on the driver's clock.
    until: Option<Instant>,
}

impl Wait {
    fn from(driver: &Arc<dyn Driver>, bound: Option<Duration>) -> Wait {
        Wait {
            bound,
            until: bound.map(|w| driver.clock().now() + w),
        }
    }
}

/// Asks the store for the key once, withdrawing the request if the caller
/// gives up (or its wait runs out) before the answer; the answer and the
/// request's send time.
async fn ask(
    driver: &Arc<dyn Driver>,
    runtime: &Handle,
    request: &HoldRequest,
    wait: &Wait,
    cancel: Option<&CancellationToken>,
) -> Result<(HoldAnswer, Instant)> {
    if cancel.is_some_and(CancellationToken::is_cancelled) {
        return Err(cancelled());
    }
    let clock = driver.clock();
    let sent_at = clock.now();
    // The store may take the request before it answers (over a network, or
    // while reconnecting): a caller that gives up meanwhile withdraws it,
    // so that neither a place in line nor a grant is left behind.
    let until = wait.until.filter(|_| request.queue);
    let mut stop = stop_asking(cancel, clock, until);
    let answer = tokio::select! {
        biased;
        a = driver.hold(request.clone()) => a?,
        why = async {
            match &mut stop {
                Some(stop) => stop.await,
                None => std::future::pending().await,
            }
        } => {
            withdraw(driver, runtime, request.request_id);
            return Err(match why {
                Stop::Cancelled => cancelled(),
                Stop::TimedOut => wait_timeout(wait.bound),
            });
        }
    };
    Ok((answer, sent_at))
}

/// Why a caller stopped asking before the store answered.
enum Stop {
    /// Its cancel token fired.
    Cancelled,
    /// Its wait ran out.
    TimedOut,
}

/// What stops an ask before its answer: `cancel` firing, or the clock
/// reaching `until` (if the ask has one of them). Boxed, so that the future
/// of a hold with neither (most holds, and every one a binding boxes to
/// poll) keeps no room for them.
fn stop_asking<'a>(
    cancel: Option<&'a CancellationToken>,
    clock: &'a crate::clock::Clock,
    until: Option<Instant>,
) -> Option<Pin<Box<dyn Future<Output = Stop> + Send + 'a>>> {
    if cancel.is_none() && until.is_none() {
        return None;
    }
    Some(Box::pin(async move {
        tokio::select! {
            biased;
            _ = cancelled_opt(cancel) => Stop::Cancelled,
            _ = sleep_until_opt(clock, until) => Stop::TimedOut,
        }
    }))
}

/// Follows an `answer` that did not settle the hold: waits in line for a
/// pushed grant, or polls again with jittered backoff on a store that
/// cannot push, until the key is had, the wait runs out or `cancel` fires.
async fn wait_in_line(
    driver: &Arc<dyn Driver>,
    runtime: &Handle,
    request: HoldRequest,
    wait: &Wait,
    cancel: Option<&CancellationToken>,
    mut answer: HoldAnswer,
    mut sent_at: Instant,
) -> Result<Option<Acquired>> {
    let clock = driver.clock().clone();
    let (wait_until, bound) = (wait.until, wait.bound);
    let mut backoff = POLL_FIRST;
    loop {
        match answer {
            HoldAnswer::Granted(granted) => return Ok(Some(Acquired { granted, sent_at })),
            HoldAnswer::NotHeld if !request.queue => return Ok(None),
            HoldAnswer::NotHeld => {
                let jittered = rand::thread_rng().gen_range(backoff / 2..=backoff);
                let next = clock.now() + jittered;
                backoff = (backoff * 2).min(POLL_CAP);
                let timed_out = wait_until.is_some_and(|w| w <= next);
                tokio::select! {
                    biased;
                    _ = cancelled_opt(cancel) => return Err(cancelled()),
                    _ = clock.sleep_until(next), if !timed_out => {}
                    _ = clock.sleep_until(wait_until.unwrap_or(next)), if timed_out => {
                        return Err(wait_timeout(bound));
                    }
                }
                (answer, sent_at) = ask(driver, runtime, &request, wait, cancel).await?;
            }
            HoldAnswer::Queued { waiting: rx, .. } => {
                let mut line = InLine {
                    driver: driver.clone(),
                    runtime: runtime.clone(),
                    request_id: request.request_id,
                    rx: Some(rx),
                };
                let rx = line.rx.as_mut().expect("just set");
                let outcome = tokio::select! {
                    biased;
                    got = rx => Some(got),
                    _ = cancelled_opt(cancel) => None,
                    _ = sleep_until_opt(&clock, wait_until) => None,
                };
                return match outcome {
                    Some(got) => {
                        line.rx = None;
                        let granted = got.map_err(|_| {
                            Error::new(ErrorKind::Closed, "the store went away while waiting")
                        })??;
                        Ok(Some(Acquired { granted, sent_at }))
                    }
                    None => {
                        line.leave().await;
                        if cancel.is_some_and(CancellationToken::is_cancelled) {
                            Err(cancelled())
                        } else {
                            Err(wait_timeout(bound))
                        }
                    }
                };
            }
        }
    }
}

/// The holder's deadline a grant sent at `sent_at` gives (`revoke_in`: the
/// time the store said was left before the lease's maxHold): in a group,
/// the earlier of the group's deadline `by_group` and the maxHold one;
/// else the lease's own.
fn first_deadline(
    r: Renewal,
    by_group: Option<Instant>,
    sent_at: Instant,
    revoke_in: Option<Duration>,
) -> Instant {
    let Some(by_group) = by_group else {
        return HolderDeadlines::new(r, sent_at, revoke_in).holder();
    };
    r.by_max_hold(sent_at, revoke_in)
        .map_or(by_group, |m| m.min(by_group))
}

/// How many holdings [`Holding::end_all`] ends at once.
const ENDS_IN_FLIGHT: usize = 256;

/// How many steps of [`acquire_many`] are in flight at once.
const MANY_STEPS_IN_FLIGHT: usize = 2;

/// Asks for every request ([`Driver::hold_many`], a step of
/// [`Driver::hold_many_step`] keys at a time) and follows each answer as
/// [`acquire`] would, all or
/// none (LOCK-22): `start` makes each grant a holding; once any key fails,
/// or the wait runs out, or `cancel` fires, the others leave the line or are
/// withdrawn, every holding made is dropped (which releases it) and the
/// first failure is the answer.
pub(crate) async fn acquire_many<S, Fut>(
    driver: &Arc<dyn Driver>,
    runtime: &Handle,
    requests: Vec<HoldRequest>,
    wait: Option<Duration>,
    cancel: Option<&CancellationToken>,
    start: S,
) -> Result<Vec<Holding>>
where
    S: Fn(KeyName, Acquired) -> Fut,
    Fut: Future<Output = Result<Holding>>,
{
    let wait = Wait::from(driver, wait);
    let clock = driver.clock().clone();
    let stop = cancel.map_or_else(CancellationToken::new, CancellationToken::child_token);
    let mut holdings: Vec<Option<Holding>> = Vec::with_capacity(requests.len());
    let mut failed: Option<Error> = None;
    let mut in_line = FuturesUnordered::new();
    let (start, wait_ref, stop_ref, clock_ref) = (&start, &wait, &stop, &clock);
    // The holdings of a step start as soon as its answers come (their
    // deadlines counted from the step's send time, their renewal running)
    // while later steps are asked: a call that takes longer than a ttl
    // keeps the leases it took first.
    let size = driver.hold_many_step().max(1);
    let mut steps = futures::stream::iter(0..requests.len().div_ceil(size))
        .map(|i| {
            let step = &requests[i * size..((i + 1) * size).min(requests.len())];
            async move {
                let sent_at = clock_ref.now();
                (step, driver.hold_many(step).await, sent_at)
            }
        })
        .buffered(MANY_STEPS_IN_FLIGHT);
    let mut asked = 0;
    while failed.is_none() {
        // An answer that came wins over a wait that ran out meanwhile (a
        // free key is had even with a wait of zero), as in `follow`.
        let next = tokio::select! {
            biased;
            next = steps.next() => Ok(next),
            _ = cancelled_opt(cancel) => Err(cancelled()),
            _ = sleep_until_opt(&clock, wait.until) => Err(wait_timeout(wait.bound)),
        };
        let (step, answers, sent_at) = match next {
            Ok(Some(answered)) => answered,
            Ok(None) => break,
            Err(e) => {
                failed = Some(e);
                break;
            }
        };
        asked += step.len();
        for (request, answer) in step.iter().zip(answers) {
            let at = holdings.len();
            holdings.push(None);
            if let Ok(HoldAnswer::Granted(granted)) = answer {
                match start(request.name.clone(), Acquired { granted, sent_at }).await {
                    Ok(holding) => holdings[at] = Some(holding),
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
                continue;
            }
            let request = request.clone();
            in_line.push(async move {
                let name = request.name.clone();
                let followed = match answer {
                    Ok(answer) => {
                        wait_in_line(
                            driver,
                            runtime,
                            request,
                            wait_ref,
                            Some(stop_ref),
                            answer,
                            sent_at,
                        )
                        .await
                    }
                    Err(e) => Err(e),
                };
                let held = match followed {
                    Ok(Some(acquired)) => start(name, acquired).await,
                    Ok(None) => Err(Error::new(
                        ErrorKind::Internal,
                        "a waiting hold returned no lease",
                    )),
                    Err(e) => Err(e),
                };
                (at, held)
            });
        }
    }
    drop(steps);
    if failed.is_some() {
        stop.cancel();
        withdraw_all(driver, runtime, &requests[asked..]);
    }
    while let Some((at, held)) = in_line.next().await {
        match held {
            Ok(holding) => holdings[at] = Some(holding),
            Err(e) => {
                stop.cancel();
                failed.get_or_insert(e);
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(holdings.into_iter().flatten().collect()),
    }
}

/// Gives up every request of a call that no longer waits for their answers.
fn withdraw_all(driver: &Arc<dyn Driver>, runtime: &Handle, requests: &[HoldRequest]) {
    for request in requests {
        withdraw(driver, runtime, request.request_id);
    }
}

/// Gives up a request whose answer the caller no longer waits for.
fn withdraw(driver: &Arc<dyn Driver>, runtime: &Handle, request_id: RequestId) {
    let driver = driver.clone();
    runtime.spawn(async move {
        let _ = driver.give_up(request_id).await;
    });
}

/// Completes when `cancel` fires; never without one.
async fn cancelled_opt(cancel: Option<&CancellationToken>) {
    match cancel {
        Some(c) => c.cancelled().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until_opt(clock: &crate::clock::Clock, at: Option<Instant>) {
    match at {
        Some(at) => clock.sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn cancelled() -> Error {
    Error::new(ErrorKind::Cancelled, "gave up waiting for the key")
}

fn wait_timeout(wait: Option<Duration>) -> Error {
    let wait = wait.map(crate::duration::show).unwrap_or_default();
    Error::new(ErrorKind::WaitTimeout, format!("waited {wait} in line"))
}

/// A key held while a function runs. Ending it releases the lease and says
/// whether it was lost meanwhile; dropping it (a panic, a cancelled task)
/// releases it too (LOCK-11).
pub struct Holding {
    lease: Lease,
    link: Arc<StoreLink>,
    /// Stops the lease's renewal loop, where the store renews by id.
    done: Option<CancellationToken>,
    /// The renewal group that keeps the lease, where the store renews by group.
    group: Option<Arc<Group>>,
    ended: bool,
}

impl Holding {
    /// Starts holding what [`acquire`] got: keeps the lease until
    /// [`Holding::end`] or drop, renewed on stores whose leases run out (in
    /// `group` where the store renews by group and the request named it).
    pub(crate) async fn start(
        link: Arc<StoreLink>,
        name: KeyName,
        acquired: Acquired,
        renewal: Option<Renewal>,
        group: Option<Arc<Group>>,
    ) -> Result<Holding> {
        let Acquired { granted, sent_at } = acquired;
        let shared_deadline = group.as_ref().map(|g| g.deadline().clone());
        let held = HeldState::new(link.driver.clock().clone(), None, shared_deadline);
        let state = LeaseState::new(name, &granted.grant, held);
        let (revoke_at, revoke_in) = (granted.grant.revoke_at, granted.grant.revoke_in);
        let mut holding = Holding {
            lease: Lease { state },
            link,
            done: None,
            group: None,
            ended: false,
        };
        match renewal {
            Some(r) => {
                let (mut sent_at, mut revoke_in) = (sent_at, revoke_in);
                // The store counts a grant into a group as the group's renewal.
                let by_group = group.as_ref().map(|g| g.confirmed(sent_at));
                // The one wait of a start, and a rare one: boxed, so that
                // the future of a hold stays small.
                if r.renews_first(
                    Some(first_deadline(r, by_group, sent_at, revoke_in)),
                    holding.link.driver.clock().now(),
                ) {
                    (sent_at, revoke_in) = Box::pin(holding.renew_now(r)).await?;
                    if let Some(group) = &group {
                        group.confirmed(sent_at);
                    }
                }
                match group {
                    Some(group) => holding.renew_in_group(r, group, sent_at, revoke_in),
                    None => holding.renew_by_id(r, sent_at, revoke_in),
                }
            }
            None => holding.hold_without_renewal(revoke_at),
        }
        // Listened to last: a store that tells the losses of a group's
        // leases to the group tells them from now on, and the lease is in it.
        granted.lost.on_loss(holding.lease.state.clone());
        Ok(holding)
    }

    /// On a store that renews by group: joins `group`, whose task renews
    /// the lease with the others, and which [`Holding::start`] confirmed
    /// as of the grant (a renewal first, as of that renewal: a
    /// renewal of the lease by id for the group's ttl, which also answers a
    /// fresh maxHold). The holder's deadline is the earlier of the group's
    /// and the lease's own maxHold one, made after the request was sent at
    /// `sent_at` (`revoke_in`: the time it said was left before it).
    fn renew_in_group(
        &mut self,
        r: Renewal,
        group: Arc<Group>,
        sent_at: Instant,
        revoke_in: Option<Duration>,
    ) {
        let max_hold = r.by_max_hold(sent_at, revoke_in);
        let state = &self.lease.state;
        state.held.set_deadline(max_hold, LossReason::Revoked);
        self.group = Some(group.clone());
        group.join(state.clone(), max_hold);
    }

    /// On a store that renews by id: starts the lease's own renewal loop,
    /// counting from the send time `sent_at` of the request the store
    /// granted (a grant, made at once or after a wait in line, was made at
    /// some time after it, so the deadline it gives is one the store has
    /// surely not passed).
    fn renew_by_id(&mut self, r: Renewal, sent_at: Instant, revoke_in: Option<Duration>) {
        let deadlines = HolderDeadlines::new(r, sent_at, revoke_in);
        let state = self.lease.state.clone();
        state
            .held
            .set_deadline(Some(deadlines.holder()), deadlines.reason());
        let done = CancellationToken::new();
        let renewing = renew_lease_loop(
            self.link.driver.clone(),
            state,
            done.clone(),
            deadlines,
            r.ttl,
        );
        self.link
            .runtime
            .spawn(self.link.driver.clock().started(renewing));
        self.done = Some(done);
    }

    /// On a store whose leases do not run out (the embedded store): nothing
    /// renews the lease, and the holder's deadline is its maxHold, `revoke_at`
    /// as the store said it.
    fn hold_without_renewal(&self, revoke_at: Option<Instant>) {
        self.lease
            .state
            .held
            .set_deadline(revoke_at, LossReason::Revoked);
    }

    /// Renews the lease by id now, before the held work starts (as
    /// [`Renewal::renews_first`] says); returns the renewal's send time and
    /// the time it answered was left before the lease's maxHold. Fails
    /// `Lost` if the store let the lease go meanwhile.
    async fn renew_now(&self, r: Renewal) -> Result<(Instant, Option<Duration>)> {
        let sent_at = self.link.driver.clock().now();
        let grant = self
            .link
            .driver
            .renew(self.lease.state.lease_id(), Some(r.ttl))
            .await?;
        Ok((sent_at, grant.revoke_in))
    }

    /// The lease, to hand to the held function.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Releases the lease. Fails `Lost` if the lease was lost at any point
    /// while held (LOCK-10), whether or not the release itself worked.
    ///
    /// A lost lease's release never delays the end, and a release is not
    /// waited for past the holder's deadline (LOCK-21): with the store gone
    /// or cut off, `end` fails `Lost` by then, and the release left running
    /// in the background gives up on its own (the store's expiry lets the key go).
    pub async fn end(mut self) -> Result<()> {
        self.ended = true;
        self.stop_renewing();
        let id = self.lease.state.lease_id();
        if let Some(reason) = self.lease.loss_reason() {
            if self.link.driver.capabilities().renewal {
                self.release_later();
            } else {
                // A store in this process answers at once: nothing is left running.
                let _ = self.link.driver.release(id).await;
            }
            return Err(Error::lost(reason));
        }
        let clock = self.link.driver.clock().clone();
        let deadline = self.lease.state.held.deadline();
        // The holder's deadline, if it has one, bounds the release: the
        // store's own bound (a timer, on the server store) is not needed.
        let release = match deadline {
            Some(_) => self.link.driver.release_bounded_by_caller(id),
            None => self.link.driver.release(id),
        };
        let released = tokio::select! {
            r = release => Some(r),
            _ = sleep_until_opt(&clock, deadline) => None,
        };
        match released {
            None => {
                self.lease.state.held.mark_lost(LossReason::Expired);
                self.release_later();
            }
            Some(Err(e)) if e.kind() == ErrorKind::Lost => {
                self.lease
                    .state
                    .held
                    .mark_lost(e.loss_reason().unwrap_or(LossReason::Unknown));
            }
            Some(_) => {}
        }
        match self.lease.state.held.end() {
            Some(reason) => Err(Error::lost(reason)),
            None => Ok(()),
        }
    }

    /// Stops renewing the lease.
    fn stop_renewing(&self) {
        if let Some(done) = &self.done {
            done.cancel();
        }
        if let Some(group) = &self.group {
            group.leave(self.lease.state.lease_id());
        }
    }

    /// Releases the lease in the background, for an end that does not wait.
    fn release_later(&self) {
        let driver = self.link.driver.clone();
        let id = self.lease.state.lease_id();
        self.link.runtime.spawn(async move {
            let _ = driver.release(id).await;
        });
    }

    /// Ends every holding of `holdings` at once (those [`Lock::begin_many`]
    /// took, LOCK-22): each is released as [`Holding::end`] releases it (a
    /// few hundred at a time, the others renewed meanwhile), and the answer
    /// is the first failure in their order, `Lost` when any was lost while
    /// held.
    ///
    /// [`Lock::begin_many`]: crate::Lock::begin_many
    pub async fn end_all(holdings: Vec<Holding>) -> Result<()> {
        // A holding stops being renewed when its end starts: ending a few
        // hundred at a time keeps the others renewed while releases queue
        // at a slow store.
        let mut ends = futures::stream::iter(holdings)
            .map(Holding::end)
            .buffered(ENDS_IN_FLIGHT);
        let mut first = None;
        while let Some(ended) = ends.next().await {
            if let Err(e) = ended {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// [`Holding::end_all`] combined with a held function's outcome, as
    /// [`Holding::finish`] combines one holding's.
    pub async fn finish_all<T, E>(holdings: Vec<Holding>, outcome: Result<T, E>) -> Result<T, E>
    where
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        combine(Holding::end_all(holdings).await, outcome)
    }

    /// Ends the holding and combines the held function's outcome with the
    /// lease's: a lost lease fails `Lost` even if the function succeeded, with
    /// the function's own error as the cause (LOCK-10).
    pub async fn finish<T, E>(self, outcome: Result<T, E>) -> Result<T, E>
    where
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        combine(self.end().await, outcome)
    }
}

/// A held function's outcome after its holding ended as `ended`: a loss
/// wins, with the function's own error as its cause (LOCK-10).
pub(crate) fn combine<T, E>(ended: Result<()>, outcome: Result<T, E>) -> Result<T, E>
where
    E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match (ended, outcome) {
        (Ok(()), outcome) => outcome,
        (Err(lost), Ok(_)) => Err(E::from(lost)),
        (Err(lost), Err(own)) => Err(E::from(lost.with_source(own))),
    }
}

impl Held for Holding {
    type View = Lease;

    fn view(&self) -> &Lease {
        &self.lease
    }

    fn end(self) -> impl Future<Output = Result<()>> + Send {
        Holding::end(self)
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        if !self.ended {
            self.lease.state.held.end();
            self.stop_renewing();
            self.release_later();
        }
    }
}

/// The renewal loop of one lease on a store that renews by id, until its
/// holder is done or it is lost (the store's word of a loss is recorded by
/// the grant's loss callback).
async fn renew_lease_loop(
    driver: Arc<dyn Driver>,
    state: Arc<LeaseState>,
    done: CancellationToken,
    deadlines: HolderDeadlines,
    ttl: Duration,
) {
    let id = state.lease_id();
    renew_loop(&state.held, done, deadlines, || {
        let driver = driver.clone();
        async move {
            match driver.renew(id, Some(ttl)).await {
                Ok(grant) => Ok(Renewed::Kept {
                    revoke_in: grant.revoke_in,
                }),
                Err(e) if e.kind() == ErrorKind::Lost => Ok(Renewed::Gone(
                    e.loss_reason().unwrap_or(LossReason::Unknown),
                )),
                Err(e) => Err(e),
            }
        }
    })
    .await
}
