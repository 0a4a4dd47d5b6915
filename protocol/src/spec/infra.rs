//! The fleet resources VMs draw from: IP pools, VMID ranges and virtual IPs, each with its
//! validation (same [`SpecError`] shape as VM specs). Overlaps between resources are checked by
//! the state machine, which sees them all.

use serde::{Deserialize, Serialize};

use super::rules;
use super::validate::{check, ip, within};
use super::vip_check::{VipCheck, validate_check};
use super::{Cidr, Labels, SpecError};

/// A pool of addresses the fleet hands out to VM NICs (`ip = { pool = "lan" }`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpPoolSpec {
    /// The pool's name (a DNS label).
    pub name: String,
    /// The subnet, host bits zero: `10.0.0.0/24`.
    pub cidr: String,
    /// The default gateway written to guests; never handed out.
    #[serde(default)]
    pub gateway: Option<String>,
    /// First address handed out.
    pub range_start: String,
    /// Last address handed out (inclusive).
    pub range_end: String,
    /// DNS servers written to guests that do not set their own (at most 3).
    #[serde(default)]
    pub dns: Vec<String>,
}

/// A range of PVE VMIDs the fleet allocates from (lowest free first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmidRangeSpec {
    /// The range's name (a DNS label).
    pub name: String,
    /// First VMID (at least 100, PVE's minimum).
    pub start: u32,
    /// Last VMID (inclusive, at most 999999999).
    pub end: u32,
}

/// A virtual IP held by exactly one eligible host at a time (docs/design/vips.md).
///
/// Encoding v2 added `labels`, `preempt`, `preempt_delay_secs` and `check`; the v1 layout is
/// [`super::VipSpecV1`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VipSpec {
    /// The VIP's name (a DNS label).
    pub name: String,
    /// The address with its prefix length: `10.0.0.10/24`.
    pub address: String,
    /// The host interface (usually a bridge, or a VLAN interface such as `vmbr0.100`) the
    /// address is added to.
    pub interface: String,
    /// Eligible hosts by name, preferred first; empty = every host (the lowest id preferred).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Labels an eligible host must carry, every one of them (with `hosts`: both must hold).
    #[serde(default)]
    pub labels: Labels,
    /// Whether a host preferred over the owner takes the VIP back once it has been eligible
    /// for `preempt_delay_secs`. Off by default, so a VIP does not bounce.
    #[serde(default)]
    pub preempt: bool,
    /// Seconds a preferred host must stay eligible before it preempts (0 to 86400).
    #[serde(default = "default_preempt_delay_secs")]
    pub preempt_delay_secs: u64,
    /// Health checks every eligible host runs; all must be up for it to hold the VIP.
    #[serde(default, rename = "check")]
    pub checks: Vec<VipCheck>,
}

/// The default preemption delay: long enough that a host coming back is stable.
pub const DEFAULT_PREEMPT_DELAY_SECS: u64 = 30;

fn default_preempt_delay_secs() -> u64 {
    DEFAULT_PREEMPT_DELAY_SECS
}

/// At most this many checks per VIP.
pub const MAX_VIP_CHECKS: usize = 8;

/// A parsed, validated pool: what allocation works with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolBounds {
    /// The subnet.
    pub cidr: Cidr,
    /// The gateway, if any.
    pub gateway: Option<std::net::IpAddr>,
    /// First address handed out.
    pub start: std::net::IpAddr,
    /// Last address handed out.
    pub end: std::net::IpAddr,
}

impl IpPoolSpec {
    /// The pool's subnet, gateway and range, parsed; the pool must be valid.
    pub fn bounds(&self) -> Result<PoolBounds, SpecError> {
        let cidr: Cidr = self.cidr.parse().map_err(|_| {
            SpecError::text(
                "cidr",
                &self.cidr,
                "a subnet in CIDR form, e.g. 10.0.0.0/24 or fd00::/64",
            )
        })?;
        if !cidr.is_network() {
            return Err(SpecError::text(
                "cidr",
                &self.cidr,
                format!(
                    "the network address with host bits zero: {}/{}",
                    cidr.network(),
                    cidr.prefix_len()
                ),
            ));
        }
        let inside = |field: &str, text: &str| -> Result<std::net::IpAddr, SpecError> {
            let addr = ip(field, text)?;
            if !cidr.contains(addr) || cidr.is_reserved(addr) {
                return Err(SpecError::text(
                    field,
                    text,
                    format!("a host address inside {cidr} (not its network or broadcast address)"),
                ));
            }
            Ok(addr)
        };
        let gateway = match &self.gateway {
            Some(gw) => Some(inside("gateway", gw)?),
            None => None,
        };
        let start = inside("range_start", &self.range_start)?;
        let end = inside("range_end", &self.range_end)?;
        if end < start {
            return Err(SpecError::text(
                "range_end",
                &self.range_end,
                format!("an address not below range_start ({start})"),
            ));
        }
        Ok(PoolBounds {
            cidr,
            gateway,
            start,
            end,
        })
    }
}

/// Checks the holder named for a directly allocated address (`pvefleet alloc ip POOL OWNER`):
/// 1-128 characters of printable text. The state machine bounds the length; control characters
/// are refused here, before the log, because an owner is shown in tables and events.
pub fn validate_ip_owner(owner: &str) -> Result<(), SpecError> {
    let printable = !owner.chars().any(char::is_control);
    if (1..=128).contains(&owner.len()) && printable {
        Ok(())
    } else {
        Err(SpecError::text(
            "owner",
            owner,
            "1-128 characters naming the holder, without control characters",
        ))
    }
}

/// Checks an IP pool definition.
pub fn validate_ip_pool(pool: &IpPoolSpec) -> Result<(), SpecError> {
    check("name", &pool.name, &rules::DNS_LABEL)?;
    pool.bounds()?;
    if pool.dns.len() > 3 {
        return Err(SpecError::new(
            "dns",
            pool.dns.len(),
            "at most 3 servers (resolv.conf uses only three)",
        ));
    }
    for (i, server) in pool.dns.iter().enumerate() {
        ip(format!("dns[{i}]"), server)?;
    }
    Ok(())
}

/// Checks a VMID range definition.
pub fn validate_vmid_range(range: &VmidRangeSpec) -> Result<(), SpecError> {
    check("name", &range.name, &rules::DNS_LABEL)?;
    within("start", range.start, 100, 999_999_999)?;
    within("end", range.end, range.start, 999_999_999)
}

impl VipSpec {
    /// The VIP's address and prefix, parsed.
    pub fn cidr(&self) -> Result<Cidr, SpecError> {
        let cidr: Cidr = self.address.parse().map_err(|_| {
            SpecError::text(
                "address",
                &self.address,
                "an address with its prefix length, e.g. 10.0.0.10/24",
            )
        })?;
        if cidr.is_reserved(cidr.address()) || (cidr.is_network() && cidr.prefix_len() < 31) {
            return Err(SpecError::text(
                "address",
                &self.address,
                "a host address (not the network or broadcast address of its prefix)",
            ));
        }
        Ok(cidr)
    }
}

/// Checks a VIP definition.
pub fn validate_vip(vip: &VipSpec) -> Result<(), SpecError> {
    check("name", &vip.name, &rules::DNS_LABEL)?;
    vip.cidr()?;
    check("interface", &vip.interface, &rules::INTERFACE)?;
    for (i, host) in vip.hosts.iter().enumerate() {
        check(format!("hosts[{i}]"), host, &rules::HOST_NAME)?;
        if vip.hosts[..i].iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return Err(SpecError::text(
                format!("hosts[{i}]"),
                host,
                "each host once",
            ));
        }
    }
    for (key, value) in &vip.labels {
        check("labels", key, &rules::LABEL_KEY)?;
        check(format!("labels.{key}"), value, &rules::LABEL_VALUE)?;
    }
    within("preempt_delay_secs", vip.preempt_delay_secs, 0, 86_400)?;
    if vip.checks.len() > MAX_VIP_CHECKS {
        return Err(SpecError::new(
            "check",
            format_args!("{} checks", vip.checks.len()),
            format!("at most {MAX_VIP_CHECKS} checks"),
        ));
    }
    for (i, c) in vip.checks.iter().enumerate() {
        validate_check(c).map_err(|e| e.within(&format!("check[{i}]")))?;
    }
    Ok(())
}

impl VipSpec {
    /// Whether a host named `name` with `labels` may hold this VIP, and its preference
    /// (higher wins): its place in `hosts`, 0 for every host when the list is empty.
    pub fn admits(&self, name: &str, labels: &Labels) -> Option<u32> {
        let labelled = self.labels.iter().all(|(k, v)| labels.get(k) == Some(v));
        if !labelled {
            return None;
        }
        if self.hosts.is_empty() {
            return Some(0);
        }
        let at = self
            .hosts
            .iter()
            .position(|h| h.eq_ignore_ascii_case(name))?;
        u32::try_from(self.hosts.len() - at).ok()
    }
}
