//! Where a live page's view comes from: the server's own store
//! ([`Served`]: its table, its activity as it happens, its metrics), or
//! any store read through its driver ([`Polled`], `leasehold ui`).

use std::sync::Arc;

use futures::future::BoxFuture;
use leasehold::overview::{Activity, Overview, OverviewQuery};
use leasehold::MemoryDriver;
use serde::Serialize;

use crate::metrics::Metrics;

/// What a page can show of its store; the page leaves out the rest.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Shows {
    /// The store's name for the page's header.
    pub store: &'static str,
    /// How many wait for each key.
    pub waiters: bool,
    /// Who holds each key (its identity, WHO-01).
    pub holders: bool,
    /// When maxHold revokes each lease.
    pub revocations: bool,
    /// Whether an ended lease was released or lost, and why.
    pub endings: bool,
    /// The slot namespaces.
    pub slots: bool,
    /// The store's connections.
    pub connections: bool,
    /// The store's epoch.
    pub epoch: bool,
}

/// The counts the charts' samples are made of: totals so far, and levels now.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    pub grants: u64,
    pub losses: u64,
    pub releases: u64,
    pub held: usize,
    pub waiting: usize,
}

/// A store a live page shows.
pub(crate) trait Source: Send + Sync {
    /// What the page can show of it.
    fn shows(&self) -> Shows;
    /// What the store holds now, for `query`.
    fn overview(&self, query: &OverviewQuery) -> Overview;
    /// Starts or stops recording grants, releases and losses.
    fn record_activity(&self, on: bool);
    /// The activity since the last drain.
    fn drain_activity(&self) -> Vec<Activity>;
    /// The store's epoch, when it has one.
    fn epoch(&self) -> Option<u32>;
    /// The counts now.
    fn counts(&self) -> Counts;
    /// Reads the store again, once a tick while a page is open (a store read
    /// through its driver); nothing for the server's own.
    fn refresh(&self) -> BoxFuture<'_, ()>;
}

/// The server's own store.
pub(crate) struct Served {
    pub driver: Arc<MemoryDriver>,
    pub metrics: Arc<Metrics>,
}

impl Source for Served {
    fn shows(&self) -> Shows {
        Shows {
            store: "server",
            waiters: true,
            holders: true,
            revocations: true,
            endings: true,
            slots: true,
            connections: true,
            epoch: true,
        }
    }

    fn overview(&self, query: &OverviewQuery) -> Overview {
        self.driver.overview(query)
    }

    fn record_activity(&self, on: bool) {
        self.driver.record_activity(on);
    }

    fn drain_activity(&self) -> Vec<Activity> {
        self.driver.drain_activity()
    }

    fn epoch(&self) -> Option<u32> {
        Some(self.driver.epoch())
    }

    fn counts(&self) -> Counts {
        Counts {
            grants: self.metrics.grants.get(),
            losses: self.metrics.losses_total(),
            releases: self.metrics.releases.get(),
            held: self.driver.held(),
            waiting: self.driver.waiting(),
        }
    }

    fn refresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}
