//! PVE's own HA resources, as `/etc/pve/ha/resources.cfg` holds them: what a test configures
//! with [`crate::Sim::set_ha_resources`] (or `PUT /_sim/ha/resources`) to put a guest under
//! PVE's HA manager, and what `GET /cluster/ha/resources[/{sid}]` reads back.
//!
//! The simulator runs no HA manager: a resource only records that PVE would manage the guest
//! (and makes `destroy` without `purge` refuse it, as PVE does). Texts follow
//! `PVE::HA::Config::parse_sid`, `PVE::HA::Resources::PVEVM` and the section config writer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha1::{Digest, Sha1};

/// Requested state of an HA resource (`state`; PVE's default is `started`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HaState {
    /// The manager keeps the guest running.
    Started,
    /// The manager keeps the guest stopped.
    Stopped,
    /// Alias of `started`.
    Enabled,
    /// The guest is stopped and not relocated.
    Disabled,
    /// The manager leaves the guest alone.
    Ignored,
}

impl HaState {
    /// The value as `resources.cfg` and the API spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Stopped => "stopped",
            Self::Enabled => "enabled",
            Self::Disabled => "disabled",
            Self::Ignored => "ignored",
        }
    }
}

/// One HA resource as configured (the options PVE 9 knows for a `vm` resource).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaResource {
    /// Resource id `vm:<vmid>`; a bare VMID (`100`) names that VM if it exists.
    pub sid: String,
    /// Resource type; when given it must match the sid's (`vm`). Filled in on the way in.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Requested state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<HaState>,
    /// HA group (deprecated in PVE 9 in favour of rules, still accepted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Restart tries on the node after a failed start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_restart: Option<u32>,
    /// Relocation tries after a failed start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_relocate: Option<u32>,
    /// Move back to the preferred node when it comes back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failback: Option<bool>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Why an HA resource id or configuration is refused (PVE's die texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HaError {
    /// Neither `type:name` nor a VMID.
    #[error("unable to parse service id '{0}'")]
    UnparsableSid(String),
    /// A bare VMID that names no guest.
    #[error("unable do detect SID from VMID - VM/CT {0} does not exist")]
    UnknownVmid(String),
    /// A resource type other than `vm` (the simulator has no containers).
    #[error("unknown section type '{0}'")]
    UnknownType(String),
    /// The name of a `vm` resource is no VMID.
    #[error("invalid VMID")]
    InvalidVmid,
    /// `type` given and not the sid's.
    #[error("types does not match")]
    TypeMismatch,
    /// The same sid twice.
    #[error("resource ID '{0}' already defined")]
    Duplicate(String),
    /// A group name that is no `pve-configid`.
    #[error("invalid configuration ID '{0}'")]
    InvalidGroup(String),
    /// No resource with this sid.
    #[error("no such resource '{0}'")]
    NoSuchResource(String),
}

/// `PVE::HA::Config::parse_sid`: the full sid, its type and its name. A bare VMID becomes
/// `vm:<vmid>` when `vm_exists` says the VM exists.
pub(crate) fn parse_sid(
    sid: &str,
    vm_exists: impl Fn(u32) -> bool,
) -> Result<(String, String, String), HaError> {
    if !sid.is_empty() && sid.chars().all(|c| c.is_ascii_digit()) {
        return match sid.parse::<u32>() {
            Ok(id) if vm_exists(id) => Ok((format!("vm:{sid}"), "vm".into(), sid.into())),
            _ => Err(HaError::UnknownVmid(sid.into())),
        };
    }
    match sid.split_once(':') {
        Some((kind, name))
            if !kind.is_empty() && !name.is_empty() && !sid.chars().any(char::is_whitespace) =>
        {
            Ok((sid.to_string(), kind.to_string(), name.to_string()))
        }
        _ => Err(HaError::UnparsableSid(sid.into())),
    }
}

/// `pve-configid`: a letter, then letters, digits, `_` or `-`.
fn is_config_id(v: &str) -> bool {
    let mut chars = v.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && v.len() >= 2
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Check and normalize a whole `resources.cfg` (sid made full, `type` filled in), keyed by sid.
pub(crate) fn normalize(
    list: Vec<HaResource>,
    vm_exists: impl Fn(u32) -> bool,
) -> Result<BTreeMap<String, HaResource>, HaError> {
    let mut out = BTreeMap::new();
    for mut res in list {
        let (sid, kind, name) = parse_sid(&res.sid, &vm_exists)?;
        if kind != "vm" {
            return Err(HaError::UnknownType(kind));
        }
        let first = name.chars().next();
        if !(name.chars().all(|c| c.is_ascii_digit()) && name.len() >= 2 && first != Some('0')) {
            return Err(HaError::InvalidVmid);
        }
        if res.kind.as_deref().is_some_and(|k| k != kind) {
            return Err(HaError::TypeMismatch);
        }
        if let Some(group) = res.group.as_deref().filter(|g| !is_config_id(g)) {
            return Err(HaError::InvalidGroup(group.to_string()));
        }
        res.sid = sid.clone();
        res.kind = Some(kind);
        if out.insert(sid.clone(), res).is_some() {
            return Err(HaError::Duplicate(sid));
        }
    }
    Ok(out)
}

/// The options of a resource other than the comment, as `name → value`, in key order.
fn options(res: &HaResource) -> BTreeMap<&'static str, Value> {
    let mut o = BTreeMap::new();
    if let Some(f) = res.failback {
        o.insert("failback", Value::from(u8::from(f)));
    }
    if let Some(g) = &res.group {
        o.insert("group", Value::from(g.as_str()));
    }
    if let Some(n) = res.max_relocate {
        o.insert("max_relocate", Value::from(n));
    }
    if let Some(n) = res.max_restart {
        o.insert("max_restart", Value::from(n));
    }
    if let Some(s) = res.state {
        o.insert("state", Value::from(s.as_str()));
    }
    o
}

/// The file as `SectionConfig::write_config` writes it: `vm: 100`, the comment first, then the
/// other options sorted, each `\t<key> <value>`, and a blank line after each section.
pub(crate) fn render(resources: &BTreeMap<String, HaResource>) -> String {
    let mut out = String::new();
    for (sid, res) in resources {
        let (kind, name) = sid.split_once(':').unwrap_or(("vm", sid));
        out.push_str(&format!("{kind}: {name}\n"));
        if let Some(c) = res.comment.as_deref().filter(|c| !c.is_empty()) {
            out.push_str(&format!("\tcomment {c}\n"));
        }
        for (k, v) in options(res) {
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            out.push_str(&format!("\t{k} {text}\n"));
        }
        out.push('\n');
    }
    out
}

/// SHA1 hex of the rendered file (the `digest` every entry carries).
pub(crate) fn digest(resources: &BTreeMap<String, HaResource>) -> String {
    hex::encode(Sha1::digest(render(resources).as_bytes()))
}

/// One entry as the API returns it (`api_copy_config`): the options plus `sid`, `type` and
/// the file's `digest`.
pub(crate) fn api_entry(res: &HaResource, digest: &str) -> Value {
    let mut o = Map::new();
    o.insert("sid".into(), Value::from(res.sid.as_str()));
    o.insert(
        "type".into(),
        Value::from(res.kind.as_deref().unwrap_or("vm")),
    );
    o.insert("digest".into(), Value::from(digest));
    if let Some(c) = &res.comment {
        o.insert("comment".into(), Value::from(c.as_str()));
    }
    for (k, v) in options(res) {
        o.insert(k.into(), v);
    }
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(sid: &str) -> HaResource {
        HaResource {
            sid: sid.into(),
            ..HaResource::default()
        }
    }

    #[test]
    fn sids_parse_as_pve_parses_them() {
        let exists = |id: u32| id == 100;
        assert_eq!(
            parse_sid("100", exists).unwrap(),
            ("vm:100".into(), "vm".into(), "100".into())
        );
        assert_eq!(
            parse_sid("101", exists).unwrap_err().to_string(),
            "unable do detect SID from VMID - VM/CT 101 does not exist"
        );
        assert_eq!(parse_sid("ct:200", exists).unwrap().1, "ct");
        assert_eq!(
            parse_sid("vm100", exists).unwrap_err().to_string(),
            "unable to parse service id 'vm100'"
        );
    }

    #[test]
    fn normalize_fills_in_and_refuses() {
        let mut r = vm("100");
        r.state = Some(HaState::Started);
        let got = normalize(vec![r, vm("vm:101")], |id| id == 100).unwrap();
        assert_eq!(got["vm:100"].kind.as_deref(), Some("vm"));
        assert_eq!(got["vm:100"].state, Some(HaState::Started));
        assert!(got.contains_key("vm:101"));
        let e = |list: Vec<HaResource>| normalize(list, |_| true).unwrap_err().to_string();
        assert_eq!(e(vec![vm("ct:100")]), "unknown section type 'ct'");
        assert_eq!(e(vec![vm("vm:abc")]), "invalid VMID");
        assert_eq!(
            e(vec![vm("vm:100"), vm("100")]),
            "resource ID 'vm:100' already defined"
        );
        let mut typed = vm("vm:100");
        typed.kind = Some("ct".into());
        assert_eq!(e(vec![typed]), "types does not match");
        let mut grouped = vm("vm:100");
        grouped.group = Some("1x".into());
        assert_eq!(e(vec![grouped]), "invalid configuration ID '1x'");
    }

    #[test]
    fn the_file_and_entries_look_like_pves() {
        let mut r = vm("vm:100");
        r.state = Some(HaState::Started);
        r.max_restart = Some(1);
        r.comment = Some("web".into());
        r.failback = Some(false);
        let cfg = normalize(vec![r], |_| true).unwrap();
        assert_eq!(
            render(&cfg),
            "vm: 100\n\tcomment web\n\tfailback 0\n\tmax_restart 1\n\tstate started\n\n"
        );
        let d = digest(&cfg);
        assert_eq!(d.len(), 40);
        let e = api_entry(&cfg["vm:100"], &d);
        assert_eq!(e["sid"], "vm:100");
        assert_eq!(e["type"], "vm");
        assert_eq!(e["state"], "started");
        assert_eq!(e["failback"], 0);
        assert_eq!(e["digest"], d.as_str());
        assert!(e.get("group").is_none());
    }
}
