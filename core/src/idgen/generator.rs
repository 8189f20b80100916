//! The generator a caller holds: a slot held in the background and the
//! issuer on it, opened by [`IdsBuilder`] and closed by sealing, then
//! releasing with the largest timestamp issued.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::WaitForCancellationFutureOwned;

use super::issuer::{error_of, Blocked, Issued, Issuer};
use super::layout::IdLayout;
use crate::clock::Clock;
use crate::error::{Error, ErrorKind, Result};
use crate::loss::LossReason;
use crate::slots::{HeldSlot, Owner, SlotHolding, SlotLease, MAX_LIMIT};
use crate::store::Store;

/// How far ahead of the store's clock a generator may issue unless set
/// otherwise: a tick's sequence used up borrows the next tick, and a floor
/// just ahead of the clock (a handoff) is issued above at once.
pub const DEFAULT_MAX_LEAD: Duration = Duration::from_secs(1);

/// The owner key of a generator that does not set one.
pub const DEFAULT_OWNER_KEY: &str = "leasehold-ids";

/// The options of an ID generator; [`IdsBuilder::open`] leases a slot.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> leasehold::Result<()> {
/// use leasehold::idgen::IdLayout;
/// let store = leasehold::Store::memory();
/// let ids = store.ids("order-ids").layout(IdLayout::js_safe()).open().await?;
/// let (a, b) = (ids.next()?, ids.next()?);
/// assert!(a < b && b < (1 << 53));
/// ids.close().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct IdsBuilder {
    store: Store,
    name: String,
    layout: IdLayout,
    limit: Option<u32>,
    offset: u32,
    ttl: Option<Duration>,
    tolerance: Option<Duration>,
    timeout: Option<Duration>,
    max_lead: Duration,
    owner_key: String,
    preferred: Option<u32>,
}

impl IdsBuilder {
    pub(crate) fn new(store: Store, name: &str) -> IdsBuilder {
        IdsBuilder {
            store,
            name: name.to_owned(),
            layout: IdLayout::DEFAULT,
            limit: None,
            offset: 0,
            ttl: None,
            tolerance: None,
            timeout: None,
            max_lead: DEFAULT_MAX_LEAD,
            owner_key: DEFAULT_OWNER_KEY.to_owned(),
            preferred: None,
        }
    }

    /// The bit layout (default 41/10/12 in ms), fixed by the namespace's first use.
    pub fn layout(mut self, layout: IdLayout) -> IdsBuilder {
        self.layout = layout;
        self
    }

    /// The namespace's slots are `[0, limit)`; default: as many as the
    /// layout's node bits hold above the offset (at most 65,536).
    pub fn limit(mut self, limit: u32) -> IdsBuilder {
        self.limit = Some(limit);
        self
    }

    /// What a node number adds to the slot (default 0).
    pub fn offset(mut self, offset: u32) -> IdsBuilder {
        self.offset = offset;
        self
    }

    /// The slot lease's ttl (as [`crate::slots::SlotsBuilder::ttl`]).
    pub fn ttl(mut self, ttl: Duration) -> IdsBuilder {
        self.ttl = Some(ttl);
        self
    }

    /// The slot lease's tolerance (as [`crate::slots::SlotsBuilder::tolerance`]).
    pub fn tolerance(mut self, tolerance: Duration) -> IdsBuilder {
        self.tolerance = Some(tolerance);
        self
    }

    /// How long one slot call may take (as [`crate::slots::SlotsBuilder::timeout`]).
    pub fn timeout(mut self, timeout: Duration) -> IdsBuilder {
        self.timeout = Some(timeout);
        self
    }

    /// How far ahead of the store's clock IDs may be issued (default 1 s;
    /// zero: never ahead).
    pub fn max_lead(mut self, max_lead: Duration) -> IdsBuilder {
        self.max_lead = max_lead;
        self
    }

    /// The owner key the generator leases its slot under (default
    /// [`DEFAULT_OWNER_KEY`]); every generator gets a fresh instance id.
    pub fn owner_key(mut self, key: &str) -> IdsBuilder {
        self.owner_key = key.to_owned();
        self
    }

    /// The slot to try first (SLOT-01).
    pub fn preferred(mut self, slot: u32) -> IdsBuilder {
        self.preferred = Some(slot);
        self
    }

    /// Leases a slot of the namespace and starts issuing above its floor.
    /// Fails `NotReady` (retryable) when every slot is held,
    /// `NamespaceMismatch` when the namespace was first used otherwise, and
    /// `InvalidArgument` when the node numbers do not fit the layout.
    pub async fn open(self) -> Result<IdGenerator> {
        self.layout.check()?;
        let room = self.layout.nodes().saturating_sub(u64::from(self.offset));
        let limit = match self.limit {
            Some(limit) => limit,
            None => u32::try_from(room.min(u64::from(MAX_LIMIT))).unwrap_or(MAX_LIMIT),
        };
        if u64::from(limit) > room {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "slot offset {} plus limit {limit} does not fit the {} node bits of ID layout {}",
                    self.offset,
                    self.layout.node_bits,
                    self.layout.describe()
                ),
            ));
        }
        let mut slots = self
            .store
            .slots(&self.name)
            .layout(self.layout)
            .limit(limit)
            .offset(self.offset);
        if let Some(ttl) = self.ttl {
            slots = slots.ttl(ttl);
        }
        if let Some(tolerance) = self.tolerance {
            slots = slots.tolerance(tolerance);
        }
        if let Some(timeout) = self.timeout {
            slots = slots.timeout(timeout);
        }
        let slots = slots.open()?;
        let owner = fresh_owner(&self.owner_key)?;
        let Some(holding) = slots.begin(&owner, self.preferred).await? else {
            return Err(Error::new(
                ErrorKind::NotReady,
                format!(
                    "every slot of ID namespace {:?} is held; retry when one is released",
                    self.name
                ),
            ));
        };
        let held = holding.held().clone();
        let lease = held.lease();
        let issuer = Issuer::new(
            self.layout,
            lease.node(),
            self.max_lead,
            held.cell().clone(),
            lease.floor(),
        );
        Ok(IdGenerator {
            inner: Arc::new(Generator {
                clock: self.store.driver().clock().clone(),
                issuer,
                held,
                holding: Mutex::new(Some(holding)),
            }),
        })
    }
}

/// The owner of a new generator: a fresh instance every time, since an
/// instance reused by a process that forgot what it issued would get its
/// old lease and floor back (SLOT-01) and issue its IDs again.
pub(crate) fn fresh_owner(key: &str) -> Result<Owner> {
    #[cfg(test)]
    if super::mutants::on(super::mutants::Mutant::ReuseOwnerInstance) {
        return Owner::with_instance(key, "reused");
    }
    Owner::new(key)
}

#[derive(Debug)]
struct Generator {
    clock: Clock,
    issuer: Issuer,
    held: HeldSlot,
    holding: Mutex<Option<SlotHolding>>,
}

impl Generator {
    fn take_holding(&self) -> Option<SlotHolding> {
        self.holding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Seals the issuer and records the largest timestamp it issued, for
    /// the release to pass on (IDGEN-02).
    fn seal(&self) {
        let last = self.issuer.seal();
        // Lost already: the store's floor for the next holder is the ceiling.
        let _ = self.held.issued(last);
    }
}

impl Drop for Generator {
    fn drop(&mut self) {
        if let Some(holding) = self.take_holding() {
            self.seal();
            drop(holding);
        }
    }
}

/// Issues unique 64-bit IDs on one slot lease of a namespace (IDGEN):
/// timestamps only in (floor, ceiling] of the lease and only before its
/// holder deadline, in the store's clock as the lease's answers showed it.
/// Cloning shares the generator: its clones issue from one counter.
///
/// Dropping the last clone seals it and releases its slot in the background;
/// [`IdGenerator::close`] does so and says how the release went.
#[derive(Debug, Clone)]
pub struct IdGenerator {
    inner: Arc<Generator>,
}

impl IdGenerator {
    fn blocked(&self, blocked: Blocked) -> Error {
        error_of(
            blocked,
            self.inner.issuer.layout(),
            self.inner.held.loss_reason(),
        )
    }

    fn issue(&self, want: u64) -> std::result::Result<Issued, Blocked> {
        self.inner.issuer.issue(self.inner.clock.now(), want)
    }

    /// The next ID, without waiting: `NotReady` when none can be issued yet
    /// (retryable), `Overflow` when the layout's time range is used up,
    /// `Lost` once the slot was lost or the generator closed (IDGEN-04).
    pub fn next(&self) -> Result<u64> {
        match self.issue(1) {
            Ok(issued) => Ok(self.inner.issuer.id_at(issued.first)),
            Err(blocked) => Err(self.blocked(blocked)),
        }
    }

    /// The next ID, waiting while none can be issued yet.
    pub async fn next_async(&self) -> Result<u64> {
        loop {
            match self.issue(1) {
                Ok(issued) => return Ok(self.inner.issuer.id_at(issued.first)),
                Err(Blocked::NotReady(wait)) => self.wait(wait).await,
                Err(blocked) => return Err(self.blocked(blocked)),
            }
        }
    }

    /// Fills `out` with as many IDs as can be issued now, in one step, and
    /// says how many (0 only for an empty `out`); fails as
    /// [`IdGenerator::next`] when none can.
    pub fn next_into(&self, out: &mut [u64]) -> Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let want = u64::try_from(out.len()).unwrap_or(u64::MAX);
        match self.issue(want) {
            Ok(issued) => {
                self.inner.issuer.write(issued, out);
                Ok(usize::try_from(issued.count).unwrap_or(out.len()))
            }
            Err(blocked) => Err(self.blocked(blocked)),
        }
    }

    /// `n` IDs, waiting while they cannot be issued yet.
    pub async fn take(&self, n: usize) -> Result<Vec<u64>> {
        let mut out = vec![0; n];
        let mut filled = 0;
        while filled < n {
            let want = u64::try_from(n - filled).unwrap_or(u64::MAX);
            match self.issue(want) {
                Ok(issued) => {
                    self.inner.issuer.write(issued, &mut out[filled..]);
                    filled += usize::try_from(issued.count).unwrap_or(n - filled);
                }
                Err(Blocked::NotReady(wait)) => self.wait(wait).await,
                Err(blocked) => return Err(self.blocked(blocked)),
            }
        }
        Ok(out)
    }

    /// Waits `wait`, or less if the slot is lost meanwhile.
    async fn wait(&self, wait: Duration) {
        let until = self.inner.clock.now() + wait;
        tokio::select! {
            _ = self.inner.clock.sleep_until(until) => {}
            _ = self.inner.held.lost_signal() => {}
        }
    }

    /// Seals the generator (nothing is issued after this, by any clone) and
    /// releases its slot, passing the start of the largest tick issued as
    /// the next holder's floor (IDGEN-02). Fails `Lost` if the slot was lost
    /// meanwhile; a second close does nothing.
    pub async fn close(&self) -> Result<()> {
        let Some(holding) = self.inner.take_holding() else {
            return Ok(());
        };
        self.inner.seal();
        holding.end().await
    }

    /// The layout.
    pub fn layout(&self) -> IdLayout {
        *self.inner.issuer.layout()
    }

    /// The node number every ID carries: the slot plus the namespace's offset.
    pub fn node(&self) -> u32 {
        self.inner.issuer.node()
    }

    /// The slot lease as last renewed.
    pub fn lease(&self) -> SlotLease {
        self.inner.held.lease()
    }

    /// The start of the largest tick issued so far (ms since the Unix epoch; 0: none).
    pub fn last_issued(&self) -> u64 {
        self.inner.issuer.last_issued_ms()
    }

    /// Whether the slot was lost; once true, nothing more is issued.
    pub fn lost(&self) -> bool {
        self.inner.held.lost()
    }

    /// Why the slot was lost, once it was.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.inner.held.loss_reason()
    }

    /// Completes when the slot is lost.
    pub fn lost_signal(&self) -> WaitForCancellationFutureOwned {
        self.inner.held.lost_signal()
    }
}
