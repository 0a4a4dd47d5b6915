//! The shutdown signals of a daemon: the first SIGTERM (systemd's stop) or SIGINT (Ctrl-C)
//! cancels the token every `run(self, shutdown)` watches; a second one is not caught again
//! differently, so a stuck shutdown is ended with SIGKILL (systemd's TimeoutStopSec does that).

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Cancels `shutdown` on the first SIGTERM or SIGINT. Spawn it on the daemon's runtime.
pub async fn cancel_on_signal(shutdown: CancellationToken) {
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop with SIGKILL");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
        () = shutdown.cancelled() => return,
    }
    shutdown.cancel();
}
