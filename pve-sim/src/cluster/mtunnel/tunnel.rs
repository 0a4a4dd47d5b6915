//! One open migration tunnel on the target cluster (the state of PVE's `mtunnel` worker): the
//! VM it receives, who opened it and with which privileges, the lock it expects on the VM's
//! config, the volumes it allocated (freed again by `quit` with `cleanup`) and when it last
//! heard from the source.
//!
//! PVE's worker waits 300 s for the source to connect, and ends when the connection does.
//! The simulator's tunnel has no connection (each command is a request), so a source that
//! stays silent for [`IDLE_TIMEOUT`] counts as gone: the worker ends with `mtunnel exited
//! unexpectedly` and leaves the config locked, as PVE does when the websocket breaks.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::access::Grants;

/// How long the source may take to send its first command (`run_with_timeout(300, accept)`).
pub(super) const ACCEPT_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a connected source may stay silent before the tunnel counts it as gone.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// An open tunnel.
#[derive(Debug)]
pub(crate) struct Tunnel {
    /// The node receiving the VM.
    pub(super) node: String,
    /// The ticket `mtunnel` answered.
    pub(super) ticket: String,
    /// `/run/qemu-server/<vmid>.mtunnel`.
    pub(super) socket: String,
    /// The `qmtunnel` task.
    pub(super) upid: String,
    /// The privileges of the caller that opened it, as its request saw them.
    pub(super) grants: Grants,
    /// The lock the VM's config must carry (`create`, then `migrate`, none after `unlock`).
    pub(super) lock: Option<String>,
    /// Volumes allocated by `disk` (freed by `quit` with `cleanup`).
    pub(super) allocated: Vec<String>,
    /// Drive lines of the allocated volumes by volid, checked again by `start`.
    pub(super) nbd: BTreeMap<String, String>,
    pub(super) opened: Instant,
    /// The last command, once the source connected.
    pub(super) last_command: Option<Instant>,
    /// `quit` was received.
    pub(super) exit: bool,
}

impl Tunnel {
    /// Whether the source never connected or went silent.
    pub(super) fn timed_out(&self, now: Instant) -> bool {
        match self.last_command {
            None => now.duration_since(self.opened) > ACCEPT_TIMEOUT,
            Some(last) => now.duration_since(last) > IDLE_TIMEOUT,
        }
    }
}
