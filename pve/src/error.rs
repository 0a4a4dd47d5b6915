//! `PveError`: everything that can go wrong talking to PVE, typed so callers can decide
//! (retry, report, treat "already exists" as success) without parsing strings.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::upid::Upid;

/// An error from a PVE API call.
#[derive(Debug, thiserror::Error)]
pub enum PveError {
    /// The server answered with an HTTP error. `message` is the body's `message` when the
    /// server sends one (libpve-http-server-perl 5.2.0+, PVE 8.4+), otherwise the reason phrase.
    #[error("{method} {path}: HTTP {status} {}{}", .message, fmt_param_errors(.errors))]
    Api {
        /// Method of the failed call.
        method: &'static str,
        /// Path of the failed call.
        path: String,
        /// HTTP status.
        status: u16,
        /// Reason phrase of the status line (the first line of PVE's message).
        reason: String,
        /// Full message (without trailing newline).
        message: String,
        /// Per-parameter errors of a 400.
        errors: BTreeMap<String, String>,
    },
    /// Authentication was refused (401): wrong token, expired ticket, bad CSRF token.
    #[error(
        "authentication refused by {endpoint}: {reason}; check the API token file or credentials"
    )]
    Auth {
        /// Where.
        endpoint: String,
        /// The reason phrase.
        reason: String,
    },
    /// No connection could be made: nothing was sent, any call may be retried.
    #[error("cannot connect to {endpoint}: {reason}")]
    Connect {
        /// Where.
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// The request may have been sent but no complete answer came back: its effect is unknown.
    #[error("no answer from {endpoint} for {method} {path}: {reason}")]
    Transport {
        /// Where.
        endpoint: String,
        /// Method of the call.
        method: &'static str,
        /// Path of the call.
        path: String,
        /// Why.
        reason: String,
    },
    /// The call did not complete within its deadline.
    #[error("{method} {path} timed out after {timeout:?}")]
    Timeout {
        /// Method of the call.
        method: &'static str,
        /// Path of the call.
        path: String,
        /// The deadline.
        timeout: Duration,
    },
    /// The answer was not what the schema promises.
    #[error("cannot decode the answer to {what}: {reason}")]
    Decode {
        /// Which call or field.
        what: String,
        /// Why.
        reason: String,
    },
    /// A value was refused before anything was sent.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field (`net0`, `memory`, `snapname`, ...).
        field: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A task ended with an error.
    #[error("task {upid} failed: {exitstatus}{}", fmt_log_tail(.log_tail))]
    TaskFailed {
        /// The task.
        upid: Box<Upid>,
        /// Its `exitstatus` (the `TASK ERROR:` text).
        exitstatus: String,
        /// The last lines of its log.
        log_tail: Vec<String>,
    },
    /// A task did not finish in time (it may still be running on the node).
    #[error("task {upid} still running after {timeout:?}")]
    TaskTimeout {
        /// The task.
        upid: Box<Upid>,
        /// How long we waited.
        timeout: Duration,
    },
    /// Client configuration is unusable (unreadable token file, bad CA, wrong permissions).
    #[error("PVE client configuration: {0}")]
    Config(String),
    /// The `pvesh` command failed before or outside the API call.
    #[error("pvesh {args}: {reason}")]
    Pvesh {
        /// The call (no secrets: the backend refuses secret parameters).
        args: String,
        /// What happened (stderr, exit status).
        reason: String,
    },
}

fn fmt_param_errors(errors: &BTreeMap<String, String>) -> String {
    if errors.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!(" ({})", parts.join("; "))
}

fn fmt_log_tail(tail: &[String]) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!(" (log: {})", tail.join(" | "))
    }
}

impl PveError {
    /// HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Api { status, .. } => Some(*status),
            Self::Auth { .. } => Some(401),
            _ => None,
        }
    }

    /// The full message of an API error (or the task's exit status).
    pub fn message(&self) -> Option<&str> {
        match self {
            Self::Api { message, .. } => Some(message),
            Self::TaskFailed { exitstatus, .. } => Some(exitstatus),
            _ => None,
        }
    }

    /// The per-parameter error for `param`, if the server named one.
    pub fn param_error(&self, param: &str) -> Option<&str> {
        match self {
            Self::Api { errors, .. } => errors.get(param).map(String::as_str),
            _ => None,
        }
    }

    /// The field a value was refused for before sending ([`PveError::Invalid`]).
    pub fn invalid_field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }

    /// Nothing was sent: retrying is safe for every method.
    pub fn is_connect(&self) -> bool {
        matches!(self, Self::Connect { .. })
    }

    /// A failure that may go away by itself: connection problems, lost answers, timeouts,
    /// a proxy that could not reach the node (595/596), a busy or restarting daemon (502/503/504).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Connect { .. } | Self::Transport { .. } | Self::Timeout { .. } => true,
            Self::Api { status, .. } => matches!(status, 502 | 503 | 504 | 595 | 596 | 599),
            _ => false,
        }
    }

    /// "VM N already exists" in any of PVE's spellings (create's sync check, clone's
    /// `config file already exists`, nextid's parameter error).
    pub fn is_already_exists(&self) -> bool {
        let hit = |s: &str| s.contains("already exists");
        match self {
            Self::Api {
                message, errors, ..
            } => hit(message) || errors.values().any(|v| hit(v)),
            _ => false,
        }
    }

    /// `VM is locked (<lock>)`: returns the lock name.
    pub fn locked(&self) -> Option<&str> {
        let text = self.message()?;
        let rest = text.split("is locked (").nth(1)?;
        rest.split(')').next()
    }

    /// The configuration does not exist on the node asked (VM missing or on another node).
    pub fn is_missing_config(&self) -> bool {
        self.message().is_some_and(|m| {
            (m.starts_with("Configuration file") && m.ends_with("does not exist"))
                || m.starts_with("unable to find configuration file")
        })
    }
}
