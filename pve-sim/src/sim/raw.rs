//! The bytes of an answer as pve-http-server's JSON formatter writes them: `{"data": ...}`
//! (plus `total` when non-zero) on success; `{"data": null, "message": "...\n"}` plus `errors`
//! for parameter errors; the status line's reason phrase is the first message line. A
//! handler's download is sent as it is, with its own content type (`send_file_start`).

use serde_json::{Map, Value};

use crate::api::{ApiError, Reply};

/// An answer as HTTP would carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawReply {
    /// HTTP status code.
    pub status: u16,
    /// Reason phrase of the status line (`OK`, or the first line of the error message).
    pub reason: String,
    /// The body (empty when PVE sends none, e.g. a failed proxy connection).
    pub body: Vec<u8>,
    /// `Content-Type` of a download; `None` = the JSON formatter's type when there is a body.
    pub content_type: Option<String>,
    /// `Content-Disposition` of a download.
    pub content_disposition: Option<String>,
    /// Fault injection: close the connection instead of answering (the request took effect).
    pub drop: bool,
}

/// Status codes AnyEvent::HTTP invents for connection failures while proxying: pveproxy
/// passes them through with their reason and no body.
fn is_proxy_failure(status: u16) -> bool {
    (595..=599).contains(&status)
}

/// The canonical reason phrase when a message gives none.
fn canonical_reason(status: u16) -> String {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Unknown")
        .to_string()
}

/// The wire text of an error message: PVE's `die` texts end in a newline, except the
/// handler-lookup message the REST layer builds itself.
fn wire_message(err: &ApiError) -> String {
    if err.status == 501 && err.message.starts_with("Method '") {
        err.message.clone()
    } else {
        format!("{}\n", err.message)
    }
}

fn to_bytes(value: &Value) -> Vec<u8> {
    // Serializing a `Value` cannot fail (all keys are strings).
    serde_json::to_vec(value).unwrap_or_default()
}

impl RawReply {
    /// Encode a successful answer.
    pub(crate) fn ok(reply: &Reply) -> Self {
        if let Some(download) = &reply.download {
            return Self {
                status: 200,
                reason: "OK".into(),
                body: download.body.clone(),
                content_type: Some(download.content_type.clone()),
                content_disposition: download.content_disposition.clone(),
                drop: false,
            };
        }
        let mut body = Map::new();
        body.insert("data".into(), reply.data.clone());
        if let Some(total) = reply.total.filter(|t| *t > 0) {
            body.insert("total".into(), Value::from(total));
        }
        Self {
            status: 200,
            reason: "OK".into(),
            body: to_bytes(&Value::Object(body)),
            content_type: None,
            content_disposition: None,
            drop: false,
        }
    }

    /// Encode an error answer.
    pub(crate) fn error(err: &ApiError) -> Self {
        let reason = match err.reason() {
            "" => canonical_reason(err.status),
            r => r.to_string(),
        };
        if is_proxy_failure(err.status) {
            return Self {
                status: err.status,
                reason,
                body: Vec::new(),
                content_type: None,
                content_disposition: None,
                drop: false,
            };
        }
        let mut body = Map::new();
        body.insert("data".into(), Value::Null);
        body.insert("message".into(), Value::String(wire_message(err)));
        if !err.errors.is_empty() {
            let errors = err
                .errors
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())));
            body.insert("errors".into(), Value::Object(errors.collect()));
        }
        Self {
            status: err.status,
            reason,
            body: to_bytes(&Value::Object(body)),
            content_type: None,
            content_disposition: None,
            drop: false,
        }
    }

    /// Encode either.
    pub(crate) fn from_result(result: &Result<Reply, ApiError>) -> Self {
        match result {
            Ok(reply) => Self::ok(reply),
            Err(err) => Self::error(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(r: &RawReply) -> Value {
        serde_json::from_slice(&r.body).unwrap()
    }

    #[test]
    fn success_carries_data_and_non_zero_total() {
        let r = RawReply::ok(&Reply::with_total(json!([{"n": 1, "t": "TASK OK"}]), 1));
        assert_eq!((r.status, r.reason.as_str()), (200, "OK"));
        assert_eq!(
            body(&r),
            json!({"data": [{"n": 1, "t": "TASK OK"}], "total": 1})
        );
        assert_eq!(
            body(&RawReply::ok(&Reply::with_total(json!([]), 0))),
            json!({"data": []})
        );
        assert_eq!(body(&RawReply::ok(&Reply::null())), json!({"data": null}));
    }

    #[test]
    fn a_download_is_sent_as_it_is() {
        let r = RawReply::ok(&Reply::download(crate::api::Download {
            content_type: "text/plain".into(),
            content_disposition: Some("attachment; filename=\"x.log\"".into()),
            body: b"line\nTASK OK\n".to_vec(),
        }));
        assert_eq!((r.status, r.reason.as_str()), (200, "OK"));
        assert_eq!(r.body, b"line\nTASK OK\n");
        assert_eq!(r.content_type.as_deref(), Some("text/plain"));
        assert_eq!(
            r.content_disposition.as_deref(),
            Some("attachment; filename=\"x.log\"")
        );
        assert_eq!(RawReply::ok(&Reply::null()).content_type, None);
    }

    #[test]
    fn errors_carry_message_with_newline_and_the_first_line_as_reason() {
        let r = RawReply::error(&ApiError::param("vmid", "VM 2004 already exists"));
        assert_eq!(
            (r.status, r.reason.as_str()),
            (400, "Parameter verification failed.")
        );
        assert_eq!(
            body(&r),
            json!({"data": null, "message": "Parameter verification failed.\n",
                   "errors": {"vmid": "VM 2004 already exists"}})
        );
        let r = RawReply::error(&ApiError::internal("first line\nsecond"));
        assert_eq!(r.reason, "first line");
        assert_eq!(body(&r)["message"], "first line\nsecond\n");
        let r = RawReply::error(&ApiError::status(501, "Method 'GET /x' not implemented"));
        assert_eq!(body(&r)["message"], "Method 'GET /x' not implemented");
        let r = RawReply::error(&ApiError::status(595, "No route to host"));
        assert_eq!((r.reason.as_str(), r.body.len()), ("No route to host", 0));
    }
}
