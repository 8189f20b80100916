//! `Store`: the embedded store or a connection to the server store.

use leasehold::remote::ConnectOptions;
use leasehold::{give_up, CancellationToken, HoldOptions, Store};
use leasehold_bridge::options::{IdsOptions, LockOptions, SlotsOptions};
use leasehold_bridge::{options, Cancel, Spawned};
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::convert;
use crate::idgen::{self, PyIdGenerator, PyIdLayout};
use crate::lock::PyLock;
use crate::loop_driver;
use crate::manual::PyManualLease;
use crate::runtime;
use crate::slots::PySlots;

/// The message of a manual try given up by its awaiting task.
const GAVE_UP: &str = "the awaiting task gave up on the manual lease";
/// A store of leases. The package's `Store` wraps it.
#[pyclass(module = "leasehold._native", name = "Store", frozen)]
pub struct PyStore {
    store: Store,
    kind: &'static str,
    /// The runtime its calls run on, for a test store (`testing`); `None`:
    /// polled on the calling event loop's thread.
    runtime: Option<Handle>,
}

impl PyStore {
    pub fn new(store: Store, kind: &'static str) -> PyStore {
        PyStore {
            store,
            kind,
            runtime: None,
        }
    }

    /// A test store whose calls run as tasks of `runtime`.
    pub fn on_runtime(store: Store, runtime: Handle) -> PyStore {
        PyStore {
            store,
            kind: "memory",
            runtime: Some(runtime),
        }
    }
}

#[pymethods]
impl PyStore {
    /// `"memory"` (embedded) or `"server"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    /// Opens the lock `name` with its options (LOCK-13); nothing is sent.
    #[pyo3(signature = (name, ttl=None, max_hold=None, wait=None, margin=None))]
    fn lock(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
        max_hold: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
        margin: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyLock> {
        let name = convert::name(name, "lock name")?;
        let options = LockOptions {
            ttl: convert::optional_duration(ttl, "ttl")?,
            max_hold: convert::optional_duration(max_hold, "max_hold")?,
            wait: convert::optional_duration(wait, "wait")?,
            margin: convert::optional_duration(margin, "margin")?,
        };
        options
            .open(&self.store, &name)
            .map(|l| PyLock::new(l, self.runtime.clone()))
            .map_err(|e| crate::errors::to_py(py, e))
    }

    /// Opens the slot namespace `name` with its options (SLOT-02); nothing
    /// is sent. `limit` and `offset` are `int`s; `ttl`, `tolerance`,
    /// `timeout` and `margin` durations, the core's defaults when `None`.
    #[pyo3(signature = (name, limit, offset, ttl=None, tolerance=None, timeout=None, margin=None))]
    #[allow(
        clippy::too_many_arguments,
        reason = "one argument per option of the namespace, as Python passes them"
    )]
    fn slots(
        &self,
        name: &Bound<'_, PyAny>,
        limit: &Bound<'_, PyAny>,
        offset: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
        tolerance: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
        margin: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PySlots> {
        let namespace = convert::name(name, "slot namespace")?;
        let options = SlotsOptions {
            limit: Some(convert::unsigned(limit, "limit")?),
            offset: Some(convert::unsigned(offset, "offset")?),
            ttl: convert::optional_duration(ttl, "ttl")?,
            tolerance: convert::optional_duration(tolerance, "tolerance")?,
            timeout: convert::optional_duration(timeout, "timeout")?,
            margin: convert::optional_duration(margin, "margin")?,
            layout: None,
        };
        options
            .open(&self.store, &namespace)
            .map(|s| PySlots::new(s, self.runtime.clone()))
            .map_err(|e| crate::errors::to_py(name.py(), e))
    }

    /// Opens an ID generator on a slot of the namespace `namespace` (IDGEN):
    /// an awaitable of an `IdGenerator`; `NotReady` when every slot is held.
    /// `layout` is an `IdLayout` (the core's default when `None`); `limit`,
    /// `offset` and `preferred` `int`s; `ttl`, `tolerance`, `timeout` and
    /// `max_lead` durations; `owner_key` a `str`. Cancelling the awaiting
    /// task lets the open run on, and a generator it made is closed.
    #[pyo3(signature = (
        namespace, layout=None, limit=None, offset=None, ttl=None, tolerance=None,
        timeout=None, max_lead=None, owner_key=None, preferred=None
    ))]
    #[allow(
        clippy::too_many_arguments,
        reason = "one argument per option of the generator, as Python passes them"
    )]
    fn ids<'py>(
        &self,
        py: Python<'py>,
        namespace: &Bound<'py, PyAny>,
        layout: Option<&Bound<'py, PyAny>>,
        limit: Option<&Bound<'py, PyAny>>,
        offset: Option<&Bound<'py, PyAny>>,
        ttl: Option<&Bound<'py, PyAny>>,
        tolerance: Option<&Bound<'py, PyAny>>,
        timeout: Option<&Bound<'py, PyAny>>,
        max_lead: Option<&Bound<'py, PyAny>>,
        owner_key: Option<&Bound<'py, PyAny>>,
        preferred: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let namespace = convert::name(namespace, "ID namespace")?;
        let options = IdsOptions {
            layout: present(layout).map(PyIdLayout::of).transpose()?,
            limit: present(limit)
                .map(|l| convert::unsigned(l, "limit"))
                .transpose()?,
            offset: present(offset)
                .map(|o| convert::unsigned(o, "offset"))
                .transpose()?,
            ttl: convert::optional_duration(ttl, "ttl")?,
            tolerance: convert::optional_duration(tolerance, "tolerance")?,
            timeout: convert::optional_duration(timeout, "timeout")?,
            max_lead: convert::optional_duration(max_lead, "max_lead")?,
            owner_key: present(owner_key)
                .map(|k| convert::name(k, "owner key"))
                .transpose()?,
            preferred: present(preferred)
                .map(|p| convert::unsigned(p, "preferred slot"))
                .transpose()?,
        };
        let builder = options.builder(&self.store, &namespace);
        let forks = idgen::forks();
        let runtime = self.runtime.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            builder
                .open()
                .await
                .map(|ids| PyIdGenerator::new(ids, forks, runtime))
        })
    }

    /// Takes the manual lease `name` if it is free (MANUAL-01): an
    /// awaitable of a `ManualLease`, or of `None` when it is held.
    fn try_acquire<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
        ttl: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let name = convert::name(name, "lease name")?;
        let ttl = convert::duration(ttl, "ttl")?;
        let store = self.store.clone();
        let runtime = self.runtime.clone();
        let token = CancellationToken::new();
        let given_up = token.clone();
        let attempt = async move { store.try_acquire(&name, ttl).await };
        // A lease that answers after the awaiting task gave up is released at once.
        let release = |lease: Option<leasehold::ManualLease>| async move {
            if let Some(lease) = lease {
                let _ = lease.release().await;
            }
        };
        loop_driver::awaitable(
            py,
            self.runtime.as_ref(),
            Cancel::Token(token),
            async move {
                let on = runtime.clone().unwrap_or_else(runtime::handle);
                give_up::unless_given_up(Some(given_up), &on, GAVE_UP, attempt, release)
                    .await
                    .map(|l| l.map(|l| PyManualLease::new(l, runtime)))
            },
        )
    }

    /// Waits for the manual lease `name` (MANUAL-02), at most `wait`:
    /// an awaitable of a `ManualLease`. Cancelling the awaiting task leaves the line.
    #[pyo3(signature = (name, ttl, wait=None))]
    fn acquire<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
        ttl: &Bound<'py, PyAny>,
        wait: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let name = convert::name(name, "lease name")?;
        let ttl = convert::duration(ttl, "ttl")?;
        let token = CancellationToken::new();
        let options = HoldOptions {
            wait: convert::optional_duration(wait, "wait")?,
            cancel: Some(token.clone()),
        };
        let store = self.store.clone();
        let runtime = self.runtime.clone();
        loop_driver::awaitable(
            py,
            self.runtime.as_ref(),
            Cancel::Token(token),
            async move {
                store
                    .acquire(&name, ttl, &options)
                    .await
                    .map(|l| PyManualLease::new(l, runtime))
            },
        )
    }

    /// Closes the store: its leases end, waiting calls fail `Closed`.
    /// The close runs on its own: cancelling the awaiting task does not stop it.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = self.store.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            store.close().await;
            Ok(())
        })
    }

    /// [`PyStore::close`] for code without an event loop.
    fn close_blocking(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.store.clone();
        runtime::wait_run_on(py, async move {
            store.close().await;
            Ok(())
        })
    }

    fn __repr__(&self) -> String {
        format!("Store(kind={:?})", self.kind)
    }
}

/// The embedded store, in this process (LOCK-19).
#[pyfunction]
pub fn memory() -> PyStore {
    PyStore::new(Store::memory(), "memory")
}

/// The texts and PEM bytes of the connect options, as Python passes them
/// (`None`: not given).
struct Given<'a, 'py> {
    token: Option<&'a Bound<'py, PyAny>>,
    ca_pem: Option<&'a Bound<'py, PyAny>>,
    user: Option<&'a Bound<'py, PyAny>>,
    password: Option<&'a Bound<'py, PyAny>>,
    client_cert_pem: Option<&'a Bound<'py, PyAny>>,
    client_key_pem: Option<&'a Bound<'py, PyAny>>,
    accept_old_etcd: bool,
    identity: Option<&'a Bound<'py, PyAny>>,
}

/// An optional argument that was passed: absent or `None` is not.
fn present<'a, 'py>(value: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    value.filter(|v| !v.is_none())
}

fn text(value: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<String>> {
    present(value).map(|t| convert::name(t, what)).transpose()
}

fn pem(value: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<u8>>> {
    present(value).map(|p| convert::bytes(p, what)).transpose()
}

/// The core's connect options of what Python passed (the bridge's
/// mapping; the connect timeout is the core's default).
fn connect_options(given: Given<'_, '_>) -> PyResult<ConnectOptions> {
    let options = options::ConnectOptions {
        token: text(given.token, "token")?,
        ca_pem: pem(given.ca_pem, "ca_pem")?,
        user: text(given.user, "user")?,
        password: text(given.password, "password")?,
        client_cert_pem: pem(given.client_cert_pem, "client_cert_pem")?,
        client_key_pem: pem(given.client_key_pem, "client_key_pem")?,
        accept_old_etcd: given.accept_old_etcd,
        connect_timeout: None,
        identity: text(given.identity, "identity")?,
    };
    Ok(options.into())
}

/// Connects to the store at `url`: the server store (`leasehold://host:port`,
/// or `leaseholds://` with `ca_pem`, the certificates to trust), etcd
/// (`etcd://h1:2379,h2:2379/PREFIX`, or `etcds://`; DIST-01) or PostgreSQL
/// (`postgres://user@h1,h2/db`; PG-01) as `user` with `password`, presenting `client_cert_pem` and `client_key_pem`,
/// known as `identity` wherever the store shows a holder: an awaitable of a `Store`.
#[pyfunction]
#[pyo3(signature = (
    url, token=None, ca_pem=None, user=None, password=None,
    client_cert_pem=None, client_key_pem=None, accept_old_etcd=false, identity=None
))]
#[allow(clippy::too_many_arguments)]
pub fn connect<'py>(
    py: Python<'py>,
    url: &Bound<'py, PyAny>,
    token: Option<&Bound<'py, PyAny>>,
    ca_pem: Option<&Bound<'py, PyAny>>,
    user: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    client_cert_pem: Option<&Bound<'py, PyAny>>,
    client_key_pem: Option<&Bound<'py, PyAny>>,
    accept_old_etcd: bool,
    identity: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let url = convert::name(url, "store URL")?;
    let options = connect_options(Given {
        token,
        ca_pem,
        user,
        password,
        client_cert_pem,
        client_key_pem,
        accept_old_etcd,
        identity,
    })?;
    let kind = leasehold::store_kind(&url);
    loop_driver::awaitable(py, None, Cancel::Drop, async move {
        Store::connect(&url, options)
            .await
            .map(|s| PyStore::new(s, kind))
    })
}

/// [`connect`] for code without an event loop.
#[pyfunction]
#[pyo3(signature = (
    url, token=None, ca_pem=None, user=None, password=None,
    client_cert_pem=None, client_key_pem=None, accept_old_etcd=false, identity=None
))]
#[allow(clippy::too_many_arguments)]
pub fn connect_blocking(
    py: Python<'_>,
    url: &Bound<'_, PyAny>,
    token: Option<&Bound<'_, PyAny>>,
    ca_pem: Option<&Bound<'_, PyAny>>,
    user: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    client_cert_pem: Option<&Bound<'_, PyAny>>,
    client_key_pem: Option<&Bound<'_, PyAny>>,
    accept_old_etcd: bool,
    identity: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyStore> {
    let url = convert::name(url, "store URL")?;
    let options = connect_options(Given {
        token,
        ca_pem,
        user,
        password,
        client_cert_pem,
        client_key_pem,
        accept_old_etcd,
        identity,
    })?;
    let kind = leasehold::store_kind(&url);
    // Run as a task of the runtime from the start; Ctrl-C drops it, as
    // cancelling the awaiting task drops `connect`'s.
    let connected = Spawned::on_task(runtime::handle(), Cancel::Drop, async move {
        Store::connect(&url, options).await
    });
    runtime::wait_core(py, connected).map(|s| PyStore::new(s, kind))
}
