//! The fleet the demo applies (the shipped example, or `--file`), how it is applied, and how
//! far the cluster has brought it: a pure count of the VMs in their desired state.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use protocol::admin::{PoolApply, VipApply, VmApply, VmidRangeApply};
use protocol::fleet::{VmPhase, VmRecord};
use protocol::spec::{DesiredState, FleetSpecFile, VmSpec};

use super::error::DemoError;
use crate::error::LabCliError;
use cli::{CliError, read_fleet_file};
use client::AdminClient;
use protocol::spec::parse_fleet_file;

/// The example fleet shipped in `examples/fleet.toml`, built into the binary so the demo needs
/// no checkout.
pub(crate) const EXAMPLE_FLEET: &str = include_str!("../../../../examples/fleet.toml");

/// The fleet file to apply: `file`, or the shipped example. Refused before anything starts
/// if it is not valid.
pub(crate) fn load(file: Option<&Path>) -> Result<FleetSpecFile, LabCliError> {
    let fleet = match file {
        Some(path) => read_fleet_file(path),
        None => parse_fleet_file(EXAMPLE_FLEET).map_err(|error| CliError::SpecFile {
            path: PathBuf::from("examples/fleet.toml (built in)"),
            error,
        }),
    };
    fleet.map_err(LabCliError::from)
}

/// Applies every entry, resources first so the VMs' references resolve.
pub(crate) async fn apply(client: &AdminClient, fleet: &FleetSpecFile) -> Result<(), DemoError> {
    for spec in &fleet.pool {
        client.call(&PoolApply { spec: spec.clone() }).await?;
    }
    for spec in &fleet.vmid_range {
        client.call(&VmidRangeApply { spec: spec.clone() }).await?;
    }
    for spec in &fleet.vip {
        client.call(&VipApply { spec: spec.clone() }).await?;
    }
    for spec in &fleet.vm {
        client.call(&VmApply { spec: spec.clone() }).await?;
    }
    Ok(())
}

/// How far the fleet is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    /// VMs in the file.
    pub(crate) total: usize,
    /// VMs in their desired state (running, or stopped when so declared).
    pub(crate) ready: usize,
    /// How many VMs of the file are in each phase.
    pub(crate) phases: BTreeMap<&'static str, usize>,
    /// The VMs not ready yet: name, phase and the latest message.
    pub(crate) pending: Vec<(String, VmPhase, String)>,
}

impl Progress {
    /// Every VM is in its desired state.
    pub(crate) fn done(&self) -> bool {
        self.ready == self.total
    }

    /// One line for people: `7/13 VMs ready (running 6, stopped 1, provisioning 6)`.
    pub(crate) fn line(&self) -> String {
        let phases: Vec<String> = self
            .phases
            .iter()
            .map(|(phase, n)| format!("{phase} {n}"))
            .collect();
        format!(
            "{}/{} VMs ready ({})",
            self.ready,
            self.total,
            phases.join(", ")
        )
    }

    /// One line per pending VM, for a report.
    pub(crate) fn pending_details(&self) -> String {
        self.pending
            .iter()
            .map(|(name, phase, message)| {
                if message.is_empty() {
                    format!("  {name}: {phase}")
                } else {
                    format!("  {name}: {phase}: {message}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Counts the VMs of `wanted` that `records` show in their desired state. A VM missing from
/// the records counts as pending.
pub(crate) fn progress(wanted: &[VmSpec], records: &[VmRecord]) -> Progress {
    let by_name: BTreeMap<&str, &VmRecord> =
        records.iter().map(|r| (r.spec.name.as_str(), r)).collect();
    let mut p = Progress {
        total: wanted.len(),
        ..Progress::default()
    };
    for spec in wanted {
        let (phase, message) = match by_name.get(spec.name.as_str()) {
            Some(r) if r.deleting => (VmPhase::Deleting, r.status.message.clone()),
            Some(r) => (r.status.phase, r.status.message.clone()),
            None => (VmPhase::Pending, "not applied".to_string()),
        };
        *p.phases.entry(phase.as_str()).or_insert(0) += 1;
        let target = match spec.state {
            DesiredState::Running => VmPhase::Running,
            DesiredState::Stopped => VmPhase::Stopped,
        };
        if phase == target {
            p.ready += 1;
        } else {
            p.pending.push((spec.name.clone(), phase, message));
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use protocol::fleet::{Assignment, VmStatus};

    use super::*;

    fn record(spec: &VmSpec, phase: VmPhase, message: &str) -> VmRecord {
        VmRecord {
            spec: spec.clone(),
            generation: 1,
            created_at: 0,
            updated_at: 0,
            deleting: false,
            assignment: Assignment::default(),
            status: VmStatus {
                phase,
                message: message.to_string(),
                ..VmStatus::default()
            },
        }
    }

    #[test]
    fn the_built_in_fleet_is_the_shipped_example_and_valid() {
        let fleet = load(None).unwrap();
        assert!(fleet.vm.len() >= 12);
        assert_eq!(fleet.pool.len(), 1);
        assert_eq!(fleet.vip.len(), 1);
    }

    #[test]
    fn a_vm_is_ready_in_its_desired_state_only() {
        let web = VmSpec::new("web", 512);
        let mut spare = VmSpec::new("spare", 512);
        spare.state = DesiredState::Stopped;
        let late = VmSpec::new("late", 512);
        let wanted = [web.clone(), spare.clone(), late];

        let p = progress(
            &wanted,
            &[
                record(&web, VmPhase::Stopped, "starting"),
                record(&spare, VmPhase::Stopped, ""),
            ],
        );
        assert_eq!((p.ready, p.total), (1, 3));
        assert!(!p.done());
        assert_eq!(p.line(), "1/3 VMs ready (pending 1, stopped 2)");
        assert_eq!(
            p.pending_details(),
            "  web: stopped: starting\n  late: pending: not applied"
        );

        let mut deleting = record(&web, VmPhase::Running, "");
        deleting.deleting = true;
        let p = progress(&wanted[..1], &[deleting]);
        assert_eq!(p.ready, 0, "a VM being deleted is not ready");

        let p = progress(
            &wanted[..2],
            &[
                record(&web, VmPhase::Running, ""),
                record(&spare, VmPhase::Stopped, ""),
            ],
        );
        assert!(p.done());
    }
}
