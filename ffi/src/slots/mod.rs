//! Slot leases: a namespace of `limit` slots opened on a store,
//! its owners, and the three verbs acquire, renew and release; a slot held
//! with background renewal is in [`holding`]. Every rule (which slot,
//! floors, ceilings, the timeout, renewal and loss) is the core's; this
//! module only translates.

pub(crate) mod holding;

use std::future::Future;
use std::sync::Arc;

use leasehold::names::MAX_NAME_BYTES;
use leasehold::slots::{AcquireResult, Owner, SlotLease, Slots};
use leasehold::{CancellationToken, Error, ErrorKind, Result, Store};
use leasehold_bridge::options::SlotsOptions;

use crate::call::{block_on, given_up_or, run};
use crate::cancel::lh_cancel;
use crate::error::lh_error;
use crate::handles::{self, OnRuntime};
use crate::input;
use crate::pending::{self, lh_done_fn, lh_outcome, Done};
use crate::store::lh_store;
use tokio::runtime::Handle;

/// The longest owner key, owner instance or namespace, in bytes: a buffer of
/// this size always holds an instance id from `lh_owner_new`.
pub const LH_NAME_MAX: usize = 1024;

const _: () = assert!(LH_NAME_MAX == MAX_NAME_BYTES);

/// A slot namespace opened on a store, from `lh_slots_open` until `lh_slots_free`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_slots {
    /// The library's id of the namespace handle; never dereferenced.
    pub id: u64,
}

/// A lease on one slot, as last returned by the store, from an acquire or
/// a renew until `lh_slot_lease_free`. Only the library makes one, so its
/// fence cannot be forged.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_slot_lease {
    /// The library's id of the lease; never dereferenced.
    pub id: u64,
}

/// A slot namespace's options; an option whose `has_` flag is false takes
/// the default. Durations are nanoseconds; a negative one fails
/// `LH_INVALID_TTL`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct lh_slots_options {
    /// Whether `limit` is given (else 1024).
    pub has_limit: bool,
    /// The slots are `[0, limit)`: 1 to 65536 (`LH_INVALID_ARGUMENT` otherwise).
    pub limit: u32,
    /// Whether `ttl_ns` is given (else 10 s).
    pub has_ttl: bool,
    /// A lease expires this long after the store's now unless renewed: 1 s to 1 h.
    pub ttl_ns: i64,
    /// Whether `tolerance_ns` is given (else 1 s).
    pub has_tolerance: bool,
    /// A lease's ceiling lies this far beyond its expiry: at most 1 h.
    pub tolerance_ns: i64,
    /// Whether `offset` is given (else 0).
    pub has_offset: bool,
    /// What a node number adds to the slot; `offset + limit` must fit a `uint32_t`.
    pub offset: u32,
    /// Whether `timeout_ns` is given (else 5 s).
    pub has_timeout: bool,
    /// How long one acquire, renew or release may take before it fails
    /// `LH_TIMEOUT` (its outcome unknown); more than zero.
    pub timeout_ns: i64,
    /// Whether `margin_ns` is given (else a tenth of the ttl).
    pub has_margin: bool,
    /// How long before a held slot's expiry its holder declares it lost
    /// (`lh_slots_begin`); below half the ttl.
    pub margin_ns: i64,
}

/// What a slot lease says. Times are milliseconds since the Unix epoch on
/// the store's clock.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct lh_slot_info {
    /// The slot, in `[0, limit)`.
    pub slot: u32,
    /// The node number for IDs: the slot plus the namespace's offset.
    pub node: u32,
    /// Larger than every fence the store gave before (SLOT-08).
    pub fence: u64,
    /// Issue only timestamps above this one (SLOT-05, SLOT-06).
    pub floor: u64,
    /// When the lease expires unless renewed.
    pub expires_at: u64,
    /// Issue no timestamp past this one.
    pub ceiling: u64,
}

/// Gives the owner key `key` a fresh random instance id (the core's
/// `Owner::new`) and copies the id into `instance` (`instance_cap` bytes,
/// not NUL-terminated; `LH_NAME_MAX` always suffices), its length into
/// `*instance_len`. An empty key fails `LH_EMPTY_NAME`; a buffer too small
/// fails `LH_INVALID_ARGUMENT` with `*instance_len` set to the length needed.
///
/// # Safety
/// `key` must be NULL or point to `key_len` readable bytes; `instance` NULL
/// or valid for `instance_cap` bytes of writes; `instance_len` NULL (an
/// error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_owner_new(
    key: *const u8,
    key_len: usize,
    instance: *mut u8,
    instance_cap: usize,
    instance_len: *mut usize,
) -> *mut lh_error {
    run(|| {
        input::check_out("instance_len", instance_len)?;
        // SAFETY: passed on from the caller.
        let key = unsafe { input::string("owner key", key, key_len) }?;
        let owner = Owner::new(&key)?;
        let id = owner.instance().as_bytes();
        // SAFETY: passed on from the caller.
        unsafe { input::write("instance_len", instance_len, id.len()) }?;
        if instance.is_null() || instance_cap < id.len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the instance buffer holds {instance_cap} bytes; the id needs {}",
                    id.len()
                ),
            ));
        }
        // SAFETY: non-NULL, and the caller promises `instance_cap` writable
        // bytes, at least `id.len()`; a buffer of the caller's cannot overlap
        // the library's string.
        unsafe { std::ptr::copy_nonoverlapping(id.as_ptr(), instance, id.len()) };
        Ok(())
    })
}

/// Checks an owner as `Owner::with_instance` does: key and instance
/// non-empty (`LH_EMPTY_NAME`), UTF-8 and at most `LH_NAME_MAX` bytes
/// (`LH_INVALID_ARGUMENT`).
///
/// # Safety
/// Each pointer must be NULL or point to its length in readable bytes.
#[no_mangle]
pub unsafe extern "C" fn lh_owner_check(
    key: *const u8,
    key_len: usize,
    instance: *const u8,
    instance_len: usize,
) -> *mut lh_error {
    run(|| {
        // SAFETY: passed on from the caller.
        unsafe { owner(key, key_len, instance, instance_len) }.map(drop)
    })
}

/// The owner named by the caller's key and instance.
///
/// # Safety
/// As for `lh_owner_check`.
pub(crate) unsafe fn owner(
    key: *const u8,
    key_len: usize,
    instance: *const u8,
    instance_len: usize,
) -> Result<Owner> {
    // SAFETY: passed on from the caller.
    let key = unsafe { input::string("owner key", key, key_len) }?;
    // SAFETY: passed on from the caller.
    let instance = unsafe { input::string("owner instance", instance, instance_len) }?;
    Owner::with_instance(&key, &instance)
}

/// Opens the slot namespace `name` of `store` with `options` (NULL: every
/// default). Nothing is sent to the store; bad options fail at once
/// (`LH_EMPTY_NAME`, `LH_INVALID_ARGUMENT`, `LH_INVALID_TTL`). A namespace
/// first used with another limit, tolerance or offset fails
/// `LH_NAMESPACE_MISMATCH` at the first acquire (SLOT-02).
///
/// # Safety
/// `name` must be NULL or point to `name_len` readable bytes; `options`
/// NULL or readable; `out` NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_slots_open(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    options: *const lh_slots_options,
    out: *mut lh_slots,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_slots", out)?;
        // SAFETY: passed on from the caller.
        let name = unsafe { input::string("slot namespace", name, name_len) }?;
        // SAFETY: passed on from the caller.
        let o = unsafe { input::options(options) };
        let store = handles::get::<OnRuntime<Store>>(store.id)?;
        let options = SlotsOptions {
            limit: input::given(o.has_limit, o.limit),
            ttl: input::given_duration("slot ttl", o.has_ttl, o.ttl_ns)?,
            tolerance: input::given_duration("slot tolerance", o.has_tolerance, o.tolerance_ns)?,
            offset: input::given(o.has_offset, o.offset),
            margin: input::given_duration("slot margin", o.has_margin, o.margin_ns)?,
            timeout: input::given_duration("slot timeout", o.has_timeout, o.timeout_ns)?,
            layout: None,
        };
        let id = handles::insert(Arc::new(OnRuntime {
            value: options.open(&store.value, &name)?,
            runtime: store.runtime,
        }));
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_slots", out, lh_slots { id }) }
    })
}

/// Frees the namespace handle (its leases stay valid handles).
#[no_mangle]
pub extern "C" fn lh_slots_free(slots: lh_slots) -> *mut lh_error {
    run(|| handles::remove::<Arc<OnRuntime<Slots>>>(slots.id).map(drop))
}

/// Acquires a slot for the owner `key` / `instance` (SLOT-01): the slot it
/// holds already, else `preferred` (when `has_preferred`; it must lie in
/// `[0, limit)`) if free, else the slot its key held last if free, else the
/// lowest free slot. `*leased` says whether it got one: false when every
/// slot is held (Exhausted, an outcome, not an error), and then nothing
/// else is written. Past the namespace's timeout the call fails
/// `LH_TIMEOUT`; `cancel` (zero: none) gives up with `LH_CANCELLED`.
///
/// # Safety
/// `key` and `instance` must each be NULL or point to their length in
/// readable bytes; `out` and `leased` NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_slots_acquire(
    slots: lh_slots,
    key: *const u8,
    key_len: usize,
    instance: *const u8,
    instance_len: usize,
    has_preferred: bool,
    preferred: u32,
    cancel: lh_cancel,
    out: *mut lh_slot_lease,
    leased: *mut bool,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_slot_lease", out)?;
        input::check_out("leased", leased)?;
        let preferred = has_preferred.then_some(preferred);
        // SAFETY: passed on from the caller.
        let (runtime, acquired) = unsafe {
            acquire(
                slots,
                key,
                key_len,
                instance,
                instance_len,
                preferred,
                cancel,
            )
        }?;
        let done = block_on(&runtime, acquired)?;
        // SAFETY: passed on from the caller.
        unsafe {
            if done.held {
                input::write("lh_slot_lease", out, lh_slot_lease { id: done.handle })?;
            }
            input::write("leased", leased, done.held)
        }
    })
}

/// `lh_slots_acquire` without blocking: the outcome (`held`: leased; when
/// leased, `handle`, an `lh_slot_lease`, and `fence`) comes as `lh_outcome`s do.
///
/// # Safety
/// As for `lh_slots_acquire`'s `key` and `instance`; `now` NULL or valid
/// for a write; `done` callable from any thread with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_slots_acquire_async(
    slots: lh_slots,
    key: *const u8,
    key_len: usize,
    instance: *const u8,
    instance_len: usize,
    has_preferred: bool,
    preferred: u32,
    cancel: lh_cancel,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    let preferred = has_preferred.then_some(preferred);
    // SAFETY: passed on from the caller.
    unsafe {
        pending::start(
            || {
                acquire(
                    slots,
                    key,
                    key_len,
                    instance,
                    instance_len,
                    preferred,
                    cancel,
                )
            },
            done,
            user,
            now,
        )
    }
}

/// The acquisition of `lh_slots_acquire` and its async form, its arguments read.
///
/// # Safety
/// As for `lh_slots_acquire`'s `key` and `instance`.
unsafe fn acquire(
    slots: lh_slots,
    key: *const u8,
    key_len: usize,
    instance: *const u8,
    instance_len: usize,
    preferred: Option<u32>,
    cancel: lh_cancel,
) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    // SAFETY: passed on from the caller.
    let owner = unsafe { owner(key, key_len, instance, instance_len) }?;
    let slots = handles::get::<Arc<OnRuntime<Slots>>>(slots.id)?;
    let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
    let runtime = slots.runtime.clone();
    let attempt = async move { slots.value.acquire(&owner, preferred).await };
    Ok((runtime, async move {
        match given_up_or(attempt, cancel).await? {
            AcquireResult::Leased(lease) => {
                let fence = lease.fence();
                Ok(Done::made(handles::insert(lease), fence))
            }
            _ => Ok(Done::NOTHING),
        }
    }))
}

/// Renews `lease` for the namespace's ttl (SLOT-04): the fence stays, and
/// `*out` is a new handle of the renewed lease (the old one stays valid
/// until freed). `*renewed` is false, and nothing else is written, when the
/// slot's owner or fence no longer match. `LH_TIMEOUT` and `cancel` as for
/// `lh_slots_acquire`.
///
/// # Safety
/// `out` and `renewed` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_slots_renew(
    slots: lh_slots,
    lease: lh_slot_lease,
    cancel: lh_cancel,
    out: *mut lh_slot_lease,
    renewed: *mut bool,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_slot_lease", out)?;
        input::check_out("renewed", renewed)?;
        let slots = handles::get::<Arc<OnRuntime<Slots>>>(slots.id)?;
        let lease = handles::get::<SlotLease>(lease.id)?;
        let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
        let runtime = slots.runtime.clone();
        let renewing = async move { slots.value.renew(&lease).await };
        let Some(lease) = block_on(&runtime, given_up_or(renewing, cancel))? else {
            // SAFETY: passed on from the caller.
            return unsafe { input::write("renewed", renewed, false) };
        };
        // SAFETY: passed on from the caller.
        unsafe { give(lease, out, renewed) }
    })
}

/// Releases `lease`, whose holder issued timestamps up to `last_issued`
/// (ms): the slot's next holder gets the floor `max(floor, min(last_issued,
/// ceiling))` (SLOT-05). `*released` is false when the slot's owner or
/// fence no longer match; a release repeated by the same holder answers
/// true again and changes nothing. The handle stays valid until
/// `lh_slot_lease_free`. `LH_TIMEOUT` and `cancel` as for `lh_slots_acquire`.
///
/// # Safety
/// `released` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_slots_release(
    slots: lh_slots,
    lease: lh_slot_lease,
    last_issued: u64,
    cancel: lh_cancel,
    released: *mut bool,
) -> *mut lh_error {
    run(|| {
        input::check_out("released", released)?;
        let slots = handles::get::<Arc<OnRuntime<Slots>>>(slots.id)?;
        let lease = handles::get::<SlotLease>(lease.id)?;
        let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
        let runtime = slots.runtime.clone();
        let releasing = async move { slots.value.release(&lease, last_issued).await };
        let done = block_on(&runtime, given_up_or(releasing, cancel))?;
        // SAFETY: passed on from the caller.
        unsafe { input::write("released", released, done) }
    })
}

/// What the lease says: slot, node, fence, floor, expiry and ceiling.
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_slot_lease_info(
    lease: lh_slot_lease,
    out: *mut lh_slot_info,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_slot_info", out)?;
        let info = info(&handles::get::<SlotLease>(lease.id)?);
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_slot_info", out, info) }
    })
}

/// What `lease` says, as C reads it.
pub(crate) fn info(lease: &SlotLease) -> lh_slot_info {
    lh_slot_info {
        slot: lease.slot(),
        node: lease.node(),
        fence: lease.fence(),
        floor: lease.floor(),
        expires_at: lease.expires_at(),
        ceiling: lease.ceiling(),
    }
}

/// Frees the lease's handle without releasing the slot (it expires at its
/// ttl). Freeing twice fails `LH_CLOSED`.
#[no_mangle]
pub extern "C" fn lh_slot_lease_free(lease: lh_slot_lease) -> *mut lh_error {
    run(|| handles::remove::<SlotLease>(lease.id).map(drop))
}

/// Keeps `lease` behind a new handle and writes it and `true`.
///
/// # Safety
/// `out` and `flag` valid for a write.
pub(crate) unsafe fn give(
    lease: SlotLease,
    out: *mut lh_slot_lease,
    flag: *mut bool,
) -> Result<()> {
    let id = handles::insert(lease);
    // SAFETY: passed on from the caller.
    unsafe {
        input::write("lh_slot_lease", out, lh_slot_lease { id })?;
        input::write("flag", flag, true)
    }
}
