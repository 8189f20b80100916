//! The requests the table knows, by id: the key whose line each waits in,
//! or the place of the lease it was granted. Two maps whose entries take 24
//! bytes each (an id as two 64-bit halves, then a pointer or a place),
//! where one map of both kinds took 32 (a `u128` key is 16-byte aligned).

use super::KeyRef;
use crate::hashed::HashMap;
use crate::ids::{Halves, RequestId};

/// Where a known request is.
#[derive(Debug)]
pub(super) enum RequestState<'a> {
    /// In the line of this key.
    Waiting(&'a KeyRef),
    /// Granted the lease in this place.
    Granted(u32),
}

/// The requests waiting in lines and those granted a held lease.
#[derive(Debug, Default)]
pub(super) struct Requests {
    waiting: HashMap<Halves, KeyRef>,
    granted: HashMap<Halves, u32>,
}

impl Requests {
    /// Where request `id` is, if the table knows it.
    pub(super) fn get(&self, id: RequestId) -> Option<RequestState<'_>> {
        let id = Halves::from(id);
        match self.granted.get(&id) {
            Some(place) => Some(RequestState::Granted(*place)),
            None => self.waiting.get(&id).map(RequestState::Waiting),
        }
    }

    /// Request `id` waits in the line of `key`.
    pub(super) fn wait(&mut self, id: RequestId, key: KeyRef) {
        self.waiting.insert(id.into(), key);
    }

    /// Request `id`, which was not waiting, was granted the lease in `place`.
    pub(super) fn grant(&mut self, id: RequestId, place: u32) {
        self.granted.insert(id.into(), place);
    }

    /// Request `id` left its line (to be granted, or to go).
    pub(super) fn leave_line(&mut self, id: RequestId) {
        self.waiting.remove(&id.into());
    }

    /// Forgets request `id`, wherever it was.
    pub(super) fn remove(&mut self, id: RequestId) {
        let id = Halves::from(id);
        if self.granted.remove(&id).is_none() {
            self.waiting.remove(&id);
        }
    }

    /// How many requests the table knows.
    pub(super) fn len(&self) -> usize {
        self.waiting.len() + self.granted.len()
    }

    /// Forgets every request.
    pub(super) fn clear(&mut self) {
        self.waiting.clear();
        self.granted.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::KeyName;

    #[test]
    fn entries_take_24_bytes() {
        assert_eq!(std::mem::size_of::<(Halves, KeyRef)>(), 24);
        assert_eq!(std::mem::size_of::<(Halves, u32)>(), 24);
    }

    #[test]
    fn a_request_is_waiting_granted_or_unknown() {
        let mut requests = Requests::default();
        let (a, b) = (RequestId(1 << 70 | 5), RequestId(5));
        let key = KeyRef::new(&KeyName::new("l", "k"));
        requests.wait(a, key);
        assert!(matches!(requests.get(a), Some(RequestState::Waiting(_))));
        assert!(requests.get(b).is_none());
        requests.leave_line(a);
        requests.grant(a, 7);
        requests.grant(b, 8);
        assert!(matches!(requests.get(a), Some(RequestState::Granted(7))));
        assert!(matches!(requests.get(b), Some(RequestState::Granted(8))));
        assert_eq!(requests.len(), 2);
        requests.remove(a);
        assert!(requests.get(a).is_none());
        assert_eq!(requests.len(), 1);
        requests.clear();
        assert_eq!(requests.len(), 0);
    }
}
