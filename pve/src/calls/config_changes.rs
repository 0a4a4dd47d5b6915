//! [`ConfigChanges`]: the VM settings sent by create (`POST /nodes/{node}/qemu`) and update
//! (`PUT` sync / `POST` async `.../config`), with typed, validated setters for what a fleet
//! sets, `delete`/`revert`/`digest` for updates, and a schema-checked `raw` escape hatch.
//!
//! Setters chain (`ConfigChanges::new().name("web1").cores(2).memory_mib(2048)`); the first
//! invalid value is remembered and returned, naming its field, when a request is built.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::LazyLock;

use regex::Regex;

use crate::calls::config_keys::{Bios, HotplugFeature, OsType, ScsiHw, check_config_key};
use crate::error::PveError;
use crate::props::kv::{self, invalid};
use crate::props::{
    AgentConfig, BootOrder, Disk, DiskBus, IpConfig, NetDevice, check_digest, check_dns_name,
    check_volume_id, format_tags,
};

static MACHINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^(pc|pc(-i440fx)?-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|virt(?:-\d+(\.\d+)+)?(\+pve\d+)?)$").ok()
});
static CPU_TYPE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$").ok());

/// Characters PVE's `urlencoded` format leaves unescaped (`^[-%a-zA-Z0-9_.!~*'()]*$`).
const URLENCODED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// Smallest `memory` PVE accepts (MiB).
pub const MEMORY_MIN_MIB: u64 = 16;

/// A set of VM config changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigChanges {
    set: BTreeMap<String, String>,
    delete: Vec<String>,
    revert: Vec<String>,
    digest: Option<String>,
    skiplock: Option<bool>,
    force: Option<bool>,
    errors: Vec<(String, String)>,
}

impl ConfigChanges {
    /// No changes.
    pub fn new() -> Self {
        Self::default()
    }

    fn put(mut self, key: &str, value: Result<String, PveError>) -> Self {
        match value {
            Ok(v) => {
                self.set.insert(key.to_string(), v);
            }
            Err(e) => self.fail(kv::within(key, e)),
        }
        self
    }

    fn fail(&mut self, err: PveError) {
        let (field, reason) = match err {
            PveError::Invalid { field, reason } => (field, reason),
            other => ("config".to_string(), other.to_string()),
        };
        self.errors.push((field, reason));
    }

    /// VM name (`dns-name`).
    pub fn name(self, name: &str) -> Self {
        self.put(
            "name",
            check_dns_name("name", name).map(|()| name.to_string()),
        )
    }

    /// Cores per socket (≥ 1).
    pub fn cores(self, cores: u32) -> Self {
        self.put(
            "cores",
            kv::check_range("cores", cores, 1, u32::MAX).map(|c| c.to_string()),
        )
    }

    /// Sockets (≥ 1).
    pub fn sockets(self, sockets: u32) -> Self {
        self.put(
            "sockets",
            kv::check_range("sockets", sockets, 1, u32::MAX).map(|c| c.to_string()),
        )
    }

    /// Memory in MiB (≥ 16).
    pub fn memory_mib(self, mib: u64) -> Self {
        self.put(
            "memory",
            kv::check_range("memory", mib, MEMORY_MIN_MIB, u64::MAX).map(|m| m.to_string()),
        )
    }

    /// Balloon target in MiB (0 disables the balloon device; at most `memory`).
    pub fn balloon_mib(self, mib: u64) -> Self {
        self.put("balloon", Ok(mib.to_string()))
    }

    /// CPU type (`host`, `x86-64-v2-AES`, `custom-<name>`).
    pub fn cpu(self, cputype: &str) -> Self {
        let ok = CPU_TYPE.as_ref().is_some_and(|re| re.is_match(cputype)) && cputype.len() <= 64;
        let v = if ok {
            Ok(cputype.to_string())
        } else {
            Err(invalid(
                "cpu",
                format!("'{cputype}' is not a CPU type (letters, digits, '_', '.', '+', '-')"),
            ))
        };
        self.put("cpu", v)
    }

    /// Machine type (`q35`, `pc-i440fx-9.0`, `pc-q35-8.1+pve1`, `virt`).
    pub fn machine(self, machine: &str) -> Self {
        let ok = MACHINE.as_ref().is_some_and(|re| re.is_match(machine)) && machine.len() <= 40;
        let v = if ok {
            Ok(machine.to_string())
        } else {
            Err(invalid(
                "machine",
                format!(
                    "'{machine}' is not a machine type (pc, q35, pc-i440fx-X.Y, pc-q35-X.Y[+pveN], virt)"
                ),
            ))
        };
        self.put("machine", v)
    }

    /// Firmware.
    pub fn bios(self, bios: Bios) -> Self {
        self.put("bios", Ok(bios.to_string()))
    }

    /// SCSI controller.
    pub fn scsihw(self, hw: ScsiHw) -> Self {
        self.put("scsihw", Ok(hw.to_string()))
    }

    /// Guest OS type.
    pub fn ostype(self, os: OsType) -> Self {
        self.put("ostype", Ok(os.to_string()))
    }

    /// `net<n>` (n 0..=31).
    pub fn net(self, n: u8, dev: &NetDevice) -> Self {
        let key = format!("net{n}");
        let v = kv::check_range(&key, n, 0, 31)
            .map_err(|_| {
                invalid(
                    &key,
                    format!("index {n} is out of range; net allows 0..=31"),
                )
            })
            .and_then(|_| dev.to_property_string());
        self.put(&key, v)
    }

    /// A drive on `bus` at index `n` (scsi 0..=30, virtio 0..=15, sata 0..=5, ide 0..=3).
    pub fn disk(self, bus: DiskBus, n: u8, disk: &Disk) -> Self {
        let key = format!("{}{n}", bus.prefix());
        let v = bus.key(n).and_then(|_| {
            if disk.iothread.is_some() && !bus.supports_iothread() {
                return Err(invalid(
                    "iothread",
                    format!("not available on {} (scsi, virtio only)", bus.prefix()),
                ));
            }
            if disk.ssd.is_some() && !bus.supports_ssd() {
                return Err(invalid(
                    "ssd",
                    "not available on virtio (scsi, sata, ide only)",
                ));
            }
            disk.to_property_string()
        });
        self.put(&key, v)
    }

    /// `ipconfig<n>` (n 0..=31), cloud-init addressing of `net<n>`.
    pub fn ipconfig(self, n: u8, cfg: &IpConfig) -> Self {
        let key = format!("ipconfig{n}");
        let v = kv::check_range(&key, n, 0, 31)
            .map_err(|_| {
                invalid(
                    &key,
                    format!("index {n} is out of range; ipconfig allows 0..=31"),
                )
            })
            .and_then(|_| cfg.to_property_string());
        self.put(&key, v)
    }

    /// Guest agent.
    pub fn agent(self, agent: &AgentConfig) -> Self {
        self.put("agent", agent.to_property_string())
    }

    /// Boot order.
    pub fn boot(self, boot: &BootOrder) -> Self {
        self.put("boot", boot.to_property_string())
    }

    /// Start at host boot.
    pub fn onboot(self, on: bool) -> Self {
        self.put("onboot", Ok(flag(on)))
    }

    /// Block removal.
    pub fn protection(self, on: bool) -> Self {
        self.put("protection", Ok(flag(on)))
    }

    /// Tags (validated, sorted, deduplicated).
    pub fn tags<S: AsRef<str>>(self, tags: &[S]) -> Self {
        self.put("tags", format_tags(tags))
    }

    /// Description: any text of at most 8192 characters (PVE's `maxLength`, no pattern), line
    /// breaks and other control characters included, except NUL (see [`Self::raw`]).
    pub fn description(self, text: &str) -> Self {
        let n = text.chars().count();
        let v = if n > 8192 {
            Err(invalid(
                "description",
                format!("{n} characters; at most 8192 allowed"),
            ))
        } else if text.contains('\0') {
            Err(invalid(
                "description",
                "the value contains NUL (\\0), which PVE cannot take",
            ))
        } else {
            Ok(text.to_string())
        };
        self.put("description", v)
    }

    /// Cloud-init user.
    pub fn ciuser(self, user: &str) -> Self {
        let bad = user.is_empty() || user.chars().any(|c| c.is_whitespace() || c.is_control());
        let v = if bad {
            Err(invalid(
                "ciuser",
                format!("'{user}' must be non-empty without whitespace"),
            ))
        } else {
            Ok(user.to_string())
        };
        self.put("ciuser", v)
    }

    /// Cloud-init password (PVE stores it hashed).
    pub fn cipassword(self, password: &str) -> Self {
        let bad = password.is_empty() || password.chars().any(char::is_control);
        let v = if bad {
            Err(invalid(
                "cipassword",
                "must be non-empty without control characters",
            ))
        } else {
            Ok(password.to_string())
        };
        self.put("cipassword", v)
    }

    /// Cloud-init SSH public keys, one per line; sent percent-encoded (`%20`, `%0A`) as PVE's
    /// `urlencoded` format requires.
    pub fn sshkeys(self, keys: &str) -> Self {
        let v = if keys.trim().is_empty() {
            Err(invalid("sshkeys", "no key given"))
        } else {
            Ok(percent_encoding::utf8_percent_encode(keys, URLENCODED).to_string())
        };
        self.put("sshkeys", v)
    }

    /// Cloud-init DNS servers.
    pub fn nameserver(self, servers: &[IpAddr]) -> Self {
        let v = if servers.is_empty() {
            Err(invalid("nameserver", "no address given"))
        } else {
            Ok(servers
                .iter()
                .map(IpAddr::to_string)
                .collect::<Vec<_>>()
                .join(" "))
        };
        self.put("nameserver", v)
    }

    /// Cloud-init DNS search domains.
    pub fn searchdomain<S: AsRef<str>>(self, domains: &[S]) -> Self {
        let v = if domains.is_empty() {
            Err(invalid("searchdomain", "no domain given"))
        } else {
            domains
                .iter()
                .map(|d| check_dns_name("searchdomain", d.as_ref()).map(|()| d.as_ref()))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.join(" "))
        };
        self.put("searchdomain", v)
    }

    /// Custom cloud-init files, `user=local:snippets/u.yaml,network=...` (keys `meta`,
    /// `network`, `user`, `vendor`, values volume ids).
    pub fn cicustom(self, spec: &str) -> Self {
        let v = kv::split("cicustom", spec).and_then(|parts| {
            if parts.is_empty() {
                return Err(invalid("cicustom", "no file given"));
            }
            for (key, value) in parts {
                match key {
                    Some(k @ ("meta" | "network" | "user" | "vendor")) => {
                        check_volume_id(k, value)?
                    }
                    _ => {
                        return Err(invalid(
                            "cicustom",
                            format!("'{spec}': keys are meta, network, user, vendor"),
                        ));
                    }
                }
            }
            Ok(spec.to_string())
        });
        self.put("cicustom", v)
    }

    /// Hotplug features; an empty list disables hotplug (`0`).
    pub fn hotplug(self, features: &[HotplugFeature]) -> Self {
        let mut list: Vec<&str> = features.iter().map(|f| f.as_str()).collect();
        list.dedup();
        let v = if list.is_empty() {
            "0".to_string()
        } else {
            list.join(",")
        };
        self.put("hotplug", Ok(v))
    }

    /// Any schema config key (`numa`, `vga`, `serial0`, `allow-ksm`, ...) with a value this
    /// client does not model. The key is checked against the schema; the value is passed as is.
    pub fn raw(mut self, key: &str, value: &str) -> Self {
        if let Err(e) = check_config_key(key, key) {
            self.fail(e);
            return self;
        }
        if value.is_empty() {
            self.fail(invalid(key, "empty value; use delete() to remove a key"));
            return self;
        }
        // PVE joins repeated parameters with NUL and pvesh passes values as argv, so a NUL
        // cannot reach PVE as part of one value.
        if value.contains('\0') {
            self.fail(invalid(
                key,
                "the value contains NUL (\\0), which PVE cannot take",
            ));
            return self;
        }
        self.set.insert(key.to_string(), value.to_string());
        self
    }

    /// Remove these keys (update only).
    pub fn delete<S: AsRef<str>>(mut self, keys: &[S]) -> Self {
        for k in keys {
            match check_config_key("delete", k.as_ref()) {
                Ok(()) => self.delete.push(k.as_ref().to_string()),
                Err(e) => self.fail(e),
            }
        }
        self
    }

    /// Drop pending changes of these keys (update only).
    pub fn revert<S: AsRef<str>>(mut self, keys: &[S]) -> Self {
        for k in keys {
            match check_config_key("revert", k.as_ref()) {
                Ok(()) => self.revert.push(k.as_ref().to_string()),
                Err(e) => self.fail(e),
            }
        }
        self
    }

    /// Apply only if the config still has this SHA-1 digest (update only).
    pub fn digest(mut self, digest: &str) -> Self {
        match check_digest("digest", digest) {
            Ok(()) => self.digest = Some(digest.to_string()),
            Err(e) => self.fail(e),
        }
        self
    }

    /// Ignore the config lock (update only; root@pam only).
    pub fn skiplock(mut self, on: bool) -> Self {
        self.skiplock = Some(on);
        self
    }

    /// Physically remove disks named in `delete` instead of keeping them as `unused<n>`
    /// (update only).
    pub fn force(mut self, on: bool) -> Self {
        self.force = Some(on);
        self
    }

    /// The value set for `key`, as it will be sent.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.set.get(key).map(String::as_str)
    }

    /// Whether nothing is set, deleted or reverted.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.delete.is_empty() && self.revert.is_empty()
    }

    /// The first update-only part that is set (`delete`, `revert`, `digest`, `skiplock`,
    /// `force`), if any: create refuses them.
    pub fn first_update_control(&self) -> Option<&'static str> {
        if !self.delete.is_empty() {
            Some("delete")
        } else if !self.revert.is_empty() {
            Some("revert")
        } else if self.digest.is_some() {
            Some("digest")
        } else if self.skiplock.is_some() {
            Some("skiplock")
        } else {
            self.force.map(|_| "force")
        }
    }

    /// Check the whole set: the first bad setter value, then cross-key rules.
    pub fn validate(&self) -> Result<(), PveError> {
        if let Some((field, reason)) = self.errors.first() {
            return Err(invalid(field.as_str(), reason.as_str()));
        }
        for key in self.delete.iter().chain(&self.revert) {
            if self.set.contains_key(key) {
                return Err(invalid(key.as_str(), "is both set and deleted/reverted"));
            }
        }
        if let (Some(b), Some(m)) = (self.set.get("balloon"), self.set.get("memory"))
            && let (Ok(b), Ok(m)) = (b.parse::<u64>(), m.parse::<u64>())
            && b > m
        {
            return Err(invalid(
                "balloon",
                format!("{b} MiB is more than memory {m} MiB"),
            ));
        }
        if self.force == Some(true) && self.delete.is_empty() {
            return Err(invalid("force", "only applies together with delete"));
        }
        Ok(())
    }

    /// The parameters: config keys sorted, then `delete`, `revert`, `digest`, `force`, `skiplock`.
    pub fn to_params(&self) -> Result<Vec<(String, String)>, PveError> {
        self.validate()?;
        let mut out: Vec<(String, String)> = self
            .set
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !self.delete.is_empty() {
            out.push(("delete".into(), self.delete.join(",")));
        }
        if !self.revert.is_empty() {
            out.push(("revert".into(), self.revert.join(",")));
        }
        if let Some(d) = &self.digest {
            out.push(("digest".into(), d.clone()));
        }
        if let Some(f) = self.force {
            out.push(("force".into(), flag(f)));
        }
        if let Some(s) = self.skiplock {
            out.push(("skiplock".into(), flag(s)));
        }
        Ok(out)
    }
}

fn flag(on: bool) -> String {
    if on { "1" } else { "0" }.to_string()
}

#[cfg(test)]
#[path = "config_changes_tests.rs"]
mod tests;
