//! The last events the live page shows: grants, releases and losses from
//! the store's activity, and refused connections; numbered, bounded.

use std::collections::VecDeque;
use std::net::SocketAddr;

use leasehold::overview::{Activity, ActivityKind};
use serde::Serialize;

use crate::metrics::Refusal;

/// How many events the log keeps; a page that falls further behind is told
/// how many it missed.
pub const EVENTS_KEPT: usize = 1000;

/// One event as a page receives it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LiveEvent {
    /// Its number: one more than the event before it.
    pub seq: u64,
    /// Unix ms.
    pub at: u64,
    /// `granted`, `released`, `lost` or `refused`.
    pub kind: &'static str,
    /// Why: the loss's reason (`expired`, `revoked` for maxHold, …) or the refusal's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fence: Option<String>,
    /// The connection that held the key, or was refused (0: none).
    pub holder: u64,
    /// That holder's identity (WHO-01).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// A refused connection's address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
}

impl LiveEvent {
    /// A connection refused for `why`.
    pub fn refused(at: u64, why: Refusal, peer: SocketAddr) -> LiveEvent {
        LiveEvent {
            seq: 0,
            at,
            kind: "refused",
            reason: Some(why.as_str()),
            lock: None,
            key: None,
            fence: None,
            holder: 0,
            identity: None,
            peer: Some(peer.to_string()),
        }
    }

    fn of(a: Activity) -> LiveEvent {
        let reason = match a.kind {
            ActivityKind::Lost(r) => Some(r.as_str()),
            _ => None,
        };
        LiveEvent {
            seq: 0,
            at: a.at_ms,
            kind: a.kind.as_str(),
            reason,
            lock: Some(a.lock),
            key: Some(a.key),
            // Fences pass 2^53: JSON numbers would round them in the page.
            fence: Some(a.fence.to_string()),
            identity: Some(a.identity),
            holder: a.holder,
            peer: None,
        }
    }
}

/// The numbered log.
#[derive(Debug, Default)]
pub(crate) struct EventLog {
    events: VecDeque<LiveEvent>,
    next: u64,
}

impl EventLog {
    /// Appends one event, dropping the oldest past [`EVENTS_KEPT`].
    pub fn push(&mut self, mut event: LiveEvent) {
        event.seq = self.next;
        self.next += 1;
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back(event);
    }

    /// Appends the store's activity.
    pub fn extend(&mut self, activity: Vec<Activity>) {
        for a in activity {
            self.push(LiveEvent::of(a));
        }
    }

    /// The number the next event will have.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// The events from number `from` on (at most the last `most`), and how
    /// many of those after `from` are no longer kept or were left out.
    pub fn since(&self, from: u64, most: usize) -> (Vec<LiveEvent>, u64) {
        let first = self.events.front().map_or(self.next, |e| e.seq);
        let start = from.max(first);
        let available = self.next - start;
        let skip = available.saturating_sub(most as u64);
        let events: Vec<LiveEvent> = self
            .events
            .iter()
            .skip(usize::try_from(start + skip - first).unwrap_or(usize::MAX))
            .cloned()
            .collect();
        (events, (start - from.min(start)) + skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: u64) -> LiveEvent {
        LiveEvent::refused(n, Refusal::BadToken, SocketAddr::from(([127, 0, 0, 1], 1)))
    }

    #[test]
    fn since_counts_what_a_page_missed() {
        let mut log = EventLog::default();
        for n in 0..(EVENTS_KEPT as u64 + 10) {
            log.push(event(n));
        }
        let (events, missed) = log.since(0, 2000);
        assert_eq!((events.len(), missed), (EVENTS_KEPT, 10));
        assert_eq!(events[0].seq, 10);
        let (events, missed) = log.since(log.next() - 3, 2);
        assert_eq!(
            events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1008, 1009]
        );
        assert_eq!(missed, 1);
        let (events, missed) = log.since(log.next(), 5);
        assert!(events.is_empty());
        assert_eq!(missed, 0);
    }
}
