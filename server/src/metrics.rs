//! Metrics in the Prometheus text format, served at `GET /metrics` (crate::http).

use std::time::Duration;

use leasehold::{LossReason, MemoryDriver};
use prometheus_client::encoding::{prometheus_text, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// The kinds of request, as the `op` label of `request_duration_seconds` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `Hold`.
    Hold,
    /// `Renew`.
    Renew,
    /// `Release`.
    Release,
    /// `GiveUp`.
    GiveUp,
    /// `List`.
    List,
    /// `Ping`.
    Ping,
    /// `SlotAcquire`.
    SlotAcquire,
    /// `SlotRenew`.
    SlotRenew,
    /// `SlotRelease`.
    SlotRelease,
    /// `RenewGroup`.
    RenewGroup,
    /// `HoldMany`.
    HoldMany,
    /// `Holder`.
    Holder,
}

impl Op {
    const ALL: [Op; 12] = [
        Op::Hold,
        Op::Renew,
        Op::Release,
        Op::GiveUp,
        Op::List,
        Op::Ping,
        Op::SlotAcquire,
        Op::SlotRenew,
        Op::SlotRelease,
        Op::RenewGroup,
        Op::HoldMany,
        Op::Holder,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Hold => "hold",
            Op::Renew => "renew",
            Op::Release => "release",
            Op::GiveUp => "give_up",
            Op::List => "list",
            Op::Ping => "ping",
            Op::SlotAcquire => "slot_acquire",
            Op::SlotRenew => "slot_renew",
            Op::SlotRelease => "slot_release",
            Op::RenewGroup => "renew_group",
            Op::HoldMany => "hold_many",
            Op::Holder => "holder",
        }
    }
}

/// Why a connection was refused, or closed before it was served, as the
/// `reason` label of `refusals_total` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Past its hello, every `--max-connections` place was taken.
    MaxConnections,
    /// Past its hello, its token had `--max-connections-per-token` connections.
    PerToken,
    /// It had not said hello (or finished its TLS handshake) within `--hello-timeout`.
    HelloTimeout,
    /// It was the oldest in its handshake when every `--max-handshakes` place
    /// was taken and another connection came.
    Evicted,
    /// Its hello had no token, or one the server does not accept.
    BadToken,
    /// Its first frame was not a hello of this protocol version.
    BadHello,
    /// Its TLS handshake failed.
    TlsHandshake,
}

impl Refusal {
    /// Every reason.
    pub(crate) const ALL: [Refusal; 7] = [
        Refusal::MaxConnections,
        Refusal::PerToken,
        Refusal::HelloTimeout,
        Refusal::Evicted,
        Refusal::BadToken,
        Refusal::BadHello,
        Refusal::TlsHandshake,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::MaxConnections => "max_connections",
            Refusal::PerToken => "per_token",
            Refusal::HelloTimeout => "hello_timeout",
            Refusal::Evicted => "evicted",
            Refusal::BadToken => "bad_token",
            Refusal::BadHello => "bad_hello",
            Refusal::TlsHandshake => "tls_handshake",
        }
    }

    /// Its place in [`Refusal::ALL`].
    pub(crate) fn index(self) -> usize {
        Refusal::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

/// Every reason of a loss, each shown from the start (at 0).
const LOSS_REASONS: [LossReason; 5] = [
    LossReason::Expired,
    LossReason::Revoked,
    LossReason::Unknown,
    LossReason::Restarted,
    LossReason::Closed,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    op: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

/// Every metric the server keeps.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    leases_held: Gauge,
    waiters: Gauge,
    /// Connections served now (past their hello and their connection limits).
    pub connections: Gauge,
    /// Connections in their handshake now (TLS, then the hello).
    pub handshakes: Gauge,
    /// Grants answered to holds or pushed to waiters.
    pub grants: Counter,
    /// Leases renewed.
    pub renewals: Counter,
    /// Leases released (by `Release`, or by a `GiveUp` that raced a grant).
    pub releases: Counter,
    losses: Family<ReasonLabels, Counter>,
    /// Connections closed for a malformed, oversized or untimely frame.
    pub protocol_errors: Counter,
    refusals: [Counter; Refusal::ALL.len()],
    durations: [Histogram; Op::ALL.len()],
}

fn duration_histogram() -> Histogram {
    Histogram::new([
        0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01,
        0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    ])
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// Fresh metrics, registered.
    pub fn new() -> Metrics {
        // Every name starts with `leasehold_`, as Prometheus names a process's own metrics.
        let mut registry = Registry::with_prefix("leasehold");
        let leases_held = Gauge::default();
        let waiters = Gauge::default();
        let connections = Gauge::default();
        let handshakes = Gauge::default();
        let grants = Counter::default();
        let renewals = Counter::default();
        let releases = Counter::default();
        let losses = Family::<ReasonLabels, Counter>::default();
        let protocol_errors = Counter::default();
        let refusals = Family::<ReasonLabels, Counter>::default();
        let request_duration =
            Family::<OpLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                duration_histogram,
            );
        registry.register(
            "leases_held",
            "Leases the store holds now",
            leases_held.clone(),
        );
        registry.register("waiters", "Requests waiting in lines now", waiters.clone());
        registry.register(
            "connections",
            "Client connections served now, past their hello",
            connections.clone(),
        );
        registry.register(
            "handshakes",
            "Client connections in their handshake now (TLS, then the hello)",
            handshakes.clone(),
        );
        registry.register("grants", "Grants answered or pushed", grants.clone());
        registry.register("renewals", "Leases renewed", renewals.clone());
        registry.register("releases", "Leases released", releases.clone());
        registry.register(
            "losses",
            "Leases that ended without their holder, seen by a connection, by reason",
            losses.clone(),
        );
        registry.register(
            "protocol_errors",
            "Connections closed for a malformed, oversized or untimely frame",
            protocol_errors.clone(),
        );
        registry.register(
            "refusals",
            "Connections refused, or closed before they were served, by reason",
            refusals.clone(),
        );
        registry.register_with_unit(
            "request_duration",
            "Time to answer a request, by op",
            Unit::Seconds,
            request_duration.clone(),
        );
        for reason in LOSS_REASONS {
            drop(losses.get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            }));
        }
        let refusals = Refusal::ALL.map(|why| {
            refusals.get_or_create_owned(&ReasonLabels {
                reason: why.as_str(),
            })
        });
        let durations =
            Op::ALL.map(|op| request_duration.get_or_create_owned(&OpLabels { op: op.as_str() }));
        Metrics {
            registry,
            leases_held,
            waiters,
            connections,
            handshakes,
            grants,
            renewals,
            releases,
            losses,
            protocol_errors,
            refusals,
            durations,
        }
    }

    /// Counts a lease lost for `reason`.
    pub fn lost(&self, reason: LossReason) {
        self.losses
            .get_or_create(&ReasonLabels {
                reason: reason.as_str(),
            })
            .inc();
    }

    /// Leases lost so far, whatever the reason.
    pub fn losses_total(&self) -> u64 {
        LOSS_REASONS
            .into_iter()
            .map(|reason| {
                self.losses
                    .get_or_create(&ReasonLabels {
                        reason: reason.as_str(),
                    })
                    .get()
            })
            .sum()
    }

    /// Counts a connection refused (or closed before it was served) for `why`.
    pub fn refused(&self, why: Refusal) {
        self.refusals[why.index()].inc();
    }

    /// Records how long a request of kind `op` took.
    pub fn observe(&self, op: Op, took: Duration) {
        let i = Op::ALL.iter().position(|o| *o == op).unwrap_or(0);
        self.durations[i].observe(took.as_secs_f64());
    }

    /// The text of a scrape, with the table's gauges read from `driver` now.
    pub fn render(&self, driver: &MemoryDriver) -> String {
        self.leases_held
            .set(i64::try_from(driver.held()).unwrap_or(i64::MAX));
        self.waiters
            .set(i64::try_from(driver.waiting()).unwrap_or(i64::MAX));
        let mut out = String::new();
        // Writing to a String does not fail.
        let _ = prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_metric_is_named_as_documented() {
        let driver = MemoryDriver::new(
            leasehold::MemoryOptions::default(),
            &tokio::runtime::Handle::current(),
        );
        let m = Metrics::new();
        m.grants.inc();
        m.lost(LossReason::Expired);
        m.observe(Op::Hold, Duration::from_micros(30));
        m.refused(Refusal::Evicted);
        let text = m.render(&driver);
        for name in [
            "leases_held 0",
            "waiters 0",
            "connections 0",
            "handshakes 0",
            "refusals_total{reason=\"evicted\"} 1",
            "refusals_total{reason=\"bad_token\"} 0",
            "grants_total 1",
            "renewals_total 0",
            "releases_total 0",
            "losses_total{reason=\"expired\"} 1",
            "losses_total{reason=\"revoked\"} 0",
            "protocol_errors_total 0",
            "request_duration_seconds_count{op=\"hold\"} 1",
        ] {
            assert!(text.contains(name), "{name} missing from\n{text}");
        }
    }
}
