//! The simulator's internal request contract: what the HTTP edge (and the in-process entry
//! point) hands to the cluster model after routing, authentication and schema validation, and
//! the error shape the model hands back.
//!
//! The model never sees raw HTTP: parameters arrive already merged (path + query + body, as
//! PVE's `rest_handler` merges them), validated against the official schema, and normalized
//! (booleans as `"1"`/`"0"`, numbers as their decimal text).

use std::collections::BTreeMap;

/// Validated request parameters, path parameters included (`node`, `vmid`, `snapname`, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params(pub BTreeMap<String, String>);

impl Params {
    /// The raw (normalized) value of a parameter.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Whether the parameter was sent.
    pub fn has(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// A required string parameter. Validation already enforced presence for schema-required
    /// parameters, so a miss here is a simulator bug reported as a 500.
    pub fn req(&self, key: &str) -> Result<&str, ApiError> {
        self.get(key)
            .ok_or_else(|| ApiError::internal(format!("simulator bug: parameter '{key}' missing")))
    }

    /// An integer parameter (validation guarantees the syntax for schema integers).
    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key)
            .and_then(|v| v.trim_start_matches('+').parse().ok())
    }

    /// A boolean parameter: normalized to `1`/`0` by validation. Absent gives `default`.
    pub fn flag(&self, key: &str, default: bool) -> bool {
        match self.get(key) {
            Some(v) => v == "1",
            None => default,
        }
    }

    /// Insert or replace a value (used by the edge when merging path parameters).
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.0.insert(key.into(), value.into());
    }
}

/// Who is calling. PVE distinguishes `root@pam` (ticket or `pvesh`) from an API token of
/// `root@pam`: several options (`skiplock`, `force` on migrate, ...) are for `root@pam` only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `user@realm`.
    pub userid: String,
    /// The token id (`fleet` in `root@pam!fleet`) when authenticated with an API token.
    pub tokenid: Option<String>,
    /// Privileges are limited to `*.Audit` (read-only token); writes are refused with 403.
    pub read_only: bool,
}

impl Caller {
    /// `root@pam` as `pvesh` or a ticket login sees it.
    pub fn root() -> Self {
        Self {
            userid: "root@pam".into(),
            tokenid: None,
            read_only: false,
        }
    }

    /// An API token `userid!tokenid`.
    pub fn token(userid: impl Into<String>, tokenid: impl Into<String>) -> Self {
        Self {
            userid: userid.into(),
            tokenid: Some(tokenid.into()),
            read_only: false,
        }
    }

    /// The user as it appears in a UPID: `root@pam` or `root@pam!fleet`.
    pub fn upid_user(&self) -> String {
        match &self.tokenid {
            Some(t) => format!("{}!{}", self.userid, t),
            None => self.userid.clone(),
        }
    }

    /// `root@pam` proper (not a token of it).
    pub fn is_root(&self) -> bool {
        self.userid == "root@pam" && self.tokenid.is_none()
    }
}

/// An API error as PVE produces it: HTTP status = error class, reason phrase = first line of
/// `message`, body `{"data":null,"message":"...\n"}` plus `errors` for parameter errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {message}")]
pub struct ApiError {
    /// HTTP status code (400, 401, 403, 500, 501, 595, ...).
    pub status: u16,
    /// Full message without the trailing newline PVE adds on the wire.
    pub message: String,
    /// Per-parameter errors (only for 400).
    pub errors: BTreeMap<String, String>,
}

impl ApiError {
    /// A plain `die` in a handler: HTTP 500 with the text.
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            status: 500,
            message: message.into(),
            errors: BTreeMap::new(),
        }
    }

    /// `raise_param_exc({param => msg})`: 400 `Parameter verification failed.`.
    pub fn param(param: impl Into<String>, msg: impl Into<String>) -> Self {
        let mut errors = BTreeMap::new();
        errors.insert(param.into(), msg.into());
        Self::params(errors)
    }

    /// Several parameter errors at once.
    pub fn params(errors: BTreeMap<String, String>) -> Self {
        Self {
            status: 400,
            message: "Parameter verification failed.".into(),
            errors,
        }
    }

    /// `raise_perm_exc("$path, $priv")`.
    pub fn permission(acl_path: &str, privilege: &str) -> Self {
        Self {
            status: 403,
            message: format!("Permission check failed ({acl_path}, {privilege})"),
            errors: BTreeMap::new(),
        }
    }

    /// Any other status with a message.
    pub fn status(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            errors: BTreeMap::new(),
        }
    }

    /// The reason phrase PVE puts in the status line: the first line of the message.
    pub fn reason(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

/// A successful answer: the `data` of the envelope, plus `total` for paged lists (task list,
/// task log) which PVE puts beside `data`; or a file the HTTP layer sends instead of the
/// envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The `data` member (`null` for a download).
    pub data: serde_json::Value,
    /// The `total` member, when the method has one.
    pub total: Option<u64>,
    /// A file to send as the body instead of JSON (`download_allowed` methods).
    pub download: Option<Download>,
}

/// What a `download_allowed` handler returns as `{download => {...}}`: pve-http-server sends
/// the bytes as the body with these headers, without the JSON envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    /// `Content-Type` (`text/plain` for a task log).
    pub content_type: String,
    /// `Content-Disposition` (`attachment; filename="..."`), when the handler names one.
    pub content_disposition: Option<String>,
    /// The file's bytes.
    pub body: Vec<u8>,
}

impl Reply {
    /// A plain `{"data": ...}` answer.
    pub fn data(data: serde_json::Value) -> Self {
        Self {
            data,
            total: None,
            download: None,
        }
    }

    /// `{"data": ..., "total": n}`.
    pub fn with_total(data: serde_json::Value, total: u64) -> Self {
        Self {
            data,
            total: Some(total),
            download: None,
        }
    }

    /// A file sent instead of the envelope.
    pub fn download(download: Download) -> Self {
        Self {
            data: serde_json::Value::Null,
            total: None,
            download: Some(download),
        }
    }

    /// `{"data": null}` (methods whose schema returns `null`).
    pub fn null() -> Self {
        Self::data(serde_json::Value::Null)
    }
}
