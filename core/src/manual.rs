//! Manual leases: acquired, extended and released by the caller, with no
//! background renewal, and with a fence (MANUAL-07).

use std::sync::Arc;
use std::time::Duration;

use crate::driver::Driver;
use crate::error::{Error, ErrorKind, Result};
use crate::ids::LeaseId;
use crate::loss::LossReason;

/// The lock name under which the store keeps manual leases, apart from
/// every lock's keys (a lock name is never empty).
pub(crate) const MANUAL_LOCK: &str = "";

/// Whether a manual lease is still held, released, or lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ManualStatus {
    Held,
    Released,
    /// Lost; `reported` once a `release` has said so.
    Lost {
        reason: LossReason,
        reported: bool,
    },
}

#[derive(Debug)]
struct Inner {
    driver: Arc<dyn Driver>,
    name: String,
    lease_id: LeaseId,
    fence: u64,
    /// Held across the store call, so that concurrent calls see each other's outcome.
    state: tokio::sync::Mutex<ManualStatus>,
}

impl std::fmt::Debug for dyn Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Driver")
    }
}

/// A lease the caller keeps itself (the manual API's `Lease`). Cloning shares it,
/// and it is safe to use from several threads or tasks at once (MANUAL-06).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> leasehold::Result<()> {
/// use std::time::Duration;
/// let store = leasehold::Store::memory();
/// let lease = store.try_acquire("catalog-refresh", Duration::from_secs(60)).await?.expect("free");
/// lease.extend(Duration::from_secs(60)).await?;
/// lease.release().await?;
/// lease.release().await?; // a confirmed release: later calls do nothing
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ManualLease {
    inner: Arc<Inner>,
}

impl ManualLease {
    pub(crate) fn new(
        driver: Arc<dyn Driver>,
        name: &str,
        lease_id: LeaseId,
        fence: u64,
    ) -> ManualLease {
        ManualLease {
            inner: Arc::new(Inner {
                driver,
                name: name.to_owned(),
                lease_id,
                fence,
                state: tokio::sync::Mutex::new(ManualStatus::Held),
            }),
        }
    }

    /// The lease's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The fence, with LOCK-02's guarantee (MANUAL-07).
    pub fn fence(&self) -> u64 {
        self.inner.fence
    }

    /// Sets the expiry to now + `d` (it does not add `d` to the old expiry).
    /// Fails `Lost` when the lease is lost or released, `InvalidTtl` for a `d`
    /// outside 1 s to 1 h (MANUAL-03). Any other failure leaves the lease as it was.
    pub async fn extend(&self, d: Duration) -> Result<()> {
        crate::duration::check_ttl("the extension", d)?;
        let mut state = self.inner.state.lock().await;
        match *state {
            ManualStatus::Held => {}
            ManualStatus::Released => {
                return Err(Error::new(ErrorKind::Lost, "the lease was released"))
            }
            ManualStatus::Lost { reason, .. } => return Err(Error::lost(reason)),
        }
        match self.inner.driver.renew(self.inner.lease_id, Some(d)).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == ErrorKind::Lost => {
                *state = ManualStatus::Lost {
                    reason: e.loss_reason().unwrap_or(LossReason::Unknown),
                    reported: false,
                };
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Removes the lease if its id still owns the key (MANUAL-04). If it was
    /// lost, the first release fails `Lost` and touches no newer holder;
    /// after a confirmed release or loss, later calls do nothing and succeed.
    /// A store failure leaves the call retryable.
    pub async fn release(&self) -> Result<()> {
        let mut state = self.inner.state.lock().await;
        match *state {
            ManualStatus::Released | ManualStatus::Lost { reported: true, .. } => return Ok(()),
            ManualStatus::Lost {
                reason,
                reported: false,
            } => {
                *state = ManualStatus::Lost {
                    reason,
                    reported: true,
                };
                return Err(Error::lost(reason));
            }
            ManualStatus::Held => {}
        }
        match self.inner.driver.release(self.inner.lease_id).await {
            Ok(()) => {
                *state = ManualStatus::Released;
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::Lost => {
                *state = ManualStatus::Lost {
                    reason: e.loss_reason().unwrap_or(LossReason::Unknown),
                    reported: true,
                };
                Err(e)
            }
            Err(e) => Err(e),
        }
    }
}
