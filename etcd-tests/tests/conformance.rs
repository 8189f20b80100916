//! The driver conformance suite on a real etcd: the current line (3.6) and
//! Debian's 3.4, which DIST-08 refuses unless accepted.

use std::sync::Arc;

use etcd_tests::{Cluster, Etcd};
use leasehold::etcd::EtcdDriver;
use leasehold::ConnectOptions;
use spec_tests::conformance::{self, Harness, Time};

async fn suite(cluster: &Cluster, options: ConnectOptions) {
    let report = conformance::run(|| {
        let url = cluster.url("conformance");
        let options = options.clone().identity(conformance::IDENTITY);
        async move {
            let driver = EtcdDriver::connect(&url, options, &tokio::runtime::Handle::current())
                .await
                .expect("connect to etcd");
            Harness {
                driver: Arc::new(driver),
                time: Time::Real,
            }
        }
    })
    .await;
    println!("{report}");
    report.assert_ok();
    assert_eq!(report.skipped_names(), ["no_ttl_never_expires"], "{report}");
}

// DIST-01, LOCK-01, LOCK-02, LOCK-03, LOCK-05, LOCK-08, LOCK-11, LOCK-12, LOCK-18:
// the conformance suite on etcd 3.6, one driver per check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_01_etcd_passes_the_conformance_suite() {
    let cluster = Cluster::start(Etcd::Current, 1).await;
    suite(&cluster, ConnectOptions::default()).await;
}

// DIST-01, DIST-08: the same suite on Debian's etcd 3.4, opened with the
// explicit option that accepts a release older than DIST-08's minimum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_01_etcd_34_passes_the_conformance_suite_when_accepted() {
    let cluster = Cluster::start(Etcd::Debian34, 1).await;
    suite(&cluster, ConnectOptions::default().accept_old_etcd(true)).await;
}
