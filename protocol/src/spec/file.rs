//! Spec files (`pvefleet vm apply -f FILE`, the demo's example fleet): their shapes
//! ([`VmSpecFile`], [`FleetSpecFile`]) and reading them: TOML with unknown keys refused, then
//! every spec validated, errors naming the entry (`vm[2].nics[0].vlan`). Nothing is proposed
//! unless the whole file is valid.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::fleet::{Settings, validate_settings};

use super::validate::check;
use super::{
    GroupMember, INDEX_PLACEHOLDER, IpPoolSpec, MAX_REPLICAS, SpecError, VipSpec, VmSpec,
    VmidRangeSpec, rules, validate_ip_pool, validate_spec, validate_vip, validate_vmid_range,
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
    /// The `[[vm_group]]`s of the file and their replicas (their members are in [`Self::vm`]):
    /// applying the file removes a group's members past its replicas.
    #[serde(skip)]
    pub groups: Vec<GroupReplicas>,
}

/// A `[[vm_group]]`'s name and replicas, as a file says them.
pub type GroupReplicas = (String, u32);

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
    read_vm_file(text).map(|(vms, _)| vms)
}

/// [`parse_vm_file`] that also takes `[vm_defaults]` and `[[vm_group]]`s: the VMs (groups
/// expanded) and each group's name and replicas.
pub fn read_vm_file(text: &str) -> Result<(Vec<VmSpec>, Vec<GroupReplicas>), SpecFileError> {
    let toml_err = |e: toml::de::Error| SpecFileError::Toml(e.to_string());
    let mut table: toml::Table = text.parse().map_err(toml_err)?;
    if table.contains_key("vm_defaults") || table.contains_key("vm_group") {
        let (specs, groups) = expand_vms(&mut table)?;
        // A fleet file's other sections are applied by their own commands.
        let fleet_sections = ["pool", "vmid_range", "vip", "settings"];
        if let Some(key) = table.keys().find(|k| !fleet_sections.contains(&k.as_str())) {
            return Err(SpecFileError::Toml(format!(
                "{key}: unknown section; a VM file holds [[vm]], [[vm_group]] and [vm_defaults]"
            )));
        }
        check_all("vm", &specs, |s| &s.name, validate_spec)?;
        return Ok((specs, groups));
    }
    let specs = if table.contains_key("vm") {
        toml::from_str::<VmSpecFile>(text).map_err(toml_err)?.vm
    } else {
        vec![toml::from_str::<VmSpec>(text).map_err(toml_err)?]
    };
    check_all("vm", &specs, |s| &s.name, validate_spec)?;
    Ok((specs, Vec::new()))
}

/// Takes `[vm_defaults]`, `[[vm]]` and `[[vm_group]]` out of `table`: the VMs (each over the
/// defaults; the groups expanded) and each group's name and replicas.
fn expand_vms(table: &mut toml::Table) -> Result<(Vec<VmSpec>, Vec<GroupReplicas>), SpecFileError> {
    let defaults = match table.remove("vm_defaults") {
        None => toml::Table::new(),
        Some(toml::Value::Table(t)) => t,
        Some(_) => return Err(SpecFileError::Toml("vm_defaults: expected a table".into())),
    };
    if defaults.contains_key("name") || defaults.contains_key("group") {
        return Err(SpecFileError::Toml(
            "vm_defaults: every VM names itself (and its group): name and group are refused here"
                .into(),
        ));
    }
    let mut specs = Vec::new();
    for (i, vm) in array_of("vm", table.remove("vm"))?.into_iter().enumerate() {
        specs.push(spec_of(&format!("vm[{i}]"), with_defaults(&defaults, vm))?);
    }
    let mut groups = Vec::new();
    for (i, group) in array_of("vm_group", table.remove("vm_group"))?
        .into_iter()
        .enumerate()
    {
        let (name, replicas, members) = expand_group(i, &defaults, group)?;
        if groups.iter().any(|(n, _)| *n == name) {
            return Err(SpecFileError::Duplicate {
                kind: "vm_group",
                name,
            });
        }
        groups.push((name, replicas));
        specs.extend(members);
    }
    Ok((specs, groups))
}

/// Reads a fleet file: `[[pool]]`, `[[vmid_range]]`, `[[vip]]` and `[[vm]]` tables,
/// `[settings]`, and the `[vm_defaults]` and `[[vm_group]]`s that expand into VMs
/// ([`super::GroupMember`]).
pub fn parse_fleet_file(text: &str) -> Result<FleetSpecFile, SpecFileError> {
    let toml_err = |e: toml::de::Error| SpecFileError::Toml(e.to_string());
    let mut table: toml::Table = text.parse().map_err(toml_err)?;
    let file = if table.contains_key("vm_defaults") || table.contains_key("vm_group") {
        let (vms, groups) = expand_vms(&mut table)?;
        let mut file: FleetSpecFile = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| SpecFileError::Toml(e.message().trim().to_string()))?;
        file.vm = vms;
        file.groups = groups;
        file
    } else {
        toml::from_str(text).map_err(toml_err)?
    };
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

/// The tables of array `key` (absent: none).
fn array_of(key: &str, value: Option<toml::Value>) -> Result<Vec<toml::Table>, SpecFileError> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let toml::Value::Array(items) = value else {
        return Err(SpecFileError::Toml(format!(
            "{key}: expected [[{key}]] tables"
        )));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            toml::Value::Table(t) => Ok(t),
            _ => Err(SpecFileError::Toml(format!("{key}[{i}]: expected a table"))),
        })
        .collect()
}

/// `entry` over `defaults`: a key the entry gives replaces the default's whole.
fn with_defaults(defaults: &toml::Table, entry: toml::Table) -> toml::Table {
    let mut out = defaults.clone();
    out.extend(entry);
    out
}

/// The VM spec of a table, or an error naming `at`.
fn spec_of(at: &str, table: toml::Table) -> Result<VmSpec, SpecFileError> {
    toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| SpecFileError::Toml(format!("{at}: {}", e.message().trim())))
}

/// Group `i`'s name, replicas and members.
fn expand_group(
    i: usize,
    defaults: &toml::Table,
    mut group: toml::Table,
) -> Result<(String, u32, Vec<VmSpec>), SpecFileError> {
    let at = |key: &str| format!("vm_group[{i}].{key}");
    let invalid = |e: SpecError| SpecFileError::Invalid(e.within(&format!("vm_group[{i}]")));
    let name = match group.remove("name") {
        Some(toml::Value::String(n)) => n,
        _ => {
            return Err(SpecFileError::Toml(format!(
                "{}: every group needs a name (a DNS label)",
                at("name")
            )));
        }
    };
    check("name", &name, &rules::DNS_LABEL).map_err(invalid)?;
    let replicas = match group.remove("replicas") {
        Some(toml::Value::Integer(n)) => u32::try_from(n).ok().filter(|n| *n <= MAX_REPLICAS),
        _ => None,
    }
    .ok_or_else(|| {
        SpecFileError::Toml(format!(
            "{}: the number of members, an integer 0-{MAX_REPLICAS}",
            at("replicas")
        ))
    })?;
    let pattern = match group.remove("name_pattern") {
        None => format!("{name}-{INDEX_PLACEHOLDER}"),
        Some(toml::Value::String(p)) if p.contains(INDEX_PLACEHOLDER) => p,
        Some(other) => {
            return Err(SpecFileError::Toml(format!(
                "{}: {other} is not a VM name with {INDEX_PLACEHOLDER} for the member's number \
                 (web-{INDEX_PLACEHOLDER})",
                at("name_pattern")
            )));
        }
    };
    let spread = match group.remove("spread") {
        None => true,
        Some(toml::Value::Boolean(b)) => b,
        Some(other) => {
            return Err(SpecFileError::Toml(format!(
                "{}: {other} is not true or false",
                at("spread")
            )));
        }
    };
    let mut members = Vec::new();
    for index in 1..=replicas {
        let mut table = with_defaults(defaults, group.clone());
        table.insert("name".into(), GroupMember::name_of(&pattern, index).into());
        let mut spec = spec_of(&format!("vm_group[{i}]"), table)?;
        spec.group = Some(GroupMember {
            group: name.clone(),
            index,
            pattern: pattern.clone(),
            spread,
        });
        validate_spec(&spec).map_err(invalid)?;
        members.push(spec);
    }
    Ok((name, replicas, members))
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
