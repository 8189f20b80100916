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
use prometheus_client::encoding::prometheus_text;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::live::{self, Live};
use crate::shared::ServerContextRef;

/// How long a client has for its TLS handshake and for each request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What one listener serves.
#[derive(Clone)]
pub(crate) struct Routes {
    shared: ServerContextRef,
    /// The live page, on `--http` only.
    live: Option<Arc<Live>>,
}

impl Routes {
    /// `/metrics` only.
    pub fn metrics(shared: ServerContextRef) -> Routes {
        Routes { shared, live: None }
    }

    /// The live page and `/metrics`.
    pub fn page(shared: ServerContextRef, live: Arc<Live>) -> Routes {
        Routes {
            shared,
            live: Some(live),
        }
    }
}

/// Serves `routes` on `listener` (over TLS with `tls`) until the server shuts down.
pub(crate) async fn serve(listener: TcpListener, tls: Option<TlsAcceptor>, routes: Routes) {
    let shutdown = routes.shared.shutdown.clone();
    let tracker = routes.shared.tracker.clone();
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
    let shutdown = routes.shared.shutdown.clone();
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
    } else if path == "/metrics" {
        let driver = &routes.shared.driver;
        let mut r = Response::new(full(routes.shared.metrics.render(driver)));
        set(&mut r, header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE);
        r
    } else if let Some(live) = &routes.live {
        page(req, path, live, routes)
    } else {
        text(StatusCode::NOT_FOUND, "see /metrics\n")
    };
    if routes.live.is_some() {
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
        let Some(chunks) = live::open_stream(live, query, routes.shared.shutdown.clone()) else {
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
    let Some(tokens) = &routes.shared.tokens else {
        return true;
    };
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| tokens.role(t.trim()).is_some())
}
