//! A real etcd member (etcd_tests' cluster of one) for the tests that run
//! without a runtime of their own.

use etcd_tests::{Cluster, Etcd};

/// Starts one member of `etcd` and waits until it serves.
pub fn start(etcd: Etcd) -> Cluster {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(Cluster::start(etcd, 1))
}
