//! One watch stream for the whole driver, supervised: every watch the
//! driver needs (a holder's own record, a waiter's predecessor) shares it
//! under an id of the driver's choosing. When the stream fails or a watch is
//! cancelled, each watch hears [`Notice::Reset`]; the supervisor makes the
//! stream and the watches again (with no start revision: synced when
//! created) and each then hears [`Notice::Created`], after which its owner
//! reads again what it watches (DIST-04). etcd-client does not re-create a
//! failed stream by itself.
//!
//! The stream goes to the member the driver's calls go to. A member that
//! dies breaks it at once; one that freezes or is cut off says nothing, so
//! a stream that has been silent for a try's bound is asked for its
//! progress, and one that does not answer within another is given up and
//! made again at the next member: a silent member is left within two
//! tries' bounds, and a busy one is not left for one slow answer.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use etcd_client::{Client, WatchFilterType, WatchOptions, WatchRequestSender, WatchResponseStream};
use rand::Rng;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::calls::Calls;

/// What a watch's owner hears.
#[derive(Debug)]
pub(crate) enum Notice {
    /// The watch is in place. `exact`: it started at the revision its owner
    /// asked for, so nothing was missed; otherwise read again now.
    Created {
        /// Whether the watch replays every change since the asked revision.
        exact: bool,
    },
    /// The watched key was deleted.
    Deleted,
    /// The watch broke; a [`Notice::Created`] follows once it is made again.
    Reset,
}

/// Where a watch's notices go; it runs on the supervisor's task and must not block.
pub(crate) type Sink = Arc<dyn Fn(Notice) + Send + Sync>;

struct Spec {
    key: Vec<u8>,
    /// The first creation starts here; a re-creation starts at the current revision.
    start: Option<i64>,
    sink: Sink,
}

enum Command {
    Add(i64),
    Cancel(i64),
}

struct Inner {
    watches: Mutex<HashMap<i64, Spec>>,
    commands: mpsc::UnboundedSender<Command>,
    next: AtomicI64,
}

impl Inner {
    fn watches(&self) -> MutexGuard<'_, HashMap<i64, Spec>> {
        self.watches.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The driver's watches.
pub(crate) struct Watcher {
    inner: Arc<Inner>,
}

/// One watch: dropping it cancels the watch.
pub(crate) struct WatchGuard {
    id: i64,
    inner: Weak<Inner>,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.watches().remove(&self.id);
            let _ = inner.commands.send(Command::Cancel(self.id));
        }
    }
}

const BACKOFF_FIRST: Duration = Duration::from_millis(50);
const BACKOFF_CAP: Duration = Duration::from_millis(250);

impl Watcher {
    /// Starts the supervisor on the calls' runtime; it ends with `closed`.
    pub(crate) fn start(calls: Calls, closed: CancellationToken) -> Watcher {
        let (commands, rx) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            watches: Mutex::new(HashMap::new()),
            commands,
            next: AtomicI64::new(1),
        });
        let runtime = calls.runtime.clone();
        runtime.spawn(supervise(calls, Arc::downgrade(&inner), rx, closed));
        Watcher { inner }
    }

    /// Watches deletions of `key`, from revision `start` if given (else from
    /// now); `sink` hears the notices.
    pub(crate) fn watch(&self, key: Vec<u8>, start: Option<i64>, sink: Sink) -> WatchGuard {
        let id = self.inner.next.fetch_add(1, Ordering::Relaxed);
        self.inner.watches().insert(id, Spec { key, start, sink });
        let _ = self.inner.commands.send(Command::Add(id));
        WatchGuard {
            id,
            inner: Arc::downgrade(&self.inner),
        }
    }
}

fn options(id: i64, start: Option<i64>) -> WatchOptions {
    let options = WatchOptions::new()
        .with_watch_id(id)
        .with_filters([WatchFilterType::NoPut]);
    match start {
        Some(rev) => options.with_start_revision(rev),
        None => options,
    }
}

/// The create request of watch `id`, taking its start revision for the first time only.
fn create_of(inner: &Inner, id: i64) -> Option<(Vec<u8>, WatchOptions, bool)> {
    let mut watches = inner.watches();
    let spec = watches.get_mut(&id)?;
    let start = spec.start.take();
    Some((spec.key.clone(), options(id, start), start.is_some()))
}

/// Tells watch `id` of `notice`, outside the lock: a sink may drop a watch.
fn notify(inner: &Inner, id: i64, notice: Notice) {
    let sink = inner.watches().get(&id).map(|spec| spec.sink.clone());
    if let Some(sink) = sink {
        sink(notice);
    }
}

/// When a stream is silent, and whether it was asked for its progress.
struct Liveness {
    heard: Instant,
    asked: Option<Instant>,
}

impl Liveness {
    fn new() -> Liveness {
        Liveness {
            heard: Instant::now(),
            asked: None,
        }
    }

    /// When to look at the stream next: a try's bound after it was last
    /// heard, or after it was asked.
    fn next_look(&self, bound: Duration) -> Instant {
        self.asked.unwrap_or(self.heard) + bound
    }
}

/// The stream of the member the calls go to, opened with the first watch's
/// create request within a try's bound.
async fn open(
    calls: &Calls,
    key: Vec<u8>,
    options: WatchOptions,
) -> Option<(usize, WatchResponseStream, WatchRequestSender)> {
    let pick = calls.members.pick();
    let opened = tokio::time::timeout(calls.bounds.attempt, async {
        let client: Client = calls.members.client(pick.member).await?.clone();
        client.watch_client().watch(key, Some(options)).await
    })
    .await;
    match opened {
        Ok(Ok(stream)) => {
            let (sender, responses) = stream.split();
            Some((pick.member, responses, sender))
        }
        _ => {
            calls.members.failed(pick.member, calls.bounds.attempt);
            None
        }
    }
}

async fn supervise(
    calls: Calls,
    inner: Weak<Inner>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    closed: CancellationToken,
) {
    let bound = calls.bounds.attempt;
    let mut backoff = BACKOFF_FIRST;
    loop {
        let Some(first) = inner
            .upgrade()
            .and_then(|i| i.watches().keys().next().copied())
        else {
            // Nothing to watch: wait for a command.
            tokio::select! {
                c = commands.recv() => if c.is_none() { return },
                _ = closed.cancelled() => return,
            }
            continue;
        };
        let Some(create) = inner.upgrade().and_then(|i| create_of(&i, first)) else {
            continue;
        };
        let opened = tokio::select! {
            o = open(&calls, create.0, create.1) => o,
            _ = closed.cancelled() => return,
        };
        let Some((member, mut responses, mut sender)) = opened else {
            pause(&mut backoff, &calls, &closed).await;
            continue;
        };
        let mut on_stream = HashSet::from([first]);
        let mut exact = HashMap::from([(first, create.2)]);
        let ids: Vec<i64> = match inner.upgrade() {
            Some(i) => i.watches().keys().copied().collect(),
            None => return,
        };
        let mut healthy = true;
        for id in ids.into_iter().filter(|id| *id != first) {
            if !add(&inner, &mut sender, id, &mut on_stream, &mut exact, bound).await {
                healthy = false;
                break;
            }
        }
        let mut live = Liveness::new();
        while healthy {
            tokio::select! {
                _ = closed.cancelled() => return,
                _ = tokio::time::sleep_until(live.next_look(bound)), if !on_stream.is_empty() => {
                    if live.asked.is_some() {
                        // Asked, and silent since: frozen or cut off.
                        calls.members.failed(member, bound);
                        healthy = false;
                    } else if within(bound, sender.request_progress()).await {
                        live.asked = Some(Instant::now());
                    } else {
                        healthy = false;
                    }
                }
                command = commands.recv() => match command {
                    None => return,
                    Some(Command::Add(id)) => {
                        if !on_stream.contains(&id)
                            && !add(&inner, &mut sender, id, &mut on_stream, &mut exact, bound).await
                        {
                            healthy = false;
                        }
                    }
                    Some(Command::Cancel(id)) => {
                        if on_stream.remove(&id) && !within(bound, sender.cancel(id)).await {
                            healthy = false;
                        }
                    }
                },
                message = responses.message() => {
                    let Ok(Some(response)) = message else {
                        calls.members.failed(member, bound);
                        healthy = false;
                        continue;
                    };
                    live = Liveness::new();
                    backoff = BACKOFF_FIRST;
                    let Some(i) = inner.upgrade() else { return };
                    let id = response.watch_id();
                    if response.canceled() {
                        // Cancelled by us, or by etcd (compaction, permissions,
                        // a lost leader): make it again after a pause.
                        if on_stream.remove(&id) && i.watches().contains_key(&id) {
                            notify(&i, id, Notice::Reset);
                            let commands = i.commands.clone();
                            let delay = rand::thread_rng().gen_range(BACKOFF_FIRST..BACKOFF_FIRST * 4);
                            tokio::spawn(async move {
                                tokio::time::sleep(delay).await;
                                let _ = commands.send(Command::Add(id));
                            });
                        }
                        continue;
                    }
                    if response.created() {
                        let exact = exact.remove(&id).unwrap_or(false);
                        notify(&i, id, Notice::Created { exact });
                    }
                    if !response.events().is_empty() {
                        notify(&i, id, Notice::Deleted);
                    }
                }
            }
        }
        // The stream failed: every watch on it is reset and made again.
        if let Some(i) = inner.upgrade() {
            for id in on_stream {
                notify(&i, id, Notice::Reset);
            }
        }
        pause(&mut backoff, &calls, &closed).await;
    }
}

async fn add(
    inner: &Weak<Inner>,
    sender: &mut WatchRequestSender,
    id: i64,
    on_stream: &mut HashSet<i64>,
    exact: &mut HashMap<i64, bool>,
    bound: Duration,
) -> bool {
    let Some((key, options, from_start)) = inner.upgrade().and_then(|i| create_of(&i, id)) else {
        return true;
    };
    on_stream.insert(id);
    exact.insert(id, from_start);
    within(bound, sender.watch(key, Some(options))).await
}

/// Whether a request was queued on the stream within `bound`: the queue is
/// short, and a member that does not read fills it.
async fn within(
    bound: Duration,
    send: impl std::future::Future<Output = Result<(), etcd_client::Error>>,
) -> bool {
    matches!(tokio::time::timeout(bound, send).await, Ok(Ok(())))
}

/// Waits before the stream is made again: not at all while another member
/// has not failed lately, else a growing pause.
async fn pause(backoff: &mut Duration, calls: &Calls, closed: &CancellationToken) {
    if !calls.members.pick().all_failed {
        return;
    }
    let wait = rand::thread_rng().gen_range(*backoff / 2..=*backoff);
    *backoff = (*backoff * 2).min(BACKOFF_CAP);
    tokio::select! {
        _ = tokio::time::sleep(wait) => {}
        _ = closed.cancelled() => {}
    }
}
