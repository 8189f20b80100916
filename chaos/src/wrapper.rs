//! What the harness's driver wrappers share: every [`Driver`] method they
//! do not change passes straight to the wrapped driver, `self.inner`.
//!
//! [`Driver`]: leasehold::driver::Driver

/// Implements `Driver` for the wrapper `$ty`, whose field `inner` is the
/// wrapped driver: the methods given, and the rest (capabilities, clock,
/// holders, holder, the slot verbs, close) passed to `inner`.
macro_rules! wrapper_driver {
    ($ty:ty { $($methods:tt)* }) => {
        #[async_trait::async_trait]
        impl leasehold::driver::Driver for $ty {
            $($methods)*

            fn capabilities(&self) -> leasehold::driver::Capabilities {
                self.inner.capabilities()
            }

            fn clock(&self) -> &leasehold::clock::Clock {
                self.inner.clock()
            }

            async fn holders(
                &self,
                lock: Option<&str>,
            ) -> leasehold::Result<Vec<leasehold::driver::HolderInfo>> {
                self.inner.holders(lock).await
            }

            async fn holder(
                &self,
                name: &leasehold::driver::KeyName,
            ) -> leasehold::Result<Option<leasehold::driver::HolderInfo>> {
                self.inner.holder(name).await
            }

            async fn slot_acquire(
                &self,
                request: leasehold::slots::SlotRequest,
            ) -> leasehold::Result<leasehold::slots::AcquireResult> {
                self.inner.slot_acquire(request).await
            }

            async fn slot_renew(
                &self,
                lease: &leasehold::slots::SlotLease,
                ttl: std::time::Duration,
            ) -> leasehold::Result<Option<leasehold::slots::SlotLease>> {
                self.inner.slot_renew(lease, ttl).await
            }

            async fn slot_release(
                &self,
                lease: &leasehold::slots::SlotLease,
                last_issued: u64,
            ) -> leasehold::Result<bool> {
                self.inner.slot_release(lease, last_issued).await
            }

            async fn close(&self) {
                self.inner.close().await
            }
        }
    };
}
