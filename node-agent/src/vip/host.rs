//! Holding VIPs on a real PVE host: the nftables gate first ([`super::gate`]: the host answers
//! for the address only until the lease's end, enforced by the kernel even if this process is
//! frozen or killed), then the address on its interface through netlink
//! ([`super::addresses`], with pvefleet's marker), announced on takeover
//! ([`super::announce`]: a burst of gratuitous ARP / unsolicited NA, and again a few seconds
//! later, cancelled the moment the VIP is let go so it never announces an address another
//! host may hold by then).

use std::collections::BTreeMap;
use std::net::IpAddr;

use tokio::task::JoinHandle;

use protocol::agent::VipCandidacy;
use protocol::spec::Cidr;

use std::time::Duration;

use super::addresses::{VipAddresses, VipError};
use super::announce::Announcer;
use super::gate::{Gate, GateError, TABLE};
use super::holder::Holder;

/// Why VIPs cannot be held on this host.
#[derive(Debug, thiserror::Error)]
pub enum HoldError {
    /// The netlink side of addresses.
    #[error(transparent)]
    Addresses(#[from] VipError),
    /// The nftables gate.
    #[error(transparent)]
    Gate(#[from] GateError),
}

/// The real host's side of holding VIPs.
#[derive(Debug)]
pub struct HostHolder {
    addresses: VipAddresses,
    gate: Gate,
    announcer: Announcer,
    /// The takeover announcement of each held VIP (its second burst is still due).
    announcing: BTreeMap<String, JoinHandle<()>>,
}

impl Drop for HostHolder {
    fn drop(&mut self) {
        for (_, task) in std::mem::take(&mut self.announcing) {
            task.abort();
        }
    }
}

impl HostHolder {
    /// Installs the gate tables (keeping what a previous run left gated) and opens the
    /// netlink connection (inside a tokio runtime).
    ///
    /// # Errors
    /// [`HoldError`]: no netlink socket, or the gate cannot be installed (no `nft`, no
    /// CAP_NET_ADMIN).
    pub fn connect() -> Result<HostHolder, HoldError> {
        Ok(HostHolder {
            gate: Gate::install(TABLE)?,
            addresses: VipAddresses::connect()?,
            announcer: Announcer::new(),
            announcing: BTreeMap::new(),
        })
    }
}

fn parse(vip: &VipCandidacy) -> Result<(IpAddr, u8), String> {
    let cidr: Cidr = vip.address.parse().map_err(|_| {
        format!(
            "VIP {} has an address that is not address/prefix: {}",
            vip.name, vip.address
        )
    })?;
    Ok((cidr.address(), cidr.prefix_len()))
}

impl Holder for HostHolder {
    async fn ready(&mut self, vip: &VipCandidacy) -> Result<(), String> {
        self.addresses
            .interface_ready(&vip.interface)
            .await
            .map_err(|e| e.to_string())?
    }

    async fn take(&mut self, vip: &VipCandidacy, for_ms: u64) -> Result<(), String> {
        let (address, prefix_len) = parse(vip)?;
        // Gated before it is on the interface: the host never answers for it ungated.
        self.gate.manage(address).map_err(|e| e.to_string())?;
        self.gate
            .open(address, Duration::from_millis(for_ms))
            .map_err(|e| e.to_string())?;
        self.addresses
            .hold(&vip.interface, address, prefix_len)
            .await
            .map_err(|e| e.to_string())?;
        let announcer = self.announcer.clone();
        let (name, interface) = (vip.name.clone(), vip.interface.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = announcer.takeover(&interface, address).await {
                tracing::warn!(vip = %name, error = %e, "VIP: cannot announce it");
            }
        });
        if let Some(old) = self.announcing.insert(vip.name.clone(), task) {
            old.abort();
        }
        Ok(())
    }

    async fn refresh(&mut self, vip: &VipCandidacy, for_ms: u64) -> Result<(), String> {
        let (address, _) = parse(vip)?;
        self.gate
            .open(address, Duration::from_millis(for_ms))
            .map_err(|e| e.to_string())
    }

    async fn release(&mut self, vip: &VipCandidacy) -> Result<(), String> {
        if let Some(task) = self.announcing.remove(&vip.name) {
            task.abort();
        }
        let (address, _) = parse(vip)?;
        // Shut first: from here the host no longer answers for it, whatever follows.
        self.gate.close(address).map_err(|e| e.to_string())?;
        let index = match self.addresses.interface_index(&vip.interface).await {
            Ok(index) => Some(index),
            // The interface went away and took the address with it.
            Err(VipError::NoInterface(_)) => None,
            Err(e) => return Err(e.to_string()),
        };
        if let Some(index) = index {
            self.addresses
                .release(index, address)
                .await
                .map_err(|e| e.to_string())?;
        }
        // Gone for good: stop filtering it (another host's gate, not this one, governs it).
        self.gate.unmanage(address).map_err(|e| e.to_string())
    }

    async fn sweep(&mut self) -> Result<(), String> {
        let removed = self.addresses.sweep(&[]).await.map_err(|e| e.to_string())?;
        for held in removed {
            tracing::info!(address = %held.address, "VIP: removed an address a previous run left");
        }
        Ok(())
    }

    fn simulated(&self) -> bool {
        false
    }
}
