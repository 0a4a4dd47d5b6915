//! A whole-fleet view for the CLI and the demo: every replicated collection as a list, tokens
//! without their hashes.

use serde::{Deserialize, Serialize};

use super::{
    Host, HostV1, IpPool, Member, Settings, SettingsV1, TokenView, Vip, VmRecord, VmRecordV1,
    VmidRange,
};
use crate::spec::VipV1;

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

/// [`FleetView`] as encoding v1 lays it out (its hosts, VMs and VIPs in the v1 layout).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetViewV1 {
    /// The settings.
    pub settings: SettingsV1,
    /// Coordinator members.
    pub members: Vec<Member>,
    /// Hosts.
    pub hosts: Vec<HostV1>,
    /// VMs.
    pub vms: Vec<VmRecordV1>,
    /// IP pools.
    pub ip_pools: Vec<IpPool>,
    /// VMID ranges.
    pub vmid_ranges: Vec<VmidRange>,
    /// Virtual IPs.
    pub vips: Vec<VipV1>,
    /// Join tokens.
    pub tokens: Vec<TokenView>,
    /// The newest event's sequence number.
    pub last_event_seq: u64,
}

impl FleetViewV1 {
    /// What a v1 reader can show of `view` (settings, hosts, VMs and VIPs without their v2
    /// fields).
    pub fn shown(view: &FleetView) -> FleetViewV1 {
        FleetViewV1 {
            settings: SettingsV1::shown(&view.settings),
            members: view.members.clone(),
            hosts: view.hosts.iter().map(HostV1::shown).collect(),
            vms: view.vms.iter().map(VmRecordV1::shown).collect(),
            ip_pools: view.ip_pools.clone(),
            vmid_ranges: view.vmid_ranges.clone(),
            vips: view.vips.iter().map(VipV1::shown).collect(),
            tokens: view.tokens.clone(),
            last_event_seq: view.last_event_seq,
        }
    }
}

impl From<FleetViewV1> for FleetView {
    fn from(v1: FleetViewV1) -> FleetView {
        FleetView {
            settings: v1.settings.into(),
            members: v1.members,
            hosts: v1.hosts.into_iter().map(Host::from).collect(),
            vms: v1.vms.into_iter().map(VmRecord::from).collect(),
            ip_pools: v1.ip_pools,
            vmid_ranges: v1.vmid_ranges,
            vips: v1.vips.into_iter().map(Vip::from).collect(),
            tokens: v1.tokens,
            last_event_seq: v1.last_event_seq,
        }
    }
}
