//! The Agent service's `Heartbeat` (docs/design/architecture.md, safety rule 3): a node agent's beat, answered
//! by the leader only. The caller's certificate names the host; nothing in the body can claim
//! another.
//!
//! ```text
//!  beat ─▶ agent certificate? ─▶ leader? (else NotLeader + hint) ─▶ host removed? (refused)
//!       ─▶ live state (boot, inventory) ─▶ RegisterHost / SetHostFacts / back online
//!          (SetHostLiveness) when they changed ─▶ results (waiters, reconciler) ─▶ quorum confirmed AFTER the
//!          beat arrived ─▶ ack time noted (the host watch's fence proof counts from it)
//!          ─▶ HeartbeatAck{lease, acked results, commands due, leave answer}
//! ```
//!
//! A beat that says its agent leaves is answered by the shutdown policy (`service::leaving`):
//! its decision is committed before the ack grants a hold lease.

use std::sync::Arc;

use protocol::Role;
use protocol::agent::{
    Heartbeat, HeartbeatAck, VipMember, VipRelease, VipReleased, VipRenew, VipRenewReply,
};
use protocol::fleet::{HostState, UnixMillis};
use protocol::version::HOST_LIVENESS;
use transport::{Caller, RemoteError, Router, Service};

use super::Ctx;
use crate::control::session::{capacity_of, facts_changed, facts_of, needs_registration};
use fleet::liveness::{Transition, back_online};
use fleet::state::Command;
use fleet::vip::manage::ManageConfig;
use protocol::time::Now;

/// Registers `Heartbeat` (the leader answers) and the VIP lease's `VipRenew` and `VipRelease`
/// (every member answers for itself) on the Agent service.
pub(crate) fn register(router: &mut Router, ctx: &Arc<Ctx>) {
    let beats = Arc::clone(ctx);
    router.handle(Service::Agent, move |caller: Caller, beat: Heartbeat| {
        let ctx = Arc::clone(&beats);
        async move { ctx.heartbeat(&caller, beat).await }
    });
    let renewals = Arc::clone(ctx);
    router.handle(Service::Agent, move |caller: Caller, req: VipRenew| {
        let ctx = Arc::clone(&renewals);
        async move {
            let host = beating_host(&caller)?;
            ctx.vip_sightings
                .record(host, &req.claims, &req.reports, req.simulated, req.leaving);
            let lease_ms = ctx.vip_promises.lease_ms();
            ctx.read_local(|s| {
                // The answers first: the candidacies then say whom this member vouches for
                // after this renewal.
                let vouches = ctx
                    .vip_promises
                    .renew(s, host, &req.claims, &|vip, owner, epoch| {
                        ctx.vip_sightings.quiet(
                            vip,
                            owner,
                            epoch,
                            ManageConfig::DEFAULT.lost_after_ms,
                        )
                    });
                let mut candidacies = s.vip_candidacies(host);
                for c in &mut candidacies {
                    c.claimed = c.owner.is_some_and(|owner| {
                        ctx.vip_sightings.claimed(&c.name, owner, c.epoch, lease_ms)
                    });
                    c.vouching = ctx.vip_promises.vouching(&c.name);
                    c.owner_held = c.owner.is_some_and(|owner| {
                        ctx.vip_sightings
                            .holds(&c.name, owner, c.epoch, lease_ms / 2)
                    });
                }
                VipRenewReply {
                    vouches,
                    candidacies,
                    members: s
                        .members()
                        .values()
                        .map(|m| VipMember {
                            id: m.id,
                            addr: m.addr.clone(),
                        })
                        .collect(),
                }
            })
        }
    });
    let releases = Arc::clone(ctx);
    router.handle(Service::Agent, move |caller: Caller, req: VipRelease| {
        let ctx = Arc::clone(&releases);
        async move {
            let host = beating_host(&caller)?;
            ctx.vip_promises.release(host, &req.claims);
            ctx.vip_sightings.released(host, &req.claims);
            Ok(VipReleased {})
        }
    });
}

/// The host a beat is from: the caller's agent certificate.
pub(crate) fn beating_host(caller: &Caller) -> Result<protocol::NodeId, RemoteError> {
    match caller.peer {
        Some(peer) if peer.role == Role::Agent => Ok(peer.node_id),
        Some(peer) => Err(RemoteError::unauthorized(format!(
            "heartbeats come from node agents; this caller is {} {}",
            peer.role, peer.node_id
        ))),
        None => Err(RemoteError::unauthorized(
            "heartbeats need the agent's certificate: join the host with a token first",
        )),
    }
}

impl Ctx {
    /// Commits a beating host's return to online: with its reason and a compare-and-set once
    /// the cluster reads v2 (a fence the host watch is committing at the same time wins or
    /// loses as a whole), as `SetHostState` before.
    async fn set_back_online(&self, back: &Transition, now: UnixMillis) -> Result<(), RemoteError> {
        let with_reason = self.read_local(|s| s.cluster_version() >= HOST_LIVENESS)?;
        let cmd = if with_reason {
            Command::SetHostLiveness {
                id: back.host,
                expected: back.expected,
                state: back.to,
                reason: back.reason.clone(),
                now,
            }
        } else {
            Command::SetHostState {
                id: back.host,
                state: back.to,
                now,
            }
        };
        match self.propose_raw(&cmd).await? {
            Ok(_) => {
                if back.expected != HostState::Joining {
                    tracing::info!(host = back.host, from = %back.expected, reason = %back.reason, "host back online");
                }
            }
            // The host watch moved it meanwhile (e.g. fenced): the next beat tries again.
            Err(refusal) => {
                tracing::debug!(host = back.host, error = %refusal, "host not set online")
            }
        }
        self.control.wake();
        Ok(())
    }

    /// Answers one beat (see the module documentation).
    pub(crate) async fn heartbeat(
        &self,
        caller: &Caller,
        beat: Heartbeat,
    ) -> Result<HeartbeatAck, RemoteError> {
        let host = beating_host(caller)?;
        let Some(term) = self.leading_term() else {
            return Err(self.not_leader());
        };
        self.control.sync_leadership(Some(term));
        let (revoked, record) =
            self.read_local(|s| (s.is_node_revoked(host), s.hosts().get(&host).cloned()))?;
        if revoked
            || record
                .as_ref()
                .is_some_and(|h| h.state == HostState::Removed)
        {
            return Err(RemoteError::unauthorized(format!(
                "host {host} was removed from the fleet: its agent is refused for good; \
                 re-join the machine with a new token to add it again"
            )));
        }
        let recorded = self.control.record_beat(host, &beat);
        // Until this beat is answered (whatever the way out), its host counts as heard.
        let _answering = Answering {
            control: &self.control,
            host,
        };
        if let Some(inventory) = &recorded.inventory {
            let now = Now::read().millis;
            let capacity = capacity_of(inventory);
            if needs_registration(record.as_ref(), &beat.host_name, &beat.labels, capacity) {
                self.propose(&Command::RegisterHost {
                    id: host,
                    name: beat.host_name.clone(),
                    labels: beat.labels.clone(),
                    capacity,
                    now,
                })
                .await?;
            }
            // Facts first: an online host without them would be left out of placements.
            let facts = facts_of(inventory, now);
            if facts_changed(record.as_ref().and_then(|h| h.facts.as_ref()), &facts) {
                self.propose(&Command::SetHostFacts {
                    id: host,
                    facts: Box::new(facts),
                })
                .await?;
                self.control.wake();
            }
            if let Some(back) = record
                .as_ref()
                .map_or(Some(HostState::Joining), |h| Some(h.state))
                .and_then(|state| back_online(host, state))
            {
                self.set_back_online(&back, now).await?;
            }
        }
        // The shutdown policy: committed before the answer grants its hold.
        let leave = self.leave_answer(host, &beat).await?;
        let (acked_results, for_reconciler) = self.control.record_results(host, beat.results);
        if for_reconciler || recorded.record.inventory_changed {
            self.control.wake();
        }
        // The lease is granted only by a leader that still has its quorum after this beat
        // arrived (docs/design/architecture.md, safety rule 3).
        self.confirm_linearizable().await?;
        self.control.note_ack(host);
        let commands = self.control.deliver(host, beat.boot_id, &beat.running);
        let heartbeat_lease =
            u64::try_from(self.control.config().lease.as_millis()).unwrap_or(u64::MAX);
        let (leave, hold) = leave.map_or((None, None), |(answer, hold)| (Some(answer), hold));
        Ok(HeartbeatAck {
            leader: self.node_id,
            term,
            lease_ms: hold.map_or(heartbeat_lease, |h| h.max(heartbeat_lease)),
            need_inventory: recorded.inventory.is_none(),
            acked_results,
            commands,
            leave,
            leader_clock_ms: Some(Now::read().millis),
        })
    }
}

/// A beat being answered: its host counts as heard until this drops (the answer sent, or the
/// beat refused), see `control::live::Live::note_answered`.
struct Answering<'a> {
    control: &'a crate::control::Control,
    host: protocol::NodeId,
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        self.control.note_answered(self.host);
    }
}

#[cfg(test)]
mod tests {
    use transport::{PeerIdentity, RemoteCode};

    use super::*;

    #[test]
    fn only_an_agent_certificate_names_a_beating_host() {
        let caller = |peer| Caller {
            service: Service::Agent,
            peer,
            addr: "127.0.0.1:9".parse().unwrap(),
            cert_not_after: None,
        };
        let agent = caller(Some(PeerIdentity::new(Role::Agent, 12)));
        assert_eq!(beating_host(&agent).unwrap(), 12);
        for refused in [
            caller(Some(PeerIdentity::coordinator(2))),
            caller(Some(PeerIdentity::new(Role::Admin, 1))),
            caller(None),
        ] {
            let e = beating_host(&refused).unwrap_err();
            assert_eq!(e.code, RemoteCode::Unauthorized, "{refused:?}");
        }
    }
}
