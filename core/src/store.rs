//! Stores: where leases come from.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt};
use tokio::runtime::Handle;

use crate::driver::{loss_channel, Driver, HolderInfo, LossReceiver, LossSender};
use crate::duration;
use crate::engine::{self, HoldOptions, StoreLink};
use crate::error::{Error, ErrorKind, Result};
use crate::group::Groups;
use crate::idgen::IdsBuilder;
use crate::ids::RequestId;
use crate::lock::LockBuilder;
use crate::loss::LossReason;
use crate::manual::{ManualLease, MANUAL_LOCK};
use crate::memory::{MemoryDriver, MemoryOptions};
use crate::names;
use crate::remote::{ConnectOptions, RemoteDriver};
use crate::runtime;
use crate::slots::SlotsBuilder;
use crate::table::{HoldRequest, KeyName};

pub(crate) struct StoreInner {
    pub(crate) driver: Arc<dyn Driver>,
    /// The driver and the runtime again, as the store's holdings share them.
    pub(crate) link: Arc<StoreLink>,
    /// The holdings the store's close ends that no driver tells of it (held
    /// slots), by id: each hears it through its loss channel, as a held key
    /// hears its driver.
    closing: Mutex<HashMap<u64, LossSender>>,
    next_closing: AtomicU64,
    /// The process that opened the store: a child after `fork()` may not use it.
    pid: u32,
    /// The embedded store's driver, for [`Store::memory_driver`].
    #[cfg(feature = "internals")]
    memory: Option<Arc<MemoryDriver>>,
    /// The renewal groups of the leases held through this handle.
    pub(crate) groups: Groups,
    pub(crate) runtime: Handle,
    closed: AtomicBool,
}

impl StoreInner {
    /// A loss channel on which the store's close says `Closed`, unless
    /// [`StoreInner::forget_close`] with the id comes first.
    pub(crate) fn watch_close(&self) -> (u64, LossReceiver) {
        let id = self.next_closing.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = loss_channel();
        self.closing().insert(id, tx);
        (id, rx)
    }

    /// Forgets the channel made as `id` (its holding ended).
    pub(crate) fn forget_close(&self, id: u64) {
        self.closing().remove(&id);
    }

    fn closing(&self) -> MutexGuard<'_, HashMap<u64, LossSender>> {
        self.closing.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.pid != crate::runtime::process_id() {
            return Err(Error::new(
                ErrorKind::Closed,
                "this store was opened before fork(); open a new store in the child process",
            ));
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::new(ErrorKind::Closed, "the store is closed"));
        }
        Ok(())
    }
}

impl Drop for StoreInner {
    fn drop(&mut self) {
        if self.pid == crate::runtime::process_id() && !self.closed.swap(true, Ordering::AcqRel) {
            let driver = self.driver.clone();
            self.runtime.spawn(async move { driver.close().await });
        }
    }
}

/// A store of leases. Cloning shares it; the last clone dropped closes it.
///
/// ```
/// let store = leasehold::Store::memory();
/// let lock = store.lock("summaries").open()?;
/// let held = lock.try_hold("chat-1", |lease| Ok::<_, leasehold::Error>(lease.fence()))?;
/// assert!(held.is_some());
/// # Ok::<(), leasehold::Error>(())
/// ```
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("capabilities", &self.inner.driver.capabilities())
            .finish()
    }
}

impl Store {
    /// An embedded store in this process: holders need no renewal (LOCK-19).
    pub fn memory() -> Store {
        Store::memory_with(MemoryOptions::default())
    }

    /// An embedded store with other options (a virtual clock, renewal on).
    pub fn memory_with(options: MemoryOptions) -> Store {
        let runtime = runtime::current_or_global();
        let driver = Arc::new(MemoryDriver::new(options, &runtime));
        #[cfg(feature = "internals")]
        {
            let mut store = Store::from_driver(driver.clone(), runtime);
            Arc::get_mut(&mut store.inner)
                .expect("a new store is not shared")
                .memory = Some(driver);
            store
        }
        #[cfg(not(feature = "internals"))]
        Store::from_driver(driver, runtime)
    }

    /// The server store at `url` (`leasehold://host:port`, or `leaseholds://`
    /// for TLS), a store on etcd (`etcd://h1:2379,h2:2379/PREFIX`, or
    /// `etcds://`; the core's feature `etcd`), or a store on PostgreSQL
    /// (`postgres://user@h1,h2/db`; the core's feature `postgres`), kept
    /// connected in the background.
    ///
    /// ```no_run
    /// # async fn f() -> leasehold::Result<()> {
    /// use leasehold::{remote::ConnectOptions, Store};
    /// let store = Store::connect("leasehold://127.0.0.1:7450", ConnectOptions::default().token("s3cret")).await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Boxed, so that the drivers are compiled here, once, rather than in
    /// every crate that awaits it (docs/architecture.md, "Where the code is
    /// compiled").
    pub fn connect(url: &str, options: ConnectOptions) -> BoxFuture<'_, Result<Store>> {
        Store::connect_driver(url, options).boxed()
    }

    async fn connect_driver(url: &str, mut options: ConnectOptions) -> Result<Store> {
        options.identity = Some(options.checked_identity()?.to_string());
        let runtime = runtime::current_or_global();
        if crate::connect::is_etcd_url(url) {
            #[cfg(feature = "etcd")]
            {
                let driver = crate::etcd::EtcdDriver::connect(url, options, &runtime).await?;
                return Ok(Store::from_driver(Arc::new(driver), runtime));
            }
            #[cfg(not(feature = "etcd"))]
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "this build of Leasehold has no etcd store (the core's cargo feature `etcd`)",
            ));
        }
        if crate::connect::is_postgres_url(url) {
            #[cfg(feature = "postgres")]
            {
                let driver =
                    crate::postgres::PostgresDriver::connect(url, options, &runtime).await?;
                return Ok(Store::from_driver(Arc::new(driver), runtime));
            }
            #[cfg(not(feature = "postgres"))]
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "this build of Leasehold has no PostgreSQL store (the core's cargo feature `postgres`)",
            ));
        }
        let driver = RemoteDriver::connect(url, options, &runtime).await?;
        Ok(Store::from_driver(Arc::new(driver), runtime))
    }

    /// The holders of lock `lock` (or of every lock): key, fence, age, time left.
    pub async fn holders(&self, lock: Option<&str>) -> Result<Vec<HolderInfo>> {
        self.inner.check_open()?;
        self.inner.driver.holders(lock).await
    }

    /// A store over any driver, whose background work runs on `runtime`.
    pub fn from_driver(driver: Arc<dyn Driver>, runtime: Handle) -> Store {
        Store {
            inner: Arc::new(StoreInner {
                link: Arc::new(StoreLink {
                    driver: driver.clone(),
                    runtime: runtime.clone(),
                }),
                driver,
                closing: Mutex::new(HashMap::new()),
                next_closing: AtomicU64::new(0),
                pid: crate::runtime::process_id(),
                #[cfg(feature = "internals")]
                memory: None,
                groups: Groups::default(),
                runtime,
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// The embedded store's driver, for inspecting its table; `None` for
    /// other stores. For the workspace's tests (feature `internals`; not a
    /// stable API).
    #[cfg(feature = "internals")]
    pub fn memory_driver(&self) -> Option<&MemoryDriver> {
        self.inner.memory.as_deref()
    }

    pub(crate) fn inner(&self) -> &StoreInner {
        &self.inner
    }

    /// The store's driver.
    pub fn driver(&self) -> &Arc<dyn Driver> {
        &self.inner.driver
    }

    /// The slot namespace `name`; set its options, then [`SlotsBuilder::open`] it.
    pub fn slots(&self, name: &str) -> SlotsBuilder {
        SlotsBuilder::new(self.clone(), name)
    }

    /// An ID generator on the slot namespace `name` (IDGEN); set its
    /// options, then [`IdsBuilder::open`] it to lease a slot.
    pub fn ids(&self, name: &str) -> IdsBuilder {
        IdsBuilder::new(self.clone(), name)
    }

    /// A lock named `name`; set its options, then [`LockBuilder::open`] it.
    pub fn lock(&self, name: &str) -> LockBuilder {
        LockBuilder::new(self.clone(), name)
    }

    /// Takes the manual lease `name` if nobody holds it; `Ok(None)` when
    /// another holder has it (MANUAL-01). `ttl`: 1 s to 1 h.
    pub async fn try_acquire(&self, name: &str, ttl: Duration) -> Result<Option<ManualLease>> {
        self.manual(name, ttl, false, &HoldOptions::default()).await
    }

    /// Waits for the manual lease `name` (MANUAL-02), pushed where the store
    /// pushes grants, polled with jittered backoff elsewhere. The wait has
    /// its own bound and cancellation in `options`; the ttl starts at the grant.
    pub async fn acquire(
        &self,
        name: &str,
        ttl: Duration,
        options: &HoldOptions,
    ) -> Result<ManualLease> {
        self.manual(name, ttl, true, options)
            .await?
            .ok_or_else(|| Error::new(ErrorKind::Internal, "a waiting acquire returned no lease"))
    }

    async fn manual(
        &self,
        name: &str,
        ttl: Duration,
        queue: bool,
        options: &HoldOptions,
    ) -> Result<Option<ManualLease>> {
        names::check("lease name", name)?;
        duration::check_ttl("ttl", ttl)?;
        self.inner.check_open()?;
        let driver = &self.inner.driver;
        let request = HoldRequest {
            name: KeyName::new(MANUAL_LOCK, name),
            request_id: RequestId::random(),
            ttl: Some(ttl),
            max_hold: None,
            queue,
            group: None,
        };
        let acquired = engine::acquire(
            driver,
            &self.inner.runtime,
            &request,
            options.wait,
            options.cancel.as_ref(),
        )
        .await?;
        Ok(acquired.map(|a| {
            let grant = a.granted.grant;
            ManualLease::new(driver.clone(), name, grant.lease_id, grant.fence)
        }))
    }

    /// Closes the store: every lease it gave ends (held keys and slots are
    /// lost, `Closed`, by the time it returns), every waiting call fails `Closed`.
    /// In a child process after `fork()` it does nothing (the store is the parent's).
    pub async fn close(&self) {
        if self.inner.pid != crate::runtime::process_id() {
            return;
        }
        self.inner.closed.store(true, Ordering::Release);
        self.inner.driver.close().await;
        let closing: Vec<LossSender> = self.inner.closing().drain().map(|(_, tx)| tx).collect();
        for tx in closing {
            tx.send(LossReason::Closed);
        }
    }
}
