//! `vip show` and `vip move`, answered by the leader: the replicated owner and epoch joined
//! with what the agents reported in their renewals (this member's [`super::vip_sightings`])
//! and its own promises ([`super::vip_lease`]). A move is the leader's VIP manager's commit
//! (`MoveVip`, a compare-and-set on the epoch) with the operator's reason; the owner lets go
//! once the new host claims it.
//!
//! ```text
//!  VipStatus ─▶ state + sightings ─▶ per VIP: owner, since (its event), held, every host's standing
//!  VipMove{name, host} ─▶ host admitted and eligible? ─▶ MoveVip{reason: moved by operator}
//! ```

use fleet::state::{Command, CommandReply, FleetState};
use fleet::vip::manage::{ManageConfig, Sightings, standings};
use protocol::admin::{
    VipHostStatus, VipMove, VipMoveReply, VipStatus, VipStatusEntry, VipStatusReply,
};
use protocol::fleet::{EventKind, UnixMillis, Vip};
use protocol::time::Now;
use transport::{RemoteError, Rpc};

use super::Ctx;

/// The reason a `vip move` records.
pub(crate) const MOVED_BY_OPERATOR: &str = "moved by operator";

/// When `vip`'s current owner was granted it: the time of its `held by ... (epoch N)` event.
fn granted_at(state: &FleetState, vip: &Vip) -> Option<UnixMillis> {
    let marker = format!("(epoch {})", vip.epoch);
    state
        .events_after(0, None)
        .into_iter()
        .rev()
        .find(|e| {
            e.kind == EventKind::Vip
                && e.subject == vip.spec.name
                && e.message.starts_with("held by")
                && e.message.contains(&marker)
        })
        .map(|e| e.at)
}

/// One VIP's entry, as this member sees it.
fn entry(
    state: &FleetState,
    vip: &Vip,
    seen: &Sightings,
    now: u64,
    vouching: Option<(u64, u64)>,
) -> VipStatusEntry {
    let cfg = ManageConfig::DEFAULT;
    let hosts = standings(state, vip, seen, now, &cfg)
        .into_iter()
        .map(|s| VipHostStatus {
            id: s.host,
            host: s.name,
            priority: s.priority,
            eligible: s.why_not.is_none(),
            why_not: s.why_not,
            simulated: seen.simulated.contains(&s.host),
            renewed_ms_ago: seen
                .renewed_at
                .get(&s.host)
                .map(|at| now.saturating_sub(*at)),
        })
        .collect();
    let held = vip
        .owner
        .is_some_and(|owner| vouching == Some((owner, vip.epoch)));
    VipStatusEntry {
        owner_name: vip
            .owner
            .and_then(|o| state.hosts().get(&o))
            .map(|h| h.name.clone()),
        since: vip.owner.and_then(|_| granted_at(state, vip)),
        held,
        simulated: vip.owner.is_some_and(|o| seen.simulated.contains(&o)),
        hosts,
        vip: vip.clone(),
    }
}

impl Ctx {
    /// `vip show` (this member leads).
    pub(crate) async fn vip_status(&self, req: &VipStatus) -> Result<VipStatusReply, RemoteError> {
        self.confirm_linearizable().await?;
        self.read_local(|state| {
            if let Some(name) = &req.name
                && !state.vips().contains_key(name)
            {
                return Err(RemoteError::not_found(format!(
                    "no VIP named {name:?}: `pvefleet vip ls` lists them"
                )));
            }
            let (seen, now) = self.vip_sightings.view(state);
            let vips = state
                .vips()
                .values()
                .filter(|v| req.name.as_ref().is_none_or(|n| *n == v.spec.name))
                .map(|v| {
                    entry(
                        state,
                        v,
                        &seen,
                        now,
                        self.vip_promises.vouching(&v.spec.name),
                    )
                })
                .collect();
            Ok(VipStatusReply { vips })
        })?
    }

    /// `vip move` (this member leads).
    pub(crate) async fn vip_move(&self, req: &VipMove) -> Result<VipMoveReply, RemoteError> {
        self.confirm_linearizable().await?;
        let (to, epoch) = self.read_local(|state| {
            let vip = state.vips().get(&req.name).ok_or_else(|| {
                RemoteError::not_found(format!(
                    "no VIP named {:?}: `pvefleet vip ls` lists them",
                    req.name
                ))
            })?;
            let (seen, now) = self.vip_sightings.view(state);
            let all = standings(state, vip, &seen, now, &ManageConfig::DEFAULT);
            let Some(target) = all.iter().find(|s| s.name.eq_ignore_ascii_case(&req.host)) else {
                let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
                return Err(RemoteError::bad_request(format!(
                    "host {:?} may not hold VIP {}: its hosts are {}",
                    req.host,
                    req.name,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )));
            };
            if let Some(why) = &target.why_not {
                return Err(RemoteError::conflict(format!(
                    "host {} cannot take VIP {} now: {why}; `pvefleet vip show {}` tells each \
                     host's standing",
                    target.name, req.name, req.name
                )));
            }
            Ok((target.host, vip.epoch))
        })??;
        let cmd = Command::MoveVip {
            name: req.name.clone(),
            owner: Some(to),
            expected_epoch: epoch,
            reason: MOVED_BY_OPERATOR.into(),
            now: Now::read().millis,
        };
        match self.propose(&cmd).await? {
            CommandReply::VipOwner {
                owner: Some(owner),
                epoch,
            } => Ok(VipMoveReply { owner, epoch }),
            other => Err(super::errors::unexpected(VipMove::METHOD, &other)),
        }
    }
}
