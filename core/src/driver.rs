//! The contract a store must meet, so that the embedded store, the server
//! store and distributed engines all plug into the same holder engine.

use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::oneshot;

pub use crate::loss_channel::{
    loss_channel, LossListener, LossReceiver, LossSender, LossSink, NothingLost,
};

use crate::clock::Clock;
use crate::error::Result;
use crate::ids::{GroupId, LeaseId, RequestId};
use crate::slots::{AcquireResult, SlotLease, SlotRequest};
pub use crate::table::{GiveUp, Grant, HoldRequest, Holder, KeyName};

/// What a driver's store does on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Leases run out unless renewed: the engine renews them in the
    /// background and keeps the holder's deadline (LOCK-04, LOCK-06).
    /// `false` for the embedded store, whose holders live in its process (LOCK-19).
    pub renewal: bool,
    /// The store pushes a grant to the next in line the moment a key is let
    /// go; without it, waiting polls with jittered backoff (MANUAL-02).
    pub push: bool,
    /// The store renews leases by group ([`Driver::renew_group`]): the
    /// engine puts the leases of one store handle with one ttl in one group
    /// and renews them all with one call. Only meaningful with `renewal`.
    pub groups: bool,
}

/// A lease as a driver hands it over: the grant and the channel on which the
/// store will say that it ended without its holder (maxHold, expiry, restart).
/// The channel closing without a reason means nothing was lost.
#[derive(Debug)]
pub struct Granted {
    /// The grant.
    pub grant: Grant,
    /// Fires once if the store ends the lease unseen by its holder.
    pub lost: LossReceiver,
}

/// A request waiting in line: its grant arrives here. Dropping or closing it
/// without reading a grant obliges its owner to give the request up.
pub type Waiting = oneshot::Receiver<Result<Granted>>;

/// A key's holder as a listing and [`Driver::holder`] show it (never its
/// lease id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderInfo {
    /// The lock's name (empty for manual leases).
    pub lock: String,
    /// The key.
    pub key: String,
    /// The holder's fence.
    pub fence: u64,
    /// How long ago the lease was granted.
    pub held_for: Duration,
    /// How long before the store lets the lease go unless renewed; `None`: not by time.
    pub expires_in: Option<Duration>,
    /// The identity of the store handle that took the lease (WHO-01);
    /// empty for a lease a store recorded before it kept identities.
    pub identity: String,
    /// How many requests wait in the key's line.
    pub waiting: usize,
}

/// A store's answer to a hold request: the same three answers from the
/// lease table and from every driver ([`Driver::hold`]). `G` is what a grant
/// hands over and `W` where a queued request's grant will arrive: a driver
/// answers with a [`Granted`] lease and its [`Waiting`] receiver (the
/// defaults); the table, which delivers a waiter's grant as an event, with
/// the bare [`Grant`] and `()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldAnswer<G = Granted, W = Waiting> {
    /// The key is the request's (or was already: a retried request).
    Granted(G),
    /// The key is held and the request did not ask to wait (tryHold).
    NotHeld,
    /// The request waits in line (only on stores that push grants).
    Queued {
        /// Where its grant will arrive.
        waiting: W,
        /// How many requests are ahead of it in line.
        ahead: usize,
    },
}

/// How many holds [`Driver::hold_many`] asks at a time where the store
/// answers each on its own.
pub const HOLDS_IN_FLIGHT: usize = 64;

/// A store, as the holder engine sees it.
///
/// Every method names leases by id, never by fence (LOCK-08). A method that
/// fails for a reason other than its outcome (the store is unreachable, the
/// answer was lost) fails `Unavailable` or `Timeout` and may be called again.
#[async_trait]
pub trait Driver: Send + Sync + 'static {
    /// What this store does on its own.
    fn capabilities(&self) -> Capabilities;

    /// The clock holders of this store keep their deadlines by.
    fn clock(&self) -> &Clock;

    /// Asks for a key. Repeating a request id answers as before (LOCK-03).
    async fn hold(&self, request: HoldRequest) -> Result<HoldAnswer>;

    /// Asks for many keys at once, each a request of its own answered as
    /// [`Driver::hold`] would answer it, in the order asked (LOCK-22). By
    /// default [`HOLDS_IN_FLIGHT`] requests are asked at a time, each on its
    /// own; a store that can grants many in one pass.
    async fn hold_many(&self, requests: &[HoldRequest]) -> Vec<Result<HoldAnswer>> {
        use futures::StreamExt;
        futures::stream::iter(0..requests.len())
            .map(|at| self.hold(requests[at].clone()))
            .buffered(HOLDS_IN_FLIGHT)
            .collect()
            .await
    }

    /// How many requests one call of [`Driver::hold_many`] should carry: the
    /// engine asks for many keys in steps of this many and starts the
    /// holdings of each step as soon as its answers come, so a step must
    /// be answered well within a ttl. By default one round of
    /// [`HOLDS_IN_FLIGHT`] holds.
    fn hold_many_step(&self) -> usize {
        HOLDS_IN_FLIGHT
    }

    /// Renews a lease by its id for `ttl` from the store's now (its own ttl when `None`).
    async fn renew(&self, lease: LeaseId, ttl: Option<Duration>) -> Result<Grant>;

    /// Renews every lease granted into `group` for `ttl` from the store's
    /// now, in one call whatever their number; fails `Lost` when the group
    /// expired (its leases with it). Only called when
    /// [`Capabilities::groups`] says the store renews by group.
    async fn renew_group(&self, group: GroupId, ttl: Duration) -> Result<()> {
        let _ = (group, ttl);
        Err(crate::error::Error::new(
            crate::error::ErrorKind::Internal,
            "this store does not renew leases by group",
        ))
    }

    /// Tells the losses of leases granted into `group` from now on to
    /// `sink`, by lease id, once each lease's holder listened on its
    /// receiver; the holder puts the lease where the sink finds it first.
    /// A store that does not (the default) tells each loss on the lease's
    /// own channel.
    fn tell_group_losses(&self, group: GroupId, sink: LossSink) {
        let _ = (group, sink);
    }

    /// Lets a lease go by its id; the next in line is granted at once.
    async fn release(&self, lease: LeaseId) -> Result<()>;

    /// [`Driver::release`] for a caller that bounds the wait itself (a
    /// holding's end waits no longer than the holder's deadline): a store
    /// whose release keeps a timer of its own may leave it out. The
    /// default is `release`.
    fn release_bounded_by_caller(
        &self,
        lease: LeaseId,
    ) -> futures::future::BoxFuture<'_, Result<()>> {
        self.release(lease)
    }

    /// Withdraws a waiting request; a grant that raced the give-up is released.
    async fn give_up(&self, request: RequestId) -> Result<GiveUp>;

    /// The holders of lock `lock` (or of every lock), sorted by lock and key.
    async fn holders(&self, lock: Option<&str>) -> Result<Vec<HolderInfo>>;

    /// The holder of one key and how many wait for it, from a
    /// linearizable read of the store (WHO-02); `None` when nobody holds it.
    async fn holder(&self, name: &KeyName) -> Result<Option<HolderInfo>>;

    /// Acquires a slot (SLOT-01); every change is one atomic update of one
    /// slot stamped by the store's clock (SLOT-03). A retried acquire by the
    /// same owner returns the lease it got.
    async fn slot_acquire(&self, request: SlotRequest) -> Result<AcquireResult>;

    /// Renews a slot lease for `ttl` (SLOT-04); `None` when it is no longer held as named.
    async fn slot_renew(&self, lease: &SlotLease, ttl: Duration) -> Result<Option<SlotLease>>;

    /// Releases a slot lease, raising the slot's floor to what it issued (SLOT-05).
    async fn slot_release(&self, lease: &SlotLease, last_issued: u64) -> Result<bool>;

    /// Closes the store: every lease it gave ends (`Closed`), every waiter fails.
    async fn close(&self);
}
