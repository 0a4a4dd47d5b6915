//! The v1 layout of a VM spec (encoding v1: `tests/golden/v1/`), frozen: v2 replaced the
//! bool `ha` with PVE HA's settings ([`HaSpec`]). Entries, snapshots and wire messages written
//! at v1 are read through this type and converted; a spec is converted back only if v1 carries
//! it exactly ([`VmSpecV1::exact`]), except where a v1 reader gets what it can act on
//! ([`VmSpecV1::shown`]).
//!
//! v2 also added the affinity rules to the placement (`apart_from`, `together_with`): the v1
//! placement is [`PlacementV1`], and a spec with rules is never written at v1.
//!
//! v1's `ha = true` meant "an HA guest, kept in its desired `state`": it reads as
//! `started` for a running VM and `stopped` for a stopped one, with the fleet's defaults for
//! the limits and the mode (PVE's, the only ones v1 knew, until the operator changes them), so
//! a v1 spec always passes v2's validation and a v1 entry applies alike on every build.

use serde::{Deserialize, Serialize};

use super::Labels;
use super::VmSpec;
use super::ha::{HaSpec, HaState};
use super::vm_parts::{
    Bios, CloudInitSpec, DesiredState, DiskSpec, NicSpec, OsType, Placement, RestartPolicy,
    ScsiController, TemplateSpec,
};

/// [`VmSpec`] as encoding v1 lays it out (see [`VmSpec`] for the fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmSpecV1 {
    /// The VM's name.
    pub name: String,
    /// Free text for PVE's notes.
    pub description: String,
    /// PVE tags.
    pub tags: Vec<String>,
    /// Cores per socket.
    pub cores: u32,
    /// CPU sockets.
    pub sockets: u32,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// Balloon minimum in MiB.
    pub balloon_mib: Option<u64>,
    /// QEMU CPU model.
    pub cpu: Option<String>,
    /// QEMU machine type.
    pub machine: Option<String>,
    /// Firmware.
    pub bios: Option<Bios>,
    /// SCSI controller model.
    pub scsihw: Option<ScsiController>,
    /// Guest OS type.
    pub ostype: Option<OsType>,
    /// The template to clone.
    pub template: Option<TemplateSpec>,
    /// Disks.
    pub disks: Vec<DiskSpec>,
    /// Network interfaces.
    pub nics: Vec<NicSpec>,
    /// Cloud-init settings.
    pub cloud_init: Option<CloudInitSpec>,
    /// QEMU guest agent.
    pub agent: bool,
    /// PVE `onboot`.
    pub onboot: bool,
    /// PVE `protection`.
    pub protection: bool,
    /// Running or stopped.
    pub state: DesiredState,
    /// Whether a reboot may be done for a change.
    pub restart: RestartPolicy,
    /// Where the VM may be placed.
    pub placement: PlacementV1,
    /// An HA guest: fenced with its host (and recovered elsewhere).
    pub ha: bool,
    /// The VMID range.
    pub vmid_range: Option<String>,
}

/// [`Placement`] as encoding v1 lays it out: without the affinity rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementV1 {
    /// Only these hosts.
    pub hosts: Vec<String>,
    /// Never these hosts.
    pub exclude_hosts: Vec<String>,
    /// Labels a host must carry.
    pub labels: Labels,
}

impl PlacementV1 {
    /// What a v1 reader can show: the host and label constraints.
    pub fn shown(p: &Placement) -> PlacementV1 {
        PlacementV1 {
            hosts: p.hosts.clone(),
            exclude_hosts: p.exclude_hosts.clone(),
            labels: p.labels.clone(),
        }
    }
}

impl From<PlacementV1> for Placement {
    fn from(v1: PlacementV1) -> Placement {
        Placement {
            hosts: v1.hosts,
            exclude_hosts: v1.exclude_hosts,
            labels: v1.labels,
            apart_from: Vec::new(),
            together_with: Vec::new(),
            node_affinity: None,
        }
    }
}

/// What v1's `ha` means in v2's terms, given the VM's desired power.
fn ha_of_v1(ha: bool, state: DesiredState) -> HaSpec {
    if !ha {
        return HaSpec::none();
    }
    HaSpec::with_state(match state {
        DesiredState::Running => HaState::Started,
        DesiredState::Stopped => HaState::Stopped,
    })
}

impl From<VmSpecV1> for VmSpec {
    fn from(v1: VmSpecV1) -> VmSpec {
        VmSpec {
            ha: ha_of_v1(v1.ha, v1.state),
            name: v1.name,
            description: v1.description,
            tags: v1.tags,
            cores: v1.cores,
            sockets: v1.sockets,
            memory_mib: v1.memory_mib,
            balloon_mib: v1.balloon_mib,
            cpu: v1.cpu,
            machine: v1.machine,
            bios: v1.bios,
            scsihw: v1.scsihw,
            ostype: v1.ostype,
            template: v1.template,
            disks: v1.disks,
            nics: v1.nics,
            cloud_init: v1.cloud_init,
            agent: v1.agent,
            onboot: v1.onboot,
            protection: v1.protection,
            state: v1.state,
            restart: v1.restart,
            placement: v1.placement.into(),
            vmid_range: v1.vmid_range,
            group: None,
        }
    }
}

impl VmSpecV1 {
    /// `spec` in the v1 layout, if v1 carries all of it: no affinity rules, and not HA, or
    /// `started`/`stopped` matching the desired power with the fleet's defaults (what
    /// `ha = true` meant). `None`
    /// otherwise: writing it at v1 would lose what the operator asked for.
    pub fn exact(spec: &VmSpec) -> Option<VmSpecV1> {
        let v1 = VmSpecV1::shown(spec);
        let rules = !spec.placement.apart_from.is_empty()
            || !spec.placement.together_with.is_empty()
            || spec.placement.node_affinity.is_some();
        (ha_of_v1(v1.ha, v1.state) == spec.ha && !rules && spec.group.is_none()).then_some(v1)
    }

    /// What a v1 reader can show and act on: `ha` is whether the VM is an HA guest for
    /// fencing ([`HaSpec::fences`]: `started` or `stopped`), which is all a v1 agent does with
    /// it (the `ha=1` notes mark, `onboot` forced off); the limits and the recovery mode are
    /// left out.
    pub fn shown(spec: &VmSpec) -> VmSpecV1 {
        VmSpecV1 {
            name: spec.name.clone(),
            description: spec.description.clone(),
            tags: spec.tags.clone(),
            cores: spec.cores,
            sockets: spec.sockets,
            memory_mib: spec.memory_mib,
            balloon_mib: spec.balloon_mib,
            cpu: spec.cpu.clone(),
            machine: spec.machine.clone(),
            bios: spec.bios,
            scsihw: spec.scsihw,
            ostype: spec.ostype,
            template: spec.template.clone(),
            disks: spec.disks.clone(),
            nics: spec.nics.clone(),
            cloud_init: spec.cloud_init.clone(),
            agent: spec.agent,
            onboot: spec.onboot,
            protection: spec.protection,
            state: spec.state,
            restart: spec.restart,
            placement: PlacementV1::shown(&spec.placement),
            ha: spec.ha.fences(),
            vmid_range: spec.vmid_range.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{RecoveryMode, validate_spec};

    #[test]
    fn v1_ha_reads_as_the_request_its_desired_power_makes_and_goes_back_exactly() {
        for (ha, state, want) in [
            (false, DesiredState::Running, None),
            (false, DesiredState::Stopped, None),
            (true, DesiredState::Running, Some(HaState::Started)),
            (true, DesiredState::Stopped, Some(HaState::Stopped)),
        ] {
            let mut v1 = VmSpecV1::shown(&VmSpec::new("web", 512));
            v1.ha = ha;
            v1.state = state;
            let spec = VmSpec::from(v1.clone());
            assert_eq!(
                spec.ha,
                HaSpec {
                    state: want,
                    ..HaSpec::none()
                }
            );
            validate_spec(&spec).expect("a v1 spec is valid at v2");
            assert_eq!(VmSpecV1::exact(&spec), Some(v1));
        }
    }

    #[test]
    fn settings_v1_cannot_carry_are_never_written_as_v1_but_shown_as_what_fences() {
        let mut spec = VmSpec::new("web", 512);
        spec.ha = HaSpec {
            max_restart: Some(3),
            ..HaSpec::started()
        };
        assert_eq!(VmSpecV1::exact(&spec), None);
        assert!(VmSpecV1::shown(&spec).ha);
        // Even a value equal to the default: the VM no longer follows the fleet's default.
        spec.ha = HaSpec {
            max_restart: Some(1),
            ..HaSpec::started()
        };
        assert_eq!(VmSpecV1::exact(&spec), None);
        spec.ha = HaSpec {
            recovery: Some(RecoveryMode::Recreate),
            ..HaSpec::started()
        };
        assert_eq!(VmSpecV1::exact(&spec), None);
        spec.state = DesiredState::Stopped;
        for (state, fences) in [(HaState::Disabled, false), (HaState::Ignored, false)] {
            spec.ha = HaSpec::with_state(state);
            assert_eq!(VmSpecV1::exact(&spec), None, "{state}");
            assert_eq!(VmSpecV1::shown(&spec).ha, fences, "{state}");
        }
        // Limits without a state are not v1's "not HA" either.
        spec.ha = HaSpec {
            max_relocate: Some(0),
            ..HaSpec::none()
        };
        assert_eq!(VmSpecV1::exact(&spec), None);
        assert!(!VmSpecV1::shown(&spec).ha);
    }

    #[test]
    fn a_v1_reader_is_never_sent_ha_settings_it_would_apply_without_and_sees_what_fences() {
        use crate::Rpc;
        use crate::admin::{VmApply, VmGet};
        use crate::agent::{AgentCommand, EnsureVm, Heartbeat, HeartbeatAck, Op};
        use crate::encoding::EncodingError;
        use crate::fleet::VmRecord;
        use crate::version::{HA_SETTINGS, Version};

        let mut plain = VmApply {
            spec: VmSpec::new("web", 512),
        };
        plain.spec.ha = HaSpec::started();
        let bytes = plain.encode_at(Version(1)).unwrap();
        assert_eq!(VmApply::decode_at(Version(1), &bytes).unwrap(), plain);
        let mut tuned = plain.clone();
        tuned.spec.ha.max_relocate = Some(2);
        assert!(matches!(
            tuned.encode_at(Version(1)),
            Err(EncodingError::TooNew { needs, .. }) if needs == HA_SETTINGS
        ));
        let at_v2 = tuned.encode_at(HA_SETTINGS).unwrap();
        assert_eq!(VmApply::decode_at(HA_SETTINGS, &at_v2).unwrap(), tuned);

        // Reads show a v1 reader what it can.
        let record = VmRecord {
            spec: tuned.spec.clone(),
            generation: 2,
            created_at: 1,
            updated_at: 2,
            deleting: false,
            assignment: Default::default(),
            status: Default::default(),
        };
        let shown = VmGet::encode_response_at(&record, Version(1)).unwrap();
        let read = VmGet::decode_response_at(Version(1), &shown).unwrap();
        assert_eq!(read.spec, plain.spec);
        assert_eq!(read.generation, 2);

        // A v1 agent is told which guests it fences, and nothing is refused.
        let ensure = |ha: HaSpec, state: DesiredState| {
            let mut spec = VmSpec::new("web", 512);
            spec.ha = ha;
            spec.state = state;
            AgentCommand {
                id: "e1".into(),
                op: Op::Ensure(Box::new(EnsureVm {
                    spec,
                    generation: 1,
                    vmid: 100,
                    ips: vec![],
                    pool_dns: vec![],
                    ip_wait_secs: 0,
                    take_over: None,
                })),
            }
        };
        let ack = HeartbeatAck {
            leader: 1,
            term: 2,
            lease_ms: 10_000,
            need_inventory: false,
            acked_results: vec![],
            commands: vec![
                ensure(tuned.spec.ha, DesiredState::Running),
                ensure(HaSpec::with_state(HaState::Disabled), DesiredState::Stopped),
                ensure(HaSpec::with_state(HaState::Ignored), DesiredState::Running),
            ],
            leave: None,
            leader_clock_ms: None,
        };
        let bytes = Heartbeat::encode_response_at(&ack, Version(1)).unwrap();
        let read = Heartbeat::decode_response_at(Version(1), &bytes).unwrap();
        let fences: Vec<bool> = read
            .commands
            .iter()
            .map(|c| match &c.op {
                Op::Ensure(e) => e.spec.ha.fences(),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(fences, [true, false, false]);
        let at_v2 = Heartbeat::encode_response_at(&ack, HA_SETTINGS).unwrap();
        assert_eq!(
            Heartbeat::decode_response_at(HA_SETTINGS, &at_v2).unwrap(),
            ack
        );
    }
}
