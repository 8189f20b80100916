//! Where the etcd store keeps what: the key layout under the prefix, and the
//! records stored in those keys (docs/etcd.md lists them).
//!
//! ```text
//! PREFIX lines/LOCK/KEY/REQUEST   one record per hold request, in line by create revision
//! PREFIX fence                    written by every grant, never deleted (DIST-03)
//! PREFIX slots/NAMESPACE/spec     the namespace's parameters (SLOT-02)
//! PREFIX slots/NAMESPACE/SLOT     one record per slot ever taken (DIST-07)
//! ```
//!
//! Lock names, keys and namespaces are percent-encoded, so that no encoded
//! name contains `/` and one key's line is never a prefix of another's.

use percent_encoding::{percent_decode, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::{Deserialize, Serialize};

use crate::ids::RequestId;
use crate::table::KeyName;

/// What stays readable in an encoded name: letters, digits and `-_.~`.
const ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn encode(name: &str) -> String {
    utf8_percent_encode(name, ENCODED).to_string()
}

fn decode(segment: &[u8]) -> Option<String> {
    percent_decode(segment)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// The end of the range of every key that starts with `prefix`.
pub(crate) fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// The store's keys under one prefix.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    prefix: String,
}

impl Layout {
    pub(crate) fn new(prefix: &str) -> Layout {
        Layout {
            prefix: prefix.to_owned(),
        }
    }

    /// Every line of every lock, or of lock `lock`.
    pub(crate) fn lines(&self, lock: Option<&str>) -> Vec<u8> {
        match lock {
            Some(lock) => format!("{}lines/{}/", self.prefix, encode(lock)).into_bytes(),
            None => format!("{}lines/", self.prefix).into_bytes(),
        }
    }

    /// The line of one key: the records of its holder and its waiters.
    pub(crate) fn line(&self, name: &KeyName) -> Vec<u8> {
        format!(
            "{}lines/{}/{}/",
            self.prefix,
            encode(&name.lock),
            encode(&name.key)
        )
        .into_bytes()
    }

    /// The record of one request in its key's line.
    pub(crate) fn request(&self, name: &KeyName, request: RequestId) -> Vec<u8> {
        let mut key = self.line(name);
        key.extend_from_slice(format!("{:032x}", request.0).as_bytes());
        key
    }

    /// The lock and key of a request record's key.
    pub(crate) fn key_of(&self, record_key: &[u8]) -> Option<KeyName> {
        let rest = record_key.strip_prefix(self.lines(None).as_slice())?;
        let mut parts = rest.split(|&b| b == b'/');
        let lock = decode(parts.next()?)?;
        let key = decode(parts.next()?)?;
        parts.next()?;
        parts.next().is_none().then(|| KeyName::new(lock, key))
    }

    /// The high-water key every grant writes and nothing deletes (DIST-03).
    pub(crate) fn fence(&self) -> Vec<u8> {
        format!("{}fence", self.prefix).into_bytes()
    }

    /// A slot namespace's parameters.
    pub(crate) fn slot_spec(&self, namespace: &str) -> Vec<u8> {
        format!("{}slots/{}/spec", self.prefix, encode(namespace)).into_bytes()
    }

    /// The prefix of a namespace's slot records.
    pub(crate) fn slots(&self, namespace: &str) -> Vec<u8> {
        format!("{}slots/{}/slot/", self.prefix, encode(namespace)).into_bytes()
    }

    /// One slot's record.
    pub(crate) fn slot(&self, namespace: &str, slot: u32) -> Vec<u8> {
        let mut key = self.slots(namespace);
        key.extend_from_slice(format!("{slot:05}").as_bytes());
        key
    }

    /// The slot number of a slot record's key.
    pub(crate) fn slot_of(&self, namespace: &str, key: &[u8]) -> Option<u32> {
        let rest = key.strip_prefix(self.slots(namespace).as_slice())?;
        std::str::from_utf8(rest).ok()?.parse().ok()
    }
}

/// What a request record holds. Never the lease id: only its holder's
/// process knows it (DIST-05).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RequestRecord {
    /// 128 random bits, compared by every conditional write of the record.
    pub(crate) token: String,
    /// Granted (`true`) or waiting in line.
    pub(crate) held: bool,
    /// The lease's ttl in milliseconds (the etcd lease's is whole seconds).
    pub(crate) ttl_ms: u64,
    /// When granted: the fence, once the record was written again after
    /// its grant (a lease moved to another etcd lease); absent, the fence is
    /// the record's mod revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fence: Option<u64>,
    /// When granted: the granting client's wall clock, in Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) granted_ms: Option<u64>,
    /// The identity of the store handle that asked (WHO-01); absent in the
    /// records of a driver older than identities, which show none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) identity: Option<String>,
}

impl RequestRecord {
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a request record serialises")
    }

    pub(crate) fn parse(bytes: &[u8]) -> Option<RequestRecord> {
        serde_json::from_slice(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_slashes_stay_apart() {
        let layout = Layout::new("/leasehold/");
        let a = KeyName::new("a/b", "c");
        let b = KeyName::new("a", "b/c");
        assert_ne!(layout.line(&a), layout.line(&b));
        let rid = RequestId(7);
        for name in [a, b, KeyName::new("ünï", "100%")] {
            let key = layout.request(&name, rid);
            assert!(key.starts_with(&layout.line(&name)));
            assert_eq!(layout.key_of(&key), Some(name));
        }
        assert_eq!(layout.key_of(b"/leasehold/fence"), None);
        assert_eq!(range_end(b"a/"), b"a0");
        assert_eq!(layout.slot_of("ns", &layout.slot("ns", 42)), Some(42));
    }
}
