//! The handle table: every object the caller holds is an id here, so that a
//! zero, made-up, freed or wrong-kind handle is an error code, never a
//! dereference (ERR-03). Ids only grow, so a freed id is never reused.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

#[cfg(feature = "testing")]
use leasehold::clock::VirtualClock;
use leasehold::slots::{SlotLease, Slots};
use leasehold::{CancellationToken, Error, ErrorKind, Lock, ManualLease, Result, Store};
use tokio::runtime::Handle;

use crate::holding::HeldLease;
use crate::holdings::Holdings;
use crate::idgen::Ids;
use crate::slots::holding::HeldSlotHolding;

/// An object of a store, with the runtime the store's work runs on, where
/// the blocking calls on it run too (so that no call looks the runtime up).
#[derive(Clone)]
pub(crate) struct OnRuntime<T> {
    pub(crate) value: T,
    pub(crate) runtime: Handle,
}

/// An object behind a handle. The large ones (the slots and a slot lease)
/// are shared or boxed: the table's nodes, and the moves of every insert
/// and removal, stay the size of the small ones. A lock is shared too, so
/// that a call that reads it clones one reference, not the lock and its
/// runtime's handle.
#[derive(Clone)]
pub(crate) enum Object {
    Store(OnRuntime<Store>),
    Lock(Arc<OnRuntime<Lock>>),
    Holding(Arc<HeldLease>),
    Holdings(Arc<Holdings>),
    Manual(OnRuntime<ManualLease>),
    Slots(Arc<OnRuntime<Slots>>),
    SlotLease(Box<SlotLease>),
    SlotHolding(Arc<HeldSlotHolding>),
    Ids(Ids),
    Cancel(CancellationToken),
    #[cfg(feature = "testing")]
    Clock(VirtualClock),
}

struct Table {
    next: u64,
    objects: BTreeMap<u64, Object>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    next: 1,
    objects: BTreeMap::new(),
});

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A kind of object, and the C name of its handle.
pub(crate) trait Kind: Sized {
    /// The handle's C type name, for messages.
    const NAME: &'static str;
    /// The object as stored.
    fn wrap(self) -> Object;
    /// The object, if it is of this kind.
    fn from_object(object: &Object) -> Option<Self>;
}

macro_rules! kind {
    ($ty:ty, $variant:ident, $name:literal) => {
        impl Kind for $ty {
            const NAME: &'static str = $name;
            fn wrap(self) -> Object {
                Object::$variant(self)
            }
            fn from_object(object: &Object) -> Option<Self> {
                match object {
                    Object::$variant(v) => Some(v.clone()),
                    _ => None,
                }
            }
        }
    };
}

kind!(OnRuntime<Store>, Store, "lh_store");
kind!(Arc<OnRuntime<Lock>>, Lock, "lh_lock");
kind!(Arc<HeldLease>, Holding, "lh_holding");
kind!(Arc<Holdings>, Holdings, "lh_holdings");
kind!(OnRuntime<ManualLease>, Manual, "lh_manual");
kind!(Arc<OnRuntime<Slots>>, Slots, "lh_slots");
kind!(Arc<HeldSlotHolding>, SlotHolding, "lh_slot_holding");
kind!(Ids, Ids, "lh_ids");
kind!(CancellationToken, Cancel, "lh_cancel");
#[cfg(feature = "testing")]
kind!(VirtualClock, Clock, "lh_clock");

impl Kind for SlotLease {
    const NAME: &'static str = "lh_slot_lease";
    fn wrap(self) -> Object {
        Object::SlotLease(Box::new(self))
    }
    fn from_object(object: &Object) -> Option<Self> {
        match object {
            Object::SlotLease(v) => Some(SlotLease::clone(v)),
            _ => None,
        }
    }
}

/// Keeps `object` and answers its new id (never 0).
pub(crate) fn insert<T: Kind>(object: T) -> u64 {
    let mut t = table();
    let id = t.next;
    t.next += 1;
    t.objects.insert(id, object.wrap());
    id
}

/// Why `id` names no object of kind `T`.
fn refused<T: Kind>(t: &Table, id: u64, found: Option<&Object>) -> Error {
    if id == 0 {
        return Error::new(
            ErrorKind::InvalidArgument,
            format!("the {} handle is zero", T::NAME),
        );
    }
    if found.is_some() {
        return Error::new(
            ErrorKind::InvalidArgument,
            format!("the handle {id} is not an {}", T::NAME),
        );
    }
    if id < t.next {
        return Error::new(
            ErrorKind::Closed,
            format!("the {} handle {id} was closed or freed", T::NAME),
        );
    }
    Error::new(
        ErrorKind::InvalidArgument,
        format!("{id} is not a {} handle", T::NAME),
    )
}

/// The object of kind `T` behind `id`.
pub(crate) fn get<T: Kind>(id: u64) -> Result<T> {
    let t = table();
    let found = t.objects.get(&id);
    match found.and_then(T::from_object) {
        Some(v) => Ok(v),
        None => Err(refused::<T>(&t, id, found)),
    }
}

/// The object of kind `T` behind `id` when `id` is not zero; `None` for zero.
pub(crate) fn get_optional<T: Kind>(id: u64) -> Result<Option<T>> {
    if id == 0 {
        return Ok(None);
    }
    get(id).map(Some)
}

/// Takes the object of kind `T` out of the table: later uses of `id` fail `Closed`.
pub(crate) fn remove<T: Kind>(id: u64) -> Result<T> {
    let mut t = table();
    let found = t.objects.get(&id);
    match found.and_then(T::from_object) {
        Some(v) => {
            t.objects.remove(&id);
            Ok(v)
        }
        None => Err(refused::<T>(&t, id, found)),
    }
}

/// Takes the objects of kind `T` behind every id of `ids` out of the table,
/// all or none: an id named twice fails `InvalidArgument`, one that names
/// no such object fails as [`get`] would, and then every object stays.
pub(crate) fn remove_all<T: Kind>(ids: &[u64]) -> Result<Vec<T>> {
    let mut t = table();
    let mut named = BTreeSet::new();
    let mut found = Vec::with_capacity(ids.len());
    for &id in ids {
        if !named.insert(id) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("the {} handle {id} is named twice", T::NAME),
            ));
        }
        let object = t.objects.get(&id);
        match object.and_then(T::from_object) {
            Some(v) => found.push(v),
            None => return Err(refused::<T>(&t, id, object)),
        }
    }
    for id in ids {
        t.objects.remove(id);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::Object;

    // Every insert and removal moves objects within the table's nodes, each
    // the size of the largest kind (136 bytes before the large ones were
    // put behind a pointer).
    #[test]
    fn an_object_is_small() {
        let size = std::mem::size_of::<Object>();
        assert!(size <= 32, "{size} bytes");
    }
}
