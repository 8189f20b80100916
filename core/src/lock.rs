//! Locks: a named family of keys with its options, and holding a key while a
//! function runs.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::driver::HolderInfo;
use crate::duration;
use crate::engine::{self, Acquired, HoldOptions, Holding, StoreLink};
use crate::error::{Error, ErrorKind, Result};
use crate::group::Group;
use crate::hashed::HashSet;
use crate::ids::RequestId;
use crate::lease::Lease;
use crate::names;
use crate::renewal::Renewal;
use crate::runtime;
use crate::store::Store;
use crate::table::{HoldRequest, KeyName};

/// The options of a lock, set before [`LockBuilder::open`].
///
/// ```
/// use std::time::Duration;
/// let store = leasehold::Store::memory();
/// let lock = store
///     .lock("migrations")
///     .ttl(Duration::from_secs(30))
///     .max_hold(Duration::from_secs(600))
///     .wait(Duration::from_secs(5))
///     .open()?;
/// assert_eq!(lock.ttl(), Duration::from_secs(30));
/// # Ok::<(), leasehold::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct LockBuilder {
    store: Store,
    name: String,
    ttl: Duration,
    max_hold: Option<Duration>,
    wait: Option<Duration>,
    margin: Option<Duration>,
}

impl LockBuilder {
    pub(crate) fn new(store: Store, name: &str) -> LockBuilder {
        LockBuilder {
            store,
            name: name.to_owned(),
            ttl: duration::DEFAULT_TTL,
            max_hold: None,
            wait: None,
            margin: None,
        }
    }

    /// How long a lease lasts without renewal: 1 s to 1 h, 10 s by default (LOCK-13).
    pub fn ttl(mut self, ttl: Duration) -> LockBuilder {
        self.ttl = ttl;
        self
    }

    /// The store revokes a lease this long after its grant, whatever its renewals (LOCK-12).
    pub fn max_hold(mut self, max_hold: Duration) -> LockBuilder {
        self.max_hold = Some(max_hold);
        self
    }

    /// The longest time a hold waits in line (LOCK-18); unbounded by default.
    pub fn wait(mut self, wait: Duration) -> LockBuilder {
        self.wait = Some(wait);
        self
    }

    /// How long before the store's expiry the holder declares its lease lost
    /// (LOCK-04): a tenth of the ttl by default, below half the ttl.
    pub fn margin(mut self, margin: Duration) -> LockBuilder {
        self.margin = Some(margin);
        self
    }

    /// Checks the options and opens the lock. Nothing is sent to the store.
    pub fn open(self) -> Result<Lock> {
        names::check("lock name", &self.name)?;
        let ttl = duration::check_ttl("ttl", self.ttl)?;
        let max_hold = duration::check_max_hold(ttl, self.max_hold)?;
        let margin = duration::check_margin(
            ttl,
            self.margin.unwrap_or_else(|| duration::default_margin(ttl)),
        )?;
        Ok(Lock {
            opened: Arc::new(Opened {
                store: self.store,
                name: self.name.into(),
                ttl,
                max_hold,
                wait: self.wait,
                margin,
                group: OnceLock::new(),
            }),
        })
    }
}

/// What every hold of a lock on its store needs.
struct Terms {
    link: Arc<StoreLink>,
    renewal: Option<Renewal>,
    group: Option<Arc<Group>>,
}

impl Terms {
    /// Starts holding what a hold got. Not an `async fn`: one would keep a
    /// second copy of the arguments in the hold's future.
    fn start(
        &self,
        name: KeyName,
        acquired: Acquired,
    ) -> impl Future<Output = Result<Holding>> + Send + 'static {
        Holding::start(
            self.link.clone(),
            name,
            acquired,
            self.renewal,
            self.group.clone(),
        )
    }
}

/// A named family of keys with its options. Cloning is cheap: a clone
/// shares the lock's one allocation (a binding clones it into every call).
#[derive(Debug, Clone)]
pub struct Lock {
    opened: Arc<Opened>,
}

/// What an opened lock keeps, shared by its clones.
#[derive(Debug)]
struct Opened {
    store: Store,
    name: Arc<str>,
    ttl: Duration,
    max_hold: Option<Duration>,
    wait: Option<Duration>,
    margin: Duration,
    /// The renewal group of its leases, once a hold needed it.
    group: OnceLock<Arc<Group>>,
}

impl Lock {
    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.opened.name
    }

    /// The ttl of its leases.
    pub fn ttl(&self) -> Duration {
        self.opened.ttl
    }

    /// Its maxHold, if set.
    pub fn max_hold(&self) -> Option<Duration> {
        self.opened.max_hold
    }

    /// Its bound on waiting in line, if set.
    pub fn wait(&self) -> Option<Duration> {
        self.opened.wait
    }

    /// The holder's margin before the store's expiry.
    pub fn margin(&self) -> Duration {
        self.opened.margin
    }

    /// Who holds `key` now, from a linearizable read of the store
    /// (WHO-02): the holder's identity, fence, how long it has held the
    /// key, how long the store keeps it unless renewed, and how many wait;
    /// `None` when nobody holds it. A connection admitted only to read may
    /// ask.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> leasehold::Result<()> {
    /// use leasehold::{MemoryOptions, Identity, Store};
    /// let store = Store::memory_with(MemoryOptions::default().identity(Identity::new("api-7")?));
    /// let lock = store.lock("summaries").open()?;
    /// assert!(lock.holder("chat-1").await?.is_none());
    /// let held = lock.begin("chat-1", &Default::default()).await?;
    /// let holder = lock.holder("chat-1").await?.expect("held");
    /// assert_eq!((holder.identity.as_str(), holder.fence), ("api-7", held.lease().fence()));
    /// # held.end().await
    /// # }
    /// ```
    pub async fn holder(&self, key: &str) -> Result<Option<HolderInfo>> {
        names::check("key", key)?;
        let store = self.opened.store.inner();
        store.check_open()?;
        let name = KeyName::new(self.opened.name.clone(), key);
        store.driver.holder(&name).await
    }

    /// What every hold of this lock on its store needs: the driver, the
    /// renewal and, where the store renews by group, the lock's group.
    fn terms(&self) -> Result<Terms> {
        let store = self.opened.store.inner();
        store.check_open()?;
        let link = store.link.clone();
        let driver = &link.driver;
        let capabilities = driver.capabilities();
        let renewal = capabilities.renewal.then_some(Renewal {
            ttl: self.opened.ttl,
            margin: self.opened.margin,
        });
        let group = renewal.filter(|_| capabilities.groups).map(|r| {
            self.opened
                .group
                .get_or_init(|| store.groups.get(r, driver, &link.runtime))
                .clone()
        });
        Ok(Terms {
            link,
            renewal,
            group,
        })
    }

    /// The request for `key`, waiting in line if `queue`.
    fn request(&self, terms: &Terms, key: &str, queue: bool) -> HoldRequest {
        HoldRequest {
            name: KeyName::new(self.opened.name.clone(), key),
            request_id: RequestId::random(),
            ttl: terms.renewal.map(|r| r.ttl),
            max_hold: self.opened.max_hold,
            queue,
            group: terms.group.as_ref().map(|g| g.id()),
        }
    }

    /// Asks for `key`, waiting in line unless `queue` is false; `Ok(None)`:
    /// the key is held and the call did not wait.
    async fn start(
        &self,
        key: &str,
        queue: bool,
        options: &HoldOptions,
    ) -> Result<Option<Holding>> {
        names::check("key", key)?;
        let terms = self.terms()?;
        let request = self.request(&terms, key, queue);
        let wait = options.wait.or(self.opened.wait);
        let Some(acquired) = engine::acquire(
            &terms.link.driver,
            &terms.link.runtime,
            &request,
            wait,
            options.cancel.as_ref(),
        )
        .await?
        else {
            return Ok(None);
        };
        terms.start(request.name, acquired).await.map(Some)
    }

    /// Waits in line for every key of `keys` at once and holds them all,
    /// each a lease of its own with its own fence, deadline and loss, in
    /// the order asked (LOCK-22). On the server store one frame asks for
    /// hundreds of keys and the server grants them in one pass. All or
    /// none: when one key cannot be had (the wait bound runs out, the call
    /// is cancelled, the store fails), the call fails and releases every
    /// lease it took. A key named twice fails `InvalidArgument`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> leasehold::Result<()> {
    /// let store = leasehold::Store::memory();
    /// let shards = store.lock("shards").open()?;
    /// let keys: Vec<String> = (0..100).map(|i| format!("shard-{i}")).collect();
    /// let held = shards.begin_many(&keys, &Default::default()).await?;
    /// assert_eq!(held.len(), 100);
    /// for holding in held {
    ///     holding.end().await?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn begin_many<K: AsRef<str>>(
        &self,
        keys: &[K],
        options: &HoldOptions,
    ) -> Result<Vec<Holding>> {
        let mut asked = HashSet::with_capacity_and_hasher(keys.len(), Default::default());
        for key in keys {
            let key = key.as_ref();
            names::check("key", key)?;
            if !asked.insert(key) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("key {key:?} is asked for twice"),
                ));
            }
        }
        let terms = self.terms()?;
        let requests = keys
            .iter()
            .map(|key| self.request(&terms, key.as_ref(), true))
            .collect();
        engine::acquire_many(
            &terms.link.driver,
            &terms.link.runtime,
            requests,
            options.wait.or(self.opened.wait),
            options.cancel.as_ref(),
            |name, acquired| terms.start(name, acquired),
        )
        .await
    }

    /// Waits in line for `key` and holds it until the returned [`Holding`]
    /// ends or drops: the building block of `hold` for callers (bindings)
    /// whose held code is not a Rust closure.
    pub async fn begin(&self, key: &str, options: &HoldOptions) -> Result<Holding> {
        self.start(key, true, options)
            .await?
            .ok_or_else(|| Error::new(ErrorKind::Internal, "a waiting hold returned no lease"))
    }

    /// Holds `key` if it is free, without waiting (LOCK-17).
    pub async fn try_begin(&self, key: &str) -> Result<Option<Holding>> {
        self.start(key, false, &HoldOptions::default()).await
    }

    /// Holds `key` while the future `f` makes runs, on tokio. The lease is
    /// renewed in the background where the store needs it (LOCK-06) and
    /// released when the future completes, fails or is dropped (LOCK-11).
    /// If the lease was lost meanwhile, the result is `Lost` even when the
    /// future succeeded (LOCK-10); `lease.lost_signal()` says so at once (LOCK-09).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> leasehold::Result<()> {
    /// let store = leasehold::Store::memory();
    /// let lock = store.lock("summaries").open()?;
    /// let fence = lock.hold_async("chat-1", |lease| async move { Ok::<_, leasehold::Error>(lease.fence()) }).await?;
    /// assert!(fence > 0);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn hold_async<F, Fut, T, E>(&self, key: &str, f: F) -> Result<T, E>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.hold_async_with(key, &HoldOptions::default(), f).await
    }

    /// [`Lock::hold_async`] with a per-call wait bound or cancellation token.
    pub async fn hold_async_with<F, Fut, T, E>(
        &self,
        key: &str,
        options: &HoldOptions,
        f: F,
    ) -> Result<T, E>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let holding = self.begin(key, options).await?;
        if let Some(lost) = lost_before_start(&holding) {
            return holding.finish(Err(E::from(lost))).await;
        }
        let outcome = f(holding.lease().clone()).await;
        holding.finish(outcome).await
    }

    /// Runs `f` holding `key` if it is free now; `Ok(None)` and nothing runs
    /// when it is held (LOCK-17).
    pub async fn try_hold_async<F, Fut, T, E>(&self, key: &str, f: F) -> Result<Option<T>, E>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let Some(holding) = self.try_begin(key).await? else {
            return Ok(None);
        };
        if let Some(lost) = lost_before_start(&holding) {
            return holding.finish(Err(E::from(lost))).await;
        }
        let outcome = f(holding.lease().clone()).await;
        holding.finish(outcome).await.map(Some)
    }

    /// Holds `key` while `f` runs on this thread, blocking while in line.
    /// Everything [`Lock::hold_async`] promises holds here; a panic in `f`
    /// releases the lease and goes on unwinding. Must not be called from
    /// async code (it fails `InvalidArgument` there: use `hold_async`).
    ///
    /// ```
    /// let store = leasehold::Store::memory();
    /// let lock = store.lock("summaries").open()?;
    /// lock.hold("chat-1", |lease| {
    ///     if lease.lost() {
    ///         return Err(leasehold::Error::new(leasehold::ErrorKind::Lost, "late"));
    ///     }
    ///     Ok(())
    /// })?;
    /// # Ok::<(), leasehold::Error>(())
    /// ```
    pub fn hold<F, T, E>(&self, key: &str, f: F) -> Result<T, E>
    where
        F: FnOnce(&Lease) -> Result<T, E>,
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.hold_with(key, &HoldOptions::default(), f)
    }

    /// [`Lock::hold`] with a per-call wait bound or cancellation token.
    pub fn hold_with<F, T, E>(&self, key: &str, options: &HoldOptions, f: F) -> Result<T, E>
    where
        F: FnOnce(&Lease) -> Result<T, E>,
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let holding = self.block_on(self.begin(key, options))?;
        if let Some(lost) = lost_before_start(&holding) {
            return self.block_on(holding.finish(Err(E::from(lost))));
        }
        let outcome = f(holding.lease());
        self.block_on(holding.finish(outcome))
    }

    /// Runs `f` holding `key` if it is free now, on this thread; `Ok(None)`
    /// and nothing runs when it is held (LOCK-17).
    pub fn try_hold<F, T, E>(&self, key: &str, f: F) -> Result<Option<T>, E>
    where
        F: FnOnce(&Lease) -> Result<T, E>,
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let Some(holding) = self.block_on(self.try_begin(key))? else {
            return Ok(None);
        };
        if let Some(lost) = lost_before_start(&holding) {
            return self.block_on(holding.finish(Err(E::from(lost))));
        }
        let outcome = f(holding.lease());
        self.block_on(holding.finish(outcome)).map(Some)
    }

    /// Holds every key of `keys` at once ([`Lock::begin_many`], all or
    /// none) while the future `f` makes runs, on tokio, and ends them all
    /// when it completes, fails or is dropped (LOCK-22). `f` gets the leases
    /// in the order of `keys`; each is renewed and can be lost on its own,
    /// and the result is `Lost` if any was lost meanwhile (LOCK-10).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> leasehold::Result<()> {
    /// let store = leasehold::Store::memory();
    /// let shards = store.lock("shards").open()?;
    /// let fences = shards
    ///     .hold_many_async(&["s1", "s2"], |leases| async move {
    ///         Ok::<_, leasehold::Error>(leases.iter().map(|l| l.fence()).collect::<Vec<_>>())
    ///     })
    ///     .await?;
    /// assert_eq!(fences.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn hold_many_async<K, F, Fut, T, E>(&self, keys: &[K], f: F) -> Result<T, E>
    where
        K: AsRef<str>,
        F: FnOnce(Vec<Lease>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.hold_many_async_with(keys, &HoldOptions::default(), f)
            .await
    }

    /// [`Lock::hold_many_async`] with a per-call wait bound or cancellation token.
    pub async fn hold_many_async_with<K, F, Fut, T, E>(
        &self,
        keys: &[K],
        options: &HoldOptions,
        f: F,
    ) -> Result<T, E>
    where
        K: AsRef<str>,
        F: FnOnce(Vec<Lease>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let holdings = self.begin_many(keys, options).await?;
        if let Some(lost) = holdings.iter().find_map(lost_before_start) {
            return Holding::finish_all(holdings, Err(E::from(lost))).await;
        }
        let leases = holdings.iter().map(|h| h.lease().clone()).collect();
        let outcome = f(leases).await;
        Holding::finish_all(holdings, outcome).await
    }

    /// Holds every key of `keys` at once while `f` runs on this thread, as
    /// [`Lock::hold_many_async`] does; must not be called from async code.
    pub fn hold_many<K, F, T, E>(&self, keys: &[K], f: F) -> Result<T, E>
    where
        K: AsRef<str>,
        F: FnOnce(&[Lease]) -> Result<T, E>,
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let holdings = self.block_on(self.begin_many(keys, &HoldOptions::default()))?;
        if let Some(lost) = holdings.iter().find_map(lost_before_start) {
            return self.block_on(Holding::finish_all(holdings, Err(E::from(lost))));
        }
        let leases: Vec<Lease> = holdings.iter().map(|h| h.lease().clone()).collect();
        let outcome = f(&leases);
        self.block_on(Holding::finish_all(holdings, outcome))
    }

    fn block_on<T, E: From<Error>>(&self, fut: impl Future<Output = Result<T, E>>) -> Result<T, E> {
        if runtime::in_async_context() {
            return Err(E::from(Error::new(
                ErrorKind::InvalidArgument,
                "the blocking hold was called from async code; use hold_async",
            )));
        }
        self.opened.store.inner().runtime.block_on(fut)
    }
}

/// Why the held function must not start: its lease was lost between the
/// grant and now (its holder deadline came while the process was frozen, or
/// before its renewal loop ran; LOCK-04). Then nothing runs and the hold fails `Lost`.
fn lost_before_start(holding: &Holding) -> Option<Error> {
    holding.lease().lost().then(|| {
        Error::new(
            ErrorKind::Lost,
            "the lease was lost before the held function could start",
        )
    })
}
