//! The v1 layout of a VIP (encoding v1: `tests/golden/v1/`), frozen: v2 added labels,
//! preemption and health checks to [`VipSpec`]. Entries, snapshots and wire messages written at
//! v1 are read through these types and converted; a VIP written at v1 is converted back only
//! if v1 can carry it ([`VipSpecV1::exact`]), except in replies to a v1 reader, which get what
//! it can show ([`VipSpecV1::shown`]).

use serde::{Deserialize, Serialize};

use super::{DEFAULT_PREEMPT_DELAY_SECS, VipSpec};
use crate::NodeId;
use crate::fleet::Vip;

/// [`VipSpec`] as encoding v1 lays it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipSpecV1 {
    /// The VIP's name.
    pub name: String,
    /// The address with its prefix length.
    pub address: String,
    /// The host interface.
    pub interface: String,
    /// Eligible hosts by name; empty = every host.
    pub hosts: Vec<String>,
}

impl From<VipSpecV1> for VipSpec {
    fn from(v1: VipSpecV1) -> VipSpec {
        VipSpec {
            name: v1.name,
            address: v1.address,
            interface: v1.interface,
            hosts: v1.hosts,
            labels: Default::default(),
            preempt: false,
            preempt_delay_secs: DEFAULT_PREEMPT_DELAY_SECS,
            checks: Vec::new(),
        }
    }
}

impl VipSpecV1 {
    /// `spec` in the v1 layout, if v1 carries all of it (no labels, no preemption, no
    /// checks); `None` otherwise: writing it at v1 would lose what the operator asked for.
    pub fn exact(spec: &VipSpec) -> Option<VipSpecV1> {
        let plain = spec.labels.is_empty()
            && !spec.preempt
            && spec.preempt_delay_secs == DEFAULT_PREEMPT_DELAY_SECS
            && spec.checks.is_empty();
        plain.then(|| VipSpecV1::shown(spec))
    }

    /// What a v1 reader can show of `spec` (the v2 fields left out).
    pub fn shown(spec: &VipSpec) -> VipSpecV1 {
        VipSpecV1 {
            name: spec.name.clone(),
            address: spec.address.clone(),
            interface: spec.interface.clone(),
            hosts: spec.hosts.clone(),
        }
    }
}

/// [`Vip`] as encoding v1 lays it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipV1 {
    /// The definition.
    pub spec: VipSpecV1,
    /// The generation.
    pub generation: u64,
    /// The holder.
    pub owner: Option<NodeId>,
    /// The ownership epoch.
    pub epoch: u64,
}

impl From<VipV1> for Vip {
    fn from(v1: VipV1) -> Vip {
        Vip {
            spec: v1.spec.into(),
            generation: v1.generation,
            owner: v1.owner,
            epoch: v1.epoch,
            standby: None,
        }
    }
}

impl VipV1 {
    /// `vip` in the v1 layout if v1 carries its definition ([`VipSpecV1::exact`]) and it has
    /// no standby.
    pub fn exact(vip: &Vip) -> Option<VipV1> {
        if vip.standby.is_some() {
            return None;
        }
        Some(VipV1 {
            spec: VipSpecV1::exact(&vip.spec)?,
            generation: vip.generation,
            owner: vip.owner,
            epoch: vip.epoch,
        })
    }

    /// What a v1 reader can show of `vip`.
    pub fn shown(vip: &Vip) -> VipV1 {
        VipV1 {
            spec: VipSpecV1::shown(&vip.spec),
            generation: vip.generation,
            owner: vip.owner,
            epoch: vip.epoch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{CheckType, VipCheck};

    fn v1() -> VipSpecV1 {
        VipSpecV1 {
            name: "api".into(),
            address: "10.0.0.10/24".into(),
            interface: "vmbr0".into(),
            hosts: vec!["pve-a".into()],
        }
    }

    #[test]
    fn a_v1_spec_goes_back_exactly_and_a_spec_using_v2_fields_does_not() {
        let spec = VipSpec::from(v1());
        assert_eq!(VipSpecV1::exact(&spec), Some(v1()));
        let mut checked = spec.clone();
        checked.checks.push(VipCheck {
            kind: CheckType::Tcp,
            port: Some(8006),
            address: None,
            path: None,
            expect_status: None,
            command: vec![],
            interval_ms: 1000,
            timeout_ms: 500,
            rise: 2,
            fall: 2,
        });
        assert_eq!(VipSpecV1::exact(&checked), None);
        assert_eq!(VipSpecV1::shown(&checked), v1());
        let mut preempting = spec;
        preempting.preempt = true;
        assert_eq!(VipSpecV1::exact(&preempting), None);
    }

    #[test]
    fn a_v1_reader_is_never_sent_a_vip_it_would_apply_without_its_checks() {
        use crate::Rpc;
        use crate::admin::{VipApply, VipList, VipListReply};
        use crate::encoding::EncodingError;
        use crate::version::{VIP_HOLDING, Version};

        let plain = VipApply {
            spec: VipSpec::from(v1()),
        };
        let bytes = plain.encode_at(Version(1)).unwrap();
        assert_eq!(VipApply::decode_at(Version(1), &bytes).unwrap(), plain);
        let mut checked = plain.clone();
        checked.spec.preempt = true;
        assert!(matches!(
            checked.encode_at(Version(1)),
            Err(EncodingError::TooNew { needs, .. }) if needs == VIP_HOLDING
        ));
        let at_v2 = checked.encode_at(VIP_HOLDING).unwrap();
        assert_eq!(VipApply::decode_at(VIP_HOLDING, &at_v2).unwrap(), checked);
        // A read shows a v1 reader what it can.
        let list = VipListReply {
            vips: vec![Vip {
                spec: checked.spec.clone(),
                generation: 1,
                owner: Some(3),
                epoch: 2,
                standby: Some(4),
            }],
        };
        let shown = VipList::encode_response_at(&list, Version(1)).unwrap();
        let read = VipList::decode_response_at(Version(1), &shown).unwrap();
        assert_eq!(read.vips[0].spec, VipSpec::from(v1()));
        assert_eq!((read.vips[0].owner, read.vips[0].epoch), (Some(3), 2));
    }
}
