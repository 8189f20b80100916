//! Giving up a call that takes no cancellation token of its own (an
//! attempt such as [`Lock::try_begin`](crate::Lock::try_begin), a manual
//! lease's extend or release, a slot call, a connection) without leaving
//! behind what it got: the bindings' cancellable forms of those calls go
//! through [`unless_given_up`], so that a grant that races a give-up is
//! released rather than left to run out (LOCK-18).

use std::future::Future;

use tokio::runtime::Handle;

use crate::{CancellationToken, Error, ErrorKind, Result};

/// `work`, unless `cancel` fires first: then the call fails `Cancelled`
/// with `message` at once, and `work`, whose request may be with the store
/// already, goes on to its end as a task of `runtime`, where what it got is
/// handed to `undo`. So nothing it got is left behind: `undo` releases a
/// manual lease or a slot lease, and what undoes itself when dropped needs
/// only [`dropped`] (a holding dropped is released, LOCK-11; a store
/// dropped is closed). Work done before the token fired is the answer; a
/// token fired before the call fails it without starting the work.
pub async fn unless_given_up<T, W, U, F>(
    cancel: Option<CancellationToken>,
    runtime: &Handle,
    message: &str,
    work: W,
    undo: U,
) -> Result<T>
where
    T: Send + 'static,
    W: Future<Output = Result<T>> + Send + 'static,
    U: FnOnce(T) -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let Some(token) = cancel else {
        return work.await;
    };
    if token.is_cancelled() {
        return Err(Error::new(ErrorKind::Cancelled, message));
    }
    let mut work = Box::pin(work);
    tokio::select! {
        biased;
        result = &mut work => result,
        _ = token.cancelled() => {
            runtime.spawn(async move {
                if let Ok(got) = work.await {
                    undo(got).await;
                }
            });
            Err(Error::new(ErrorKind::Cancelled, message))
        }
    }
}

/// The `undo` of [`unless_given_up`] for what needs none or undoes itself
/// when dropped.
pub async fn dropped<T>(got: T) {
    drop(got);
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::runtime::process_runtime;

    #[tokio::test]
    async fn a_give_up_answers_at_once_and_undoes_what_came_late() {
        let token = CancellationToken::new();
        let (undone_tx, undone_rx) = tokio::sync::oneshot::channel();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let work = async move {
            let _ = go_rx.await;
            Ok(7u32)
        };
        let runtime = process_runtime();
        let call = unless_given_up(
            Some(token.clone()),
            &runtime,
            "gave up",
            work,
            |got| async move {
                let _ = undone_tx.send(got);
            },
        );
        let give_up = async {
            tokio::task::yield_now().await;
            token.cancel();
        };
        let (answer, ()) = tokio::join!(call, give_up);
        let err = answer.expect_err("cancelled");
        assert_eq!(err.kind(), ErrorKind::Cancelled);
        go_tx.send(()).expect("the work still waits");
        let undone = tokio::time::timeout(Duration::from_secs(5), undone_rx).await;
        assert_eq!(undone.expect("undone in time").expect("undo ran"), 7);
    }

    #[tokio::test]
    async fn work_done_first_is_the_answer_and_nothing_is_undone() {
        let token = CancellationToken::new();
        let runtime = process_runtime();
        let answer = unless_given_up(
            Some(token.clone()),
            &runtime,
            "gave up",
            async { Ok(3u32) },
            |_| async {
                panic!("nothing to undo");
            },
        );
        assert_eq!(answer.await.expect("done"), 3);
        let none = unless_given_up(None, &runtime, "gave up", async { Ok(4u32) }, dropped);
        assert_eq!(none.await.expect("done"), 4);
    }

    #[tokio::test]
    async fn a_token_fired_before_the_call_starts_no_work() {
        let token = CancellationToken::new();
        token.cancel();
        let runtime = process_runtime();
        let work = async { panic!("the work started") };
        let err = unless_given_up::<u32, _, _, _>(Some(token), &runtime, "gave up", work, dropped)
            .await
            .expect_err("cancelled");
        assert_eq!(err.kind(), ErrorKind::Cancelled);
    }
}
