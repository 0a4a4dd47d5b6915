//! Spec files (`pvefleet vm apply -f FILE`, the demo's example fleet): their shapes
//! ([`VmSpecFile`], [`FleetSpecFile`]) and reading them: TOML with unknown keys refused, then
//! every spec validated, errors naming the entry (`vm[2].nics[0].vlan`). Nothing is proposed
//! unless the whole file is valid.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::fleet::{Settings, validate_settings};

use super::{
    IpPoolSpec, SpecError, VipSpec, VmSpec, VmidRangeSpec, validate_ip_pool, validate_spec,
    validate_vip, validate_vmid_range,
};

/// A file of VM specs: `[[vm]]` tables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmSpecFile {
    /// The VMs, in file order.
    #[serde(default)]
    pub vm: Vec<VmSpec>,
}

/// A whole fleet in one file: VMs and the resources they use (`[[vm]]`, `[[pool]]`,
/// `[[vmid_range]]`, `[[vip]]`), and the cluster's `[settings]`. Every section is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetSpecFile {
    /// IP pools.
    #[serde(default)]
    pub pool: Vec<IpPoolSpec>,
    /// VMID ranges.
    #[serde(default)]
    pub vmid_range: Vec<VmidRangeSpec>,
    /// Virtual IPs.
    #[serde(default)]
    pub vip: Vec<VipSpec>,
    /// VMs.
    #[serde(default)]
    pub vm: Vec<VmSpec>,
    /// The cluster settings (`[settings]`, `[settings.ha]`): all of them, a key left out is its
    /// default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Settings>,
}

/// Why a spec file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecFileError {
    /// Not valid TOML for the spec schema (syntax, unknown key, wrong type, unknown variant);
    /// the message carries the line and the key.
    #[error("{0}")]
    Toml(String),
    /// A spec is invalid.
    #[error("invalid spec: {0}")]
    Invalid(SpecError),
    /// Two entries of the same kind share a name.
    #[error("{kind} {name:?} is defined twice in the file")]
    Duplicate {
        /// `vm`, `pool`, `vmid_range` or `vip`.
        kind: &'static str,
        /// The repeated name.
        name: String,
    },
}

/// Reads a VM file: `[[vm]]` tables, or one VM's fields at the top level.
pub fn parse_vm_file(text: &str) -> Result<Vec<VmSpec>, SpecFileError> {
    let toml_err = |e: toml::de::Error| SpecFileError::Toml(e.to_string());
    let table: toml::Table = text.parse().map_err(toml_err)?;
    let specs = if table.contains_key("vm") {
        toml::from_str::<VmSpecFile>(text).map_err(toml_err)?.vm
    } else {
        vec![toml::from_str::<VmSpec>(text).map_err(toml_err)?]
    };
    check_all("vm", &specs, |s| &s.name, validate_spec)?;
    Ok(specs)
}

/// Reads a fleet file: `[[pool]]`, `[[vmid_range]]`, `[[vip]]` and `[[vm]]` tables, and
/// `[settings]`.
pub fn parse_fleet_file(text: &str) -> Result<FleetSpecFile, SpecFileError> {
    let file: FleetSpecFile =
        toml::from_str(text).map_err(|e| SpecFileError::Toml(e.to_string()))?;
    check_all("pool", &file.pool, |s| &s.name, validate_ip_pool)?;
    check_all(
        "vmid_range",
        &file.vmid_range,
        |s| &s.name,
        validate_vmid_range,
    )?;
    check_all("vip", &file.vip, |s| &s.name, validate_vip)?;
    check_all("vm", &file.vm, |s| &s.name, validate_spec)?;
    if let Some(settings) = &file.settings {
        validate_settings(settings).map_err(|e| SpecFileError::Invalid(e.within("settings")))?;
    }
    Ok(file)
}

fn check_all<T>(
    kind: &'static str,
    specs: &[T],
    name: impl Fn(&T) -> &String,
    validate: impl Fn(&T) -> Result<(), SpecError>,
) -> Result<(), SpecFileError> {
    let mut seen = BTreeSet::new();
    for (i, spec) in specs.iter().enumerate() {
        validate(spec).map_err(|e| SpecFileError::Invalid(e.within(&format!("{kind}[{i}]"))))?;
        if !seen.insert(name(spec)) {
            return Err(SpecFileError::Duplicate {
                kind,
                name: name(spec).clone(),
            });
        }
    }
    Ok(())
}
