//! Where background work runs: the tokio runtime the store was opened on, or
//! else one runtime per process, made when first needed — and made again in
//! the child after a `fork()`, whose copy of the parent's runtime has no
//! threads.

use std::sync::Mutex;

use tokio::runtime::{Builder, Handle, Runtime};

/// The process's own runtime, with the id of the process that made it.
static GLOBAL: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

fn global() -> Handle {
    let pid = std::process::id();
    let mut slot = GLOBAL.lock().unwrap_or_else(|p| p.into_inner());
    match *slot {
        Some((owner, rt)) if owner == pid => rt.handle().clone(),
        _ => {
            // A runtime inherited through fork() has lost its threads; it is
            // left alone (dropping it could block on them) and a new one made.
            let rt: &'static Runtime = Box::leak(Box::new(
                Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("leasehold")
                    .on_thread_start(block_sigpipe)
                    .enable_all()
                    .build()
                    .expect("the leasehold runtime starts"),
            ));
            *slot = Some((pid, rt));
            rt.handle().clone()
        }
    }
}

/// Keeps SIGPIPE off the runtime's threads: a write to a connection the peer
/// closed then fails `EPIPE` (which the store's code handles) instead of
/// killing a process that has SIGPIPE's default action, as a Go program
/// linking the C library has on its non-Go threads. A vectored write
/// (`writev`, as hyper and tonic do) has no flag to ask for that per call.
fn block_sigpipe() {
    #[cfg(unix)]
    {
        use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};
        let mut pipe = SigSet::empty();
        pipe.add(Signal::SIGPIPE);
        // Failing would only leave the thread as it was.
        let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&pipe), None);
    }
}

/// The runtime of the calling task, or the process's own when there is none.
pub fn current_or_global() -> Handle {
    Handle::try_current().unwrap_or_else(|_| global())
}

/// The process's own runtime, for bindings whose callers have none.
pub fn process_runtime() -> Handle {
    global()
}

/// Whether the calling thread is inside an async runtime (where blocking calls are refused).
pub fn in_async_context() -> bool {
    Handle::try_current().is_ok()
}
