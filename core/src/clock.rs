//! Time for the lease table and the holder engine: a real monotonic clock, or a
//! virtual one that tests move by hand, so that time-bound contracts are tested
//! deterministically and without sleeping.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::ops::{Add, Sub};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// A point in time on a [`Clock`]: the time since the clock's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(Duration);

impl Instant {
    /// The instant `d` after the clock's origin.
    pub fn from_origin(d: Duration) -> Instant {
        Instant(d)
    }

    /// The time since the clock's origin.
    pub fn since_origin(self) -> Duration {
        self.0
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d))
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d))
    }
}

/// The time of day at a virtual clock's origin: 2024-01-01T00:00:00Z, in
/// milliseconds since the Unix epoch.
pub const VIRTUAL_UNIX_ORIGIN_MS: u64 = 1_704_067_200_000;

/// Where time comes from. Cloning shares the clock.
///
/// ```
/// use std::time::Duration;
/// use leasehold::clock::{Clock, VirtualClock};
/// let virt = VirtualClock::new();
/// let clock = Clock::from(virt.clone());
/// let start = clock.now();
/// virt.jump(Duration::from_secs(5));
/// assert_eq!(clock.now().saturating_since(start), Duration::from_secs(5));
/// ```
#[derive(Clone, Debug)]
pub enum Clock {
    /// The process's monotonic clock.
    Monotonic,
    /// A clock that moves only when a test moves it.
    Virtual(VirtualClock),
}

fn process_origin() -> std::time::Instant {
    static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
    *ORIGIN.get_or_init(std::time::Instant::now)
}

impl Clock {
    /// The process's monotonic clock (the default everywhere but in tests).
    pub fn monotonic() -> Clock {
        Clock::Monotonic
    }

    /// The current instant.
    pub fn now(&self) -> Instant {
        match self {
            Clock::Monotonic => Instant(process_origin().elapsed()),
            Clock::Virtual(v) => v.now(),
        }
    }

    /// The time of day in milliseconds since the Unix epoch, as slot leases
    /// stamp it (SLOT-03). A virtual clock's day starts at
    /// [`VIRTUAL_UNIX_ORIGIN_MS`], moves with the clock and is off by its
    /// wall offset ([`VirtualClock::set_wall_offset`]).
    pub fn unix_millis(&self) -> u64 {
        match self {
            Clock::Monotonic => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            Clock::Virtual(v) => v.unix_millis(),
        }
    }

    /// Waits until the clock reaches `deadline`.
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        match self {
            Clock::Monotonic => Sleep::Real(Box::pin(tokio::time::sleep_until(
                tokio::time::Instant::from_std(process_origin() + deadline.0),
            ))),
            Clock::Virtual(v) => Sleep::Virtual(VirtualSleep {
                clock: v.clone(),
                deadline,
                id: None,
                claims: false,
            }),
        }
    }

    /// Waits until the clock reaches `deadline`, then counts the work that
    /// follows as busy until the [`Busy`] it answers is dropped. A virtual
    /// clock's [`VirtualClock::advance_blocking`] takes no step while such
    /// work runs, so a renewal due at `deadline` is confirmed before the
    /// clock reaches the deadline it moves, however the test's thread and
    /// the runtime's threads are scheduled. On the monotonic clock it is
    /// [`Clock::sleep_until`].
    pub fn work_at(&self, deadline: Instant) -> WorkAt {
        let mut sleep = self.sleep_until(deadline);
        if let Sleep::Virtual(v) = &mut sleep {
            v.claims = true;
        }
        WorkAt { sleep }
    }

    /// `task`, such that a virtual clock takes no step from now until its
    /// first poll is over (at most [`WOKEN_GUARD`] of real time): a task
    /// spawned with it has set its first timers before the clock passes
    /// them, however late the runtime first polls it. On the monotonic
    /// clock, `task` as it is.
    pub fn started<F: Future>(&self, task: F) -> impl Future<Output = F::Output> {
        let mut busy = self.as_virtual().map(VirtualClock::busy);
        async move {
            let mut task = std::pin::pin!(task);
            std::future::poll_fn(|cx| {
                let polled = task.as_mut().poll(cx);
                busy.take();
                polled
            })
            .await
        }
    }

    /// The virtual clock behind this one, if it is virtual.
    pub fn as_virtual(&self) -> Option<&VirtualClock> {
        match self {
            Clock::Virtual(v) => Some(v),
            Clock::Monotonic => None,
        }
    }
}

impl From<VirtualClock> for Clock {
    fn from(v: VirtualClock) -> Clock {
        Clock::Virtual(v)
    }
}

/// The future of [`Clock::work_at`].
pub struct WorkAt {
    sleep: Sleep,
}

impl Future for WorkAt {
    type Output = Busy;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Busy> {
        let clock = match &self.sleep {
            Sleep::Real(_) => None,
            Sleep::Virtual(v) => Some(v.clock.clone()),
        };
        Pin::new(&mut self.sleep).poll(cx).map(|()| Busy { clock })
    }
}

/// Work that a virtual clock's next step waits for, until dropped
/// ([`Clock::work_at`], [`Clock::started`]).
#[must_use = "the work counts as busy only while its Busy is held"]
pub struct Busy {
    clock: Option<VirtualClock>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(clock) = &self.clock {
            let mut st = clock.state();
            st.busy = st.busy.saturating_sub(1);
        }
    }
}

/// The future of [`Clock::sleep_until`].
pub enum Sleep {
    /// On the monotonic clock, a tokio timer.
    Real(Pin<Box<tokio::time::Sleep>>),
    /// On a virtual clock, woken when a test moves the clock past the deadline.
    Virtual(VirtualSleep),
}

impl Future for Sleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.get_mut() {
            Sleep::Real(s) => s.as_mut().poll(cx),
            Sleep::Virtual(s) => Pin::new(s).poll(cx),
        }
    }
}

#[derive(Debug, Default)]
struct VirtualState {
    now: Duration,
    next_id: u64,
    sleepers: BTreeMap<(Duration, u64), Waker>,
    /// Sleeps woken whose task has not polled them since (or dropped them).
    woken: HashSet<u64>,
    /// Work that steps wait for: begun at a deadline the clock reached
    /// ([`Clock::work_at`]), or tasks not yet polled ([`Clock::started`]).
    busy: usize,
    /// How far the clock's time of day is off, in milliseconds (skew).
    wall_offset_ms: i64,
}

/// A clock that stands still until [`VirtualClock::advance`] or
/// [`VirtualClock::jump`] moves it. Cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct VirtualClock {
    state: Arc<Mutex<VirtualState>>,
}

impl VirtualClock {
    /// A virtual clock at its origin.
    pub fn new() -> VirtualClock {
        VirtualClock::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, VirtualState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current instant.
    pub fn now(&self) -> Instant {
        Instant(self.state().now)
    }

    /// The time of day: [`VIRTUAL_UNIX_ORIGIN_MS`] plus the time since the
    /// origin plus the wall offset, in milliseconds since the Unix epoch.
    pub fn unix_millis(&self) -> u64 {
        let st = self.state();
        let since = u64::try_from(st.now.as_millis()).unwrap_or(u64::MAX);
        let day = VIRTUAL_UNIX_ORIGIN_MS.saturating_add(since);
        day.saturating_add_signed(st.wall_offset_ms)
    }

    /// Sets how far the time of day is off (a skewed wall clock, or one
    /// stepped back or forward), in milliseconds; the instants do not move.
    pub fn set_wall_offset(&self, offset_ms: i64) {
        self.state().wall_offset_ms = offset_ms;
    }

    /// Moves the clock by `by` at once and wakes every sleeper whose deadline passed.
    pub fn jump(&self, by: Duration) {
        let wakers = {
            let mut st = self.state();
            st.now += by;
            take_due(&mut st)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Moves the clock by `by` one sleeper's deadline at a time, letting the
    /// woken tasks run (on the current runtime) before moving on, so timers
    /// fire in the order of their deadlines, as they would in real time.
    pub async fn advance(&self, by: Duration) {
        settle().await;
        let target = self.state().now + by;
        loop {
            let done = self.step_towards(target);
            settle().await;
            if done {
                return;
            }
        }
    }

    /// [`VirtualClock::advance`] for callers outside async code (the
    /// bindings' test hooks): moves one sleeper's deadline at a time and,
    /// after each step, waits until every task the step woke has polled its
    /// sleep and the busy work ([`Clock::work_at`], [`Clock::started`]) is done (at most
    /// [`WOKEN_GUARD`] of real time), then pauses `pause` more for other work
    /// those polls started, so that tasks on any runtime thread run what the
    /// step woke before the clock moves on, even on a loaded machine.
    pub fn advance_blocking(&self, by: Duration, pause: Duration) {
        self.settle_blocking(pause);
        let target = self.state().now + by;
        loop {
            let done = self.step_towards(target);
            self.settle_blocking(pause);
            if done {
                return;
            }
        }
    }

    /// Waits until [`VirtualClock::settled`] (at most [`WOKEN_GUARD`]),
    /// then `pause` more.
    fn settle_blocking(&self, pause: Duration) {
        let since = std::time::Instant::now();
        while !self.settled() && since.elapsed() < WOKEN_GUARD {
            std::thread::sleep(Duration::from_micros(50));
        }
        std::thread::sleep(pause);
    }

    /// Counts work as busy until the answer is dropped.
    fn busy(&self) -> Busy {
        self.state().busy += 1;
        Busy {
            clock: Some(self.clone()),
        }
    }

    /// Whether every sleep a step woke was polled and no busy work
    /// ([`Clock::work_at`], [`Clock::started`]) still runs.
    fn settled(&self) -> bool {
        let st = self.state();
        st.woken.is_empty() && st.busy == 0
    }

    /// Moves the clock to the earliest sleeper's deadline if it comes before
    /// `target`, else to `target`, and wakes the sleepers due; `true` once
    /// the clock is at `target`.
    fn step_towards(&self, target: Duration) -> bool {
        let (wakers, done) = {
            let mut st = self.state();
            match st.sleepers.keys().next().map(|(d, _)| *d) {
                Some(d) if d <= target => {
                    st.now = st.now.max(d);
                    (take_due(&mut st), false)
                }
                _ => {
                    st.now = target;
                    (take_due(&mut st), true)
                }
            }
        };
        wakers.into_iter().for_each(Waker::wake);
        done
    }
}

fn take_due(st: &mut VirtualState) -> Vec<Waker> {
    let later = st.sleepers.split_off(&(st.now, u64::MAX));
    let due = std::mem::replace(&mut st.sleepers, later);
    st.woken.extend(due.keys().map(|(_, id)| *id));
    due.into_values().collect()
}

/// The longest real time [`VirtualClock::advance_blocking`] waits for the
/// tasks a step woke to poll their sleeps and finish their busy work.
pub const WOKEN_GUARD: Duration = Duration::from_secs(2);

/// Lets the tasks that a step woke run before the clock moves on.
async fn settle() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}

/// The future of a sleep on a [`VirtualClock`].
pub struct VirtualSleep {
    clock: VirtualClock,
    deadline: Instant,
    id: Option<u64>,
    /// Counts as busy once ready ([`Clock::work_at`]).
    claims: bool,
}

impl Future for VirtualSleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let clock = self.clock.clone();
        let mut st = clock.state();
        if st.now >= self.deadline.0 {
            if let Some(id) = self.id.take() {
                st.sleepers.remove(&(self.deadline.0, id));
                st.woken.remove(&id);
            }
            if std::mem::take(&mut self.claims) {
                st.busy += 1;
            }
            return Poll::Ready(());
        }
        let id = match self.id {
            Some(id) => id,
            None => {
                st.next_id += 1;
                let id = st.next_id;
                self.id = Some(id);
                id
            }
        };
        st.sleepers
            .insert((self.deadline.0, id), cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for VirtualSleep {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            let mut st = self.clock.state();
            st.sleepers.remove(&(self.deadline.0, id));
            st.woken.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A runtime with `workers` threads of its own.
    fn runtime(workers: usize) -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn virtual_sleepers_wake_in_deadline_order() {
        let virt = VirtualClock::new();
        let clock = Clock::from(virt.clone());
        let order = Arc::new(Mutex::new(Vec::new()));
        for secs in [3u64, 1, 2] {
            let (clock, order) = (clock.clone(), order.clone());
            tokio::spawn(async move {
                clock
                    .sleep_until(Instant::from_origin(Duration::from_secs(secs)))
                    .await;
                order.lock().unwrap().push((secs, clock.now()));
            });
        }
        settle().await;
        virt.advance(Duration::from_secs(5)).await;
        let got = order.lock().unwrap().clone();
        let want: Vec<_> = [1u64, 2, 3]
            .iter()
            .map(|s| (*s, Instant::from_origin(Duration::from_secs(*s))))
            .collect();
        assert_eq!(got, want);
        assert_eq!(clock.now(), Instant::from_origin(Duration::from_secs(5)));
    }

    #[tokio::test]
    async fn a_dropped_virtual_sleep_leaves_no_sleeper() {
        let virt = VirtualClock::new();
        let clock = Clock::from(virt.clone());
        let sleep = clock.sleep_until(Instant::from_origin(Duration::from_secs(1)));
        let timed = tokio::time::timeout(Duration::from_millis(1), sleep).await;
        assert!(timed.is_err());
        assert!(virt.state().sleepers.is_empty());
    }

    #[test]
    fn advance_blocking_fires_timers_on_runtime_threads() {
        let rt = runtime(2);
        let virt = VirtualClock::new();
        let clock = Clock::from(virt.clone());
        let seen = Arc::new(Mutex::new(Vec::new()));
        for secs in [2u64, 1] {
            let (task_clock, seen) = (clock.clone(), seen.clone());
            // Started: the clock takes no step before the task set its
            // timer, however late a loaded machine first polls it.
            rt.spawn(clock.started(async move {
                task_clock
                    .sleep_until(Instant::from_origin(Duration::from_secs(secs)))
                    .await;
                seen.lock().unwrap().push(task_clock.now());
            }));
        }
        virt.advance_blocking(Duration::from_secs(3), Duration::from_millis(20));
        let at = |s| Instant::from_origin(Duration::from_secs(s));
        assert_eq!(*seen.lock().unwrap(), [at(1), at(2)]);
        assert_eq!(virt.now(), at(3));
    }

    #[test]
    fn advance_blocking_waits_for_work_begun_at_a_deadline() {
        let rt = runtime(2);
        let virt = VirtualClock::new();
        let clock = Clock::from(virt.clone());
        let seen = Arc::new(Mutex::new(None));
        let (task_clock, task_seen) = (clock.clone(), seen.clone());
        rt.spawn(clock.started(async move {
            let _busy = task_clock
                .work_at(Instant::from_origin(Duration::from_secs(1)))
                .await;
            // A runtime thread the scheduler left waiting, past any pause.
            std::thread::sleep(Duration::from_millis(50));
            *task_seen.lock().unwrap() = Some(task_clock.now());
        }));
        virt.advance_blocking(Duration::from_secs(3), Duration::ZERO);
        let at_one = Instant::from_origin(Duration::from_secs(1));
        assert_eq!(*seen.lock().unwrap(), Some(at_one));
        assert_eq!(virt.now(), Instant::from_origin(Duration::from_secs(3)));
    }

    #[test]
    fn advance_blocking_waits_for_a_started_task_to_set_its_timers() {
        let rt = runtime(1);
        // The only worker is taken: the task below is first polled late.
        rt.spawn(async { std::thread::sleep(Duration::from_millis(50)) });
        std::thread::sleep(Duration::from_millis(5));
        let virt = VirtualClock::new();
        let clock = Clock::from(virt.clone());
        let seen = Arc::new(Mutex::new(None));
        let (task_clock, task_seen) = (clock.clone(), seen.clone());
        rt.spawn(clock.started(async move {
            task_clock
                .sleep_until(Instant::from_origin(Duration::from_secs(1)))
                .await;
            *task_seen.lock().unwrap() = Some(task_clock.now());
        }));
        virt.advance_blocking(Duration::from_secs(3), Duration::ZERO);
        let at_one = Instant::from_origin(Duration::from_secs(1));
        assert_eq!(*seen.lock().unwrap(), Some(at_one));
    }

    #[tokio::test]
    async fn monotonic_clock_sleeps_for_real() {
        let clock = Clock::monotonic();
        let start = clock.now();
        clock.sleep_until(start + Duration::from_millis(5)).await;
        assert!(clock.now().saturating_since(start) >= Duration::from_millis(5));
    }
}
