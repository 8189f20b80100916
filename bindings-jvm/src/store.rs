//! Stores: the embedded one, the server store or etcd over a connection,
//! manual leases and closing.

use std::sync::Arc;

use leasehold::give_up;
use leasehold::idgen::IdLayout;
use leasehold::remote::ConnectOptions;
use leasehold::{HoldOptions, ManualLease, Store};

use leasehold_bridge::{options, Cancel};

use crate::calls;
use crate::durations;
use crate::errors::NativeError;
use crate::idgen::{NativeIdGenerator, NativeIdLayout};
use crate::lock::NativeLock;
use crate::manual::NativeManualLease;
use crate::slots::NativeSlots;

/// The error message of a `connect` given up by its caller.
const GAVE_UP_CONNECTING: &str = "gave up connecting to the store";

/// The error message of a `tryAcquire` given up by its caller.
const GAVE_UP_TRYING: &str = "gave up trying for the lease";

/// A store of leases (`leasehold::Store`).
#[derive(uniffi::Object)]
pub struct NativeStore {
    store: Store,
}

impl NativeStore {
    /// Wraps a core store.
    pub(crate) fn new(store: Store) -> Arc<NativeStore> {
        Arc::new(NativeStore { store })
    }
}

/// The embedded store, in this process (LOCK-19).
#[uniffi::export]
pub fn memory() -> Arc<NativeStore> {
    let runtime = calls::runtime();
    let _entered = runtime.enter();
    NativeStore::new(Store::memory())
}

/// The options of [`connect`] (`leasehold::remote::ConnectOptions`);
/// `None`: not given.
#[derive(uniffi::Record)]
pub struct NativeConnectOptions {
    /// The token the server's tokens file gives a role (LOCK-14).
    #[uniffi(default = None)]
    pub token: Option<String>,
    /// PEM certificates to trust for TLS.
    #[uniffi(default = None)]
    pub ca_pem: Option<String>,
    /// The etcd user.
    #[uniffi(default = None)]
    pub user: Option<String>,
    /// The etcd user's password.
    #[uniffi(default = None)]
    pub password: Option<String>,
    /// A PEM client certificate for TLS client authentication.
    #[uniffi(default = None)]
    pub client_cert_pem: Option<String>,
    /// The PEM private key of `client_cert_pem`.
    #[uniffi(default = None)]
    pub client_key_pem: Option<String>,
    /// Opens an etcd older than DIST-08's minimum versions.
    #[uniffi(default = false)]
    pub accept_old_etcd: bool,
    /// How long one connection attempt may take, in nanoseconds.
    #[uniffi(default = None)]
    pub connect_timeout: Option<i64>,
    /// Who this client is (WHO-01); `hostname:pid` when `None` or empty.
    #[uniffi(default = None)]
    pub identity: Option<String>,
}

/// Connects to the store at `url` (`Store::connect`): the server store
/// (`leasehold://host:port`, or `leaseholds://` for TLS) or etcd
/// (`etcd://h1:2379,h2:2379/PREFIX`, or `etcds://`; DIST-01). Cancelling
/// the awaiting coroutine stops waiting; a store that connects later is
/// closed at once.
#[uniffi::export]
pub async fn connect(
    url: String,
    options: NativeConnectOptions,
) -> Result<Arc<NativeStore>, NativeError> {
    calls::cancellable(|cancel| async move {
        let core: ConnectOptions = leasehold_bridge::connect_options!(
            options,
            accept_old_etcd: options.accept_old_etcd,
            connect_timeout: durations::optional("connectTimeout", options.connect_timeout)?
        )
        .into();
        let connecting = async move { Store::connect(&url, core).await };
        let store = give_up::unless_given_up(
            Some(cancel),
            &calls::runtime(),
            GAVE_UP_CONNECTING,
            connecting,
            give_up::dropped,
        )
        .await?;
        Ok(NativeStore::new(store))
    })
    .await
}

/// The options of a slot namespace (`leasehold::slots::SlotsBuilder`);
/// durations in nanoseconds; `None`: the core's default.
#[derive(uniffi::Record)]
pub struct NativeSlotsOptions {
    /// The slots are `[0, limit)`.
    #[uniffi(default = None)]
    pub limit: Option<u32>,
    /// The ttl of this handle's leases.
    #[uniffi(default = None)]
    pub ttl: Option<i64>,
    /// How far a lease's ceiling lies beyond its expiry.
    #[uniffi(default = None)]
    pub tolerance: Option<i64>,
    /// What a node number adds to the slot.
    #[uniffi(default = None)]
    pub offset: Option<u32>,
    /// How long before a held slot's expiry its holder declares it lost.
    #[uniffi(default = None)]
    pub margin: Option<i64>,
    /// How long one slot call may take before it fails `Timeout`.
    #[uniffi(default = None)]
    pub timeout: Option<i64>,
    /// The namespace's ID layout, fixed by its first use.
    #[uniffi(default = None)]
    pub layout: Option<NativeIdLayout>,
}

/// The options of an ID generator (`leasehold::idgen::IdsBuilder`);
/// durations in nanoseconds; `None`: the core's default.
#[derive(uniffi::Record)]
pub struct NativeIdsOptions {
    /// The bit layout, fixed by the namespace's first use.
    #[uniffi(default = None)]
    pub layout: Option<NativeIdLayout>,
    /// The namespace's slots are `[0, limit)`.
    #[uniffi(default = None)]
    pub limit: Option<u32>,
    /// What a node number adds to the slot.
    #[uniffi(default = None)]
    pub offset: Option<u32>,
    /// The slot lease's ttl.
    #[uniffi(default = None)]
    pub ttl: Option<i64>,
    /// The slot lease's tolerance.
    #[uniffi(default = None)]
    pub tolerance: Option<i64>,
    /// How long one slot call may take.
    #[uniffi(default = None)]
    pub timeout: Option<i64>,
    /// How far ahead of the store's clock IDs may be issued.
    #[uniffi(default = None)]
    pub max_lead: Option<i64>,
    /// The owner key the slot is leased under.
    #[uniffi(default = None)]
    pub owner_key: Option<String>,
    /// The slot to try first.
    #[uniffi(default = None)]
    pub preferred: Option<u32>,
}

#[uniffi::export]
impl NativeStore {
    /// Opens the lock `name` with these options in nanoseconds (LOCK-13);
    /// nothing is sent.
    pub fn lock(
        &self,
        name: String,
        ttl: Option<i64>,
        max_hold: Option<i64>,
        wait: Option<i64>,
        margin: Option<i64>,
    ) -> Result<Arc<NativeLock>, NativeError> {
        let options = options::LockOptions {
            ttl: durations::optional("ttl", ttl)?,
            max_hold: durations::optional("maxHold", max_hold)?,
            wait: durations::optional("wait", wait)?,
            margin: durations::optional("margin", margin)?,
        };
        Ok(NativeLock::new(options.open(&self.store, &name)?))
    }

    /// Takes the manual lease `name` for `ttl` nanoseconds (else the default
    /// ttl) if it is free; `None` when it is held (MANUAL-01). Cancelling
    /// the awaiting coroutine stops waiting for the store's answer; a lease
    /// that answers later is released at once.
    pub async fn try_acquire(
        &self,
        name: String,
        ttl: Option<i64>,
    ) -> Result<Option<Arc<NativeManualLease>>, NativeError> {
        let store = self.store.clone();
        calls::cancellable(|cancel| async move {
            let ttl = durations::optional("ttl", ttl)?.unwrap_or(leasehold::duration::DEFAULT_TTL);
            let attempt = async move { store.try_acquire(&name, ttl).await };
            let release = |lease: Option<ManualLease>| async move {
                if let Some(lease) = lease {
                    let _ = lease.release().await;
                }
            };
            let lease = give_up::unless_given_up(
                Some(cancel),
                &calls::runtime(),
                GAVE_UP_TRYING,
                attempt,
                release,
            )
            .await?;
            Ok(lease.map(NativeManualLease::new))
        })
        .await
    }

    /// Waits for the manual lease `name` (MANUAL-02), at most `wait`
    /// nanoseconds. Cancelling the awaiting coroutine gives up waiting and
    /// leaves the line (LOCK-18).
    pub async fn acquire(
        &self,
        name: String,
        ttl: Option<i64>,
        wait: Option<i64>,
    ) -> Result<Arc<NativeManualLease>, NativeError> {
        let store = self.store.clone();
        calls::cancellable(|cancel| async move {
            let ttl = durations::optional("ttl", ttl)?.unwrap_or(leasehold::duration::DEFAULT_TTL);
            let options = HoldOptions {
                wait: durations::optional("wait", wait)?,
                cancel: Some(cancel),
            };
            let lease = store.acquire(&name, ttl, &options).await?;
            Ok(NativeManualLease::new(lease))
        })
        .await
    }

    /// Opens the slot namespace `name` with these options (SLOT-02 fixes
    /// them at its first use); nothing is sent.
    pub fn slots(
        &self,
        name: String,
        options: NativeSlotsOptions,
    ) -> Result<Arc<NativeSlots>, NativeError> {
        let options = leasehold_bridge::slots_options!(
            options,
            layout: options.layout.map(IdLayout::try_from).transpose()?,
            durations::optional
        );
        Ok(NativeSlots::new(options.open(&self.store, &name)?))
    }

    /// Opens an ID generator on a slot of namespace `name` (IDGEN): fails
    /// `NotReady` when every slot is held. Cancelling the awaiting coroutine
    /// stops waiting; a generator opened meanwhile is closed.
    pub async fn ids(
        &self,
        name: String,
        options: NativeIdsOptions,
    ) -> Result<Arc<NativeIdGenerator>, NativeError> {
        let store = self.store.clone();
        calls::spawn(Cancel::Drop, async move {
            let options = leasehold_bridge::ids_options!(
                options,
                layout: options.layout.map(IdLayout::try_from).transpose()?,
                durations::optional
            );
            let ids = options.builder(&store, &name).open().await?;
            Ok(NativeIdGenerator::new(ids))
        })
        .await
    }

    /// Closes the store: its leases end, its waiting calls fail `Closed`.
    /// It runs on to its end even if the awaiting coroutine is cancelled.
    /// (Not `close`, which the generated class has from `AutoCloseable`.)
    pub async fn close_store(&self) -> Result<(), NativeError> {
        let store = self.store.clone();
        calls::spawn(Cancel::RunOn, async move {
            store.close().await;
            Ok(())
        })
        .await
    }
}
