//! Lease ids and request ids: 128 random bits from a cryptographic source (LOCK-08).

use std::fmt;

use rand::Rng;

/// 128 bits from the thread's cryptographically secure generator (ChaCha,
/// seeded and periodically reseeded from the operating system), which costs
/// no system call per id.
fn random_u128() -> u128 {
    rand::thread_rng().gen()
}

/// An id as two 64-bit halves: 8-byte aligned where a `u128` is 16-byte
/// aligned, so that what keeps one (a million of them) is not padded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Halves(u64, u64);

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u128);

        impl $name {
            /// A fresh id from a cryptographically secure random source.
            pub fn random() -> $name {
                $name(random_u128())
            }
        }

        impl From<$name> for Halves {
            fn from(id: $name) -> Halves {
                // Truncation meant: the low half, then the high half.
                Halves(id.0 as u64, (id.0 >> 64) as u64)
            }
        }

        impl From<Halves> for $name {
            fn from(Halves(low, high): Halves) -> $name {
                $name(u128::from(high) << 64 | u128::from(low))
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:032x})"), self.0)
            }
        }
    };
}

id_type!(
    /// The id of one lease: known only to its holder, named by renew and release.
    LeaseId
);
id_type!(
    /// The id a holder puts on a hold request, so that a retried request is recognised (LOCK-03).
    RequestId
);
id_type!(
    /// The id of a renewal group: the leases of one store handle with one
    /// ttl, renewed together by one request. Known only to its holder.
    GroupId
);

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-08: ids are 128 random bits; two draws do not collide.
    #[test]
    fn lock_08_ids_are_random() {
        let ids: std::collections::HashSet<_> = (0..1000).map(|_| LeaseId::random()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().any(|id| id.0 >> 64 != 0));
        for id in ids {
            assert_eq!(LeaseId::from(Halves::from(id)), id);
        }
    }
}
