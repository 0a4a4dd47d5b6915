//! One API call as every backend sees it: method, path below `/api2/json`, and parameters as
//! the form strings PVE receives (booleans `1`/`0`, numbers in decimal, property strings
//! already built and validated).

use std::fmt;

/// HTTP method of a PVE API call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Read (`pvesh get`); idempotent, safe to retry.
    Get,
    /// Create / action (`pvesh create`).
    Post,
    /// Update (`pvesh set`).
    Put,
    /// Delete (`pvesh delete`).
    Delete,
}

impl Method {
    /// `GET`, `POST`, `PUT`, `DELETE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Delete => "DELETE",
        }
    }

    /// Whether repeating the call cannot change the outcome.
    pub fn is_idempotent_read(self) -> bool {
        self == Self::Get
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One call: `method path?params`. Its `Debug` output hides secret values (`password`,
/// `cipassword`, ...), so a logged request never leaks them.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiRequest {
    /// The method.
    pub method: Method,
    /// Path below `/api2/json`, starting with `/`, segments already percent-encoded where needed.
    pub path: String,
    /// Parameters in the order they were added (duplicates are not allowed).
    pub params: Vec<(String, String)>,
}

impl ApiRequest {
    /// A request without parameters.
    pub fn new(method: Method, path: impl Into<String>) -> Self {
        Self {
            method,
            path: path.into(),
            params: Vec::new(),
        }
    }

    /// Add a parameter.
    pub fn param(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.push((key.into(), value.into()));
        self
    }

    /// Add a parameter when present.
    pub fn opt(self, key: &str, value: Option<impl ToString>) -> Self {
        match value {
            Some(v) => self.param(key, v.to_string()),
            None => self,
        }
    }

    /// Add a boolean parameter (`1`/`0`) when present.
    pub fn flag(self, key: &str, value: Option<bool>) -> Self {
        match value {
            Some(v) => self.param(key, if v { "1" } else { "0" }),
            None => self,
        }
    }

    /// The value of a parameter, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Whether a parameter carries a secret that must never be logged or put in argv: a password,
/// or a remote migration's `target-endpoint` (it holds an API token).
pub fn is_secret_param(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("password") || key == "target-endpoint"
}

impl fmt::Debug for ApiRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let params: Vec<(&str, &str)> = self
            .params
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str(),
                    if is_secret_param(k) {
                        "<redacted>"
                    } else {
                        v.as_str()
                    },
                )
            })
            .collect();
        f.debug_struct("ApiRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("params", &params)
            .finish()
    }
}

/// A successful answer: the envelope's `data`, and its `total` for paged lists.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiReply {
    /// `data`.
    pub data: serde_json::Value,
    /// `total` (task log, task list).
    pub total: Option<u64>,
}

/// Percent-encode one path segment (a UPID, a snapshot name) for use in [`ApiRequest::path`].
pub fn segment(s: &str) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~')
        .remove(b':')
        .remove(b'@')
        .remove(b'!');
    percent_encoding::utf8_percent_encode(s, SET).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_secrets() {
        let req = ApiRequest::new(Method::Post, "/access/ticket")
            .param("username", "root@pam")
            .param("password", "hunter2")
            .param("cipassword", "s3cret");
        let shown = format!("{req:?}");
        assert!(shown.contains("root@pam"), "{shown}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("s3cret"),
            "{shown}"
        );
    }

    #[test]
    fn segment_keeps_upid_characters() {
        assert_eq!(
            segment("UPID:pve1:0000:x:root@pam!fleet:"),
            "UPID:pve1:0000:x:root@pam!fleet:"
        );
        assert_eq!(segment("a b/c"), "a%20b%2Fc");
    }
}
