//! What holding a VIP does on this host, behind one interface so the renewal loop
//! ([`super::keeper`]) is the same for a real host and a simulated one:
//!
//! - on a PVE host ([`super::host::HostHolder`]): the address on its interface through
//!   netlink, the nftables gate that stops answering for it when the lease ends even if the
//!   agent is frozen, gratuitous ARP / unsolicited NA on takeover;
//! - with the simulated PVE backend ([`SimHolder`]): nothing on any interface; it records what
//!   it would hold, for `pvefleet-lab demo` and the tests, and says so in its renewals.
//!
//! Contract: [`Holder::take`] is called only while a majority of members vouch, with the time
//! left on that lease; [`Holder::release`] removes the address before the agent tells the
//! members it let go (rule 5 of docs/design/vips.md).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use protocol::agent::VipCandidacy;

/// A VIP held (or simulated as held) on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldVip {
    /// Its address with the prefix length.
    pub address: String,
    /// The interface.
    pub interface: String,
    /// The ownership epoch it is held under.
    pub epoch: u64,
}

/// The effects of holding VIPs on this host.
pub trait Holder: Send + 'static {
    /// Whether this host could hold `vip` now (its interface exists and is up); `Err(why)`
    /// otherwise, said for the operator.
    fn ready(&mut self, vip: &VipCandidacy) -> impl Future<Output = Result<(), String>> + Send;

    /// Hold `vip` (lease left: `for_ms`): add the address, open the gate, announce it.
    fn take(
        &mut self,
        vip: &VipCandidacy,
        for_ms: u64,
    ) -> impl Future<Output = Result<(), String>> + Send;

    /// Still held, now for `for_ms` more: refresh the gate.
    fn refresh(
        &mut self,
        vip: &VipCandidacy,
        for_ms: u64,
    ) -> impl Future<Output = Result<(), String>> + Send;

    /// Stop holding `vip`: close the gate and remove the address.
    fn release(&mut self, vip: &VipCandidacy) -> impl Future<Output = Result<(), String>> + Send;

    /// At start: remove what a previous run left (it holds nothing yet).
    fn sweep(&mut self) -> impl Future<Output = Result<(), String>> + Send;

    /// Whether holding is only simulated.
    fn simulated(&self) -> bool;
}

/// What a simulated host holds, shared with whoever watches it (tests, the demo).
#[derive(Debug, Clone, Default)]
pub struct SimHeld(Arc<Mutex<BTreeMap<String, HeldVip>>>);

impl SimHeld {
    /// The VIPs held now, by name.
    pub fn now(&self) -> BTreeMap<String, HeldVip> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, name: &str, held: Option<HeldVip>) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match held {
            Some(h) => map.insert(name.to_string(), h),
            None => map.remove(name),
        };
    }
}

/// Holding simulated: records what would be held, touches no interface.
#[derive(Debug, Clone, Default)]
pub struct SimHolder {
    held: SimHeld,
}

impl SimHolder {
    /// A simulated host holding nothing.
    pub fn new() -> SimHolder {
        SimHolder::default()
    }

    /// What it holds, to watch.
    pub fn held(&self) -> SimHeld {
        self.held.clone()
    }
}

impl Holder for SimHolder {
    async fn ready(&mut self, _vip: &VipCandidacy) -> Result<(), String> {
        Ok(())
    }

    async fn take(&mut self, vip: &VipCandidacy, _for_ms: u64) -> Result<(), String> {
        self.held.set(
            &vip.name,
            Some(HeldVip {
                address: vip.address.clone(),
                interface: vip.interface.clone(),
                epoch: vip.epoch,
            }),
        );
        Ok(())
    }

    async fn refresh(&mut self, _vip: &VipCandidacy, _for_ms: u64) -> Result<(), String> {
        Ok(())
    }

    async fn release(&mut self, vip: &VipCandidacy) -> Result<(), String> {
        self.held.set(&vip.name, None);
        Ok(())
    }

    async fn sweep(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn simulated(&self) -> bool {
        true
    }
}
