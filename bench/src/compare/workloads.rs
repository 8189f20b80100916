//! The timed workloads: hold cycles on distinct keys, and the handoff of
//! one contended key. Each run hands its clients back, so that the same
//! connections serve every round.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::watch;
use tokio::time::Instant;

use super::stats::Samples;
use super::systems::Locker;

/// How long a workload warms up, then measures.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Cycles before this much time are not counted.
    pub warmup: Duration,
    /// Cycles counted: those that start and end within this span.
    pub measure: Duration,
}

/// What one or more runs of a workload measured.
#[derive(Debug, Default)]
pub struct Measured {
    /// Operations counted (cycles, or handoffs).
    pub count: usize,
    /// The time they were counted over.
    pub over: Duration,
    /// Per operation: the cycle (acquire to release done), or the handoff.
    pub main: Samples,
    /// Per cycle: acquire call to acquire return (the grant); empty for handoffs.
    pub grant: Samples,
    /// Grants while another client held the key (handoff; must be 0).
    pub overlaps: u64,
}

impl Measured {
    /// Operations per second.
    pub fn per_sec(&self) -> f64 {
        self.count as f64 / self.over.as_secs_f64().max(1e-9)
    }

    /// Adds another run's measurements.
    pub fn add(&mut self, other: Measured) {
        self.count += other.count;
        self.over += other.over;
        self.main.extend(other.main);
        self.grant.extend(other.grant);
        self.overlaps += other.overlaps;
    }
}

/// A workload over a set of clients it keeps between runs.
pub type Run = Box<dyn FnMut(Window) -> Pin<Box<dyn Future<Output = Result<Measured>> + Send>>>;

/// Hold cycles: client `i` holds and releases `keys[i]` in a loop.
pub fn cycles_run<L: Locker>(clients: Vec<L>, keys: Vec<String>) -> Run {
    let slot = Arc::new(tokio::sync::Mutex::new(clients));
    Box::new(move |w| {
        let (slot, keys) = (slot.clone(), keys.clone());
        Box::pin(async move {
            let mut held = slot.lock().await;
            let (clients, m) = cycles(std::mem::take(&mut *held), keys, w).await?;
            *held = clients;
            Ok(m)
        })
    })
}

/// Handoff: every client contends for `key`.
pub fn handoff_run<L: Locker>(clients: Vec<L>, key: &str) -> Run {
    let slot = Arc::new(tokio::sync::Mutex::new(clients));
    let key = key.to_owned();
    Box::new(move |w| {
        let (slot, key) = (slot.clone(), key.clone());
        Box::pin(async move {
            let mut held = slot.lock().await;
            let (clients, m) = handoff(std::mem::take(&mut *held), &key, w).await?;
            *held = clients;
            Ok(m)
        })
    })
}

/// Each client holds and releases its own key (`keys[i]`) in a loop.
pub async fn cycles<L: Locker>(
    clients: Vec<L>,
    keys: Vec<String>,
    w: Window,
) -> Result<(Vec<L>, Measured)> {
    let start = Instant::now();
    let from = start + w.warmup;
    let until = from + w.measure;
    let mut tasks = Vec::new();
    for (mut client, key) in clients.into_iter().zip(keys) {
        tasks.push(tokio::spawn(async move {
            let mut cycle = Samples::default();
            let mut grant = Samples::default();
            loop {
                let a = Instant::now();
                if a >= until {
                    break;
                }
                let held = client.acquire(&key).await?;
                let b = Instant::now();
                client.release(held).await?;
                let c = Instant::now();
                if a >= from && c <= until {
                    cycle.push(c - a);
                    grant.push(b - a);
                }
            }
            Ok::<_, anyhow::Error>((client, cycle, grant))
        }));
    }
    let mut out = Measured {
        over: w.measure,
        ..Measured::default()
    };
    let mut clients = Vec::new();
    for t in tasks {
        let (client, cycle, grant) = t.await.context("a client task panicked")??;
        clients.push(client);
        out.main.extend(cycle);
        out.grant.extend(grant);
    }
    out.count = out.main.len();
    Ok((clients, out))
}

struct Last {
    /// When the last holder called release, and who it was.
    release: Option<(Instant, usize)>,
    /// Grants so far.
    grants: u64,
}

/// All clients contend for `key`. Each holder releases at once, then
/// waits until another client got the key before it asks again, so every
/// grant is a handoff from one client to another waiting one.
pub async fn handoff<L: Locker>(
    clients: Vec<L>,
    key: &str,
    w: Window,
) -> Result<(Vec<L>, Measured)> {
    let start = Instant::now();
    let from = start + w.warmup;
    let until = from + w.measure;
    let last = Arc::new(Mutex::new(Last {
        release: None,
        grants: 0,
    }));
    let grants_tx = Arc::new(watch::channel(0u64).0);
    let held_now = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (me, mut client) in clients.into_iter().enumerate() {
        let key = key.to_owned();
        let last = last.clone();
        let grants_tx = grants_tx.clone();
        let mut grants_rx = grants_tx.subscribe();
        let held_now = held_now.clone();
        let overlaps = overlaps.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Samples::default();
            loop {
                if Instant::now() >= until {
                    break;
                }
                let held = client.acquire(&key).await?;
                let granted = Instant::now();
                if held_now.swap(true, Ordering::SeqCst) {
                    overlaps.fetch_add(1, Ordering::Relaxed);
                }
                let grant_no = {
                    let mut l = last.lock().expect("not poisoned");
                    l.grants += 1;
                    if let Some((released, by)) = l.release.take() {
                        if released >= from && granted <= until && by != me {
                            samples.push(granted - released);
                        }
                    }
                    l.grants
                };
                grants_tx.send_replace(grant_no);
                held_now.store(false, Ordering::SeqCst);
                last.lock().expect("not poisoned").release = Some((Instant::now(), me));
                client.release(held).await?;
                // Back in line only once another client got the key.
                let _ = tokio::time::timeout_at(
                    until + Duration::from_millis(200),
                    grants_rx.wait_for(|g| *g > grant_no),
                )
                .await;
            }
            Ok::<_, anyhow::Error>((client, samples))
        }));
    }
    let mut out = Measured {
        over: w.measure,
        ..Measured::default()
    };
    let mut clients = Vec::new();
    for t in tasks {
        let (client, samples) = t.await.context("a client task panicked")??;
        clients.push(client);
        out.main.extend(samples);
    }
    out.count = out.main.len();
    out.overlaps = overlaps.load(Ordering::Relaxed);
    Ok((clients, out))
}
