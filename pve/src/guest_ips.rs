//! Waiting for a guest's IP addresses through the QEMU guest agent.
//!
//! Right after start the agent is not up yet and PVE answers `QEMU guest agent is not
//! running` (or `VM <vmid> is not running` while the start task finishes); both mean "ask
//! again later". `No QEMU guest agent configured` is final: the VM has no agent, and the
//! caller must learn its addresses another way (static `ipconfigN`).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::error::PveError;

/// Whether an agent error means "not yet" rather than "never".
fn agent_not_ready(err: &PveError) -> bool {
    err.message().is_some_and(|m| {
        m.contains("QEMU guest agent is not running")
            || (m.starts_with("VM ") && m.ends_with("is not running"))
            || m.contains("got timeout")
    }) || err.is_transient()
}

impl Client {
    /// Poll the guest agent until it reports at least one usable address (loopback and
    /// link-local filtered), for at most `timeout`. A VM without an agent fails at once with
    /// PVE's `No QEMU guest agent configured`.
    pub async fn wait_guest_ips(
        &self,
        node: &str,
        vmid: u32,
        timeout: Duration,
    ) -> Result<Vec<IpAddr>, PveError> {
        let poll = self.poll_policy();
        let deadline = Instant::now() + timeout;
        let mut delay = poll.initial;
        loop {
            match self.agent_network_interfaces(node, vmid).await {
                Ok(ifaces) => {
                    let ips: Vec<IpAddr> =
                        ifaces.usable_ips().into_iter().map(|u| u.addr).collect();
                    if !ips.is_empty() {
                        return Ok(ips);
                    }
                }
                Err(err) if agent_not_ready(&err) => {
                    tracing::trace!(vmid, error = %err, "guest agent not ready yet");
                }
                Err(err) => return Err(err),
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(PveError::Timeout {
                    method: "GET",
                    path: format!("/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"),
                    timeout,
                });
            }
            tokio::time::sleep(delay.min(deadline - now)).await;
            delay = Duration::from_secs_f64(
                (delay.as_secs_f64() * poll.factor).min(poll.max.as_secs_f64()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(msg: &str) -> PveError {
        PveError::Api {
            method: "GET",
            path: "/x".into(),
            status: 500,
            reason: msg.into(),
            message: msg.into(),
            errors: Default::default(),
        }
    }

    #[test]
    fn not_ready_versus_never() {
        assert!(agent_not_ready(&api("QEMU guest agent is not running")));
        assert!(agent_not_ready(&api("VM 100 is not running")));
        assert!(!agent_not_ready(&api("No QEMU guest agent configured")));
        assert!(!agent_not_ready(&api(
            "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist"
        )));
    }
}
