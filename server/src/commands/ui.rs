//! `leasehold ui --store URL --http ADDR`: the live page (docs/live.md)
//! of any store, read through its driver: etcd, PostgreSQL, or a server
//! store elsewhere (whose own `--http` shows more).

use futures::future::{FutureExt, LocalBoxFuture};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::StoreArgs;
use crate::http::{self, Routes};
use crate::live::{Live, Polled};
use crate::tokens::Tokens;

/// The options of `leasehold ui`.
#[derive(Debug, Clone, clap::Args)]
pub struct UiArgs {
    /// Where to serve the page (`IP:PORT`; port 0: any free port).
    #[arg(
        long = "http",
        env = "LEASEHOLD_HTTP_LISTEN",
        default_value = "127.0.0.1:9451"
    )]
    pub http: SocketAddr,

    /// A tokens file (as `serve --tokens`): the page's stream only to one of its tokens.
    #[arg(long, env = "LEASEHOLD_PAGE_TOKENS", value_name = "FILE")]
    pub page_tokens: Option<PathBuf>,

    /// Where the store is and how to be admitted.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Runs `leasehold ui` until SIGTERM or SIGINT: 0 then, 1 when the store
/// could not be reached or the page not served.
/// Boxed, so that it is compiled here, once, not in the binary that
/// awaits it (docs/architecture.md, "Where the code is compiled").
pub fn run(args: UiArgs) -> LocalBoxFuture<'static, u8> {
    run_ui(args).boxed_local()
}

async fn run_ui(args: UiArgs) -> u8 {
    match serve(args).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("leasehold ui: {e:#}");
            1
        }
    }
}

async fn serve(args: UiArgs) -> anyhow::Result<()> {
    use anyhow::Context;
    let mut signals = crate::Signals::new()?;
    let tokens = args
        .page_tokens
        .as_deref()
        .map(Tokens::load)
        .transpose()?
        .map(Arc::new);
    let store = args.store.connect().await?;
    let listener = TcpListener::bind(args.http)
        .await
        .with_context(|| format!("cannot serve the page on {}", args.http))?;
    let addr = listener.local_addr()?;
    let shutdown = CancellationToken::new();
    let tracker = TaskTracker::new();
    let source = Arc::new(Polled::new(
        store.clone(),
        leasehold::store_kind(&args.store.store),
    ));
    let live = Arc::new(Live::new(source));
    tracker.spawn(live.clone().run(shutdown.clone()));
    let routes = Routes::ui(live, tokens, shutdown.clone(), tracker.clone());
    tracker.spawn(http::serve(listener, None, routes));
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "http on {addr}")?;
    stdout.flush()?;
    drop(stdout);
    signals.recv().await;
    shutdown.cancel();
    tracker.close();
    tracker.wait().await;
    store.close().await;
    Ok(())
}
