//! The table's own handle on a key name: one allocation per key, shared by
//! the map of keys, the place of each held lease and each waiting request.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use triomphe::ThinArc;

use super::KeyName;

/// A key name in one allocation: its reference count, the lock's name
/// (shared with every key of the lock) and the key's bytes, behind a
/// pointer of 8 bytes. A [`KeyName`] takes two allocations (the pair and
/// the key's string), which at a million held keys was 48 bytes a lease more.
#[derive(Clone)]
pub(super) struct KeyRef(ThinArc<Arc<str>, u8>);

impl KeyRef {
    /// The table's handle on `name`.
    pub(super) fn new(name: &KeyName) -> KeyRef {
        KeyRef(ThinArc::from_header_and_slice(
            name.lock.clone(),
            name.key.as_bytes(),
        ))
    }

    /// The lock's name.
    pub(super) fn lock(&self) -> &Arc<str> {
        &self.0.header.header
    }

    /// The key within the lock, as the string it was made from.
    pub(super) fn key(&self) -> &str {
        std::str::from_utf8(&self.0.slice).expect("a key's bytes are those of a str")
    }

    /// The pair (lock, key) this handle names, in allocations of its own.
    pub(super) fn name(&self) -> KeyName {
        KeyName::new(self.lock().clone(), self.key())
    }

    /// Whether this handle names `name`.
    fn names(&self, name: &KeyName) -> bool {
        *self.0.header.header == *name.lock && self.0.slice == *name.key.as_bytes()
    }
}

impl PartialEq for KeyRef {
    fn eq(&self, other: &Self) -> bool {
        *self.0.header.header == *other.0.header.header && self.0.slice == other.0.slice
    }
}

impl Eq for KeyRef {}

impl Hash for KeyRef {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.header.header.hash(state);
        self.0.slice.hash(state);
    }
}

/// Ordered as [`KeyName`]s are: by lock, then by key.
impl Ord for KeyRef {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&*self.0.header.header, &self.0.slice).cmp(&(&*other.0.header.header, &other.0.slice))
    }
}

impl PartialOrd for KeyRef {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for KeyRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.lock(), self.key())
    }
}

/// A [`KeyName`] looked up in the map of keys without making a [`KeyRef`]:
/// it hashes as the handle that names it does.
pub(super) struct Lookup<'a>(pub(super) &'a KeyName);

impl Hash for Lookup<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.lock.hash(state);
        self.0.key.as_bytes().hash(state);
    }
}

impl hashbrown::Equivalent<KeyRef> for Lookup<'_> {
    fn equivalent(&self, key: &KeyRef) -> bool {
        key.names(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn a_handle_hashes_and_compares_as_the_name_it_was_made_from() {
        let state = foldhash::fast::RandomState::default();
        let name = KeyName::new("lock", "key");
        let key = KeyRef::new(&name);
        assert_eq!(state.hash_one(&key), state.hash_one(Lookup(&name)));
        assert!(hashbrown::Equivalent::equivalent(&Lookup(&name), &key));
        assert!(!key.names(&KeyName::new("lock", "other")));
        assert!(!key.names(&KeyName::new("loc", "kkey")));
        assert_eq!(key.name(), name);
        assert_eq!(key, KeyRef::new(&KeyName::new("lock", "key")));
        assert_ne!(key, KeyRef::new(&KeyName::new("lockk", "ey")));
    }

    #[test]
    fn a_handle_is_a_thin_pointer() {
        assert_eq!(std::mem::size_of::<KeyRef>(), 8);
    }
}
