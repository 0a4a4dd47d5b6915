//! The shutdown policy on the leader's side of the heartbeat: a beat that says its agent
//! leaves is answered only once the policy's decision is committed (`HostLeaving`), so every
//! later leader counts the hold the answer grants; a beat from another agent session of a host
//! that left is the host back (`HostReturned`).
//!
//! ```text
//!  beat{leaving: kind} ─▶ HostLeaving (Raft) ─▶ record: freeze ─▶ go, lease = hold
//!                                                      drain  ─▶ keep beating until drained,
//!                                                                then go, lease = hold
//!                                              no record (failover) ─▶ go, heartbeat lease
//!  beat from another session ─▶ HostReturned (a maintenance the policy began ends)
//! ```

use fleet::shutdown::drain_state;
use fleet::state::Command;
use protocol::NodeId;
use protocol::agent::{Heartbeat, LeaveAction, LeaveAnswer};
use protocol::time::Now;
use protocol::version::LEAVING;
use transport::RemoteError;

use super::Ctx;

impl Ctx {
    /// The answer to `beat` of `host` if it says its agent leaves, with the lease it grants
    /// (`None`: the heartbeat lease); notes the host back if another session left.
    pub(crate) async fn leave_answer(
        &self,
        host: NodeId,
        beat: &Heartbeat,
    ) -> Result<Option<(LeaveAnswer, Option<u64>)>, RemoteError> {
        let (entry, supported) = self.read_local(|s| {
            (
                s.leaving().get(&host).cloned(),
                s.cluster_version() >= LEAVING,
            )
        })?;
        if !supported {
            return Ok(None);
        }
        if let Some(e) = &entry
            && !e.returned
            && e.boot_id != beat.boot_id
        {
            let cmd = Command::HostReturned {
                id: host,
                boot_id: beat.boot_id,
                now: Now::read().millis,
            };
            if let Ok(Err(refusal)) = self.propose_raw(&cmd).await {
                tracing::debug!(host, error = %refusal, "host back: refused");
            }
            self.control.wake();
        }
        let Some(kind) = beat.leaving else {
            return Ok(None);
        };
        let recorded = entry
            .as_ref()
            .is_some_and(|e| e.boot_id == beat.boot_id && !e.returned);
        if !recorded {
            let cmd = Command::HostLeaving {
                id: host,
                kind,
                boot_id: beat.boot_id,
                now: Now::read().millis,
            };
            if let Err(refusal) = self.propose_raw(&cmd).await? {
                tracing::warn!(host, error = %refusal, "a leaving host's record refused");
                return Ok(Some((
                    LeaveAnswer {
                        action: LeaveAction::Failover,
                        go: true,
                        left: 0,
                        message: format!("not recorded ({refusal}): the host fails over"),
                    },
                    None,
                )));
            }
            tracing::info!(host, ?kind, "host leaving");
            self.control.wake();
        }
        let (entry, left, stuck) = self.read_local(|s| {
            let views = self.control.host_views(s);
            let (left, stuck) = drain_state(s, &views, host);
            (s.leaving().get(&host).cloned(), left, stuck)
        })?;
        let answer = match entry {
            Some(e) if e.boot_id == beat.boot_id && !e.returned => match e.action {
                LeaveAction::Drain if !stuck => (
                    LeaveAnswer {
                        action: LeaveAction::Drain,
                        go: false,
                        left,
                        message: format!("draining: {left} guest(s) still on the host"),
                    },
                    None,
                ),
                action => (
                    LeaveAnswer {
                        action,
                        go: true,
                        left,
                        message: format!(
                            "frozen: {left} guest(s) stay; not fenced for {} s",
                            e.hold_ms / 1000
                        ),
                    },
                    Some(e.hold_ms),
                ),
            },
            _ => (
                LeaveAnswer {
                    action: LeaveAction::Failover,
                    go: true,
                    left,
                    message: "fenced once the lease ends, HA guests recovered elsewhere".into(),
                },
                None,
            ),
        };
        Ok(Some(answer))
    }
}
