//! Where background work runs: the tokio runtime the store was opened on, or
//! else one runtime per process, made when first needed.

use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

fn global() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("leasehold")
            .enable_all()
            .build()
            .expect("the leasehold runtime starts")
    })
}

/// The runtime of the calling task, or the process's own when there is none.
pub fn current_or_global() -> Handle {
    Handle::try_current().unwrap_or_else(|_| global().handle().clone())
}

/// Whether the calling thread is inside an async runtime (where blocking calls are refused).
pub fn in_async_context() -> bool {
    Handle::try_current().is_ok()
}
