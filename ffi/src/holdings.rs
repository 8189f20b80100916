//! Many keys held at once (LOCK-22): the holdings `lh_lock_begin_many_async`
//! took, kept together behind one `lh_holdings` handle until the caller
//! copies them out with `lh_holdings_take`, into its own memory and on its
//! own thread. The library never writes into the caller's memory after a
//! call returned (cgo forbids C to keep a Go pointer).

use std::sync::{Arc, Mutex};

use leasehold::{Error, ErrorKind, Holding};
use tokio::runtime::Handle;

use crate::call::run;
use crate::error::lh_error;
use crate::handles;
use crate::holding::lh_holding;
use crate::input;
use crate::lock::behind_handle;

/// The holdings of one `lh_lock_begin_many_async`, in the order of its
/// keys, until `lh_holdings_take` hands them out (or `lh_holdings_free`
/// releases them).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_holdings {
    /// The library's id of the holdings; never dereferenced.
    pub id: u64,
}

/// The object behind an `lh_holdings`: the core's holdings until they are
/// taken, with the runtime of their store.
pub(crate) struct Holdings {
    held: Mutex<Option<Vec<Holding>>>,
    runtime: Handle,
}

impl Holdings {
    /// Keeps `held`, whose store's work runs on `runtime`.
    pub(crate) fn new(held: Vec<Holding>, runtime: Handle) -> Holdings {
        Holdings {
            held: Mutex::new(Some(held)),
            runtime,
        }
    }
}

/// Copies the holdings out, in the order of the keys asked for: each one's
/// new `lh_holding` to `out[i]` and its fence to `fences[i]` (`fences` NULL:
/// not wanted), then frees the `lh_holdings` handle. `count` must be the
/// number of keys asked for (`LH_INVALID_ARGUMENT` otherwise, and nothing
/// is taken). Each holding is then ended with `lh_holding_end_all` (or one
/// by one with `lh_holding_end`).
///
/// # Safety
/// `out` must be NULL (an error unless `count` is 0) or valid for `count`
/// writes; `fences` NULL or valid for `count` writes.
#[no_mangle]
pub unsafe extern "C" fn lh_holdings_take(
    holdings: lh_holdings,
    out: *mut lh_holding,
    fences: *mut u64,
    count: usize,
) -> *mut lh_error {
    run(|| {
        if count > 0 {
            input::check_out("lh_holding", out)?;
        }
        let batch = handles::get::<Arc<Holdings>>(holdings.id)?;
        let mut held = batch.held.lock().unwrap_or_else(|p| p.into_inner());
        let Some(list) = held.as_ref() else {
            return Err(taken(holdings.id));
        };
        if list.len() != count {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("the lh_holdings hold {} keys, not {count}", list.len()),
            ));
        }
        handles::remove::<Arc<Holdings>>(holdings.id)?;
        let list = held.take().unwrap_or_default();
        // SAFETY: passed on from the caller; `list` has `count` holdings.
        unsafe { give_all(list, &batch.runtime, out, fences) };
        Ok(())
    })
}

/// Frees the `lh_holdings` handle without taking them: every holding in it
/// is released in the background.
#[no_mangle]
pub extern "C" fn lh_holdings_free(holdings: lh_holdings) -> *mut lh_error {
    run(|| {
        let batch = handles::remove::<Arc<Holdings>>(holdings.id)?;
        let held = batch.held.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(held);
        Ok(())
    })
}

fn taken(id: u64) -> Error {
    Error::new(
        ErrorKind::Closed,
        format!("the lh_holdings handle {id} was taken or freed"),
    )
}

/// Puts each holding of `list` behind a handle of its own, written to
/// `out[i]`, its fence to `fences[i]` when `fences` is not NULL.
///
/// # Safety
/// `out` and `fences` (when not NULL) valid for `list.len()` writes; `out`
/// not NULL unless `list` is empty.
pub(crate) unsafe fn give_all(
    list: Vec<Holding>,
    runtime: &Handle,
    out: *mut lh_holding,
    fences: *mut u64,
) {
    for (at, holding) in list.into_iter().enumerate() {
        let done = behind_handle(holding, runtime.clone());
        // SAFETY: the caller promises room for every holding of `list` at `out`.
        unsafe { out.add(at).write(lh_holding { id: done.handle }) };
        if !fences.is_null() {
            // SAFETY: as for `out`.
            unsafe { fences.add(at).write(done.fence) };
        }
    }
}
