//! `SimBackend`: the real `pve` client over the simulator in process, without HTTP (for tests
//! and benches that want a PVE node without a process; the agent always talks HTTPS or pvesh). The
//! simulator produces the exact status, reason phrase and body its HTTPS server would send,
//! and the client decodes them with the same function its HTTPS backend uses, so only the
//! socket is skipped.

use crate::{Caller, HttpMethod, Sim};
use pve::backend::BoxFuture;
use pve::{ApiReply, ApiRequest, Backend, Method, PveError};

/// A `pve::Backend` calling a [`Sim`] in process as `caller`, talking to `node`.
#[derive(Clone)]
pub struct SimBackend {
    sim: Sim,
    caller: Caller,
    node: String,
}

impl std::fmt::Debug for SimBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimBackend")
            .field("caller", &self.caller)
            .field("node", &self.node)
            .finish()
    }
}

impl SimBackend {
    /// Call `sim` as `caller`, with `node` as the node answering (`localhost`).
    pub fn new(sim: Sim, caller: Caller, node: impl Into<String>) -> Self {
        Self {
            sim,
            caller,
            node: node.into(),
        }
    }
}

fn method(m: Method) -> HttpMethod {
    match m {
        Method::Get => HttpMethod::Get,
        Method::Post => HttpMethod::Post,
        Method::Put => HttpMethod::Put,
        Method::Delete => HttpMethod::Delete,
    }
}

impl Backend for SimBackend {
    fn call<'a>(&'a self, req: &'a ApiRequest) -> BoxFuture<'a, Result<ApiReply, PveError>> {
        Box::pin(async move {
            let raw = self
                .sim
                .handle_raw(
                    &self.caller,
                    &self.node,
                    method(req.method),
                    &req.path,
                    req.params.clone(),
                )
                .await;
            if raw.drop {
                return Err(PveError::Transport {
                    endpoint: self.endpoint(),
                    method: req.method.as_str(),
                    path: req.path.clone(),
                    reason: "connection closed before the answer (simulated)".into(),
                });
            }
            pve::reply::decode_http_reply(&self.endpoint(), req, raw.status, &raw.reason, &raw.body)
        })
    }

    fn endpoint(&self) -> String {
        format!("sim://{}", self.node)
    }

    fn api_user(&self) -> Option<String> {
        Some(self.caller.upid_user())
    }

    fn is_root(&self) -> bool {
        self.caller.is_root()
    }
}
