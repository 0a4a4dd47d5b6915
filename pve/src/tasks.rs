//! Worker tasks: read a task's status and log on the node named in its UPID, wait for it with
//! back-off and a deadline, and map its `exitstatus` to success (`OK`, `WARNINGS: n`) or a
//! [`PveError::TaskFailed`] carrying the tail of its log.

use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::client::Client;
use crate::de;
use crate::error::PveError;
use crate::request::{ApiRequest, Method, segment};
use crate::upid::Upid;

// Kept at its old path: callers configure polling as `pve::tasks::PollPolicy`.
pub use crate::poll::PollPolicy;

/// `GET /nodes/{node}/tasks/{upid}/status`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TaskStatus {
    /// `running` or `stopped`.
    pub status: String,
    /// Set once stopped: `OK`, `WARNINGS: n`, or the error text.
    #[serde(default)]
    pub exitstatus: Option<String>,
    /// Task type.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Object id.
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub id: String,
    /// Node.
    #[serde(default)]
    pub node: String,
    /// User (`root@pam`; the token id is in `tokenid`).
    #[serde(default)]
    pub user: String,
    /// Token id, for token tasks.
    #[serde(default)]
    pub tokenid: Option<String>,
    /// Start time (unix).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub starttime: Option<u64>,
}

impl TaskStatus {
    /// Whether the task has finished.
    pub fn is_stopped(&self) -> bool {
        self.status == "stopped"
    }
}

/// One line of a task log.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TaskLogLine {
    /// 1-based line number.
    #[serde(deserialize_with = "de::u64_lenient")]
    pub n: u64,
    /// The text.
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub t: String,
}

/// A task that finished successfully.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOutcome {
    /// The task.
    pub upid: Upid,
    /// Number of warnings (`WARNINGS: n`), 0 for `OK`.
    pub warnings: u32,
}

/// Classify an `exitstatus`: `Ok(warnings)` for success, `Err(text)` otherwise.
pub fn classify_exitstatus(exitstatus: &str) -> Result<u32, &str> {
    if exitstatus == "OK" {
        return Ok(0);
    }
    if let Some(Ok(n)) = exitstatus.strip_prefix("WARNINGS: ").map(str::parse::<u32>) {
        return Ok(n);
    }
    Err(exitstatus)
}

fn task_path(upid: &Upid, tail: &str) -> String {
    format!(
        "/nodes/{}/tasks/{}{}",
        upid.node,
        segment(&upid.to_string()),
        tail
    )
}

impl Client {
    /// Status of a task, read on its own node.
    pub async fn task_status(&self, upid: &Upid) -> Result<TaskStatus, PveError> {
        self.fetch(&ApiRequest::new(Method::Get, task_path(upid, "/status")))
            .await
    }

    /// Lines `start..start+limit` of a task log (`limit` 0 = all) and the total line count
    /// when the backend reports one (`pvesh` prints only the data, without `total`).
    pub async fn task_log(
        &self,
        upid: &Upid,
        start: u64,
        limit: u64,
    ) -> Result<(Vec<TaskLogLine>, Option<u64>), PveError> {
        let req = ApiRequest::new(Method::Get, task_path(upid, "/log"))
            .param("start", start.to_string())
            .param("limit", limit.to_string());
        let reply = self.execute(&req).await?;
        let total = reply.total;
        let lines: Vec<TaskLogLine> = crate::client::decode(&req, reply.data)?;
        Ok((lines, total))
    }

    /// The last `n` lines of a task log.
    pub async fn task_log_tail(&self, upid: &Upid, n: u64) -> Result<Vec<String>, PveError> {
        let (first, total) = self.task_log(upid, 0, 1).await?;
        let lines = match total {
            Some(total) => self.task_log(upid, total.saturating_sub(n), n).await?.0,
            // No line count: read it all and keep the end.
            None if first.is_empty() => first,
            None => self.task_log(upid, 0, 0).await?.0,
        };
        let skip = lines
            .len()
            .saturating_sub(usize::try_from(n).unwrap_or(usize::MAX));
        Ok(lines.into_iter().skip(skip).map(|l| l.t).collect())
    }

    /// Stop (kill) a running task.
    pub async fn task_stop(&self, upid: &Upid) -> Result<(), PveError> {
        self.execute(&ApiRequest::new(Method::Delete, task_path(upid, "")))
            .await
            .map(|_| ())
    }

    /// Wait until the task stops, polling its node with back-off, for at most `timeout`.
    /// Success is `OK` or `WARNINGS: n`; anything else is [`PveError::TaskFailed`] with the
    /// log tail. On timeout the task may still be running: [`PveError::TaskTimeout`].
    pub async fn wait_task(&self, upid: &Upid, timeout: Duration) -> Result<TaskOutcome, PveError> {
        let poll = self.poll_policy();
        let deadline = Instant::now() + timeout;
        let mut delay = poll.initial;
        loop {
            let status = self.task_status(upid).await?;
            if status.is_stopped() {
                let exit = status
                    .exitstatus
                    .unwrap_or_else(|| "unexpected status".into());
                return match classify_exitstatus(&exit) {
                    Ok(warnings) => Ok(TaskOutcome {
                        upid: upid.clone(),
                        warnings,
                    }),
                    Err(_) => {
                        let log_tail = self
                            .task_log_tail(upid, u64::from(poll.log_tail))
                            .await
                            .unwrap_or_default();
                        Err(PveError::TaskFailed {
                            upid: Box::new(upid.clone()),
                            exitstatus: exit,
                            log_tail,
                        })
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(PveError::TaskTimeout {
                    upid: Box::new(upid.clone()),
                    timeout,
                });
            }
            tokio::time::sleep(delay.min(deadline - now)).await;
            delay = Duration::from_secs_f64(
                (delay.as_secs_f64() * poll.factor).min(poll.max.as_secs_f64()),
            );
        }
    }

    /// Start a task and wait for it.
    pub async fn run_task(
        &self,
        req: &ApiRequest,
        timeout: Duration,
    ) -> Result<TaskOutcome, PveError> {
        let upid = self.start_task(req).await?;
        self.wait_task(&upid, timeout).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exitstatus_classification_matches_status_is_error() {
        assert_eq!(classify_exitstatus("OK"), Ok(0));
        assert_eq!(classify_exitstatus("WARNINGS: 3"), Ok(3));
        assert!(classify_exitstatus("WARNINGS: x").is_err());
        assert!(classify_exitstatus("unexpected status").is_err());
        assert!(classify_exitstatus("VM is locked (clone)").is_err());
        assert!(classify_exitstatus("ok").is_err());
    }
}
