//! Stores: the embedded one, the server store or etcd over a connection, closing.

use std::future::Future;

use leasehold::remote::ConnectOptions;
use leasehold::{runtime, CancellationToken, Store};
use leasehold_bridge::options;
use tokio::runtime::Handle;

use crate::call::{block_on, given_up_or, run};
use crate::cancel::lh_cancel;
use crate::error::lh_error;
use crate::handles::{self, OnRuntime};
use crate::input;
use crate::pending::{self, lh_done_fn, lh_outcome, Done};

/// A store of leases.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_store {
    /// The library's id of the store; never dereferenced.
    pub id: u64,
}

/// Opens an embedded store in this process (LOCK-19: its holders need no renewal).
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_store_memory(out: *mut lh_store) -> *mut lh_error {
    run(|| {
        input::check_out("lh_store", out)?;
        let runtime = runtime::process_runtime();
        let id = handles::insert(OnRuntime {
            value: Store::memory(),
            runtime,
        });
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_store", out, lh_store { id }) }
    })
}

/// How `lh_store_connect` connects. Each text is a pointer and a length,
/// NULL with length 0 meaning "not given"; an option a store does not use
/// is ignored by it (`token` by etcd, `user` by the server store).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lh_connect_options {
    /// The token the server's tokens file gives a role (LOCK-14).
    pub token: *const u8,
    /// The length of `token`.
    pub token_len: usize,
    /// PEM certificates to trust for TLS (the server's or the etcd cluster's CA).
    pub ca_pem: *const u8,
    /// The length of `ca_pem`.
    pub ca_pem_len: usize,
    /// The etcd user.
    pub user: *const u8,
    /// The length of `user`.
    pub user_len: usize,
    /// The etcd user's password.
    pub password: *const u8,
    /// The length of `password`.
    pub password_len: usize,
    /// A PEM client certificate for TLS client authentication (etcd).
    pub client_cert_pem: *const u8,
    /// The length of `client_cert_pem`.
    pub client_cert_pem_len: usize,
    /// The PEM private key of `client_cert_pem`.
    pub client_key_pem: *const u8,
    /// The length of `client_key_pem`.
    pub client_key_pem_len: usize,
    /// Opens an etcd older than the releases that fixed the bugs DIST-08
    /// names (refused when false).
    pub accept_old_etcd: bool,
    /// Who this client is (WHO-01), recorded with every lease it takes and
    /// shown wherever a holder is; NULL or empty: `hostname:pid`.
    pub identity: *const u8,
    /// The length of `identity`.
    pub identity_len: usize,
}

impl Default for lh_connect_options {
    fn default() -> lh_connect_options {
        lh_connect_options {
            token: std::ptr::null(),
            token_len: 0,
            ca_pem: std::ptr::null(),
            ca_pem_len: 0,
            user: std::ptr::null(),
            user_len: 0,
            password: std::ptr::null(),
            password_len: 0,
            client_cert_pem: std::ptr::null(),
            client_cert_pem_len: 0,
            client_key_pem: std::ptr::null(),
            client_key_pem_len: 0,
            accept_old_etcd: false,
            identity: std::ptr::null(),
            identity_len: 0,
        }
    }
}

/// The core's options from the caller's.
///
/// # Safety
/// Each pointer of `o` must be NULL or point to its length in readable bytes.
unsafe fn connect_options(o: &lh_connect_options) -> leasehold::Result<ConnectOptions> {
    Ok(options::ConnectOptions {
        // SAFETY: passed on from the caller.
        token: unsafe { input::optional_string("token", o.token, o.token_len) }?,
        // SAFETY: passed on from the caller.
        ca_pem: unsafe { input::optional_bytes("ca_pem", o.ca_pem, o.ca_pem_len) }?,
        // SAFETY: passed on from the caller.
        user: unsafe { input::optional_string("user", o.user, o.user_len) }?,
        // SAFETY: passed on from the caller.
        password: unsafe { input::optional_string("password", o.password, o.password_len) }?,
        // SAFETY: passed on from the caller.
        client_cert_pem: unsafe {
            input::optional_bytes("client_cert_pem", o.client_cert_pem, o.client_cert_pem_len)
        }?,
        // SAFETY: passed on from the caller.
        client_key_pem: unsafe {
            input::optional_bytes("client_key_pem", o.client_key_pem, o.client_key_pem_len)
        }?,
        accept_old_etcd: o.accept_old_etcd,
        connect_timeout: None,
        // SAFETY: passed on from the caller.
        identity: unsafe { input::optional_string("identity", o.identity, o.identity_len) }?,
    }
    .into())
}

/// Connects to the store at `url`, blocking until connected: the server
/// store (`leasehold://host:port`, or `leaseholds://` for TLS), etcd
/// (`etcd://h1:2379,h2:2379/PREFIX`, or `etcds://` for TLS; DIST-01) or
/// PostgreSQL (`postgres://user@h1,h2/db`; PG-01).
/// `options` (NULL: none) holds the token (LOCK-14), the certificates to
/// trust, the etcd user and password, the client certificate and key, and
/// whether an old etcd is accepted (DIST-08). `cancel` (zero: none) gives up.
///
/// # Safety
/// `url` must be NULL or point to `url_len` readable bytes; `options` NULL
/// or readable, each of its pointers NULL or pointing to its length in
/// readable bytes; `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_store_connect(
    url: *const u8,
    url_len: usize,
    options: *const lh_connect_options,
    cancel: lh_cancel,
    out: *mut lh_store,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_store", out)?;
        // SAFETY: passed on from the caller.
        let (runtime, connected) = unsafe { connect(url, url_len, options, cancel) }?;
        let done = block_on(&runtime, connected)?;
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_store", out, lh_store { id: done.handle }) }
    })
}

/// `lh_store_connect` without blocking: the outcome (`handle`, an
/// `lh_store`) comes as `lh_outcome`s do.
///
/// # Safety
/// As for `lh_store_connect`'s `url` and `options`; `now` NULL or valid for
/// a write; `done` callable from any thread with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_store_connect_async(
    url: *const u8,
    url_len: usize,
    options: *const lh_connect_options,
    cancel: lh_cancel,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe { pending::start(|| connect(url, url_len, options, cancel), done, user, now) }
}

/// The connection of `lh_store_connect` and its async form, its arguments read.
///
/// # Safety
/// As for `lh_store_connect`'s `url` and `options`.
unsafe fn connect(
    url: *const u8,
    url_len: usize,
    options: *const lh_connect_options,
    cancel: lh_cancel,
) -> leasehold::Result<(
    Handle,
    impl Future<Output = leasehold::Result<Done>> + Send + 'static,
)> {
    // SAFETY: passed on from the caller.
    let url = unsafe { input::string("url", url, url_len) }?;
    // SAFETY: passed on from the caller.
    let given = unsafe { input::options(options) };
    // SAFETY: passed on from the caller.
    let options = unsafe { connect_options(&given) }?;
    let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
    let runtime = runtime::process_runtime();
    Ok((runtime.clone(), async move {
        let connecting = async move { Store::connect(&url, options).await };
        let store = given_up_or(connecting, cancel).await?;
        let id = handles::insert(OnRuntime {
            value: store,
            runtime,
        });
        Ok(Done::made(id, 0))
    }))
}

/// Closes the store and frees its handle: every lease it gave ends, every
/// waiting call fails `LH_CLOSED`; later calls on the store or on its locks
/// and leases fail `LH_CLOSED`. Closing twice fails `LH_CLOSED`. Blocks
/// until the store's leases were released.
#[no_mangle]
pub extern "C" fn lh_store_close(store: lh_store) -> *mut lh_error {
    run(|| {
        let store = handles::remove::<OnRuntime<Store>>(store.id)?;
        block_on(&store.runtime, async move {
            store.value.close().await;
            Ok(())
        })
    })
}

/// Frees the store's handle without closing it, never blocking (for a
/// finalizer): its locks, holds and leases go on, and the store ends with
/// the last of them. Freeing a closed or freed store fails `LH_CLOSED`.
#[no_mangle]
pub extern "C" fn lh_store_free(store: lh_store) -> *mut lh_error {
    run(|| handles::remove::<OnRuntime<Store>>(store.id).map(drop))
}
