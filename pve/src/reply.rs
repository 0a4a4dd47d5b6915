//! Decoding PVE's HTTP replies into data or a typed [`PveError`].
//!
//! Success is `200` with `{"data": ...}` (plus `total` for paged lists). An error's class is the
//! status code and its first line the reason phrase; since libpve-http-server-perl 5.2.0 the
//! body also carries `message` and, for 400, `errors`. Older servers send only `{"data":null}`,
//! and 401 from the auth handler sends no body at all, so the reason phrase is the fallback.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::PveError;
use crate::request::{ApiReply, ApiRequest};

/// Decode one HTTP reply to `req` received from `endpoint`.
pub fn decode_http_reply(
    endpoint: &str,
    req: &ApiRequest,
    status: u16,
    reason: &str,
    body: &[u8],
) -> Result<ApiReply, PveError> {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    if status == 200 {
        let Some(Value::Object(mut envelope)) = parsed else {
            return Err(PveError::Decode {
                what: format!("{} {}", req.method, req.path),
                reason: format!("body is not a JSON object: {}", preview(body)),
            });
        };
        let data = envelope.remove("data").unwrap_or(Value::Null);
        let total = envelope.get("total").and_then(|t| match t {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        });
        return Ok(ApiReply { data, total });
    }
    if status == 401 {
        return Err(PveError::Auth {
            endpoint: endpoint.to_string(),
            reason: reason.to_string(),
        });
    }
    let obj = match parsed {
        Some(Value::Object(o)) => o,
        _ => serde_json::Map::new(),
    };
    let message = obj
        .get("message")
        .and_then(Value::as_str)
        .map(|m| m.trim_end_matches('\n').to_string())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| reason.to_string());
    let errors: BTreeMap<String, String> = obj
        .get("errors")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let text = v
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string());
                    (k.clone(), text.trim_end_matches('\n').to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    Err(PveError::Api {
        method: req.method.as_str(),
        path: req.path.clone(),
        status,
        reason: reason.to_string(),
        message,
        errors,
    })
}

fn preview(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    s.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Method;

    fn req() -> ApiRequest {
        ApiRequest::new(Method::Post, "/nodes/pve1/qemu")
    }

    #[test]
    fn success_envelope_with_total() {
        let r = decode_http_reply("e", &req(), 200, "OK", br#"{"data":[1],"total":"12"}"#).unwrap();
        assert_eq!(r.data, serde_json::json!([1]));
        assert_eq!(r.total, Some(12));
    }

    #[test]
    fn new_server_error_body_wins_over_reason() {
        let body = br#"{"errors":{"vmid":"VM 2004 already exists"},"data":null,"message":"Parameter verification failed.\n"}"#;
        let e = decode_http_reply("e", &req(), 400, "Parameter verification failed.", body)
            .unwrap_err();
        assert_eq!(e.status(), Some(400));
        assert_eq!(e.message(), Some("Parameter verification failed."));
        assert_eq!(e.param_error("vmid"), Some("VM 2004 already exists"));
        assert!(e.is_already_exists());
    }

    #[test]
    fn old_server_gives_only_the_reason_phrase() {
        let e = decode_http_reply("e", &req(), 500, "CT is locked (disk)", br#"{"data":null}"#)
            .unwrap_err();
        assert_eq!(e.message(), Some("CT is locked (disk)"));
        assert_eq!(e.locked(), Some("disk"));
    }

    #[test]
    fn auth_failure_without_body() {
        let e = decode_http_reply("e", &req(), 401, "No ticket", b"").unwrap_err();
        assert!(matches!(e, PveError::Auth { .. }));
    }

    #[test]
    fn garbage_success_body_is_a_decode_error() {
        let e = decode_http_reply("e", &req(), 200, "OK", b"<html>").unwrap_err();
        assert!(matches!(e, PveError::Decode { .. }));
    }
}
