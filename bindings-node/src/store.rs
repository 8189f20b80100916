//! Stores: the embedded one, the server store over a connection, manual
//! leases and closing.

use leasehold::remote::ConnectOptions;
use leasehold::{HoldOptions, Store};
use napi::bindgen_prelude::{BigInt, Object};
use napi::Env;
use napi_derive::napi;

use crate::cancel::Canceller;
use crate::durations::{self, JsDuration};
use crate::errors::{thrown, Thrown};
use crate::lock::NativeLock;
use crate::manual::NativeManualLease;
use crate::promise;

/// A store of leases (`leasehold::Store`).
#[napi]
pub struct NativeStore {
    store: Store,
}

impl NativeStore {
    /// Wraps a core store.
    pub(crate) fn new(store: Store) -> NativeStore {
        NativeStore { store }
    }
}

/// The embedded store, in this process (LOCK-19).
#[napi(catch_unwind)]
pub fn memory() -> NativeStore {
    NativeStore::new(Store::memory())
}

/// Connects to the server store at `url` (`leasehold://host:port`, or
/// `leaseholds://` for TLS, trusting `ca_pem`).
#[napi(catch_unwind, ts_return_type = "Promise<NativeStore>")]
pub fn connect<'env>(
    env: &'env Env,
    url: String,
    token: Option<String>,
    ca_pem: Option<String>,
    connect_timeout: Option<JsDuration>,
) -> napi::Result<Object<'env>> {
    let timeout = durations::optional("connectTimeout", connect_timeout);
    promise::spawn(env, async move {
        let mut options = ConnectOptions {
            token,
            ca_pem: ca_pem.map(String::into_bytes),
            ..ConnectOptions::default()
        };
        if let Some(timeout) = timeout? {
            options.connect_timeout = timeout;
        }
        Store::connect(&url, options).await.map(NativeStore::new)
    })
}

/// One holder of a store, as `store.holders()` lists it.
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
    ) -> Result<NativeLock, Thrown> {
        let open = || {
            let mut builder = self.store.lock(&name);
            if let Some(d) = durations::optional("ttl", ttl)? {
                builder = builder.ttl(d);
            }
            if let Some(d) = durations::optional("maxHold", max_hold)? {
                builder = builder.max_hold(d);
            }
            if let Some(d) = durations::optional("wait", wait)? {
                builder = builder.wait(d);
            }
            if let Some(d) = durations::optional("margin", margin)? {
                builder = builder.margin(d);
            }
            builder.open()
        };
        open().map(NativeLock::new).map_err(thrown)
    }

    /// Takes the manual lease `name` if it is free; `null` when it is held (MANUAL-01).
    #[napi(catch_unwind, ts_return_type = "Promise<NativeManualLease | null>")]
    pub fn try_acquire<'env>(
        &self,
        env: &'env Env,
        name: String,
        ttl: Option<JsDuration>,
    ) -> napi::Result<Object<'env>> {
        let store = self.store.clone();
        let ttl = durations::optional("ttl", ttl);
        promise::spawn(env, async move {
            let ttl = ttl?.unwrap_or(leasehold::duration::DEFAULT_TTL);
            let lease = store.try_acquire(&name, ttl).await?;
            Ok(lease.map(NativeManualLease::new))
        })
    }

    /// Waits for the manual lease `name` (MANUAL-02), at most `wait`, until
    /// `cancel` fires.
    #[napi(catch_unwind, ts_return_type = "Promise<NativeManualLease>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        name: String,
        ttl: Option<JsDuration>,
        wait: Option<JsDuration>,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Object<'env>> {
        let store = self.store.clone();
        let ttl = durations::optional("ttl", ttl);
        let wait = durations::optional("wait", wait);
        let cancel = cancel.map(Canceller::token);
        promise::spawn(env, async move {
            let ttl = ttl?.unwrap_or(leasehold::duration::DEFAULT_TTL);
            let options = HoldOptions {
                wait: wait?,
                cancel,
            };
            let lease = store.acquire(&name, ttl, &options).await?;
            Ok(NativeManualLease::new(lease))
        })
    }

    /// The holders of lock `lock` (or of every lock).
    #[napi(catch_unwind, ts_return_type = "Promise<HolderInfo[]>")]
    pub fn holders<'env>(
        &self,
        env: &'env Env,
        lock: Option<String>,
    ) -> napi::Result<Object<'env>> {
        let store = self.store.clone();
        promise::spawn(env, async move {
            let holders = store.holders(lock.as_deref()).await?;
            Ok(holders
                .into_iter()
                .map(|h| HolderInfo {
                    lock: h.lock,
                    key: h.key,
                    fence: BigInt::from(h.fence),
                    held_for: durations::millis(h.held_for),
                    expires_in: h.expires_in.map(durations::millis),
                })
                .collect::<Vec<_>>())
        })
    }

    /// Closes the store: its leases end, its waiting calls fail `CLOSED`.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let store = self.store.clone();
        promise::spawn(env, async move {
            store.close().await;
            Ok(())
        })
    }
}
