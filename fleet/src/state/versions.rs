//! The cluster version (etcd's term for it): the encoding version every member writes to the
//! Raft log and to snapshots. Each member reports the range its build reads
//! ([`Command::ReportVersions`](super::Command::ReportVersions)); the leader raises the cluster
//! version to the newest version every recorded member reads
//! ([`next_cluster_version`], [`Command::SetClusterVersion`](super::Command::SetClusterVersion)).
//!
//! Rules, all checked here when the command is applied (so a stale proposal cannot break them):
//! - the cluster version never goes down (entries already written at it must stay readable);
//! - it is raised only when every recorded member has reported a build that reads the new one;
//! - a command that only a newer version can carry is refused by the encoder until then
//!   (`encode_command`), so no member is ever given an entry it cannot read.
//!
//! A member that starts with a build too old for the cluster version cannot read the log: it
//! stops with a message saying so (the coordinator checks before it serves).

use std::collections::BTreeMap;

use protocol::NodeId;
use protocol::fleet::{EventKind, UnixMillis};
use protocol::version::{Version, VersionRange};

use super::vms::not_found;
use super::{CommandReply, FleetState, StateError};

/// The version the leader should raise the cluster to, if any: the newest version every
/// recorded member reads, when that is above the current one. `None` while a member has not
/// reported (its build is unknown, perhaps older) or nothing newer is common to all.
pub fn next_cluster_version(state: &FleetState) -> Option<Version> {
    let versions = &state.versions;
    let mut common: Option<Version> = None;
    for id in state.members().keys() {
        let newest = versions.members.get(id)?.newest;
        common = Some(common.map_or(newest, |c| c.min(newest)));
    }
    common.filter(|&c| c > versions.cluster && c.is_supported())
}

impl FleetState {
    /// The version entries and snapshots are written at.
    pub fn cluster_version(&self) -> Version {
        self.versions.cluster
    }

    /// What each member's build reads, as reported.
    pub fn member_versions(&self) -> &BTreeMap<NodeId, VersionRange> {
        &self.versions.members
    }

    pub(super) fn report_versions(
        &mut self,
        id: NodeId,
        range: VersionRange,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        if !self.members().contains_key(&id) {
            return Err(not_found(EventKind::Member, id.to_string()));
        }
        if range.oldest > range.newest {
            return Err(StateError::Conflict(format!(
                "member {id} reported versions {}..={}: the oldest is above the newest",
                range.oldest, range.newest
            )));
        }
        if self.versions.members.get(&id) == Some(&range) {
            return Ok(CommandReply::Done);
        }
        self.versions.members.insert(id, range);
        let message = format!(
            "its build reads encodings {range} (cluster version {})",
            self.versions.cluster
        );
        self.info(now, EventKind::Member, id.to_string(), message);
        Ok(CommandReply::Done)
    }

    pub(super) fn set_cluster_version(
        &mut self,
        version: Version,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let current = self.versions.cluster;
        if version == current {
            return Ok(CommandReply::Done);
        }
        if version < current {
            return Err(StateError::Conflict(format!(
                "the cluster version is {current} and never goes down (asked for {version}): \
                 entries written at {current} must stay readable"
            )));
        }
        let behind: Vec<String> = self
            .members()
            .keys()
            .filter(|id| {
                self.versions
                    .members
                    .get(id)
                    .is_none_or(|range| !range.contains(version))
            })
            .map(ToString::to_string)
            .collect();
        if !behind.is_empty() {
            return Err(StateError::Conflict(format!(
                "cluster version {version} needs every member to read it; member(s) {} \
                 run an older build (or have not reported): upgrade them first",
                behind.join(", ")
            )));
        }
        self.versions.cluster = version;
        self.info(
            now,
            EventKind::Settings,
            "cluster-version",
            format!("raised from {current} to {version}: every member reads it"),
        );
        Ok(CommandReply::Done)
    }

    /// Forgets a removed member's build.
    pub(super) fn forget_member_versions(&mut self, id: NodeId) {
        self.versions.members.remove(&id);
    }
}
