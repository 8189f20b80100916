//! The maps and sets the hot paths look up by lease id, request id, group
//! or key name: the standard `HashMap` and `HashSet` with foldhash's hasher
//! (seeded per process) in place of SipHash, which was 12 % of the server's
//! instructions a hold cycle (docs/benchmarks.md, `make bench-instructions`).

/// A `HashMap` with foldhash's seeded hasher.
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` with foldhash's seeded hasher.
pub type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// A `HashMap` with foldhash's seeded hasher that can be looked up by a
/// type other than its key's, with the same hash ([`hashbrown::Equivalent`]):
/// the lease table's keys, looked up by a `KeyName` (`core/src/table/key_ref.rs`).
pub type LookupMap<K, V> = hashbrown::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` with foldhash's seeded hasher whose items can be looked up
/// by another type with the same hash ([`hashbrown::Equivalent`]): a
/// renewal group's leases, by their id (`core/src/group.rs`).
pub type LookupSet<T> = hashbrown::HashSet<T, foldhash::fast::RandomState>;
