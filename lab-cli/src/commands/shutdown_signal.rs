//! The operator's way to end a long-running command (`demo`, `sim run`, `sim chaos`): Ctrl-C
//! or SIGTERM.

/// Completes on the first SIGINT (Ctrl-C) or SIGTERM; never if neither can be watched.
pub(crate) async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}
