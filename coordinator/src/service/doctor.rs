//! `pvefleet doctor` on the leader: every member's facts (each asked over its own Admin
//! connection, its clock measured around the call), every host's facts (a
//! [`Op::Diagnose`] to its agent, all at once), the Raft view and the admin identities, judged
//! by [`fleet::doctor::findings`]. `admin.member_facts` is answered by whichever member
//! receives it, never forwarded.
//!
//! ```text
//!  Doctor ─▶ leader ─┬─ MemberFactsQuery ─▶ each member (clock: NTP-style around the call)
//!                    ├─ Op::Diagnose ─▶ each host's agent (DIAGNOSE_WAIT)
//!                    └─ cluster status (lag, voters), admins, VIPs
//!            fleet::doctor::findings ─▶ DoctorReport
//! ```

use std::sync::Arc;

use bootstrap::certificate_not_after;
use bootstrap::paths::read_public;
use fleet::doctor::{DoctorInput, findings};
use protocol::admin::{
    DIAGNOSE_WAIT, DoctorReport, HostCheck, MemberCheck, MemberFacts, MemberFactsQuery,
};
use protocol::agent::{ClockOffset, CommandOutput, DiagnoseOp, Op};
use protocol::fleet::MemberRole;
use protocol::time::Now;
use tokio::task::JoinSet;
use transport::RemoteError;

use super::Ctx;
use crate::forward::Target;

impl Ctx {
    /// What this member says about itself.
    pub(crate) fn member_facts(&self) -> MemberFacts {
        MemberFacts {
            node_id: self.node_id,
            version: env!("CARGO_PKG_VERSION").to_string(),
            clock_ms: Now::read().millis,
            certificate_not_after: read_public(&self.node_dir.node_cert())
                .ok()
                .and_then(|pem| certificate_not_after(&pem).ok())
                .unwrap_or(0),
            ca_not_after: self.ca.not_after(),
        }
    }

    /// `pvefleet doctor` (this member leads).
    pub(crate) async fn doctor(self: &Arc<Self>) -> Result<DoctorReport, RemoteError> {
        self.confirm_linearizable().await?;
        let status = self.local_status().await?;
        let mut asked = JoinSet::new();
        for m in &status.members {
            let ctx = Arc::clone(self);
            let m = m.clone();
            asked.spawn(async move {
                let (facts, clock) = if m.id == ctx.node_id {
                    let zero = ClockOffset {
                        ahead_ms: 0,
                        uncertainty_ms: 0,
                    };
                    (Ok(ctx.member_facts()), Some(zero))
                } else {
                    ctx.ask_member(&m.addr, m.id).await
                };
                MemberCheck {
                    id: m.id,
                    addr: m.addr,
                    voter: m.role == MemberRole::Voter,
                    lag: m.lag,
                    facts,
                    clock,
                }
            });
        }
        let (hosts, admins, vips_configured) = self.read_local(|s| {
            let hosts: Vec<_> = s.hosts().values().map(|h| (h.id, h.name.clone())).collect();
            (
                hosts,
                s.admins().cloned().collect::<Vec<_>>(),
                !s.vips().is_empty(),
            )
        })?;
        let lease_ms = u64::try_from(self.control.config().lease.as_millis()).unwrap_or(u64::MAX);
        let mut diagnosed = JoinSet::new();
        for (id, name) in hosts {
            let ctx = Arc::clone(self);
            diagnosed.spawn(async move {
                let online = ctx
                    .control
                    .host_live(id)
                    .is_some_and(|l| l.last_seen_ms <= lease_ms);
                let facts = match ctx
                    .control
                    .run_command(id, Op::Diagnose(DiagnoseOp {}), DIAGNOSE_WAIT)
                    .await
                {
                    Ok(Ok(CommandOutput::Diagnosis(facts))) => Ok(*facts),
                    Ok(Ok(other)) => Err(format!("unexpected answer {other:?}")),
                    Ok(Err(failure)) => Err(failure.message),
                    Err(e) => Err(e.message),
                };
                HostCheck {
                    id,
                    name,
                    online,
                    facts,
                }
            });
        }
        let mut members: Vec<MemberCheck> = asked.join_all().await;
        members.sort_by_key(|m| m.id);
        let mut hosts: Vec<HostCheck> = diagnosed.join_all().await;
        hosts.sort_by(|a, b| a.name.cmp(&b.name));
        let now_ms = Now::read().millis;
        let leader_version = env!("CARGO_PKG_VERSION");
        let findings = findings(&DoctorInput {
            now_ms,
            leader: self.node_id,
            leader_version,
            members: &members,
            hosts: &hosts,
            admins: &admins,
            vips_configured,
        });
        Ok(DoctorReport {
            leader: self.node_id,
            checked_at_ms: now_ms,
            members,
            hosts,
            findings,
        })
    }

    /// Asks one member for its facts and measures its clock around the call.
    async fn ask_member(
        &self,
        addr: &str,
        id: protocol::NodeId,
    ) -> (Result<MemberFacts, String>, Option<ClockOffset>) {
        let target = Target {
            id,
            addr: addr.to_string(),
        };
        let sent = Now::read().millis;
        match self.forwarder.ask(&target, &MemberFactsQuery {}).await {
            Ok(facts) => {
                // The leader is the reference: measured from its side, then turned around.
                let leader = ClockOffset::measure(sent, facts.clock_ms, Now::read().millis);
                let member = ClockOffset {
                    ahead_ms: leader.ahead_ms.saturating_neg(),
                    uncertainty_ms: leader.uncertainty_ms,
                };
                (Ok(facts), Some(member))
            }
            Err(e) => (Err(e.to_string()), None),
        }
    }
}
