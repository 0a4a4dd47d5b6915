//! Answers as pve-api-daemon sends them: status, reason phrase, PVE's fixed headers and the
//! JSON content type when there is a body, or a handler's download with its own content type.
//! Both the API handler and the `/_sim` control endpoints answer through it.

use hyper::ext::ReasonPhrase;
use hyper::header::{CONTENT_DISPOSITION, CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};

use super::body::OneChunk;

/// Build an answer with PVE's headers. `Connection: close` on errors, as pveproxy.
pub(crate) fn respond(status: u16, reason: &str, body: Vec<u8>) -> Response<OneChunk> {
    let has_body = !body.is_empty();
    let mut resp = bare(status, reason, body);
    if has_body {
        resp.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/json;charset=UTF-8"),
        );
    }
    resp
}

/// A handler's download (`send_file_start`): the file as the body, with the handler's
/// `Content-Type` (even when the file is empty) and `Content-Disposition`.
pub(crate) fn respond_file(
    status: u16,
    reason: &str,
    body: Vec<u8>,
    content_type: &str,
    disposition: Option<&str>,
) -> Response<OneChunk> {
    let mut resp = bare(status, reason, body);
    let headers = resp.headers_mut();
    if let Ok(ct) = HeaderValue::from_str(content_type) {
        headers.insert(CONTENT_TYPE, ct);
    }
    if let Some(d) = disposition.and_then(|d| HeaderValue::from_str(d).ok()) {
        headers.insert(CONTENT_DISPOSITION, d);
    }
    resp
}

/// Status, reason phrase and the headers every answer of pve-api-daemon carries.
fn bare(status: u16, reason: &str, body: Vec<u8>) -> Response<OneChunk> {
    let mut resp = Response::new(OneChunk::new(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = resp.headers_mut();
    headers.insert("server", HeaderValue::from_static("pve-api-daemon/3.0"));
    headers.insert("cache-control", HeaderValue::from_static("max-age=0"));
    headers.insert("pragma", HeaderValue::from_static("no-cache"));
    if status >= 400 {
        headers.insert("connection", HeaderValue::from_static("close"));
    }
    if let Ok(phrase) = ReasonPhrase::try_from(reason.as_bytes()) {
        resp.extensions_mut().insert(phrase);
    }
    resp
}
