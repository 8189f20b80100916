//! Where background work runs: the tokio runtime the store was opened on, or
//! else one runtime per process, made when first needed — and made again in
//! the child after a `fork()`, whose copy of the parent's runtime has no
//! threads.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use tokio::runtime::{Builder, Handle, Runtime};

/// The process's own runtime, with the id of the process that made it.
static GLOBAL: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

fn global() -> Handle {
    let pid = process_id();
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

/// This process's id, read from the system once and again after a `fork()`.
/// A store checks it on every call (a store opened before `fork()` is the
/// parent's), and `std::process::id()` is a system call each time: glibc no
/// longer keeps the id, since a child made by a raw `clone` would read its
/// parent's. Such a child runs no `pthread_atfork` handler, so the id kept
/// here would be wrong in it too; a `fork()` (libc's, Python's `os.fork`)
/// runs them. Go's process spawning clones without them, but its child runs
/// no Leasehold code before its `exec`.
pub fn process_id() -> u32 {
    let known = PROCESS_ID.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    let pid = std::process::id();
    if keeps_process_id() {
        PROCESS_ID.store(pid, Ordering::Relaxed);
    }
    pid
}

/// The id [`process_id`] kept: 0 before it kept one, and in a forked child.
static PROCESS_ID: AtomicU32 = AtomicU32::new(0);

/// Whether a forked child forgets the kept id, so that it may be kept:
/// registers the fork handler that clears [`PROCESS_ID`], once.
#[cfg(unix)]
#[allow(unsafe_code)]
fn keeps_process_id() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        // SAFETY: a C call with no pointers. The handler it registers only
        // stores to an atomic, as a handler run in a forked child may. It
        // fails only for want of memory, and then no id is kept.
        unsafe { libc::pthread_atfork(None, None, Some(forget_process_id)) == 0 }
    })
}

/// Without `fork()`, the id never changes.
#[cfg(not(unix))]
fn keeps_process_id() -> bool {
    true
}

#[cfg(unix)]
extern "C" fn forget_process_id() {
    PROCESS_ID.store(0, Ordering::Relaxed);
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

#[cfg(all(test, unix))]
mod tests {
    use super::process_id;

    #[test]
    #[allow(unsafe_code)]
    fn a_forked_child_reads_its_own_process_id() {
        let parent = process_id();
        assert_eq!(parent, std::process::id());
        // SAFETY: the child only reads its id (atomics and one system call,
        // no allocation or lock) and exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            let own = process_id() == std::process::id() && process_id() != parent;
            // SAFETY: ends the child at once, running nothing of the parent's.
            unsafe { libc::_exit(if own { 0 } else { 1 }) };
        }
        assert!(child > 0, "fork failed");
        let mut status = 0;
        // SAFETY: waits for our own child, writing its status to a local.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the forked child read its parent's id (status {status})"
        );
        assert_eq!(process_id(), parent);
    }
}
