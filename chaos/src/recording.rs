//! A driver that records what the holder engine asks of a store and what
//! the store answers, in the history format, and otherwise passes every
//! call through: requests sent, grants (answered or pushed), renewals
//! confirmed, releases and give-ups sent.

use std::sync::Arc;
use std::time::Duration;

use leasehold::driver::{Driver, GiveUp, Grant, HoldAnswer, HoldRequest};
use leasehold::{GroupId, LeaseId, RequestId, Result};
use tokio::sync::oneshot;

use crate::clock::now_ns;
use crate::history::{Event, Kind, Recorder};

/// Records the calls of the engine on `inner`.
pub struct RecordingDriver {
    inner: Arc<dyn Driver>,
    recorder: Arc<Recorder>,
}

impl RecordingDriver {
    /// Records the calls on `inner` with `recorder`.
    pub fn new(inner: Arc<dyn Driver>, recorder: Arc<Recorder>) -> RecordingDriver {
        RecordingDriver { inner, recorder }
    }
}

/// What a grant's event says of its request.
#[derive(Clone)]
struct Asked {
    key: String,
    request: u128,
    group: Option<u128>,
    sent: u64,
}

impl Asked {
    fn granted(&self, grant: &Grant) -> Event {
        let mut e = Event::new(Kind::Granted)
            .key(&self.key)
            .request(self.request)
            .lease(grant.lease_id.0)
            .fence(grant.fence)
            .sent(self.sent);
        if let Some(g) = self.group {
            e = e.group(g);
        }
        e
    }
}

wrapper_driver!(RecordingDriver {


    async fn hold(&self, request: HoldRequest) -> Result<HoldAnswer> {
        let asked = Asked {
            key: request.name.key.to_string(),
            request: request.request_id.0,
            group: request.group.map(|g| g.0),
            sent: now_ns(),
        };
        let mut e = Event::at(asked.sent, Kind::Request)
            .key(&asked.key)
            .request(asked.request)
            .queue(request.queue)
            .ttl_ms(request.ttl.map_or(0, |t| t.as_millis() as u64));
        if let Some(g) = asked.group {
            e = e.group(g);
        }
        self.recorder.record(e);
        match self.inner.hold(request).await? {
            HoldAnswer::Granted(granted) => {
                self.recorder.record(asked.granted(&granted.grant));
                Ok(HoldAnswer::Granted(granted))
            }
            HoldAnswer::Queued { waiting, ahead } => {
                self.recorder.record(
                    Event::new(Kind::Queued)
                        .key(&asked.key)
                        .request(asked.request),
                );
                let (mut tx, rx) = oneshot::channel();
                let (inner, recorder) = (self.inner.clone(), self.recorder.clone());
                tokio::spawn(async move {
                    let mut waiting = waiting;
                    let answer = tokio::select! {
                        answer = &mut waiting => answer,
                        _ = tx.closed() => return,
                    };
                    let Ok(answer) = answer else { return };
                    if let Ok(granted) = &answer {
                        recorder.record(asked.granted(&granted.grant));
                    }
                    if let Err(Ok(granted)) = tx.send(answer) {
                        let lease = granted.grant.lease_id;
                        recorder.record(Event::new(Kind::Release).key(&asked.key).lease(lease.0));
                        let _ = inner.release(lease).await;
                    }
                });
                Ok(HoldAnswer::Queued { waiting: rx, ahead })
            }
            HoldAnswer::NotHeld => Ok(HoldAnswer::NotHeld),
        }
    }

    async fn renew(&self, lease: LeaseId, ttl: Option<Duration>) -> Result<Grant> {
        let sent = now_ns();
        let grant = self.inner.renew(lease, ttl).await?;
        let mut e = Event::new(Kind::Renewed).lease(lease.0).sent(sent);
        if let Some(ttl) = ttl {
            e = e.ttl_ms(ttl.as_millis() as u64);
        }
        self.recorder.record(e);
        Ok(grant)
    }

    async fn renew_group(&self, group: GroupId, ttl: Duration) -> Result<()> {
        let sent = now_ns();
        self.inner.renew_group(group, ttl).await?;
        self.recorder.record(
            Event::new(Kind::Renewed)
                .group(group.0)
                .sent(sent)
                .ttl_ms(ttl.as_millis() as u64),
        );
        Ok(())
    }

    async fn release(&self, lease: LeaseId) -> Result<()> {
        self.recorder
            .record(Event::new(Kind::Release).lease(lease.0));
        self.inner.release(lease).await
    }

    async fn give_up(&self, request: RequestId) -> Result<GiveUp> {
        self.recorder
            .record(Event::new(Kind::GiveUp).request(request.0));
        self.inner.give_up(request).await
    }





});
