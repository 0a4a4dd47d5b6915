//! `Router`: per service, method name to typed handler. Handlers are registered with their
//! request type, so decoding the body (at the version it is written at) and encoding the reply
//! (at the same version) happen here once, and a handler only ever sees a well-typed request
//! and who sent it (`Caller`).

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use crate::Rpc;
use crate::identity::PeerIdentity;
use crate::once::{self, OnceEnvelope};
use crate::remote_error::RemoteError;
use crate::service::Service;
use crate::versioned_body;

/// Who made a call: authenticated by the handshake, so handlers can authorize on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The service (ALPN) the call came in on.
    pub service: Service,
    /// The client certificate's identity; `None` only on `Service::Join`.
    pub peer: Option<PeerIdentity>,
    /// The client's UDP address.
    pub addr: SocketAddr,
    /// When the client certificate expires (unix seconds); `None` without one.
    pub cert_not_after: Option<u64>,
}

/// A handler's reply, still encoded.
pub(crate) type Reply = Pin<Box<dyn Future<Output = Result<Vec<u8>, RemoteError>> + Send>>;

type Handler = Arc<dyn Fn(Caller, Vec<u8>) -> Reply + Send + Sync>;

/// Handlers by service and method.
#[derive(Clone, Default)]
pub struct Router {
    routes: HashMap<Service, HashMap<&'static str, Handler>>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut routes: Vec<_> = self
            .routes
            .iter()
            .flat_map(|(s, methods)| methods.keys().map(move |m| format!("{s} {m}")))
            .collect();
        routes.sort();
        f.debug_struct("Router").field("routes", &routes).finish()
    }
}

impl Router {
    /// A router with no handlers.
    pub fn new() -> Router {
        Router::default()
    }

    /// Serves requests of type `R` on `service` with `f`. Registering the same method on the
    /// same service again replaces the earlier handler (and logs a warning).
    pub fn handle<R, F, Fut>(&mut self, service: Service, f: F) -> &mut Self
    where
        R: Rpc,
        F: Fn(Caller, R) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R::Response, RemoteError>> + Send + 'static,
    {
        let f = Arc::new(f);
        let handler: Handler = Arc::new(move |caller: Caller, body: Vec<u8>| -> Reply {
            let f = Arc::clone(&f);
            Box::pin(async move {
                let (request, version) = versioned_body::decode_request::<R>(&body)?;
                let response = f(caller, request).await?;
                versioned_body::encode_response::<R>(&response, version)
            })
        });
        let methods = self.routes.entry(service).or_default();
        if methods.insert(R::METHOD, handler).is_some() {
            tracing::warn!(%service, method = R::METHOD, "handler registered twice; the last one serves");
        }
        self
    }

    /// Whether a handler serves `method` on `service`.
    pub fn serves(&self, service: Service, method: &str) -> bool {
        self.routes
            .get(&service)
            .is_some_and(|methods| methods.contains_key(method))
    }

    /// Calls this router's own handler for `R` in process, as `caller`, through the same
    /// decoding, handler and encoding a call from the network takes (an embedded front end,
    /// such as a member's dashboard, acts through the very path the CLI does). With `request`,
    /// the call runs as that request id ([`once::scope`]): a repeated id applies once.
    ///
    /// # Errors
    /// The handler's refusal, or `Internal` if the request or reply cannot be encoded.
    pub async fn call_local<R: Rpc>(
        &self,
        caller: Caller,
        req: &R,
        request: Option<protocol::RequestId>,
    ) -> Result<R::Response, RemoteError> {
        let version = protocol::version::CURRENT;
        let body = versioned_body::encode_request(req, version)
            .map_err(|e| RemoteError::internal(format!("{}: {e}", R::METHOD)))?;
        let reply = match request {
            Some(id) => {
                let envelope = OnceEnvelope {
                    request: id,
                    method: R::METHOD.to_string(),
                    body,
                };
                let wrapped = crate::frame::encode(&envelope)
                    .map_err(|e| RemoteError::internal(format!("{}: {e}", R::METHOD)))?;
                self.dispatch(caller, once::ONCE_METHOD, wrapped).await?
            }
            None => self.dispatch(caller, R::METHOD, body).await?,
        };
        versioned_body::decode_response::<R>(&reply)
            .map_err(|e| RemoteError::internal(format!("{}: {e}", R::METHOD)))
    }

    /// Runs the handler for `method`, or answers `UnknownMethod`. A call wrapped as
    /// [`once::ONCE_METHOD`] runs its inner method's handler as its request ([`once::scope`]).
    pub(crate) fn dispatch(&self, caller: Caller, method: &str, body: Vec<u8>) -> Reply {
        if method == once::ONCE_METHOD {
            let wrapped: OnceEnvelope = match crate::frame::decode(&body) {
                Ok(w) => w,
                Err(e) => {
                    let message = format!("malformed {} call: {e}", once::ONCE_METHOD);
                    return Box::pin(async move { Err(RemoteError::bad_request(message)) });
                }
            };
            if wrapped.method == once::ONCE_METHOD {
                let message = format!("a {} call inside another", once::ONCE_METHOD);
                return Box::pin(async move { Err(RemoteError::bad_request(message)) });
            }
            let inner = self.dispatch(caller, &wrapped.method, wrapped.body);
            return Box::pin(once::scope(wrapped.request, inner));
        }
        let service = caller.service;
        match self.routes.get(&service).and_then(|m| m.get(method)) {
            Some(handler) => handler(caller, body),
            None => {
                let message = format!("no method '{method}' on {service}");
                Box::pin(async move { Err(RemoteError::unknown_method(message)) })
            }
        }
    }
}
