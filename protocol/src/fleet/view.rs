//! A whole-fleet view for the CLI and the demo: every replicated collection as a list, tokens
//! without their hashes.

use serde::{Deserialize, Serialize};

use super::{Host, IpPool, Member, Settings, TokenView, Vip, VmRecord, VmidRange};

/// Everything the fleet holds, as lists ordered by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetView {
    /// The settings.
    pub settings: Settings,
    /// Coordinator members.
    pub members: Vec<Member>,
    /// Hosts.
    pub hosts: Vec<Host>,
    /// VMs.
    pub vms: Vec<VmRecord>,
    /// IP pools.
    pub ip_pools: Vec<IpPool>,
    /// VMID ranges.
    pub vmid_ranges: Vec<VmidRange>,
    /// Virtual IPs.
    pub vips: Vec<Vip>,
    /// Join tokens.
    pub tokens: Vec<TokenView>,
    /// The newest event's sequence number (0 before the first event).
    pub last_event_seq: u64,
}
