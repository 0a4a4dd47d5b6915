//! `Recording`: a backend wrapper that keeps every successful answer, so a test can check what
//! a server really sent (e.g. against the official schema's `returns`).

use std::sync::{Arc, Mutex};

use pve::backend::BoxFuture;
use pve::{ApiReply, ApiRequest, Backend, PveError};

/// One recorded call: the request and the `data` it got back.
pub type Recorded = (ApiRequest, serde_json::Value);

/// Wraps a backend, counts every call it is asked to make and records each successful one.
#[derive(Debug, Clone)]
pub struct Recording<B> {
    inner: B,
    log: Arc<Mutex<Vec<Recorded>>>,
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

impl<B> Recording<B> {
    /// Record the calls made through `inner`.
    pub fn new(inner: B) -> Self {
        Self {
            inner,
            log: Arc::new(Mutex::new(Vec::new())),
            calls: Arc::default(),
        }
    }

    /// A counter of every call handed to the backend (sent or failed), valid after the backend
    /// moved into a client.
    pub fn calls(&self) -> Arc<std::sync::atomic::AtomicUsize> {
        Arc::clone(&self.calls)
    }

    /// A handle on the log that stays valid after the backend moved into a client.
    pub fn log(&self) -> Arc<Mutex<Vec<Recorded>>> {
        Arc::clone(&self.log)
    }
}

impl<B: Backend> Backend for Recording<B> {
    fn call<'a>(&'a self, req: &'a ApiRequest) -> BoxFuture<'a, Result<ApiReply, PveError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let reply = self.inner.call(req).await?;
            if let Ok(mut log) = self.log.lock() {
                log.push((req.clone(), reply.data.clone()));
            }
            Ok(reply)
        })
    }

    fn endpoint(&self) -> String {
        self.inner.endpoint()
    }

    fn api_user(&self) -> Option<String> {
        self.inner.api_user()
    }

    fn is_root(&self) -> bool {
        self.inner.is_root()
    }
}
