//! The one connection that LISTENs (PG-02, PG-06): a promotion's NOTIFY
//! carries the promoted request's id, and wakes its waiter. The
//! connection is made again whenever it ends; every waiter then looks
//! again, since what was said while nobody listened is lost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::oneshot;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, ErrorKind, Result};
use crate::ids::RequestId;

/// The first and the longest pause before the connection is made again.
const BACKOFF_FIRST: Duration = Duration::from_millis(50);
const BACKOFF_CAP: Duration = Duration::from_secs(2);

/// What the listener tells the driver.
pub(crate) trait Hearing: Send + Sync + 'static {
    /// Request `id` was promoted.
    fn told(&self, id: RequestId);
    /// The connection was made (again): whatever was said meanwhile is lost.
    fn listening(&self);
}

/// Starts the listener on `runtime`; answers once it listens the first
/// time, or with the first connection's failure.
pub(crate) async fn start(
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    channel: String,
    hearing: Arc<dyn Hearing>,
    closed: CancellationToken,
    runtime: &tokio::runtime::Handle,
) -> Result<()> {
    let (first_tx, first_rx) = oneshot::channel();
    runtime.spawn(run(config, tls, channel, hearing, closed, first_tx));
    first_rx
        .await
        .unwrap_or_else(|_| Err(Error::new(ErrorKind::Closed, "the store is closed")))
}

/// The first connection's outcome, told once.
type First = Option<oneshot::Sender<Result<()>>>;

fn tell_first(first: &mut First, outcome: Result<()>) {
    if let Some(tx) = first.take() {
        let _ = tx.send(outcome);
    }
}

async fn run(
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    channel: String,
    hearing: Arc<dyn Hearing>,
    closed: CancellationToken,
    first: oneshot::Sender<Result<()>>,
) {
    let mut first = Some(first);
    let mut backoff = BACKOFF_FIRST;
    loop {
        let listened = tokio::select! {
            _ = closed.cancelled() => return,
            l = listen(&config, &tls, &channel, hearing.as_ref(), &mut first) => l,
        };
        if listened {
            backoff = BACKOFF_FIRST;
        }
        let pause = rand::Rng::gen_range(&mut rand::thread_rng(), backoff / 2..=backoff);
        backoff = (backoff * 2).min(BACKOFF_CAP);
        tokio::select! {
            _ = closed.cancelled() => return,
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// One connection's life: connect, LISTEN, hear until it ends. Answers
/// whether it listened.
async fn listen(
    config: &tokio_postgres::Config,
    tls: &MakeRustlsConnect,
    channel: &str,
    hearing: &dyn Hearing,
    first: &mut First,
) -> bool {
    let (client, mut connection) = match config.connect(tls.clone()).await {
        Ok(c) => c,
        Err(e) => {
            tell_first(first, Err(super::calls::of("listening for grants", &e)));
            return false;
        }
    };
    let (told_tx, mut told_rx) = tokio::sync::mpsc::unbounded_channel();
    let messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
    let drive = async move {
        futures::pin_mut!(messages);
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notification(n) = message {
                let _ = told_tx.send(n.payload().to_owned());
            }
        }
    };
    let listen = format!("LISTEN {}", super::schema::quoted(channel));
    let listened = AtomicBool::new(false);
    let work = async {
        if let Err(e) = client.batch_execute(&listen).await {
            tell_first(first, Err(super::calls::of("listening for grants", &e)));
            return;
        }
        tell_first(first, Ok(()));
        listened.store(true, Ordering::Relaxed);
        hearing.listening();
        while let Some(payload) = told_rx.recv().await {
            if let Ok(id) = u128::from_str_radix(&payload, 16) {
                hearing.told(RequestId(id));
            }
        }
    };
    tokio::select! {
        _ = drive => {}
        _ = work => {}
    }
    listened.load(Ordering::Relaxed)
}
