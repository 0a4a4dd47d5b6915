//! What a fleet VM looks like after a command: running or not, its guest addresses (from the
//! guest agent, loopback and link-local dropped; the configured static or pool addresses when
//! it has no agent), the changes PVE keeps pending until a restart, and its config digest.

use std::net::IpAddr;
use std::time::Duration;

use protocol::agent::{CommandFailure, FailureKind, VmObservation};
use pve::props::{Ipv4Config, Ipv6Config};
use pve::types::VmConfig;

use super::VmOps;
use super::failure::{AtStep, Subject};

/// The static addresses of the VM's `ipconfigN` entries.
pub(super) fn configured_ips(cfg: &VmConfig) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for n in 0..=31 {
        let Some(Ok(ip)) = cfg.ipconfig(n) else {
            continue;
        };
        if let Some(Ipv4Config::Static { addr, .. }) = ip.ip {
            out.push(IpAddr::V4(addr));
        }
        if let Some(Ipv6Config::Static { addr, .. }) = ip.ip6 {
            out.push(IpAddr::V6(addr));
        }
    }
    out
}

fn agent_enabled(cfg: &VmConfig) -> bool {
    matches!(cfg.agent(), Some(Ok(a)) if a.enabled)
}

impl VmOps {
    /// Guest addresses from the agent: one look when `wait` is zero, else polling up to `wait`.
    /// A guest that reports nothing in time yields no address rather than a failure: the VM
    /// itself is fine, and the next resync asks again.
    async fn guest_ips(&self, s: &Subject<'_>, cfg: &VmConfig, wait: Duration) -> Vec<IpAddr> {
        let result = if wait.is_zero() {
            self.client
                .agent_network_interfaces(&self.node, s.vmid)
                .await
                .map(|i| i.usable_ips().into_iter().map(|u| u.addr).collect())
        } else {
            self.client.wait_guest_ips(&self.node, s.vmid, wait).await
        };
        match result {
            Ok(ips) => ips,
            Err(e)
                if e.message()
                    .is_some_and(|m| m.contains("No QEMU guest agent")) =>
            {
                configured_ips(cfg)
            }
            Err(e) => {
                if !wait.is_zero() {
                    tracing::warn!(vm = s.name, vmid = s.vmid, error = %e, "no guest addresses");
                }
                Vec::new()
            }
        }
    }
}

/// Observes the VM after a command; `ip_wait` bounds the wait for guest addresses.
pub(super) async fn observe(
    ops: &VmOps,
    s: &Subject<'_>,
    generation: u64,
    ip_wait: Duration,
) -> Result<VmObservation, CommandFailure> {
    let running = ops.is_running(s).await?;
    let cfg = ops
        .read_config(s.vmid)
        .await
        .at(s, "observe")?
        .ok_or_else(|| {
            s.fail(
                FailureKind::Transient,
                "observe",
                "the VM disappeared while the command ran",
            )
        })?;
    let mut pending_restart = Vec::new();
    let mut ips = Vec::new();
    if running {
        let pending = ops
            .client
            .vm_pending(&ops.node, s.vmid)
            .await
            .at(s, "observe")?;
        pending_restart = pending
            .into_iter()
            .filter(|p| p.has_pending_change())
            .map(|p| p.key)
            .collect();
        pending_restart.sort();
        ips = if agent_enabled(&cfg) {
            ops.guest_ips(s, &cfg, ip_wait).await
        } else {
            configured_ips(&cfg)
        };
    }
    Ok(VmObservation {
        vmid: s.vmid,
        generation,
        running,
        ips,
        pending_restart,
        digest: cfg.digest().unwrap_or_default(),
    })
}
