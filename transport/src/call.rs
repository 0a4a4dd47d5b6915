//! The server side of one call on one stream: read the request frame, dispatch, write the reply
//! frame, all under the call deadline. Bad input gets a `BadRequest` answer where the stream
//! still allows one (undecodable envelope, oversized frame) and a stream reset otherwise; the
//! connection and the server keep serving either way. The request frame has its own, possibly
//! shorter, deadline: a client without a certificate must send its few KiB within seconds, even
//! though the handler may then take longer (a join waits for Raft).

use std::sync::Arc;
use std::time::Duration;

use quinn::{RecvStream, SendStream};

use crate::TransportError;
use crate::codes::{STREAM_BAD_FRAME, STREAM_DEADLINE, STREAM_REFUSED, STREAM_TOO_LARGE};
use crate::frame::{self, RequestEnvelope, ResponseEnvelope};
use crate::remote_error::RemoteError;
use crate::router::{Caller, Router};

/// Limits of server-side calls.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallLimits {
    /// The whole call: request, handler, reply.
    pub(crate) deadline: Duration,
    /// The request frame alone (at most `deadline`).
    pub(crate) request_deadline: Duration,
    pub(crate) max_frame: usize,
}

/// Answers one call. Returns once the reply is acknowledged by the peer (or the stream is dead),
/// so a server that waits for its calls before closing loses no reply.
pub(crate) async fn serve_call(
    mut send: SendStream,
    mut recv: RecvStream,
    caller: Caller,
    router: Arc<Router>,
    limits: CallLimits,
) {
    let peer = caller.peer;
    let addr = caller.addr;
    let answered = tokio::time::timeout(
        limits.deadline,
        answer(&mut send, &mut recv, caller, &router, limits),
    )
    .await;
    match answered {
        Ok(Ok(())) => {
            // `finish` only queues the end of stream; wait until the peer has it all.
            let _ = tokio::time::timeout(limits.deadline, send.stopped()).await;
        }
        Ok(Err(e @ TransportError::Timeout { .. })) => {
            tracing::debug!(?peer, %addr, error = %e, "request not received in time");
            let _ = send.reset(STREAM_DEADLINE.into());
            let _ = recv.stop(STREAM_DEADLINE.into());
        }
        Ok(Err(e)) => {
            tracing::debug!(?peer, %addr, error = %e, "call stream failed");
            let _ = send.reset(STREAM_BAD_FRAME.into());
            let _ = recv.stop(STREAM_BAD_FRAME.into());
        }
        Err(_) => {
            tracing::debug!(?peer, %addr, deadline = ?limits.deadline, "call deadline expired");
            let _ = send.reset(STREAM_DEADLINE.into());
            let _ = recv.stop(STREAM_DEADLINE.into());
        }
    }
}

async fn answer(
    send: &mut SendStream,
    recv: &mut RecvStream,
    caller: Caller,
    router: &Router,
    limits: CallLimits,
) -> Result<(), TransportError> {
    let max_frame = limits.max_frame;
    let request = tokio::time::timeout(limits.request_deadline, frame::read_frame(recv, max_frame))
        .await
        .map_err(|_| TransportError::Timeout {
            method: "(reading the request)",
            after: limits.request_deadline,
        })?;
    let outcome: ResponseEnvelope = match request {
        Ok(payload) => match frame::decode::<RequestEnvelope>(&payload) {
            Ok(request) => router.dispatch(caller, &request.method, request.body).await,
            Err(e) => Err(RemoteError::bad_request(format!(
                "malformed request frame: {e}"
            ))),
        },
        Err(TransportError::FrameTooLarge { len, max }) => {
            // Tell the client to stop sending the body we will never read.
            let _ = recv.stop(STREAM_TOO_LARGE.into());
            Err(RemoteError::bad_request(format!(
                "request frame of {len} bytes exceeds the {max}-byte maximum"
            )))
        }
        Err(e) => return Err(e),
    };
    let reply = match frame::encode_response(&outcome, max_frame) {
        Ok(reply) => reply,
        Err(e) => {
            let refusal = Err(RemoteError::internal(format!("reply not sendable: {e}")));
            frame::encode_response(&refusal, max_frame)?
        }
    };
    send.write_all(&reply)
        .await
        .map_err(|e| TransportError::Stream(format!("writing the reply: {e}")))?;
    send.finish()
        .map_err(|e| TransportError::Stream(format!("finishing the reply: {e}")))?;
    Ok(())
}

/// Answers a call with `refusal` without reading its request: the request bytes are discarded
/// (the stream is stopped) and the reply is one small frame. Returns once the peer has the
/// reply or `deadline` passed.
pub(crate) async fn refuse_call(
    mut send: SendStream,
    mut recv: RecvStream,
    refusal: RemoteError,
    deadline: Duration,
    max_frame: usize,
) {
    let _ = recv.stop(STREAM_REFUSED.into());
    let answered = tokio::time::timeout(deadline, async {
        let reply = frame::encode_response(&Err(refusal), max_frame)?;
        send.write_all(&reply)
            .await
            .map_err(|e| TransportError::Stream(format!("writing the refusal: {e}")))?;
        send.finish()
            .map_err(|e| TransportError::Stream(format!("finishing the refusal: {e}")))?;
        let _ = send.stopped().await;
        Ok::<(), TransportError>(())
    })
    .await;
    if !matches!(answered, Ok(Ok(()))) {
        let _ = send.reset(STREAM_REFUSED.into());
    }
}
