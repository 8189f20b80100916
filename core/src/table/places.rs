//! Where the table finds a held lease by its id: a lease id carries, in its
//! low 32 bits, the place of its key in a vector, and 96 random bits above
//! them. Finding a lease is an index, not a hash lookup, and costs 8 bytes a
//! lease rather than a map's entry; the random bits keep ids unguessable, and
//! the holder's own id (which the table compares) tells a stale id from the
//! place's new lease.

use crate::ids::LeaseId;

/// The places of held leases' keys, reused once let go.
#[derive(Debug)]
pub(super) struct Places<K> {
    keys: Vec<Option<K>>,
    free: Vec<u32>,
    held: usize,
}

impl<K> Default for Places<K> {
    fn default() -> Places<K> {
        Places {
            keys: Vec::new(),
            free: Vec::new(),
            held: 0,
        }
    }
}

/// The place a lease id names.
pub(super) fn place_of(id: LeaseId) -> u32 {
    (id.0 & u128::from(u32::MAX)) as u32
}

impl<K> Places<K> {
    /// A new lease id whose place now holds `key`.
    pub(super) fn take(&mut self, key: K) -> LeaseId {
        let place = match self.free.pop() {
            Some(place) => {
                self.keys[place as usize] = Some(key);
                place
            }
            None => {
                let place = u32::try_from(self.keys.len()).expect("fewer than 2^32 leases");
                self.keys.push(Some(key));
                place
            }
        };
        self.held += 1;
        let random = LeaseId::random().0 & !u128::from(u32::MAX);
        LeaseId(random | u128::from(place))
    }

    /// The key in the place `id` names: the caller compares `id` with the
    /// holder's own before trusting it.
    pub(super) fn get(&self, id: LeaseId) -> Option<&K> {
        self.at(place_of(id))
    }

    /// The key in `place`, if a lease holds it.
    pub(super) fn at(&self, place: u32) -> Option<&K> {
        self.keys.get(place as usize)?.as_ref()
    }

    /// Frees the place of `id` (whose holder the caller checked).
    pub(super) fn free(&mut self, id: LeaseId) {
        let place = place_of(id);
        if let Some(slot) = self.keys.get_mut(place as usize) {
            if slot.take().is_some() {
                self.held -= 1;
                self.free.push(place);
            }
        }
    }

    /// How many places hold a lease.
    pub(super) fn len(&self) -> usize {
        self.held
    }

    /// Frees every place.
    pub(super) fn clear(&mut self) {
        *self = Places::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_place_is_reused_under_a_new_id() {
        let mut places = Places::default();
        let a = places.take("a");
        let b = places.take("b");
        assert_eq!((places.get(a), places.get(b)), (Some(&"a"), Some(&"b")));
        assert_eq!(places.len(), 2);
        places.free(a);
        assert_eq!(places.get(a), None);
        let c = places.take("c");
        assert_ne!(c, a);
        assert_eq!(place_of(c), place_of(a));
        // The stale id names the new lease's place: the table compares ids.
        assert_eq!(places.get(a), Some(&"c"));
        places.free(b);
        places.free(b);
        assert_eq!(places.len(), 1);
    }
}
