//! The page's files, built into the binary (the machine it runs on may
//! have no internet: nothing is fetched from elsewhere).

/// The file the page's path `path` names: its content type and bytes.
pub(crate) fn asset(path: &str) -> Option<(&'static str, &'static [u8])> {
    Some(match path {
        "/" | "/index.html" => (
            "text/html; charset=utf-8",
            include_bytes!("page/index.html"),
        ),
        "/app.js" => (
            "text/javascript; charset=utf-8",
            include_bytes!("page/app.js"),
        ),
        "/app.css" => ("text/css; charset=utf-8", include_bytes!("page/app.css")),
        "/favicon.svg" => ("image/svg+xml", include_bytes!("page/favicon.svg")),
        _ => return None,
    })
}

/// The Content-Security-Policy of every response: the page's own files,
/// its own stream, nothing inline, nothing from elsewhere, never framed.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";
