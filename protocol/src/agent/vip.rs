//! Holding a VIP (docs/design/vips.md): the owner's agent asks **every** coordinator member to
//! vouch for it, every renewal interval, and holds the address only while a majority does. A
//! member answers for itself (not only the leader), so an election interrupts nobody.
//!
//! ```text
//!  agent (owner of VIPs under epochs) ── VipRenew{[(vip, epoch)]} ──▶ each member
//!        ◀── VipRenewReply{per VIP: vouched for lease_ms | refused, why} ──
//!  agent, letting go: remove the address ─▶ VipRelease{[(vip, epoch)]} ─▶ each member
//! ```

use serde::{Deserialize, Serialize};

use crate::rpc::Rpc;

// How a holder reads the members' answers: the contract both sides of the lease rely on (the
// members' promise book is `fleet::vip::lease`, the agent's holding `node-agent::vip::holding`).

/// A VIP the caller holds, or wants to, under an ownership epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipClaim {
    /// The VIP's name.
    pub name: String,
    /// The ownership epoch the caller was granted it under (its standby: the next one).
    pub epoch: u64,
    /// Claimed as the standby: the owner's epoch + 1, vouched for only once the owner's
    /// promise lapsed. Not an owner's claim: members do not count it as one (a previous
    /// owner lets go only once the new owner itself asks).
    pub standby: bool,
    /// Whether the claimant holds the VIP now (a majority vouches): members tell the standby
    /// that a live owner still holds it, and the leader records a standby that holds it.
    pub held: bool,
}

/// Whether this host can hold one VIP it is a candidate for, as its agent sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipReport {
    /// The VIP's name.
    pub name: String,
    /// `Ok(())`: the interface exists and is up (and the VIP's checks pass); `Err(why)`: the
    /// host cannot hold it, said for the operator.
    pub ready: Result<(), String>,
}

/// An agent's renewal, sent to every member every renewal interval: the VIPs it holds or is
/// about to hold, and its readiness for every VIP it is a candidate for. Every agent sends it,
/// owner or not: a renewal is also how members learn that the host's agent is alive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipRenew {
    /// The VIPs it holds or is about to hold.
    pub claims: Vec<VipClaim>,
    /// Its readiness per candidate VIP.
    pub reports: Vec<VipReport>,
    /// Whether the agent only simulates holding (the simulated PVE backend): it records what
    /// it would hold and touches no interface.
    pub simulated: bool,
    /// The agent is stopping: hand its VIPs to other hosts (it lets go of each once its new
    /// owner claims it, so the outage is one claim interval).
    pub leaving: bool,
}

/// A VIP the caller is a candidate for, as the answering member's applied state has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipCandidacy {
    /// The VIP's name.
    pub name: String,
    /// Its address with the prefix length (`10.0.0.10/24`).
    pub address: String,
    /// The interface it is added to.
    pub interface: String,
    /// The owner.
    pub owner: Option<crate::NodeId>,
    /// The ownership epoch.
    pub epoch: u64,
    /// The standby: it claims the VIP at `epoch + 1`, and members vouch for it once the
    /// owner's promise lapsed (a dead owner is replaced even while no leader can commit).
    pub standby: Option<crate::NodeId>,
    /// Whether the owner claimed it at this epoch within the last lease, as this member
    /// heard: a previous holder lets go once the new owner is asking, so the hand-over waits
    /// for nobody.
    pub claimed: bool,
    /// Whom the answering member vouches for now, `(holder, epoch)`: an owner that cannot
    /// hold its VIP while a member vouches for its standby at the next epoch lets go of its
    /// promises, so a split between owner and standby ends (docs/design/vips.md, "Splits").
    pub vouching: Option<(crate::NodeId, u64)>,
    /// Whether the owner said it holds the VIP at `epoch` in its latest claim, heard within
    /// half a lease: a standby that this member vouches for while the owner still holds it
    /// lets go of its promises.
    pub owner_held: bool,
    /// The VIP's health checks: the host is ready for it only while all are up.
    pub checks: Vec<crate::spec::VipCheck>,
}

/// One member's answer for one VIP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipVouch {
    /// The VIP's name.
    pub name: String,
    /// `Ok(lease_ms)`: the member vouches for the caller for that long from its receipt (the
    /// caller counts it from its own send time); `Err(why)`: it does not.
    pub outcome: Result<u64, String>,
}

/// A member's answers, one per claim, in the order of the claims, and what its applied state
/// says the caller may hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipRenewReply {
    /// The answers.
    pub vouches: Vec<VipVouch>,
    /// Every VIP the caller's host is a candidate for (its spec admits the host).
    pub candidacies: Vec<VipCandidacy>,
    /// The members the answering member's state records: the holder renews with each of them
    /// (its `cluster.toml` may predate some) and counts its majority over all it knows, so a
    /// stale member list never makes a smaller majority.
    pub members: Vec<VipMember>,
}

/// A coordinator member, as a renewal answer lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipMember {
    /// Its node id.
    pub id: crate::NodeId,
    /// Its QUIC address (`host:port`).
    pub addr: String,
}

impl Rpc for VipRenew {
    const METHOD: &'static str = "agent.vip_renew";
    type Response = VipRenewReply;
}

/// The holder let go of these VIPs (it removed the addresses first): the members end their
/// promises at once, so the next owner is vouched for without waiting out the lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipRelease {
    /// The VIPs let go.
    pub claims: Vec<VipClaim>,
}

/// Nothing to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipReleased {}

impl Rpc for VipRelease {
    const METHOD: &'static str = "agent.vip_release";
    type Response = VipReleased;
}

/// How many members make a majority of `members`.
pub fn majority(members: usize) -> usize {
    members / 2 + 1
}

/// Until when (agent clock) the holder may hold the VIP: `acked_sends[i]` is the send time of
/// the latest renewal member `i` acknowledged as a promise. `None` while fewer than a majority
/// of `members` vouch; the holder must not hold the address then.
pub fn held_until(acked_sends: &[Option<u64>], members: usize, lease_ms: u64) -> Option<u64> {
    let mut sends: Vec<u64> = acked_sends.iter().flatten().copied().collect();
    sends.sort_unstable_by(|a, b| b.cmp(a));
    let quorum = majority(members);
    sends
        .get(quorum.checked_sub(1)?)
        .map(|s| s.saturating_add(lease_ms))
}
