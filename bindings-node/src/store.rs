//! Stores: the embedded one, the server store or etcd over a connection, manual
//! leases, slot namespaces, ID generators and closing.

use leasehold::give_up;
use leasehold::Store;
use leasehold_bridge::options;
use napi::bindgen_prelude::BigInt;
use napi::Env;
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::cancel::Canceller;
use crate::durations::{self, JsDuration};
use crate::errors::{thrown, Thrown};
use crate::idgen::{NativeIdGenerator, NativeIdLayout};
use crate::lock::{hold_options, NativeLock, OpenLock};
use crate::manual::NativeManualLease;
use crate::promise::{self, Eventually};
use crate::slots::NativeSlots;

/// The error message of a `connect` given up by its canceller.
const GAVE_UP_CONNECTING: &str = "gave up connecting to the store";

/// The error message of a `tryAcquire` given up by its canceller.
const GAVE_UP_TRYING: &str = "gave up trying for the lease";

/// The error message of a `holders` given up by its canceller.
const GAVE_UP_LISTING: &str = "gave up listing the holders";

/// The error message of an `ids` given up by its canceller.
const GAVE_UP_OPENING_IDS: &str =
    "gave up opening the ID generator; a slot it leased meanwhile is released";

/// A store of leases (`leasehold::Store`), and the runtime its calls run on.
#[napi]
pub struct NativeStore {
    store: Store,
    runtime: Handle,
}

impl NativeStore {
    /// Wraps a core store whose calls run on `runtime`.
    pub(crate) fn new(store: Store, runtime: Handle) -> NativeStore {
        NativeStore { store, runtime }
    }
}

/// The embedded store, in this process (LOCK-19).
#[napi(catch_unwind)]
pub fn memory() -> NativeStore {
    let runtime = promise::process_runtime();
    let _entered = runtime.enter();
    NativeStore::new(Store::memory(), runtime.clone())
}

/// The options of [`connect`] (`leasehold::remote::ConnectOptions`), as
/// `lib/store.js` checked them; `null` or absent: not given.
#[napi(object)]
pub struct NativeConnectOptions {
    /// The token the server's tokens file gives a role (LOCK-14).
    pub token: Option<String>,
    /// PEM certificates to trust for TLS.
    pub ca_pem: Option<String>,
    /// The etcd user.
    pub user: Option<String>,
    /// The etcd user's password.
    pub password: Option<String>,
    /// A PEM client certificate for TLS client authentication.
    pub client_cert_pem: Option<String>,
    /// The PEM private key of `client_cert_pem`.
    pub client_key_pem: Option<String>,
    /// Opens an etcd older than DIST-08's minimum versions.
    pub accept_old_etcd: Option<bool>,
    /// How long one connection attempt may take.
    pub connect_timeout: Option<JsDuration>,
    /// Who this client is (WHO-01); `hostname:pid` when `None` or empty.
    pub identity: Option<String>,
}

/// Connects to the store at `url`: the server store (`leasehold://host:port`,
/// or `leaseholds://` for TLS), etcd (`etcd://h1:2379,h2:2379/PREFIX`, or
/// `etcds://`; DIST-01) or PostgreSQL (`postgres://user@h1,h2/db`; PG-01). When `cancel` fires first, the call stops waiting
/// and fails `CANCELLED`; a store that connects later is closed at once.
#[napi(catch_unwind)]
pub fn connect<'env>(
    env: &'env Env,
    url: String,
    options: NativeConnectOptions,
    cancel: Option<&Canceller>,
) -> napi::Result<Eventually<'env, NativeStore>> {
    let timeout = durations::optional("connectTimeout", options.connect_timeout);
    let cancel = cancel.map(Canceller::token);
    let runtime = promise::process_runtime();
    let connecting = async move {
        let core = leasehold_bridge::connect_options!(
            options,
            accept_old_etcd: options.accept_old_etcd.unwrap_or(false),
            connect_timeout: timeout?
        );
        Store::connect(&url, core.into()).await
    };
    promise::spawn(env, &runtime.clone(), async move {
        let store = give_up::unless_given_up(
            cancel,
            &runtime,
            GAVE_UP_CONNECTING,
            connecting,
            give_up::dropped,
        )
        .await?;
        Ok(NativeStore::new(store, runtime))
    })
}

/// The options of a slot namespace (`leasehold::slots::SlotsBuilder`);
/// `null` or absent: the core's default.
#[napi(object)]
pub struct SlotsOptions {
    /// The slots are `[0, limit)`.
    pub limit: Option<u32>,
    /// The ttl of the leases.
    pub ttl: Option<JsDuration>,
    /// How far a lease's ceiling lies beyond its expiry.
    pub tolerance: Option<JsDuration>,
    /// What a node number adds to the slot.
    pub offset: Option<u32>,
    /// How long before a held slot's expiry its holder declares it lost.
    pub margin: Option<JsDuration>,
    /// How long one acquire, renew or release may take.
    pub timeout: Option<JsDuration>,
}

/// The options of an ID generator (`leasehold::idgen::IdsBuilder`), as
/// `lib/store.js` checked them; absent: the core's default.
#[napi(object)]
pub struct IdsOptions {
    /// The namespace's slots are `[0, limit)`.
    pub limit: Option<u32>,
    /// What a node number adds to the slot.
    pub offset: Option<u32>,
    /// The ttl of the slot lease.
    pub ttl: Option<JsDuration>,
    /// How far the lease's ceiling lies beyond its expiry.
    pub tolerance: Option<JsDuration>,
    /// How long one slot call may take.
    pub timeout: Option<JsDuration>,
    /// How far ahead of the store's clock IDs may be issued.
    pub max_lead: Option<JsDuration>,
    /// The owner key the slot is leased under.
    pub owner_key: Option<String>,
    /// The slot to try first.
    pub preferred: Option<u32>,
}

/// One holder of a store, as `store.holders()` lists it and
/// `lock.holder(key)` answers it (WHO-02).
#[napi(object)]
pub struct HolderInfo {
    /// The lock's name (empty for manual leases).
    pub lock: String,
    /// The key (or the manual lease's name).
    pub key: String,
    /// The holder's fence.
    pub fence: BigInt,
    /// Milliseconds since the grant.
    pub held_for: f64,
    /// Milliseconds before the store lets the lease go unless renewed; `null`: not by time.
    pub expires_in: Option<f64>,
    /// The identity of the store handle that took the lease (WHO-01).
    pub identity: String,
    /// How many requests wait in the key's line.
    pub waiting: u32,
}

impl From<leasehold::driver::HolderInfo> for HolderInfo {
    fn from(h: leasehold::driver::HolderInfo) -> HolderInfo {
        HolderInfo {
            lock: h.lock,
            key: h.key,
            fence: BigInt::from(h.fence),
            held_for: durations::millis(h.held_for),
            expires_in: h.expires_in.map(durations::millis),
            identity: h.identity,
            waiting: u32::try_from(h.waiting).unwrap_or(u32::MAX),
        }
    }
}

#[napi]
impl NativeStore {
    /// Opens the lock `name` with these options (LOCK-13); nothing is sent.
    #[napi(catch_unwind)]
    pub fn lock(
        &self,
        name: String,
        ttl: Option<JsDuration>,
        max_hold: Option<JsDuration>,
        wait: Option<JsDuration>,
        margin: Option<JsDuration>,
    ) -> Result<OpenLock, Thrown> {
        let open = || {
            let options = options::LockOptions {
                ttl: durations::optional("ttl", ttl)?,
                max_hold: durations::optional("maxHold", max_hold)?,
                wait: durations::optional("wait", wait)?,
                margin: durations::optional("margin", margin)?,
            };
            options.open(&self.store, &name)
        };
        open()
            .map(|lock| NativeLock::new(lock, self.runtime.clone()))
            .map_err(thrown)
    }

    /// Opens the slot namespace `name` with these options (`Store::slots`);
    /// nothing is sent. A namespace first used with another limit,
    /// tolerance or offset fails `NAMESPACE_MISMATCH` at its first acquire.
    #[napi(catch_unwind)]
    pub fn slots(&self, name: String, options: SlotsOptions) -> Result<NativeSlots, Thrown> {
        let open = || {
            let options =
                leasehold_bridge::slots_options!(options, layout: None, durations::optional);
            options.open(&self.store, &name)
        };
        open()
            .map(|slots| NativeSlots::new(slots, self.runtime.clone()))
            .map_err(thrown)
    }

    /// Opens an ID generator on the namespace `name` (`Store::ids`): leases
    /// a slot (a fresh owner instance) and issues above its floor. Fails
    /// `NOT_READY` when every slot is held, `NAMESPACE_MISMATCH` when the
    /// namespace was first used with another layout, limit, tolerance or
    /// offset, `INVALID_ARGUMENT` when the node numbers do not fit the
    /// layout. When `cancel` fires first, the call stops waiting for the
    /// store's answer and fails `CANCELLED` (a generator that opens later
    /// is dropped: sealed and released).
    #[napi(catch_unwind)]
    pub fn ids<'env>(
        &self,
        env: &'env Env,
        name: String,
        layout: Option<&NativeIdLayout>,
        options: IdsOptions,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, NativeIdGenerator>> {
        let configure = || {
            let options = leasehold_bridge::ids_options!(
                options,
                layout: layout.map(NativeIdLayout::layout),
                durations::optional
            );
            Ok(options.builder(&self.store, &name))
        };
        let builder: leasehold::Result<_> = configure();
        let cancel = cancel.map(Canceller::token);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let open = builder?.open();
            let ids = give_up::unless_given_up(
                cancel,
                &runtime,
                GAVE_UP_OPENING_IDS,
                open,
                give_up::dropped,
            )
            .await?;
            Ok(NativeIdGenerator::new(ids, runtime))
        })
    }

    /// Takes the manual lease `name` if it is free; `null` when it is held
    /// (MANUAL-01). When `cancel` fires first, the call stops waiting for
    /// the store's answer and fails `CANCELLED`; a lease that answers the
    /// request later is released at once.
    #[napi(catch_unwind)]
    pub fn try_acquire<'env>(
        &self,
        env: &'env Env,
        name: String,
        ttl: Option<JsDuration>,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, Option<NativeManualLease>>> {
        let store = self.store.clone();
        let ttl = durations::optional("ttl", ttl);
        let cancel = cancel.map(Canceller::token);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let ttl = ttl?.unwrap_or(leasehold::duration::DEFAULT_TTL);
            let attempt = async move { store.try_acquire(&name, ttl).await };
            let release = |lease: Option<leasehold::ManualLease>| async move {
                if let Some(lease) = lease {
                    let _ = lease.release().await;
                }
            };
            let lease =
                give_up::unless_given_up(cancel, &runtime, GAVE_UP_TRYING, attempt, release)
                    .await?;
            Ok(lease.map(|l| NativeManualLease::new(l, runtime)))
        })
    }

    /// Waits for the manual lease `name` (MANUAL-02), at most `wait`, until
    /// `cancel` fires.
    #[napi(catch_unwind)]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        name: String,
        ttl: Option<JsDuration>,
        wait: Option<JsDuration>,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, NativeManualLease>> {
        let store = self.store.clone();
        let ttl = durations::optional("ttl", ttl);
        let options = hold_options(wait, cancel);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let ttl = ttl?.unwrap_or(leasehold::duration::DEFAULT_TTL);
            let lease = store.acquire(&name, ttl, &options?).await?;
            Ok(NativeManualLease::new(lease, runtime))
        })
    }

    /// The holders of lock `lock` (or of every lock). When `cancel` fires
    /// first, the call stops waiting for the store's answer and fails `CANCELLED`.
    #[napi(catch_unwind)]
    pub fn holders<'env>(
        &self,
        env: &'env Env,
        lock: Option<String>,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, Vec<HolderInfo>>> {
        let store = self.store.clone();
        let cancel = cancel.map(Canceller::token);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let list = async move { store.holders(lock.as_deref()).await };
            let holders =
                give_up::unless_given_up(cancel, &runtime, GAVE_UP_LISTING, list, give_up::dropped)
                    .await?;
            Ok(holders
                .into_iter()
                .map(HolderInfo::from)
                .collect::<Vec<_>>())
        })
    }

    /// Closes the store: its leases end, its waiting calls fail `CLOSED`.
    #[napi(catch_unwind)]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Eventually<'env, ()>> {
        let store = self.store.clone();
        promise::spawn(env, &self.runtime, async move {
            store.close().await;
            Ok(())
        })
    }
}
