//! The `pvesh` backend: each call runs `pvesh <verb> <path> --<key> <value> ...
//! --output-format json` as a child process on the PVE host itself, as `root@pam`.
//!
//! - Verbs: GET `get`, POST `create`, PUT `set`, DELETE `delete`; arguments are separate argv
//!   entries, no shell is involved.
//! - argv is visible to every local user (`ps`), so parameters that carry secrets (any key
//!   containing `password`) are refused: such calls need the HTTPS backend.
//! - Worker tasks run in the foreground: their log streams to stdout before the UPID, and the
//!   call returns when the task has ended. pvesh exits 0 even when the task failed (only errors
//!   raised before the task started give a non-zero exit), so the exit code says nothing about
//!   the task: [`crate::Client::wait_task`] reads the task status as with any backend, and finds
//!   it already stopped.
//! - Output parsing lives in `output`.

mod output;

use std::fmt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use crate::backend::{Backend, BoxFuture};
use crate::error::PveError;
use crate::request::{ApiReply, ApiRequest, Method};

/// How to run `pvesh`.
#[derive(Clone, PartialEq, Eq)]
pub struct PveshConfig {
    /// The program, found on `PATH` unless absolute (default `pvesh`).
    pub program: PathBuf,
    /// Extra environment for the child (e.g. for a simulator shim); inherited otherwise.
    pub env: Vec<(String, String)>,
    /// Deadline of one call. Tasks run in the foreground, so it bounds the whole task; on
    /// expiry the `pvesh` process is killed and the task may be left running or aborted.
    pub timeout: Duration,
}

impl PveshConfig {
    /// Default [`PveshConfig::timeout`]: long enough for a foreground clone or migration.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);
}

impl Default for PveshConfig {
    fn default() -> Self {
        Self {
            program: PathBuf::from("pvesh"),
            env: Vec::new(),
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

impl fmt::Debug for PveshConfig {
    // Environment values may hold credentials of a shim: show only the names.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("PveshConfig")
            .field("program", &self.program)
            .field("env", &env)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The `pvesh` [`Backend`].
#[derive(Debug, Clone)]
pub struct PveshBackend {
    config: PveshConfig,
}

impl PveshBackend {
    /// A backend running `config.program`. Nothing is run until the first call.
    pub fn new(config: PveshConfig) -> Self {
        Self { config }
    }

    async fn run(&self, req: &ApiRequest) -> Result<ApiReply, PveError> {
        let args = pvesh_args(req)?;
        let shown = args.join(" ");
        let mut cmd = tokio::process::Command::new(&self.config.program);
        cmd.args(&args)
            .envs(self.config.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let out = match tokio::time::timeout(self.config.timeout, cmd.output()).await {
            Err(_) => {
                return Err(PveError::Timeout {
                    method: req.method.as_str(),
                    path: req.path.clone(),
                    timeout: self.config.timeout,
                });
            }
            Ok(Err(e)) => {
                let program = self.config.program.display();
                return Err(PveError::Pvesh {
                    args: shown,
                    reason: format!("cannot run {program}: {e}"),
                });
            }
            Ok(Ok(out)) => out,
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            if !stderr.trim().is_empty() {
                // A foreground task's errors land here while pvesh still exits 0.
                tracing::debug!(args = %shown, stderr = %stderr.trim(), "pvesh wrote to stderr");
            }
            let data = output::parse_result(&stdout).map_err(|reason| PveError::Decode {
                what: format!("{} {}", req.method, req.path),
                reason,
            })?;
            return Ok(ApiReply { data, total: None });
        }
        match output::parse_error(&stderr) {
            Some(e) => Err(PveError::Api {
                method: req.method.as_str(),
                path: req.path.clone(),
                status: e.status,
                reason: e.reason,
                message: e.message,
                errors: e.errors,
            }),
            None => Err(PveError::Pvesh {
                args: shown,
                reason: format!("{} and printed no error", describe_exit(out.status)),
            }),
        }
    }
}

impl Backend for PveshBackend {
    fn call<'a>(&'a self, req: &'a ApiRequest) -> BoxFuture<'a, Result<ApiReply, PveError>> {
        Box::pin(self.run(req))
    }

    fn endpoint(&self) -> String {
        "pvesh".to_string()
    }

    fn is_root(&self) -> bool {
        true
    }

    fn api_user(&self) -> Option<String> {
        Some("root@pam".to_string())
    }

    fn tasks_run_in_foreground(&self) -> bool {
        true
    }
}

/// The verb for a method.
pub(crate) fn verb(method: Method) -> &'static str {
    match method {
        Method::Get => "get",
        Method::Post => "create",
        Method::Put => "set",
        Method::Delete => "delete",
    }
}

use crate::request::is_secret_param;

/// argv after the program: `<verb> <path> --<key> <value> ... --output-format json`. The path is
/// passed decoded (pvesh takes the API path as text, not as a URL).
pub(crate) fn pvesh_args(req: &ApiRequest) -> Result<Vec<String>, PveError> {
    if let Some((key, _)) = req.params.iter().find(|(k, _)| is_secret_param(k)) {
        return Err(PveError::Invalid {
            field: key.clone(),
            reason: "pvesh passes parameters on its command line, which every local user can \
                     read; use the HTTPS backend for calls that carry passwords"
                .into(),
        });
    }
    let path = percent_encoding::percent_decode_str(&req.path)
        .decode_utf8()
        .map_err(|_| PveError::Invalid {
            field: "path".into(),
            reason: format!("`{}` is not UTF-8", req.path),
        })?;
    if !path.starts_with('/') {
        return Err(PveError::Invalid {
            field: "path".into(),
            reason: format!("`{path}` must start with `/`"),
        });
    }
    let mut args = Vec::with_capacity(4 + 2 * req.params.len());
    args.push(verb(req.method).to_string());
    args.push(path.into_owned());
    for (key, value) in &req.params {
        args.push(format!("--{key}"));
        args.push(value.clone());
    }
    args.push("--output-format".into());
    args.push("json".into());
    Ok(args)
}

fn describe_exit(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        (None, None) => format!("ended with {status}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_map_to_verbs() {
        assert_eq!(verb(Method::Get), "get");
        assert_eq!(verb(Method::Post), "create");
        assert_eq!(verb(Method::Put), "set");
        assert_eq!(verb(Method::Delete), "delete");
    }

    #[test]
    fn args_are_separate_entries_with_decoded_path() {
        let req = ApiRequest::new(Method::Put, "/nodes/pve1/qemu/100/snapshot/a%20b/config")
            .param("description", "two words; $(rm -rf /)")
            .param("delete", "");
        assert_eq!(
            pvesh_args(&req).unwrap(),
            [
                "set",
                "/nodes/pve1/qemu/100/snapshot/a b/config",
                "--description",
                "two words; $(rm -rf /)",
                "--delete",
                "",
                "--output-format",
                "json"
            ]
        );
    }

    #[test]
    fn secret_parameters_are_refused() {
        for key in ["password", "cipassword", "new-password", "PASSWORD"] {
            let req = ApiRequest::new(Method::Post, "/x").param(key, "s3cret");
            match pvesh_args(&req) {
                Err(PveError::Invalid { field, reason }) => {
                    assert_eq!(field, key);
                    assert!(reason.contains("HTTPS backend"));
                    assert!(!reason.contains("s3cret"));
                }
                other => panic!("{key}: {other:?}"),
            }
        }
        assert!(!is_secret_param("sshkeys"));
    }

    #[test]
    fn config_debug_hides_env_values() {
        let config = PveshConfig {
            env: vec![("SHIM_TOKEN".into(), "s3cret".into())],
            ..PveshConfig::default()
        };
        let shown = format!("{config:?}");
        assert!(
            shown.contains("SHIM_TOKEN") && !shown.contains("s3cret"),
            "{shown}"
        );
    }
}
