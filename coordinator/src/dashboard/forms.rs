//! Reading what a browser sends: cookies, query strings and url-encoded form bodies (bounded),
//! and the headers every dashboard response carries.

use http::header::{self, HeaderValue};
use http::{HeaderMap, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::body::DashBody;

/// The session cookie. `__Host-`: the browser keeps it only if Secure, for this host, path `/`.
pub(crate) const SESSION_COOKIE: &str = "__Host-pvefleet-session";
/// The theme cookie (`light`, `dark`; absent = the system's).
pub(crate) const THEME_COOKIE: &str = "pvefleet-theme";
/// The largest form body read.
pub(crate) const MAX_FORM: usize = 16 * 1024;

/// The content security policy of every response: nothing inline, nothing from elsewhere.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
    base-uri 'none'";

/// The value of cookie `name`, if sent.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The pairs of a query string or form body.
pub(crate) fn pairs(text: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(text).into_owned().collect()
}

/// The first value of `key` in `pairs` ("" if absent).
pub(crate) fn field<'a>(pairs: &'a [(String, String)], key: &str) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.as_str())
}

/// The form body of a request, at most [`MAX_FORM`] bytes.
pub(crate) async fn form(body: Incoming) -> Result<Vec<(String, String)>, String> {
    let limited = http_body_util::Limited::new(body, MAX_FORM);
    match limited.collect().await {
        Ok(collected) => Ok(pairs(&collected.to_bytes())),
        Err(e) => Err(format!("unreadable form (at most {MAX_FORM} bytes): {e}")),
    }
}

/// Whether a state-changing request comes from our own pages: a browser sends `Origin` on a
/// POST, and it must name this host (a missing one, as from old browsers, is let through: the
/// CSRF token still has to match).
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    origin == format!("https://{host}")
}

/// A response with the dashboard's security headers.
pub(crate) fn response(
    status: StatusCode,
    content_type: &str,
    body: DashBody,
) -> Response<DashBody> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// An HTML page.
pub(crate) fn html(status: StatusCode, page: String) -> Response<DashBody> {
    response(status, "text/html; charset=utf-8", DashBody::full(page))
}

/// A plain-text answer.
pub(crate) fn text(status: StatusCode, message: impl Into<String>) -> Response<DashBody> {
    let mut m: String = message.into();
    m.push('\n');
    response(status, "text/plain; charset=utf-8", DashBody::full(m))
}

/// A redirect to `location` (a path of ours) after a POST or to the login page.
pub(crate) fn see_other(location: &str) -> Response<DashBody> {
    let mut resp = response(
        StatusCode::SEE_OTHER,
        "text/plain; charset=utf-8",
        DashBody::full(""),
    );
    if let Ok(v) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// Adds a `Set-Cookie` header.
pub(crate) fn set_cookie(resp: &mut Response<DashBody>, cookie: &str) {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
}

/// A path of ours to go back to: absolute, not `//host` (no open redirect).
pub(crate) fn local_path(candidate: &str) -> &str {
    if candidate.starts_with('/') && !candidate.starts_with("//") && !candidate.contains('\\') {
        candidate
    } else {
        "/"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_exact_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; __Host-pvefleet-session=abc; pvefleet-theme=dark"),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("abc"));
        assert_eq!(cookie(&h, THEME_COOKIE), Some("dark"));
        assert_eq!(cookie(&h, "pvefleet"), None);
    }

    #[test]
    fn a_foreign_origin_is_not_ours() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:7443"));
        assert!(same_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://127.0.0.1:7443"),
        );
        assert!(same_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://evil.example"),
        );
        assert!(!same_origin(&h));
    }

    #[test]
    fn only_local_paths_are_followed() {
        assert_eq!(local_path("/guests/a"), "/guests/a");
        assert_eq!(local_path("//evil.example/x"), "/");
        assert_eq!(local_path("https://evil.example"), "/");
        assert_eq!(local_path("/\\evil.example"), "/");
    }
}
