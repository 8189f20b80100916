//! ID generators on slot leases (IDGEN, the core's `leasehold::idgen`): a
//! generator opened on a store leases a slot of a namespace and issues
//! unique 64-bit IDs of timestamp | node | sequence in the namespace's
//! layout. Every rule (which ticks may be issued, sealing, the floor passed
//! on at the close) is the core's; this module only translates.
//!
//! `lh_ids_next` and `lh_ids_next_into` are the hot path: one handle lookup
//! and the core's non-waiting call, no allocation unless they fail.

use std::future::Future;
use std::sync::Arc;

use leasehold::idgen::{IdGenerator, IdLayout, IdParts};
use leasehold::{CancellationToken, Error, ErrorKind, Result, Store};
use leasehold_bridge::options::IdsOptions;
use tokio::runtime::Handle;

use crate::call::{block_on, given_up_or, not_in_runtime, or_cancelled, run};
use crate::cancel::lh_cancel;
use crate::error::{lh_error, lh_loss_reason};
use crate::handles::{self, OnRuntime};
use crate::input;
use crate::pending::{self, lh_done_fn, lh_outcome, Done};
use crate::slots::lh_slot_lease;
use crate::store::lh_store;

/// An ID generator, from `lh_ids_open` until `lh_ids_free` (`lh_ids_close`
/// ends its issuing but keeps the handle).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_ids {
    /// The library's id of the generator; never dereferenced.
    pub id: u64,
}

/// How an ID's 64 bits are split, high bits to low: `time_bits` of ticks
/// since `epoch_ms`, `node_bits` of node number, `sequence_bits` of
/// sequence. At least one bit each and at most 63 in all; a tick of 1 ms to
/// 1 h. A namespace's layout is fixed by its first use.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_id_layout {
    /// Bits of timestamp (ticks since the epoch).
    pub time_bits: u8,
    /// Bits of node number: the namespace's `offset + limit` must fit.
    pub node_bits: u8,
    /// Bits of sequence within one tick.
    pub sequence_bits: u8,
    /// The length of one tick in milliseconds.
    pub tick_ms: u32,
    /// The time of tick 0, in milliseconds since the Unix epoch.
    pub epoch_ms: u64,
}

impl From<IdLayout> for lh_id_layout {
    fn from(l: IdLayout) -> lh_id_layout {
        lh_id_layout {
            time_bits: l.time_bits,
            node_bits: l.node_bits,
            sequence_bits: l.sequence_bits,
            tick_ms: l.tick_ms,
            epoch_ms: l.epoch_ms,
        }
    }
}

impl From<lh_id_layout> for IdLayout {
    fn from(l: lh_id_layout) -> IdLayout {
        IdLayout::custom(l.time_bits, l.node_bits, l.sequence_bits)
            .with_tick_ms(l.tick_ms)
            .with_epoch(l.epoch_ms)
    }
}

/// An ID taken apart by `lh_id_layout_parts`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_id_parts {
    /// Ticks since the layout's epoch.
    pub tick: u64,
    /// The tick's start in milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// The node number.
    pub node: u32,
    /// The sequence within the tick.
    pub sequence: u64,
}

impl From<IdParts> for lh_id_parts {
    fn from(p: IdParts) -> lh_id_parts {
        lh_id_parts {
            tick: p.tick,
            timestamp_ms: p.timestamp_ms,
            node: p.node,
            sequence: p.sequence,
        }
    }
}

/// The default layout: 41 bits of milliseconds from 2026-01-01, 10 of node
/// (1024 nodes), 12 of sequence (4,096 IDs per millisecond per node).
#[no_mangle]
pub extern "C" fn lh_id_layout_default() -> lh_id_layout {
    IdLayout::DEFAULT.into()
}

/// IDs below 2^53, exact as JavaScript numbers: 41 bits of milliseconds,
/// 6 of node, 6 of sequence.
#[no_mangle]
pub extern "C" fn lh_id_layout_js_safe() -> lh_id_layout {
    IdLayout::js_safe().into()
}

/// A layout in seconds: 31 bits of seconds, 10 of node, 22 of sequence.
#[no_mangle]
pub extern "C" fn lh_id_layout_seconds() -> lh_id_layout {
    IdLayout::seconds().into()
}

/// Takes `id` apart in `layout`; a layout out of range fails `LH_INVALID_ARGUMENT`.
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_id_layout_parts(
    layout: lh_id_layout,
    id: u64,
    out: *mut lh_id_parts,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_id_parts", out)?;
        let layout = IdLayout::from(layout);
        layout.check()?;
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_id_parts", out, layout.parts(id).into()) }
    })
}

/// An ID generator's options; an option whose `has_` flag is false takes
/// the default. Durations are nanoseconds; a negative one fails
/// `LH_INVALID_TTL`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lh_ids_options {
    /// Whether `layout` is given (else `lh_id_layout_default()`).
    pub has_layout: bool,
    /// The bit layout, fixed by the namespace's first use
    /// (`LH_NAMESPACE_MISMATCH` otherwise).
    pub layout: lh_id_layout,
    /// Whether `limit` is given (else as many slots as the node bits hold
    /// above the offset, at most 65536).
    pub has_limit: bool,
    /// The namespace's slots are `[0, limit)`.
    pub limit: u32,
    /// Whether `offset` is given (else 0).
    pub has_offset: bool,
    /// What a node number adds to the slot; `offset + limit` must fit the node bits.
    pub offset: u32,
    /// Whether `ttl_ns` is given (else 10 s).
    pub has_ttl: bool,
    /// The slot lease's ttl, as `lh_slots_options`'.
    pub ttl_ns: i64,
    /// Whether `tolerance_ns` is given (else 1 s).
    pub has_tolerance: bool,
    /// The slot lease's tolerance, as `lh_slots_options`'.
    pub tolerance_ns: i64,
    /// Whether `timeout_ns` is given (else 5 s).
    pub has_timeout: bool,
    /// How long one slot call may take, as `lh_slots_options`'.
    pub timeout_ns: i64,
    /// Whether `max_lead_ns` is given (else 1 s).
    pub has_max_lead: bool,
    /// How far ahead of the store's clock IDs may be issued (0: never ahead).
    pub max_lead_ns: i64,
    /// The owner key the slot is leased under (NULL with length 0: the
    /// default, `leasehold-ids`); every generator gets a fresh instance id.
    pub owner_key: *const u8,
    /// The length of `owner_key`.
    pub owner_key_len: usize,
    /// Whether `preferred` is given.
    pub has_preferred: bool,
    /// The slot to try first (SLOT-01).
    pub preferred: u32,
}

impl Default for lh_ids_options {
    fn default() -> lh_ids_options {
        lh_ids_options {
            has_layout: false,
            layout: lh_id_layout::default(),
            has_limit: false,
            limit: 0,
            has_offset: false,
            offset: 0,
            has_ttl: false,
            ttl_ns: 0,
            has_tolerance: false,
            tolerance_ns: 0,
            has_timeout: false,
            timeout_ns: 0,
            has_max_lead: false,
            max_lead_ns: 0,
            owner_key: std::ptr::null(),
            owner_key_len: 0,
            has_preferred: false,
            preferred: 0,
        }
    }
}

/// What a generator is like now.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lh_id_generator_info {
    /// The node number every ID carries: the slot plus the namespace's offset.
    pub node: u32,
    /// The layout.
    pub layout: lh_id_layout,
    /// The start of the largest tick issued so far (ms since the Unix epoch; 0: none).
    pub last_issued: u64,
    /// Whether the slot was lost; once true, nothing more is issued.
    pub lost: bool,
    /// Why, once lost.
    pub reason: lh_loss_reason,
}

/// The object behind an `lh_ids`.
pub(crate) type Ids = Arc<OnRuntime<IdGenerator>>;

/// The generator behind `ids`.
fn ids_of(ids: lh_ids) -> Result<Ids> {
    handles::get::<Ids>(ids.id)
}

/// Opens an ID generator on the namespace `name` of `store` with `options`
/// (NULL: every default), blocking until it leased a slot: it issues above
/// the slot's floor, within its ceiling. Fails `LH_NOT_READY` (retryable)
/// when every slot is held, `LH_NAMESPACE_MISMATCH` when the namespace was
/// first used with another layout, limit, tolerance or offset,
/// `LH_INVALID_ARGUMENT` for a layout out of range or node numbers that do
/// not fit it, `LH_TIMEOUT` past the timeout; `cancel` (zero: none) gives up
/// with `LH_CANCELLED`.
///
/// # Safety
/// `name` must be NULL or point to `name_len` readable bytes; `options` NULL
/// or readable, its `owner_key` NULL or pointing to `owner_key_len` readable
/// bytes; `out` NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_ids_open(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    options: *const lh_ids_options,
    cancel: lh_cancel,
    out: *mut lh_ids,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_ids", out)?;
        // SAFETY: passed on from the caller.
        let (runtime, opened) = unsafe { open(store, name, name_len, options, cancel) }?;
        let done = block_on(&runtime, opened)?;
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_ids", out, lh_ids { id: done.handle }) }
    })
}

/// `lh_ids_open` without blocking: the outcome (`handle`, an `lh_ids`, and
/// `fence`, the slot lease's) comes as `lh_outcome`s do.
///
/// # Safety
/// As for `lh_ids_open`'s `name` and `options`; `now` NULL or valid for a
/// write; `done` callable from any thread with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_ids_open_async(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    options: *const lh_ids_options,
    cancel: lh_cancel,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe {
        pending::start(
            || open(store, name, name_len, options, cancel),
            done,
            user,
            now,
        )
    }
}

/// The opening of `lh_ids_open` and its async form, its arguments read.
///
/// # Safety
/// As for `lh_ids_open`'s `name` and `options`.
unsafe fn open(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    options: *const lh_ids_options,
    cancel: lh_cancel,
) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    // SAFETY: passed on from the caller.
    let name = unsafe { input::string("ID namespace", name, name_len) }?;
    // SAFETY: passed on from the caller.
    let o = unsafe { input::options(options) };
    // SAFETY: passed on from the caller.
    let owner_key = unsafe { input::optional_string("owner key", o.owner_key, o.owner_key_len) }?;
    let store = handles::get::<OnRuntime<Store>>(store.id)?;
    let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
    let options = IdsOptions {
        layout: input::given(o.has_layout, o.layout.into()),
        limit: input::given(o.has_limit, o.limit),
        offset: input::given(o.has_offset, o.offset),
        ttl: input::given_duration("ID slot ttl", o.has_ttl, o.ttl_ns)?,
        tolerance: input::given_duration("ID slot tolerance", o.has_tolerance, o.tolerance_ns)?,
        timeout: input::given_duration("ID slot timeout", o.has_timeout, o.timeout_ns)?,
        max_lead: input::given_duration("ID max lead", o.has_max_lead, o.max_lead_ns)?,
        owner_key,
        preferred: input::given(o.has_preferred, o.preferred),
    };
    let b = options.builder(&store.value, &name);
    let runtime = store.runtime;
    Ok((runtime.clone(), async move {
        let ids = given_up_or(b.open(), cancel).await?;
        let fence = ids.lease().fence();
        let id = handles::insert(Arc::new(OnRuntime {
            value: ids,
            runtime,
        }));
        Ok(Done::made(id, fence))
    }))
}

/// The next ID, without waiting: `LH_NOT_READY` when none can be issued yet
/// (retryable: the sequence of every tick up to the max lead is used up, or
/// the floor lies ahead of the store's clock), `LH_OVERFLOW` when the
/// layout's time range is used up, `LH_LOST` once the slot was lost or the
/// generator closed (IDGEN-04). The IDs of one generator strictly increase
/// (IDGEN-03).
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_ids_next(ids: lh_ids, out: *mut u64) -> *mut lh_error {
    run(|| {
        input::check_out("id", out)?;
        let id = ids_of(ids)?.value.next()?;
        // SAFETY: passed on from the caller.
        unsafe { input::write("id", out, id) }
    })
}

/// Fills `buf` (`len` IDs) with as many IDs as can be issued now, in one
/// step, and writes how many to `*n` (at least 1; 0 only for `len` 0); fails
/// as `lh_ids_next` when none can, writing nothing.
///
/// # Safety
/// `buf` must be NULL with `len` 0, or valid for `len` writes of `uint64_t`;
/// `n` NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_ids_next_into(
    ids: lh_ids,
    buf: *mut u64,
    len: usize,
    n: *mut usize,
) -> *mut lh_error {
    run(|| {
        input::check_out("n", n)?;
        let ids = ids_of(ids)?;
        let filled = if len == 0 {
            0
        } else {
            if buf.is_null() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("the ID buffer is a NULL pointer with length {len}"),
                ));
            }
            if len > isize::MAX as usize / std::mem::size_of::<u64>() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("the ID buffer's length {len} is too large"),
                ));
            }
            // SAFETY: non-NULL, and the caller promises `len` writable IDs,
            // whose size in bytes fits an isize.
            let out = unsafe { std::slice::from_raw_parts_mut(buf, len) };
            ids.value.next_into(out)?
        };
        // SAFETY: passed on from the caller.
        unsafe { input::write("n", n, filled) }
    })
}

/// The next ID, waiting while none can be issued yet: the outcome's `held`
/// is true and its `fence` is the ID (an ID only grows, as a fence does);
/// it fails as `lh_ids_next` does but for `LH_NOT_READY`. It is tried at
/// once on the calling thread; `cancel` (zero: none) gives up with
/// `LH_CANCELLED`, issuing nothing.
///
/// # Safety
/// `now` must be NULL or valid for a write; `done` callable from any thread
/// with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_ids_next_async(
    ids: lh_ids,
    cancel: lh_cancel,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe { pending::start(|| next_waiting(ids, cancel), done, user, now) }
}

/// The wait of `lh_ids_next_async`, its arguments read.
fn next_waiting(
    ids: lh_ids,
    cancel: lh_cancel,
) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    let ids = ids_of(ids)?;
    let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
    Ok((ids.runtime.clone(), async move {
        let id = or_cancelled(ids.value.next_async(), cancel).await?;
        Ok(Done {
            fence: id,
            ..Done::OK
        })
    }))
}

/// Closes the generator: seals it (nothing is issued after this), releases
/// its slot passing the largest tick issued as the next holder's floor
/// (IDGEN-02), and blocks until the release is done. Fails `LH_LOST` if the
/// slot was lost meanwhile; a second close does nothing. The handle stays
/// until `lh_ids_free`: later `lh_ids_next` calls fail `LH_LOST`. It takes
/// no cancel token, as `lh_slot_holding_end` takes none.
#[no_mangle]
pub extern "C" fn lh_ids_close(ids: lh_ids) -> *mut lh_error {
    run(|| {
        not_in_runtime()?;
        let (runtime, closed) = closing(ids)?;
        block_on(&runtime, closed).map(drop)
    })
}

/// `lh_ids_close` without blocking: its outcome (no handle) comes as
/// `lh_outcome`s do; the generator is sealed before this returns.
///
/// # Safety
/// `now` must be NULL or valid for a write; `done` callable from any thread
/// with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_ids_close_async(
    ids: lh_ids,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe { pending::start(|| closing(ids), done, user, now) }
}

/// The close of `lh_ids_close` and its async form.
fn closing(ids: lh_ids) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    let ids = ids_of(ids)?;
    Ok((ids.runtime.clone(), async move {
        ids.value.close().await.map(|()| Done::OK)
    }))
}

/// Frees the handle without closing the generator, never blocking (for a
/// finalizer): the generator is sealed and its slot released in the
/// background. Freeing twice fails `LH_CLOSED`, as does a later call on it.
#[no_mangle]
pub extern "C" fn lh_ids_free(ids: lh_ids) -> *mut lh_error {
    run(|| handles::remove::<Ids>(ids.id).map(drop))
}

/// What the generator is like now: node, layout, the largest tick issued, loss.
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_ids_info(ids: lh_ids, out: *mut lh_id_generator_info) -> *mut lh_error {
    run(|| {
        input::check_out("lh_id_generator_info", out)?;
        let ids = ids_of(ids)?;
        let g = &ids.value;
        let info = lh_id_generator_info {
            node: g.node(),
            layout: g.layout().into(),
            last_issued: g.last_issued(),
            lost: g.lost(),
            reason: lh_loss_reason::of(g.loss_reason()),
        };
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_id_generator_info", out, info) }
    })
}

/// Writes a new handle of the generator's slot lease as last renewed (free
/// it with `lh_slot_lease_free`).
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_ids_lease(ids: lh_ids, out: *mut lh_slot_lease) -> *mut lh_error {
    run(|| {
        input::check_out("lh_slot_lease", out)?;
        let id = handles::insert(ids_of(ids)?.value.lease());
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_slot_lease", out, lh_slot_lease { id }) }
    })
}

/// Copies the owner the generator's slot is leased under (the options'
/// key, and an instance id fresh for every generator) into `key` and
/// `instance` (`key_cap` and `instance_cap` bytes, not NUL-terminated;
/// `LH_NAME_MAX` always suffices), their lengths into `*key_len` and
/// `*instance_len`; a buffer too small fails `LH_INVALID_ARGUMENT` with
/// both lengths set to the lengths needed.
///
/// # Safety
/// `key` and `instance` must each be NULL or valid for their capacity in
/// bytes of writes; `key_len` and `instance_len` NULL (an error) or valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_ids_owner(
    ids: lh_ids,
    key: *mut u8,
    key_cap: usize,
    key_len: *mut usize,
    instance: *mut u8,
    instance_cap: usize,
    instance_len: *mut usize,
) -> *mut lh_error {
    run(|| {
        input::check_out("key_len", key_len)?;
        input::check_out("instance_len", instance_len)?;
        let lease = ids_of(ids)?.value.lease();
        let owner = lease.owner();
        let (k, i) = (owner.key().as_bytes(), owner.instance().as_bytes());
        // SAFETY: passed on from the caller.
        unsafe {
            input::write("key_len", key_len, k.len())?;
            input::write("instance_len", instance_len, i.len())?;
        }
        for (what, buf, cap, text) in [
            ("key", key, key_cap, k),
            ("instance", instance, instance_cap, i),
        ] {
            if buf.is_null() || cap < text.len() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "the {what} buffer holds {cap} bytes; the owner's {what} needs {}",
                        text.len()
                    ),
                ));
            }
        }
        // SAFETY: both non-NULL, and the caller promises their capacities
        // in writable bytes, checked to hold the texts; a buffer of the
        // caller's cannot overlap the library's strings.
        unsafe {
            std::ptr::copy_nonoverlapping(k.as_ptr(), key, k.len());
            std::ptr::copy_nonoverlapping(i.as_ptr(), instance, i.len());
        }
        Ok(())
    })
}
