//! The options of a lock, a slot namespace, an ID generator and a
//! connection, as every binding reads them from its own types (a C struct
//! with `has_` flags, keyword arguments, a JS object, a Kotlin record),
//! mapped once onto the core's builders. `None`: the core's default. Each
//! binding checks its own values (a negative duration, a number that is no
//! duration) and names them as its users write them; the ranges are the
//! core's to check (LOCK-13).

use std::time::Duration;

use leasehold::idgen::{IdLayout, IdsBuilder};
use leasehold::slots::Slots;
use leasehold::{Lock, Result, Store};

/// The options of a lock (`leasehold::LockBuilder`).
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// How long a lease lasts without renewal.
    pub ttl: Option<Duration>,
    /// How long after its grant the store revokes a lease (LOCK-12).
    pub max_hold: Option<Duration>,
    /// The longest time a hold waits in line (LOCK-18).
    pub wait: Option<Duration>,
    /// How long before the store's expiry the holder declares a loss (LOCK-04).
    pub margin: Option<Duration>,
}

impl LockOptions {
    /// Opens the lock `name` of `store` with these options; nothing is sent.
    pub fn open(self, store: &Store, name: &str) -> Result<Lock> {
        let mut b = store.lock(name);
        if let Some(d) = self.ttl {
            b = b.ttl(d);
        }
        if let Some(d) = self.max_hold {
            b = b.max_hold(d);
        }
        if let Some(d) = self.wait {
            b = b.wait(d);
        }
        if let Some(d) = self.margin {
            b = b.margin(d);
        }
        b.open()
    }
}

/// The options of a slot namespace (`leasehold::slots::SlotsBuilder`).
#[derive(Debug, Clone, Default)]
pub struct SlotsOptions {
    /// The slots are `[0, limit)`.
    pub limit: Option<u32>,
    /// The ttl of the handle's leases.
    pub ttl: Option<Duration>,
    /// How far a lease's ceiling lies beyond its expiry.
    pub tolerance: Option<Duration>,
    /// What a node number adds to the slot.
    pub offset: Option<u32>,
    /// How long before a held slot's expiry its holder declares it lost.
    pub margin: Option<Duration>,
    /// How long one slot call may take before it fails `Timeout`.
    pub timeout: Option<Duration>,
    /// The namespace's ID layout, fixed by its first use.
    pub layout: Option<IdLayout>,
}

impl SlotsOptions {
    /// Opens the slot namespace `name` of `store` with these options
    /// (SLOT-02 fixes them at its first use); nothing is sent.
    pub fn open(self, store: &Store, name: &str) -> Result<Slots> {
        let mut b = store.slots(name);
        if let Some(limit) = self.limit {
            b = b.limit(limit);
        }
        if let Some(d) = self.ttl {
            b = b.ttl(d);
        }
        if let Some(d) = self.tolerance {
            b = b.tolerance(d);
        }
        if let Some(offset) = self.offset {
            b = b.offset(offset);
        }
        if let Some(d) = self.margin {
            b = b.margin(d);
        }
        if let Some(d) = self.timeout {
            b = b.timeout(d);
        }
        if let Some(layout) = self.layout {
            b = b.layout(layout);
        }
        b.open()
    }
}

/// The options of an ID generator (`leasehold::idgen::IdsBuilder`).
#[derive(Debug, Clone, Default)]
pub struct IdsOptions {
    /// The bit layout, fixed by the namespace's first use.
    pub layout: Option<IdLayout>,
    /// The namespace's slots are `[0, limit)`.
    pub limit: Option<u32>,
    /// What a node number adds to the slot.
    pub offset: Option<u32>,
    /// The slot lease's ttl.
    pub ttl: Option<Duration>,
    /// The slot lease's tolerance.
    pub tolerance: Option<Duration>,
    /// How long one slot call may take.
    pub timeout: Option<Duration>,
    /// How far ahead of the store's clock IDs may be issued.
    pub max_lead: Option<Duration>,
    /// The owner key the slot is leased under.
    pub owner_key: Option<String>,
    /// The slot to try first.
    pub preferred: Option<u32>,
}

impl IdsOptions {
    /// The builder of an ID generator on namespace `name` of `store` with
    /// these options; its `open` leases the slot.
    pub fn builder(self, store: &Store, name: &str) -> IdsBuilder {
        let mut b = store.ids(name);
        if let Some(layout) = self.layout {
            b = b.layout(layout);
        }
        if let Some(limit) = self.limit {
            b = b.limit(limit);
        }
        if let Some(offset) = self.offset {
            b = b.offset(offset);
        }
        if let Some(d) = self.ttl {
            b = b.ttl(d);
        }
        if let Some(d) = self.tolerance {
            b = b.tolerance(d);
        }
        if let Some(d) = self.timeout {
            b = b.timeout(d);
        }
        if let Some(d) = self.max_lead {
            b = b.max_lead(d);
        }
        if let Some(key) = &self.owner_key {
            b = b.owner_key(key);
        }
        if let Some(slot) = self.preferred {
            b = b.preferred(slot);
        }
        b
    }
}

/// [`SlotsOptions`] from a binding's record whose fields bear the same
/// names (`limit`, `ttl`, `tolerance`, `offset`, `margin`, `timeout`), for
/// the bindings whose users write options in camelCase (Node, the JVM): each
/// duration is read by `$duration(name, value)`, which returns
/// `leasehold::Result<Option<Duration>>` and names it as those users write
/// it; `$layout` is the namespace's layout, read already. A duration that
/// fails returns from the calling function (`?`). Fields are moved out of
/// `$record` one by one, so `$layout` may move its own field first.
#[macro_export]
macro_rules! slots_options {
    ($record:ident, layout: $layout:expr, $duration:path) => {
        $crate::options::SlotsOptions {
            layout: $layout,
            limit: $record.limit,
            offset: $record.offset,
            ttl: $duration("ttl", $record.ttl)?,
            tolerance: $duration("tolerance", $record.tolerance)?,
            margin: $duration("margin", $record.margin)?,
            timeout: $duration("timeout", $record.timeout)?,
        }
    };
}

/// [`IdsOptions`] from a binding's record whose fields bear the same names
/// (`limit`, `offset`, `ttl`, `tolerance`, `timeout`, `max_lead`,
/// `owner_key`, `preferred`), read as [`slots_options!`] reads a slot
/// namespace's (`max_lead` is named `maxLead`).
#[macro_export]
macro_rules! ids_options {
    ($record:ident, layout: $layout:expr, $duration:path) => {
        $crate::options::IdsOptions {
            layout: $layout,
            limit: $record.limit,
            offset: $record.offset,
            ttl: $duration("ttl", $record.ttl)?,
            tolerance: $duration("tolerance", $record.tolerance)?,
            timeout: $duration("timeout", $record.timeout)?,
            max_lead: $duration("maxLead", $record.max_lead)?,
            owner_key: $record.owner_key,
            preferred: $record.preferred,
        }
    };
}

/// The options of a connection (`leasehold::ConnectOptions`), PEM as text
/// or bytes, whichever the binding has.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions<P = Vec<u8>> {
    /// The token the server's tokens file gives a role (LOCK-14).
    pub token: Option<String>,
    /// PEM certificates to trust for TLS.
    pub ca_pem: Option<P>,
    /// The etcd user.
    pub user: Option<String>,
    /// The etcd user's password.
    pub password: Option<String>,
    /// A PEM client certificate for TLS client authentication.
    pub client_cert_pem: Option<P>,
    /// The PEM private key of `client_cert_pem`.
    pub client_key_pem: Option<P>,
    /// Opens an etcd older than DIST-08's minimum versions.
    pub accept_old_etcd: bool,
    /// How long one connection attempt may take.
    pub connect_timeout: Option<Duration>,
    /// Who this client is (WHO-01); `hostname:pid` when `None` or empty.
    pub identity: Option<String>,
}

/// [`ConnectOptions`] from a binding's record whose fields bear the same
/// names (`token`, `ca_pem`, `user`, `password`, `client_cert_pem`,
/// `client_key_pem`, `identity`), with `accept_old_etcd` and `connect_timeout` as the
/// binding reads them (its own default, its own duration type).
#[macro_export]
macro_rules! connect_options {
    ($record:ident, accept_old_etcd: $accept:expr, connect_timeout: $timeout:expr) => {
        $crate::options::ConnectOptions {
            accept_old_etcd: $accept,
            connect_timeout: $timeout,
            token: $record.token,
            ca_pem: $record.ca_pem,
            user: $record.user,
            password: $record.password,
            client_cert_pem: $record.client_cert_pem,
            client_key_pem: $record.client_key_pem,
            identity: $record.identity,
        }
    };
}

impl<P: Into<Vec<u8>>> From<ConnectOptions<P>> for leasehold::ConnectOptions {
    fn from(o: ConnectOptions<P>) -> leasehold::ConnectOptions {
        let defaults = leasehold::ConnectOptions::default();
        leasehold::ConnectOptions {
            token: o.token,
            ca_pem: o.ca_pem.map(Into::into),
            user: o.user,
            password: o.password,
            client_cert_pem: o.client_cert_pem.map(Into::into),
            client_key_pem: o.client_key_pem.map(Into::into),
            accept_old_etcd: o.accept_old_etcd,
            connect_timeout: o.connect_timeout.unwrap_or(defaults.connect_timeout),
            identity: o.identity,
            ..defaults
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-13: given options reach the lock; absent ones are the core's defaults.
    #[test]
    fn lock_13_options_reach_the_builder() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _entered = runtime.enter();
        let store = Store::memory();
        let given = LockOptions {
            ttl: Some(Duration::from_secs(7)),
            ..LockOptions::default()
        };
        assert_eq!(
            given.open(&store, "l").unwrap().ttl(),
            Duration::from_secs(7)
        );
        let default = LockOptions::default().open(&store, "l").unwrap().ttl();
        assert_eq!(default, leasehold::duration::DEFAULT_TTL);
        let slots = SlotsOptions {
            limit: Some(3),
            ..SlotsOptions::default()
        };
        assert_eq!(slots.open(&store, "s").unwrap().spec().limit, 3);
        let core: leasehold::ConnectOptions = ConnectOptions {
            ca_pem: Some("pem".to_owned()),
            ..ConnectOptions::default()
        }
        .into();
        assert_eq!(core.ca_pem.as_deref(), Some(&b"pem"[..]));
        let defaults = leasehold::ConnectOptions::default();
        assert_eq!(core.connect_timeout, defaults.connect_timeout);
    }
}
