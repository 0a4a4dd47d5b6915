//! Checks a [`VmSpec`] before it is proposed: the first bad field is reported with its path
//! (`nics[0].vlan`), the value as written and what is allowed. References to other resources
//! (pools, ranges) are checked by the state machine, which knows them.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::description;
use super::ha::{HaState, MAX_HA_TRIES};
use super::rules::{self, Rule};
use super::vm_group::{GroupMember, INDEX_PLACEHOLDER, MAX_REPLICAS};
use super::{
    Cidr, CloudInitSpec, DesiredState, DiskSpec, NicIp, NicModel, NicSpec, Placement, VmSpec,
};

/// A refused field: where it is, what was written, and what would be accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{field} = {value} is not allowed: expected {allowed}")]
pub struct SpecError {
    /// The field's path, e.g. `nics[0].vlan`.
    pub field: String,
    /// The value as written (text quoted).
    pub value: String,
    /// What the field accepts.
    pub allowed: String,
}

impl SpecError {
    /// An error for a field whose value is shown as is (numbers, lists).
    pub fn new(
        field: impl Into<String>,
        value: impl fmt::Display,
        allowed: impl Into<String>,
    ) -> Self {
        SpecError {
            field: field.into(),
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }

    /// An error for a text field (the value is shown quoted).
    pub fn text(field: impl Into<String>, value: &str, allowed: impl Into<String>) -> Self {
        SpecError::new(field, format_args!("{value:?}"), allowed)
    }

    /// The same error, its field placed under `prefix` (e.g. `vm[2]`).
    pub fn within(self, prefix: &str) -> Self {
        SpecError {
            field: format!("{prefix}.{}", self.field),
            ..self
        }
    }
}

pub(crate) fn check(field: impl Into<String>, value: &str, rule: &Rule) -> Result<(), SpecError> {
    if (rule.check)(value) {
        Ok(())
    } else {
        Err(SpecError::text(field, value, rule.allowed))
    }
}

pub(crate) fn within<T: PartialOrd + fmt::Display>(
    field: impl Into<String>,
    value: T,
    lo: T,
    hi: T,
) -> Result<(), SpecError> {
    if lo <= value && value <= hi {
        Ok(())
    } else {
        Err(SpecError::new(
            field,
            &value,
            format!("an integer {lo}-{hi}"),
        ))
    }
}

pub(crate) fn ip(field: impl Into<String>, value: &str) -> Result<IpAddr, SpecError> {
    value
        .parse()
        .map_err(|_| SpecError::text(field, value, "an IPv4 or IPv6 address"))
}

/// Cloud-init user data limit: large enough for real configs, small enough for the Raft log.
const MAX_USER_DATA: usize = 65536;
const USER_DATA_HEADERS: [&str; 6] = [
    "#cloud-config",
    "#!",
    "#include",
    "#cloud-boothook",
    "## template: jinja",
    "Content-Type:",
];

/// Checks every field of a VM spec; the first refused field is returned.
pub fn validate_spec(spec: &VmSpec) -> Result<(), SpecError> {
    check("name", &spec.name, &rules::DNS_LABEL)?;
    if let Some(r) = description::refusal(&spec.description) {
        return Err(SpecError::new("description", r.shown, r.allowed));
    }
    unique_texts("tags", &spec.tags, &rules::TAG)?;
    within("cores", spec.cores, 1, 256)?;
    within("sockets", spec.sockets, 1, 16)?;
    let vcpus = u64::from(spec.cores) * u64::from(spec.sockets);
    if vcpus > 512 {
        return Err(SpecError::new(
            "cores",
            spec.cores,
            format!(
                "at most 512 vCPUs in all (cores x sockets; sockets = {})",
                spec.sockets
            ),
        ));
    }
    within("memory_mib", spec.memory_mib, 16, 4 * 1024 * 1024)?;
    if let Some(balloon) = spec.balloon_mib
        && balloon != 0
        && !(16..=spec.memory_mib).contains(&balloon)
    {
        return Err(SpecError::new(
            "balloon_mib",
            balloon,
            format!(
                "0 (no ballooning) or 16-{} (at most memory_mib)",
                spec.memory_mib
            ),
        ));
    }
    if let Some(cpu) = &spec.cpu {
        check("cpu", cpu, &rules::CPU_MODEL)?;
    }
    if let Some(machine) = &spec.machine {
        check("machine", machine, &rules::MACHINE)?;
    }
    template(spec)?;
    disks(spec)?;
    nics(spec)?;
    if let Some(ci) = &spec.cloud_init {
        cloud_init(ci)?;
    }
    placement(&spec.placement)?;
    ha(spec)?;
    if let Some(range) = &spec.vmid_range {
        check("vmid_range", range, &rules::DNS_LABEL)?;
    }
    group_member(spec)?;
    Ok(())
}

fn unique_texts(field: &str, values: &[String], rule: &Rule) -> Result<(), SpecError> {
    let mut seen = BTreeSet::new();
    for (i, v) in values.iter().enumerate() {
        check(format!("{field}[{i}]"), v, rule)?;
        if !seen.insert(v) {
            return Err(SpecError::text(
                format!("{field}[{i}]"),
                v,
                "each value once",
            ));
        }
    }
    Ok(())
}

fn template(spec: &VmSpec) -> Result<(), SpecError> {
    let Some(t) = &spec.template else {
        return Ok(());
    };
    match (&t.name, t.vmid) {
        (Some(name), None) => check("template.name", name, &rules::DNS_NAME)?,
        (None, Some(vmid)) => within("template.vmid", vmid, 100, 999_999_999)?,
        (Some(_), Some(vmid)) => {
            return Err(SpecError::new(
                "template.vmid",
                vmid,
                "exactly one of template.name and template.vmid (both are set)",
            ));
        }
        (None, None) => {
            return Err(SpecError::new(
                "template",
                "{}",
                "exactly one of template.name and template.vmid",
            ));
        }
    }
    if let Some(storage) = &t.storage {
        if t.clone == super::CloneMode::Linked {
            return Err(SpecError::text(
                "template.storage",
                storage,
                "no target storage for clone = \"linked\" (a linked clone stays on the template's storage); use clone = \"full\"",
            ));
        }
        check("template.storage", storage, &rules::STORAGE_ID)?;
    }
    Ok(())
}

fn disks(spec: &VmSpec) -> Result<(), SpecError> {
    let mut slots = BTreeSet::new();
    for (i, d) in spec.disks.iter().enumerate() {
        disk(spec, i, d)?;
        if !slots.insert(d.slot.as_str()) {
            return Err(SpecError::text(
                format!("disks[{i}].slot"),
                &d.slot,
                "each slot once",
            ));
        }
    }
    Ok(())
}

fn disk(spec: &VmSpec, i: usize, d: &DiskSpec) -> Result<(), SpecError> {
    let field = |name: &str| format!("disks[{i}].{name}");
    check(field("slot"), &d.slot, &rules::DISK_SLOT)?;
    if spec.cloud_init.is_some() && d.slot == "ide2" {
        return Err(SpecError::text(
            field("slot"),
            &d.slot,
            "any slot but ide2, which holds the cloud-init drive",
        ));
    }
    match &d.storage {
        Some(storage) => check(field("storage"), storage, &rules::STORAGE_ID)?,
        None if spec.template.is_none() => {
            return Err(SpecError::new(
                field("storage"),
                "(none)",
                "a storage id: required for a disk of a VM not cloned from a template",
            ));
        }
        None => {}
    }
    within(field("size_gib"), d.size_gib, 1, 65536)
}

fn nics(spec: &VmSpec) -> Result<(), SpecError> {
    if spec.nics.len() > 32 {
        return Err(SpecError::new(
            "nics",
            spec.nics.len(),
            "at most 32 NICs (net0-net31)",
        ));
    }
    let mut macs = BTreeSet::new();
    for (i, n) in spec.nics.iter().enumerate() {
        nic(spec, i, n)?;
        if let Some(mac) = &n.mac
            && !macs.insert(mac.to_ascii_uppercase())
        {
            return Err(SpecError::text(
                format!("nics[{i}].mac"),
                mac,
                "a MAC address used once",
            ));
        }
    }
    Ok(())
}

fn nic(spec: &VmSpec, i: usize, n: &NicSpec) -> Result<(), SpecError> {
    let field = |name: &str| format!("nics[{i}].{name}");
    check(field("bridge"), &n.bridge, &rules::INTERFACE)?;
    if let Some(vlan) = n.vlan {
        within(field("vlan"), vlan, 1, 4094)?;
    }
    if let Some(mac) = &n.mac {
        check(field("mac"), mac, &rules::MAC)?;
    }
    if let Some(mtu) = n.mtu {
        if n.model != NicModel::Virtio {
            return Err(SpecError::new(
                field("mtu"),
                mtu,
                "no MTU: PVE sets it on VirtIO NICs only",
            ));
        }
        within(field("mtu"), mtu, 1, 65520)?;
    }
    let Some(ip_spec) = &n.ip else {
        return Ok(());
    };
    if spec.cloud_init.is_none() {
        return Err(SpecError::new(
            field("ip"),
            ip_text(ip_spec),
            "an ip only with a [cloud_init] section (addresses are written as cloud-init ipconfig)",
        ));
    }
    match ip_spec {
        NicIp::Dhcp => Ok(()),
        NicIp::Pool(pool) => check(field("ip.pool"), pool, &rules::DNS_LABEL),
        NicIp::Static { address, gateway } => {
            let cidr: Cidr = address.parse().map_err(|_| {
                SpecError::text(
                    field("ip.static.address"),
                    address,
                    "an address with its prefix length, e.g. 10.0.0.5/24",
                )
            })?;
            if cidr.is_reserved(cidr.address()) || (cidr.is_network() && cidr.prefix_len() < 31) {
                return Err(SpecError::text(
                    field("ip.static.address"),
                    address,
                    "a host address (not the network or broadcast address of its prefix)",
                ));
            }
            if let Some(gw) = gateway {
                let gw_ip = ip(field("ip.static.gateway"), gw)?;
                if !cidr.contains(gw_ip) || gw_ip == cidr.address() {
                    return Err(SpecError::text(
                        field("ip.static.gateway"),
                        gw,
                        format!(
                            "another address inside {}/{}",
                            cidr.network(),
                            cidr.prefix_len()
                        ),
                    ));
                }
            }
            Ok(())
        }
    }
}

fn ip_text(ip: &NicIp) -> String {
    match ip {
        NicIp::Dhcp => "\"dhcp\"".to_string(),
        NicIp::Pool(p) => format!("{{ pool = {p:?} }}"),
        NicIp::Static { address, .. } => format!("{{ static = {{ address = {address:?} }} }}"),
    }
}

fn cloud_init(ci: &CloudInitSpec) -> Result<(), SpecError> {
    if let Some(user) = &ci.user {
        check("cloud_init.user", user, &rules::UNIX_USER)?;
    }
    for (i, key) in ci.ssh_keys.iter().enumerate() {
        check(format!("cloud_init.ssh_keys[{i}]"), key, &rules::SSH_KEY)?;
    }
    if ci.dns_servers.len() > 3 {
        return Err(SpecError::new(
            "cloud_init.dns_servers",
            ci.dns_servers.len(),
            "at most 3 servers (resolv.conf uses only three)",
        ));
    }
    for (i, server) in ci.dns_servers.iter().enumerate() {
        ip(format!("cloud_init.dns_servers[{i}]"), server)?;
    }
    if let Some(domain) = &ci.search_domain {
        check("cloud_init.search_domain", domain, &rules::DNS_NAME)?;
    }
    if let Some(data) = &ci.user_data {
        let known = USER_DATA_HEADERS.iter().any(|h| data.starts_with(h));
        if data.len() > MAX_USER_DATA || !known {
            let first_line = data.lines().next().unwrap_or("");
            return Err(SpecError::new(
                "cloud_init.user_data",
                format_args!("{first_line:?}... ({} bytes)", data.len()),
                format!(
                    "at most {MAX_USER_DATA} bytes starting with one of {}",
                    USER_DATA_HEADERS.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn placement(p: &Placement) -> Result<(), SpecError> {
    unique_texts("placement.hosts", &p.hosts, &rules::HOST_NAME)?;
    unique_texts(
        "placement.exclude_hosts",
        &p.exclude_hosts,
        &rules::HOST_NAME,
    )?;
    for (i, host) in p.exclude_hosts.iter().enumerate() {
        if p.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return Err(SpecError::text(
                format!("placement.exclude_hosts[{i}]"),
                host,
                "a host not also listed in placement.hosts",
            ));
        }
    }
    for (key, value) in &p.labels {
        check("placement.labels", key, &rules::LABEL_KEY)?;
        check(
            format!("placement.labels.{key}"),
            value,
            &rules::LABEL_VALUE,
        )?;
    }
    if let Some(na) = &p.node_affinity {
        if na.nodes.is_empty() {
            return Err(SpecError::text(
                "placement.node_affinity.nodes",
                "{}",
                "at least one host with its priority, e.g. { pve-a = 2, pve-b = 1 }",
            ));
        }
        for (host, prio) in &na.nodes {
            check("placement.node_affinity.nodes", host, &rules::HOST_NAME)?;
            within(
                format!("placement.node_affinity.nodes.{host}"),
                *prio,
                0,
                1000,
            )?;
        }
    }
    unique_texts(
        "placement.apart_from",
        &p.apart_from,
        &rules::GUEST_SELECTOR,
    )?;
    unique_texts(
        "placement.together_with",
        &p.together_with,
        &rules::GUEST_SELECTOR,
    )?;
    for (i, s) in p.together_with.iter().enumerate() {
        if p.apart_from.contains(s) {
            return Err(SpecError::text(
                format!("placement.together_with[{i}]"),
                s,
                "a VM or tag not also in placement.apart_from (together and apart at once \
                 cannot be placed)",
            ));
        }
    }
    Ok(())
}

/// The HA settings: bounded retries, and a request that agrees with the desired power (in the
/// fleet, PVE's `started`/`stopped` request *is* the VM's `state`).
fn ha(spec: &VmSpec) -> Result<(), SpecError> {
    if let Some(n) = spec.ha.max_restart {
        within("ha.max_restart", n, 0, MAX_HA_TRIES)?;
    }
    if let Some(n) = spec.ha.max_relocate {
        within("ha.max_relocate", n, 0, MAX_HA_TRIES)?;
    }
    let Some(state) = spec.ha.state else {
        return Ok(());
    };
    let hint = match (state, spec.state) {
        (HaState::Started, DesiredState::Stopped) => {
            "\"stopped\" with state = \"stopped\" (HA's request is the VM's desired power: \
             write ha.state = \"stopped\", or state = \"running\" to run the VM)"
        }
        (HaState::Stopped, DesiredState::Running) => {
            "\"started\" with state = \"running\" (HA's request is the VM's desired power: \
             write ha.state = \"started\", or state = \"stopped\" to keep the VM stopped)"
        }
        (HaState::Disabled, DesiredState::Running) => {
            "\"started\" with state = \"running\" (a disabled VM is kept stopped: write \
             state = \"stopped\", or ha.state = \"started\" to run it under HA)"
        }
        _ => return Ok(()),
    };
    Err(SpecError::text("ha.state", state.as_str(), hint))
}

/// Checks a spec's group membership: a valid group name, a number within the replicas
/// allowed, a pattern with `{n}`, and the VM named by it.
fn group_member(spec: &VmSpec) -> Result<(), SpecError> {
    let Some(g) = &spec.group else {
        return Ok(());
    };
    check("group.group", &g.group, &rules::DNS_LABEL)?;
    within("group.index", g.index, 1, MAX_REPLICAS)?;
    if !g.pattern.contains(INDEX_PLACEHOLDER) {
        return Err(SpecError::text(
            "group.pattern",
            &g.pattern,
            "a VM name with {n} for the member's number (web-{n})",
        ));
    }
    let named = GroupMember::name_of(&g.pattern, g.index);
    if spec.name != named {
        return Err(SpecError::text(
            "name",
            &spec.name,
            format!(
                "{named}: member {} of group {} under {}",
                g.index, g.group, g.pattern
            ),
        ));
    }
    for (i, nic) in spec.nics.iter().enumerate() {
        if let Some(NicIp::Static { .. }) = &nic.ip {
            return Err(SpecError::text(
                format!("nics[{i}].ip"),
                "a fixed address",
                "dhcp or a pool: every member of a group shares the spec",
            ));
        }
    }
    Ok(())
}
