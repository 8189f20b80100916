//! Stores: the embedded one, the server store over a connection, closing.

use leasehold::remote::ConnectOptions;
use leasehold::{runtime, CancellationToken, Store};

use crate::call::{block_on, or_cancelled, run};
use crate::cancel::lh_cancel;
use crate::error::lh_error;
use crate::handles::{self, OnRuntime};
use crate::input;

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

/// Connects to the server store at `url` (`leasehold://host:port`, or
/// `leaseholds://` for TLS), blocking until connected. `token` (NULL/0: none)
/// admits the connection (LOCK-14); `ca_pem` (NULL/0: none) are PEM
/// certificates to trust for TLS. `cancel` (zero: none) gives up.
///
/// # Safety
/// Each pointer must be NULL or point to its length in readable bytes;
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_store_connect(
    url: *const u8,
    url_len: usize,
    token: *const u8,
    token_len: usize,
    ca_pem: *const u8,
    ca_pem_len: usize,
    cancel: lh_cancel,
    out: *mut lh_store,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_store", out)?;
        // SAFETY: passed on from the caller.
        let url = unsafe { input::string("url", url, url_len) }?;
        // SAFETY: passed on from the caller.
        let token = unsafe { input::optional_string("token", token, token_len) }?;
        // SAFETY: passed on from the caller.
        let ca_pem = unsafe { input::optional_bytes("ca_pem", ca_pem, ca_pem_len) }?;
        let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
        let options = ConnectOptions {
            token,
            ca_pem,
            ..ConnectOptions::default()
        };
        let runtime = runtime::process_runtime();
        let store = block_on(
            &runtime,
            or_cancelled(Store::connect(&url, options), cancel),
        )?;
        let id = handles::insert(OnRuntime {
            value: store,
            runtime,
        });
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_store", out, lh_store { id }) }
    })
}

/// Closes the store and frees its handle: every lease it gave ends, every
/// waiting call fails `LH_CLOSED`; later calls on the store or on its locks
/// and leases fail `LH_CLOSED`. Closing twice fails `LH_CLOSED`.
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
