//! A host's TCP responder: a listener on `0.0.0.0:PORT` inside the host's namespace that
//! writes the host's name to every connection and closes it, so whoever connects to the VIP
//! learns which host answered. A thread of the test process, not a child: a dead host's
//! responder is stopped with the rest of the host.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::error::{BedError, io};
use super::worker::{StopFlag, Worker};

/// How often the listener looks at its stop flag.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// Starts the responder of host `name` in its namespace `netns`, on `port`.
///
/// # Errors
/// [`BedError::Io`] if its thread cannot start; a failure to listen ends the thread (see
/// [`Worker::check`]).
pub fn spawn(netns: &str, name: &str, port: u16) -> Result<Worker, BedError> {
    let answer = format!("{name}\n");
    Worker::spawn(netns, &format!("vip-responder-{name}"), move |stop| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io("a responder's runtime"))?;
        rt.block_on(run(port, answer.as_bytes(), &stop))
    })
}

async fn run(port: u16, answer: &[u8], stop: &StopFlag) -> Result<(), BedError> {
    let at = SocketAddr::from((Ipv4Addr::UNSPECIFIED, port));
    let listener = tokio::net::TcpListener::bind(at)
        .await
        .map_err(io(format!("responder: listen on {at}")))?;
    while !stop.stopped() {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((mut stream, _)) = accepted {
                    // A probe that gave up meanwhile is not an error of the responder.
                    let _ = stream.write_all(answer).await;
                }
            }
            () = tokio::time::sleep(STOP_CHECK) => {}
        }
    }
    Ok(())
}
