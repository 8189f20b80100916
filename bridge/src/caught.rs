//! Panics of the core as its `Internal` error (ERR-03): no panic unwinds
//! into a caller of another language, and no call is left without an
//! answer because its task panicked.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use leasehold::{Error, ErrorKind, Result};
use tokio::task::JoinError;

/// The `Internal` error a caught panic becomes, with the panic's message.
pub fn panicked(payload: Box<dyn Any + Send>) -> Error {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    Error::new(
        ErrorKind::Internal,
        format!("a bug in Leasehold (Rust panicked): {text}"),
    )
}

/// The `Internal` error of a task that ended without an answer: it
/// panicked (a bug), or its runtime went away.
pub fn lost_task(e: JoinError) -> Error {
    match e.try_into_panic() {
        Ok(payload) => panicked(payload),
        Err(e) => Error::new(
            ErrorKind::Internal,
            format!("a task of the runtime failed: {e}"),
        ),
    }
}

/// A boxed core future whose panic, at any poll, is its `Internal` error.
/// It takes the box a binding makes anyway (to move the future into a task
/// after its first poll, or to erase its type), and adds no allocation.
pub struct Caught<F: ?Sized>(Pin<Box<F>>);

impl<F: ?Sized> Caught<F> {
    /// Catches the panics of `fut`.
    pub fn new(fut: Pin<Box<F>>) -> Caught<F> {
        Caught(fut)
    }
}

impl<T, F> Future for Caught<F>
where
    F: Future<Output = Result<T>> + ?Sized,
{
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let fut = self.0.as_mut();
        catch_unwind(AssertUnwindSafe(|| fut.poll(cx)))
            .unwrap_or_else(|payload| Poll::Ready(Err(panicked(payload))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // ERR-03: a panic, with a message or without, is an Internal error.
    #[test]
    fn err_03_a_panic_is_internal() {
        let mut fut = Caught::new(Box::pin(async { panic!("on purpose") }));
        let waker = crate::noop_waker();
        let Poll::Ready(Err(e)) =
            Pin::new(&mut fut).poll(&mut Context::from_waker(waker)) as Poll<Result<()>>
        else {
            panic!("the panic was not caught");
        };
        assert_eq!(e.kind(), ErrorKind::Internal);
        assert!(e.message().contains("on purpose"), "{}", e.message());
        let e = panicked(Box::new(3_u8));
        assert_eq!(e.kind(), ErrorKind::Internal);
        assert!(e.message().contains("without a message"));
    }

    // ERR-03: a task that panicked answers Internal, with the panic's message.
    #[test]
    fn err_03_a_lost_task_is_internal() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let joined = runtime.block_on(async { tokio::spawn(async { panic!("in a task") }).await });
        let e = lost_task(joined.unwrap_err());
        assert_eq!(e.kind(), ErrorKind::Internal);
        assert!(e.message().contains("in a task"), "{}", e.message());
    }
}
