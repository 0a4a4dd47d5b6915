//! Answers as pve-api-daemon sends them: status, reason phrase, PVE's fixed headers and the
//! JSON content type when there is a body. Both the API handler and the `/_sim` control
//! endpoints answer through it.

use hyper::ext::ReasonPhrase;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};

use super::body::OneChunk;

/// Build an answer with PVE's headers. `Connection: close` on errors, as pveproxy.
pub(crate) fn respond(status: u16, reason: &str, body: Vec<u8>) -> Response<OneChunk> {
    let body = OneChunk::new(body);
    let has_body = !body.is_empty();
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = resp.headers_mut();
    headers.insert("server", HeaderValue::from_static("pve-api-daemon/3.0"));
    headers.insert("cache-control", HeaderValue::from_static("max-age=0"));
    headers.insert("pragma", HeaderValue::from_static("no-cache"));
    if has_body {
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/json;charset=UTF-8"),
        );
    }
    if status >= 400 {
        headers.insert("connection", HeaderValue::from_static("close"));
    }
    if let Ok(phrase) = ReasonPhrase::try_from(reason.as_bytes()) {
        resp.extensions_mut().insert(phrase);
    }
    resp
}
