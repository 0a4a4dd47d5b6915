//! [`Client`]: typed PVE calls over any [`Backend`], with the retry rules of [`crate::retry`].
//! The typed calls themselves live in [`crate::calls`], one file per API area.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::backend::Backend;
use crate::error::PveError;
use crate::poll::PollPolicy;
use crate::request::{ApiReply, ApiRequest};
use crate::retry::RetryPolicy;
use crate::upid::Upid;

/// A PVE API client. Cheap to clone; share one per host.
#[derive(Debug, Clone)]
pub struct Client {
    backend: Arc<dyn Backend>,
    retry: RetryPolicy,
    poll: PollPolicy,
}

impl Client {
    /// A client over `backend` with default retry and task-polling policies.
    pub fn new(backend: impl Backend + 'static) -> Self {
        Self::from_arc(Arc::new(backend))
    }

    /// A client over a shared backend.
    pub fn from_arc(backend: Arc<dyn Backend>) -> Self {
        Self {
            backend,
            retry: RetryPolicy::default(),
            poll: PollPolicy::default(),
        }
    }

    /// Replace the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Replace the task polling policy.
    pub fn with_poll(mut self, poll: PollPolicy) -> Self {
        self.poll = poll;
        self
    }

    /// The backend.
    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    /// The task polling policy.
    pub fn poll_policy(&self) -> PollPolicy {
        self.poll
    }

    /// Send one request, retrying what is safe to retry.
    pub async fn execute(&self, req: &ApiRequest) -> Result<ApiReply, PveError> {
        let mut attempt = 1;
        loop {
            match self.backend.call(req).await {
                Ok(reply) => return Ok(reply),
                Err(err)
                    if attempt < self.retry.attempts
                        && RetryPolicy::retryable(req.method, &err) =>
                {
                    let delay = self.retry.delay(attempt);
                    tracing::debug!(method = %req.method, path = %req.path, attempt, ?delay, error = %err, "retrying PVE call");
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Send one request exactly once (no retry).
    pub async fn execute_once(&self, req: &ApiRequest) -> Result<ApiReply, PveError> {
        self.backend.call(req).await
    }

    /// Send and decode `data` as `T`.
    pub async fn fetch<T: DeserializeOwned>(&self, req: &ApiRequest) -> Result<T, PveError> {
        let reply = self.execute(req).await?;
        decode(req, reply.data)
    }

    /// Send a call that starts a worker task and return its UPID.
    pub async fn start_task(&self, req: &ApiRequest) -> Result<Upid, PveError> {
        let reply = self.execute(req).await?;
        decode_upid(req, &reply.data)
    }
}

/// Decode `data` of the answer to `req` as `T`.
pub fn decode<T: DeserializeOwned>(req: &ApiRequest, data: Value) -> Result<T, PveError> {
    serde_json::from_value(data).map_err(|e| PveError::Decode {
        what: format!("{} {}", req.method, req.path),
        reason: e.to_string(),
    })
}

/// Decode a UPID answer.
pub fn decode_upid(req: &ApiRequest, data: &Value) -> Result<Upid, PveError> {
    let text = data.as_str().ok_or_else(|| PveError::Decode {
        what: format!("{} {}", req.method, req.path),
        reason: format!("expected a UPID string, got {data}"),
    })?;
    text.parse()
}
