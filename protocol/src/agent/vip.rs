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
    /// The ownership epoch the caller was granted it under.
    pub epoch: u64,
}

/// The owner's renewal, sent to every member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipRenew {
    /// The VIPs it holds or is about to hold.
    pub claims: Vec<VipClaim>,
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

/// A member's answers, one per claim, in the order of the claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipRenewReply {
    /// The answers.
    pub vouches: Vec<VipVouch>,
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
