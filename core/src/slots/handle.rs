//! The caller's side of slot leases: a namespace opened on a store, and its
//! three verbs, each bounded by a timeout that fails `Timeout` (SLOT-07).

use std::future::Future;
use std::time::Duration;

use super::holding::{HeldSlot, SlotHolding};
use super::{AcquireResult, NamespaceSpec, Owner, SlotLease, SlotRequest};
use crate::duration;
use crate::error::{Error, ErrorKind, Result};
use crate::idgen::IdLayout;
use crate::names;
use crate::store::Store;

/// The limit of a namespace that does not set one: 1024 slots (10 bits).
pub const DEFAULT_LIMIT: u32 = 1024;
/// The tolerance of a namespace that does not set one.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(1);
/// How long one slot call may take unless set otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The options of a slot namespace; [`SlotsBuilder::open`] checks them.
///
/// ```
/// use std::time::Duration;
/// let store = leasehold::Store::memory();
/// let slots = store
///     .slots("order-ids")
///     .limit(1024)
///     .ttl(Duration::from_secs(30))
///     .tolerance(Duration::from_secs(2))
///     .offset(0)
///     .open()?;
/// assert_eq!(slots.spec().limit, 1024);
/// # Ok::<(), leasehold::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SlotsBuilder {
    store: Store,
    name: String,
    spec: NamespaceSpec,
    ttl: Duration,
    margin: Option<Duration>,
    timeout: Duration,
}

impl SlotsBuilder {
    pub(crate) fn new(store: Store, name: &str) -> SlotsBuilder {
        SlotsBuilder {
            store,
            name: name.to_owned(),
            spec: NamespaceSpec {
                limit: DEFAULT_LIMIT,
                tolerance: DEFAULT_TOLERANCE,
                offset: 0,
                layout: IdLayout::default(),
            },
            ttl: duration::DEFAULT_TTL,
            margin: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The slots are `[0, limit)` (default 1024).
    pub fn limit(mut self, limit: u32) -> SlotsBuilder {
        self.spec.limit = limit;
        self
    }

    /// The bit layout of the namespace's IDs (default 41/10/12 ms), fixed by
    /// its first use like the limit.
    pub fn layout(mut self, layout: IdLayout) -> SlotsBuilder {
        self.spec.layout = layout;
        self
    }

    /// A lease expires this long after the store's now, unless renewed (1 s to 1 h; default 10 s).
    pub fn ttl(mut self, ttl: Duration) -> SlotsBuilder {
        self.ttl = ttl;
        self
    }

    /// A lease's ceiling lies this far beyond its expiry (default 1 s, at most 1 h).
    pub fn tolerance(mut self, tolerance: Duration) -> SlotsBuilder {
        self.spec.tolerance = tolerance;
        self
    }

    /// What a node number adds to the slot (default 0).
    pub fn offset(mut self, offset: u32) -> SlotsBuilder {
        self.spec.offset = offset;
        self
    }

    /// How long before a held slot's expiry its holder declares it lost
    /// ([`Slots::hold_async`], [`Slots::begin`]): a tenth of the ttl by
    /// default, below half the ttl.
    pub fn margin(mut self, margin: Duration) -> SlotsBuilder {
        self.margin = Some(margin);
        self
    }

    /// How long one acquire, renew or release may take before it fails
    /// `Timeout` (default 5 s, more than zero).
    pub fn timeout(mut self, timeout: Duration) -> SlotsBuilder {
        self.timeout = timeout;
        self
    }

    /// Checks the options. A namespace first used with other limit,
    /// tolerance or offset fails `NamespaceMismatch` at its first acquire.
    pub fn open(self) -> Result<Slots> {
        names::check("slot namespace", &self.name)?;
        duration::check_ttl("a slot ttl", self.ttl)?;
        let margin = duration::check_margin(
            self.ttl,
            self.margin
                .unwrap_or_else(|| duration::default_margin(self.ttl)),
        )?;
        self.spec.check()?;
        if self.timeout.is_zero() {
            return Err(Error::new(
                ErrorKind::InvalidTtl,
                "a slot timeout must be more than zero",
            ));
        }
        self.store.inner().check_open()?;
        Ok(Slots {
            store: self.store,
            name: self.name,
            spec: self.spec,
            ttl: self.ttl,
            margin,
            timeout: self.timeout,
        })
    }
}

/// A slot namespace opened on a store. Cloning shares the store.
#[derive(Debug, Clone)]
pub struct Slots {
    store: Store,
    name: String,
    spec: NamespaceSpec,
    ttl: Duration,
    margin: Duration,
    timeout: Duration,
}

impl Slots {
    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The limit, tolerance and offset this handle asks for.
    pub fn spec(&self) -> NamespaceSpec {
        self.spec
    }

    /// The ttl of this handle's leases.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The holder's margin before a held slot's expiry.
    pub fn margin(&self) -> Duration {
        self.margin
    }

    pub(super) fn store(&self) -> &Store {
        &self.store
    }

    async fn bounded<T>(&self, what: &str, call: impl Future<Output = Result<T>>) -> Result<T> {
        self.store.inner().check_open()?;
        match tokio::time::timeout(self.timeout, call).await {
            Ok(out) => out,
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "the store did not answer slot {what} within {}; its outcome is unknown",
                    duration::show(self.timeout)
                ),
            )),
        }
    }

    /// Acquires a slot for `owner` (SLOT-01): the one it holds already, else
    /// `preferred` if free, else the one its key held last if free, else the
    /// lowest free slot; [`AcquireResult::Exhausted`] when none is free.
    /// Repeating an acquire whose answer was lost returns the same lease.
    pub async fn acquire(&self, owner: &Owner, preferred: Option<u32>) -> Result<AcquireResult> {
        let request = SlotRequest {
            namespace: self.name.clone(),
            owner: owner.clone(),
            spec: self.spec,
            ttl: self.ttl,
            preferred,
        };
        let driver = self.store.driver();
        self.bounded("acquire", driver.slot_acquire(request)).await
    }

    /// Acquires a slot as [`Slots::acquire`] does and keeps it renewed until
    /// the returned [`SlotHolding`] ends or drops; `Ok(None)`: every slot is held.
    pub async fn begin(
        &self,
        owner: &Owner,
        preferred: Option<u32>,
    ) -> Result<Option<SlotHolding>> {
        let sent_at = self.store.driver().clock().now();
        Ok(match self.acquire(owner, preferred).await? {
            AcquireResult::Leased(lease) => Some(SlotHolding::start(self.clone(), lease, sent_at)),
            AcquireResult::Exhausted => None,
        })
    }

    /// Runs the future `f` makes while holding a slot for `owner`, renewed
    /// every ttl/3; `Ok(None)` and nothing runs when every slot is held.
    /// `f` records what it issues with [`HeldSlot::issued`]; the release
    /// passes the largest on as the next holder's floor (SLOT-05). If the
    /// slot was lost meanwhile (`held.lost_signal()` says so at once), the
    /// result is `Lost` even when the future succeeded.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> leasehold::Result<()> {
    /// use leasehold::slots::Owner;
    /// let store = leasehold::Store::memory();
    /// let slots = store.slots("order-ids").open()?;
    /// let node = slots
    ///     .hold_async(&Owner::new("orders")?, None, |held| async move {
    ///         held.issued(held.floor() + 1)?;
    ///         Ok::<_, leasehold::Error>(held.node())
    ///     })
    ///     .await?;
    /// assert_eq!(node, Some(0));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn hold_async<F, Fut, T, E>(
        &self,
        owner: &Owner,
        preferred: Option<u32>,
        f: F,
    ) -> std::result::Result<Option<T>, E>
    where
        F: FnOnce(HeldSlot) -> Fut,
        Fut: Future<Output = std::result::Result<T, E>>,
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let Some(holding) = self.begin(owner, preferred).await? else {
            return Ok(None);
        };
        let outcome = f(holding.held().clone()).await;
        holding.finish(outcome).await.map(Some)
    }

    /// Renews `lease` for this handle's ttl (SLOT-04); `None` when the
    /// slot's owner or fence no longer match.
    pub async fn renew(&self, lease: &SlotLease) -> Result<Option<SlotLease>> {
        let driver = self.store.driver();
        self.bounded("renew", driver.slot_renew(lease, self.ttl))
            .await
    }

    /// Releases `lease`, having issued timestamps up to `last_issued` (ms):
    /// the next holder's floor becomes `max(floor, min(last_issued,
    /// ceiling))` (SLOT-05). `false` when the owner or fence no longer match.
    pub async fn release(&self, lease: &SlotLease, last_issued: u64) -> Result<bool> {
        let driver = self.store.driver();
        self.bounded("release", driver.slot_release(lease, last_issued))
            .await
    }
}
