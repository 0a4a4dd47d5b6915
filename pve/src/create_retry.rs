//! Creating a VM (create or clone) safely across retries.
//!
//! A create whose answer was lost may or may not have happened. PVE refuses a second VM with
//! the same VMID, so a retry cannot duplicate it; but the retry then answers "already exists"
//! and the caller must learn whether that VM is the one *it* asked for. We accept it as ours
//! only with proof from the node's task list: a create task (`qmcreate`, or `qmclone` of the
//! same source) by our API user, started no earlier than our first attempt, and for clones
//! one whose log names the new VMID when several clones of that source ran. Its UPID is
//! returned as if the first answer had arrived; without proof the "already exists" error
//! stands. A first attempt that answers "already exists" is never taken as ours.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use crate::client::{Client, decode, decode_upid};
use crate::de;
use crate::error::PveError;
use crate::request::{ApiRequest, Method};
use crate::upid::Upid;

/// Clock slack when comparing our attempt time with a task's start time (same host for the
/// agent's local API, so seconds are plenty).
const CLOCK_SLACK_SECS: u64 = 30;

/// What identifies one create: where, which VMID, which task type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateIdentity {
    /// Node the create was sent to (the new VM's node for create, the source's for clone).
    pub node: String,
    /// The VMID being created.
    pub vmid: u32,
    /// `qmcreate` or `qmclone`.
    pub task_type: &'static str,
    /// For clones: the source VMID (the UPID's id is the source, not the new VM).
    pub source_vmid: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct TaskEntry {
    upid: String,
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    starttime: Option<u64>,
}

impl Client {
    /// Start a create/clone task, retrying transient failures (create is the one write that
    /// is retried after an ambiguous failure), recognizing our own earlier attempt when a
    /// retry answers "already exists".
    pub async fn start_create(
        &self,
        req: &ApiRequest,
        identity: &CreateIdentity,
    ) -> Result<Upid, PveError> {
        let policy = self.retry_policy();
        let first_attempt = unix_now().saturating_sub(CLOCK_SLACK_SECS);
        let mut ambiguous = false;
        let mut attempt = 1;
        loop {
            match self.backend().call(req).await {
                Ok(reply) => return decode_upid(req, &reply.data),
                Err(err) if ambiguous && err.is_already_exists() => {
                    return match self.find_own_create(identity, first_attempt).await? {
                        Some(upid) => {
                            tracing::info!(vmid = identity.vmid, %upid, "create answer was lost; recognized our own task");
                            Ok(upid)
                        }
                        None => Err(err),
                    };
                }
                Err(err) if attempt < policy.attempts && err.is_transient() => {
                    // Anything but a refused connection may have reached the node.
                    ambiguous |= !err.is_connect();
                    let delay = policy.delay(attempt);
                    tracing::debug!(vmid = identity.vmid, attempt, ?delay, error = %err, "retrying create");
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Our own create task for `identity` started since `since`, if the node's task list
    /// proves one.
    async fn find_own_create(
        &self,
        identity: &CreateIdentity,
        since: u64,
    ) -> Result<Option<Upid>, PveError> {
        let list_vmid = identity.source_vmid.unwrap_or(identity.vmid);
        let req = ApiRequest::new(Method::Get, format!("/nodes/{}/tasks", identity.node))
            .param("vmid", list_vmid.to_string())
            .param("typefilter", identity.task_type)
            .param("source", "all")
            .param("since", since.to_string())
            .param("limit", "500");
        let reply = self.execute(&req).await?;
        let entries: Vec<TaskEntry> = decode(&req, reply.data)?;
        let me = self.backend().api_user();
        let mut candidates: Vec<Upid> = entries
            .into_iter()
            .filter(|e| e.starttime.unwrap_or(u64::MAX) >= since)
            .filter_map(|e| e.upid.parse::<Upid>().ok())
            .filter(|u| u.kind == identity.task_type && u.id == list_vmid.to_string())
            .filter(|u| me.as_deref().is_none_or(|me| u.user == me))
            .collect();
        candidates.sort_by_key(|u| u.starttime);
        candidates.dedup();
        if identity.source_vmid.is_none() || candidates.len() <= 1 {
            // A create task's id is the new VMID itself: any one of ours is the one.
            return Ok(candidates.pop());
        }
        // Several clones of one source: keep the one whose log names the new VMID.
        let mut named = Vec::new();
        for upid in candidates {
            let (lines, _) = self.task_log(&upid, 0, 0).await?;
            if lines.iter().any(|l| mentions_vmid(&l.t, identity.vmid)) {
                named.push(upid);
            }
        }
        Ok(if named.len() == 1 { named.pop() } else { None })
    }
}

/// Whether a task log line names `vmid` as a whole word (`vm-101-disk-0`, `VM 101`).
fn mentions_vmid(line: &str, vmid: u32) -> bool {
    let id = vmid.to_string();
    line.match_indices(&id).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + id.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmid_mentions_are_whole_numbers() {
        assert!(mentions_vmid(
            "Logical volume \"vm-101-disk-0\" created.",
            101
        ));
        assert!(mentions_vmid(
            "create full clone of drive scsi0 to VM 101",
            101
        ));
        assert!(!mentions_vmid("vm-1010-disk-0", 101));
        assert!(!mentions_vmid("vm-2101-disk-0", 101));
    }
}
