//! `pvefleet doctor`: the fleet's checks before and after a rollout. The leader gathers the
//! facts (each member's [`MemberFacts`], each host's [`HostDiagnosis`] from its agent, the Raft
//! view) and judges them into [`Finding`]s, each saying what is wrong and what to do.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::agent::{ClockOffset, HostDiagnosis};
use crate::identity::NodeId;
use crate::rpc::Rpc;

/// How long the leader waits for each agent's diagnosis (all run at once).
pub const DIAGNOSE_WAIT: Duration = Duration::from_secs(15);

/// `pvefleet doctor` (answered by the leader).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Doctor {}

/// What the doctor found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoctorReport {
    /// The leader that checked.
    pub leader: NodeId,
    /// When, in unix ms (the leader's clock).
    pub checked_at_ms: u64,
    /// Every member.
    pub members: Vec<MemberCheck>,
    /// Every host.
    pub hosts: Vec<HostCheck>,
    /// What is wrong, most severe first; empty when all is well.
    pub findings: Vec<Finding>,
}

/// One member as the leader saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberCheck {
    /// Its node id.
    pub id: NodeId,
    /// `host:port` of its QUIC endpoint.
    pub addr: String,
    /// A voter (else a learner).
    pub voter: bool,
    /// Entries behind the leader's last log index.
    pub lag: Option<u64>,
    /// What it answered, or why it did not.
    pub facts: Result<MemberFacts, String>,
    /// Its clock against the leader's (the leader's is the reference: zero for itself).
    pub clock: Option<ClockOffset>,
}

/// One host as the leader saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCheck {
    /// Its node id.
    pub id: NodeId,
    /// Its PVE node name.
    pub name: String,
    /// Its agent beat within the lease.
    pub online: bool,
    /// What its agent answered, or why it did not.
    pub facts: Result<HostDiagnosis, String>,
}

/// `admin.member_facts`: what the member that receives it says about itself (never
/// forwarded; the leader asks every member).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberFactsQuery {}

/// What a member says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberFacts {
    /// Its node id.
    pub node_id: NodeId,
    /// Its package version (`0.1.0`).
    pub version: String,
    /// Its wall clock when it answered, unix ms.
    pub clock_ms: u64,
    /// When its certificate expires (unix seconds; 0 when unreadable).
    pub certificate_not_after: u64,
    /// When the cluster CA expires (unix seconds).
    pub ca_not_after: u64,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Severity {
    /// Wrong now, or about to break something: fix it before trusting the fleet.
    Problem,
    /// Not broken yet (mixed versions during an upgrade, a certificate a few weeks from
    /// expiry): plan to fix it.
    Warning,
}

impl Severity {
    /// `problem` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Problem => "problem",
            Severity::Warning => "warning",
        }
    }
}

/// One thing the doctor found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// How bad.
    pub severity: Severity,
    /// Where: `fleet`, `member 2`, `host pve3`, `admin`.
    pub subject: String,
    /// Which check (`versions`, `privileges`, `clock`, `certificates`, `quorum`,
    /// `replication`, `pve`, `tls`, `snippets`, `capabilities`, `agent`).
    pub check: String,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub action: String,
}

impl Rpc for Doctor {
    const METHOD: &'static str = "admin.doctor";
    type Response = DoctorReport;
}

impl Rpc for MemberFactsQuery {
    const METHOD: &'static str = "admin.member_facts";
    type Response = MemberFacts;
}
