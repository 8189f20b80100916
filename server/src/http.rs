//! The server's HTTP listeners: `--metrics ADDR` serves `GET /metrics`;
//! `--http ADDR` serves the live page (`/`, its files, its stream `/live`)
//! and `/metrics` too, over TLS when the server has a certificate, its
//! stream only to a known token when the server has tokens.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use leasehold::MemoryDriver;
use prometheus_client::encoding::prometheus_text;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::live::{self, Live};
use crate::metrics::Metrics;
use crate::shared::ServerContextRef;
use crate::tokens::Tokens;

/// How long a client has for its TLS handshake and for each request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What one listener serves.
#[derive(Clone)]
pub(crate) struct Routes(Arc<RoutesInner>);

struct RoutesInner {
    /// `/metrics`: the server's metrics and the store its gauges read.
    metrics: Option<(Arc<Metrics>, Arc<MemoryDriver>)>,
    /// The live page.
    live: Option<Arc<Live>>,
    /// The tokens the page's stream asks for, if any.
    tokens: Option<Arc<Tokens>>,
    shutdown: CancellationToken,
    tracker: TaskTracker,
}

impl Routes {
    /// A server's `/metrics` only.
    pub fn metrics(shared: &ServerContextRef) -> Routes {
        Routes::new(shared, None)
    }

    /// A server's live page and `/metrics`.
    pub fn page(shared: &ServerContextRef, live: Arc<Live>) -> Routes {
        Routes::new(shared, Some(live))
    }

    fn new(shared: &ServerContextRef, live: Option<Arc<Live>>) -> Routes {
        Routes(Arc::new(RoutesInner {
            metrics: Some((shared.metrics.clone(), shared.driver.clone())),
            live,
            tokens: shared.tokens.clone(),
            shutdown: shared.shutdown.clone(),
            tracker: shared.tracker.clone(),
        }))
    }

    /// The live page of a store read from outside (`leasehold ui`), its
    /// stream only to one of `tokens` when given.
    pub fn ui(
        live: Arc<Live>,
        tokens: Option<Arc<Tokens>>,
        shutdown: CancellationToken,
        tracker: TaskTracker,
    ) -> Routes {
        Routes(Arc::new(RoutesInner {
            metrics: None,
            live: Some(live),
            tokens,
            shutdown,
            tracker,
        }))
    }
}

/// Serves `routes` on `listener` (over TLS with `tls`) until the server shuts down.
pub(crate) async fn serve(listener: TcpListener, tls: Option<TlsAcceptor>, routes: Routes) {
    let shutdown = routes.0.shutdown.clone();
    let tracker = routes.0.tracker.clone();
    loop {
        let stream = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "http: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (routes, tls) = (routes.clone(), tls.clone());
        tracker.spawn(async move {
            match tls {
                None => connection(stream, routes).await,
                Some(tls) => {
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(HEAD_TIMEOUT, tls.accept(stream)).await
                    {
                        connection(stream, routes).await;
                    }
                }
            }
        });
    }
}

async fn connection<S>(io: S, routes: Routes)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let shutdown = routes.0.shutdown.clone();
    let service = service_fn(move |req| {
        let response = respond(&req, &routes);
        async move { Ok::<_, Infallible>(response) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = shutdown.cancelled() => {}
    }
}

fn full(body: impl Into<Bytes>) -> Body {
    Full::new(body.into()).boxed_unsync()
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    set(&mut r, header::CONTENT_TYPE, "text/plain; charset=utf-8");
    r
}

fn set(r: &mut Response<Body>, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
}

fn respond(req: &Request<Incoming>, routes: &Routes) -> Response<Body> {
    let path = req.uri().path();
    let mut response = if !matches!(*req.method(), Method::GET | Method::HEAD) {
        text(StatusCode::METHOD_NOT_ALLOWED, "GET only\n")
    } else if let (Some((metrics, driver)), "/metrics") = (&routes.0.metrics, path) {
        let mut r = Response::new(full(metrics.render(driver)));
        set(&mut r, header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE);
        r
    } else if let Some(live) = &routes.0.live {
        page(req, path, live, routes)
    } else {
        text(StatusCode::NOT_FOUND, "see /metrics\n")
    };
    if routes.0.live.is_some() {
        let h = response.headers_mut();
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(live::CONTENT_SECURITY_POLICY),
        );
        h.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    response
}

/// The live page's paths.
fn page(req: &Request<Incoming>, path: &str, live: &Arc<Live>, routes: &Routes) -> Response<Body> {
    if path == "/live" {
        if !admitted(req, routes) {
            let mut r = text(
                StatusCode::UNAUTHORIZED,
                "this store asks for a token: Authorization: Bearer TOKEN\n",
            );
            set(&mut r, header::WWW_AUTHENTICATE, "Bearer");
            return r;
        }
        let query = live::query(req.uri().query());
        let Some(chunks) = live::open_stream(live, query, routes.0.shutdown.clone()) else {
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many pages are open on this server\n",
            );
        };
        let mut r = Response::new(StreamBody::new(chunks).boxed_unsync());
        set(&mut r, header::CONTENT_TYPE, "text/event-stream");
        set(&mut r, header::CACHE_CONTROL, "no-store");
        return r;
    }
    match live::asset(path) {
        Some((content_type, bytes)) => {
            let mut r = Response::new(full(Bytes::from_static(bytes)));
            set(&mut r, header::CONTENT_TYPE, content_type);
            set(&mut r, header::CACHE_CONTROL, "no-cache");
            r
        }
        None => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

/// Whether the request may read the store: always without tokens; with
/// them, when it carries one the tokens file knows (read or write).
fn admitted(req: &Request<Incoming>, routes: &Routes) -> bool {
    let Some(tokens) = &routes.0.tokens else {
        return true;
    };
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| tokens.role(t.trim()).is_some())
}
