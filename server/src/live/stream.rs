//! One open page's stream of frames (`GET /live`, server-sent events).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Frame as BodyFrame;
use leasehold::overview::{OverviewQuery, MAX_ROWS};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::frame::{ConnectionJson, Frame, CONNECTIONS_SHOWN};
use super::{lock, unix_ms, Live, PagePlace};

/// The most events one frame carries; a page further behind is told how many it missed.
const EVENTS_PER_FRAME: usize = 100;

/// A page's stream: its body's chunks, each one server-sent event.
pub(crate) type Chunks = futures::stream::BoxStream<'static, Result<BodyFrame<Bytes>, Infallible>>;

/// Reads a page's query from the URL's query string: `lock`, `filter`
/// (percent-encoded) and `limit` (at most [`MAX_ROWS`]).
pub(crate) fn query(text: Option<&str>) -> OverviewQuery {
    let mut q = OverviewQuery::default();
    for (name, value) in form_urlencoded::parse(text.unwrap_or("").as_bytes()) {
        match &*name {
            "lock" => q.lock = Some(value.into_owned()),
            "filter" if !value.is_empty() => q.filter = Some(value.into_owned()),
            "limit" => {
                if let Ok(n) = value.parse::<usize>() {
                    q.limit = n.clamp(1, MAX_ROWS);
                }
            }
            _ => {}
        }
    }
    q
}

/// Opens a page's stream, or `None` when every page place is taken. The
/// stream's task ends when the page goes away or the server shuts down.
pub(crate) fn open(
    live: &Arc<Live>,
    query: OverviewQuery,
    shutdown: CancellationToken,
) -> Option<Chunks> {
    let place = live.enter()?;
    // One frame in flight: the next is built only once the page took this one.
    let (tx, rx) = mpsc::channel::<Bytes>(1);
    tokio::spawn(run(place, query, tx, shutdown));
    let chunks = futures::stream::unfold(rx, |mut rx| async move {
        let chunk = rx.recv().await?;
        Some((Ok(BodyFrame::data(chunk)), rx))
    });
    Some(Box::pin(chunks))
}

async fn run(
    place: PagePlace,
    query: OverviewQuery,
    tx: mpsc::Sender<Bytes>,
    shutdown: CancellationToken,
) {
    let live = place.0.clone();
    let mut ticks = live.tick.subscribe();
    let mut seen = lock(&live.events).next().saturating_sub(100);
    let mut samples_seen = 0u64;
    loop {
        let permit = tokio::select! {
            _ = shutdown.cancelled() => return,
            p = tx.reserve() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        let frame = build(&live, &query, &mut seen, &mut samples_seen);
        permit.send(frame);
        tokio::select! {
            _ = shutdown.cancelled() => return,
            changed = ticks.changed() => if changed.is_err() { return },
        }
    }
}

/// The next frame of a page that saw the events before `seen` and the
/// samples up to unix ms `samples_seen`, as one server-sent event.
fn build(live: &Live, query: &OverviewQuery, seen: &mut u64, samples_seen: &mut u64) -> Bytes {
    let overview = live.overview(query);
    let (events, missed) = {
        let log = lock(&live.events);
        let out = log.since(*seen, EVENTS_PER_FRAME);
        *seen = log.next();
        out
    };
    let (connections, connection_count) = {
        let c = lock(&live.connections);
        let shown = c
            .open
            .iter()
            .rev()
            .take(CONNECTIONS_SHOWN)
            .map(|(id, p)| ConnectionJson::of(*id, p))
            .collect();
        (shown, c.open.len())
    };
    let samples: Vec<_> = lock(&live.samples)
        .iter()
        .filter(|s| s.t > *samples_seen)
        .copied()
        .collect();
    if let Some(last) = samples.last() {
        *samples_seen = last.t;
    }
    let frame = Frame {
        t: unix_ms(),
        epoch: live.source.epoch(),
        shows: live.source.shows(),
        overview: &overview,
        connections,
        connection_count,
        events,
        missed,
        samples,
    };
    let json = serde_json::to_string(&frame).unwrap_or_else(|_| "{}".to_owned());
    Bytes::from(format!("event: frame\ndata: {json}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pages_query_is_read_from_its_url() {
        let q = query(Some("lock=orders%20eu&filter=chat-&limit=5000"));
        assert_eq!(q.lock.as_deref(), Some("orders eu"));
        assert_eq!(q.filter.as_deref(), Some("chat-"));
        assert_eq!(q.limit, MAX_ROWS);
        let q = query(Some("filter=&limit=x"));
        assert_eq!(q, OverviewQuery::default());
        assert_eq!(query(None), OverviewQuery::default());
    }
}
