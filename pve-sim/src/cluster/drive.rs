//! Property strings of drive and network keys (`scsi0: local-lvm:vm-100-disk-0,size=32G`,
//! `net0: virtio=BC:24:11:..,bridge=vmbr0`), sizes as PVE prints them (`format_size`) and
//! parses them (resize), and volume ids (`storage:volname`).

use std::collections::BTreeMap;

/// Network card models PVE knows (`pve-qm-net` `model` enum).
const NIC_MODELS: &[&str] = &[
    "e1000",
    "e1000-82540em",
    "e1000-82544gc",
    "e1000-82545em",
    "e1000e",
    "i82551",
    "i82557b",
    "i82559er",
    "ne2k_isa",
    "ne2k_pci",
    "pcnet",
    "rtl8139",
    "virtio",
    "vmxnet3",
];

/// Whether `key` names a drive slot (`ide0-3`, `sata0-5`, `scsi0-30`, `virtio0-15`,
/// `efidisk0`, `tpmstate0`).
pub(super) fn is_drive_key(key: &str) -> bool {
    if key == "efidisk0" || key == "tpmstate0" {
        return true;
    }
    let max = |prefix: &str| -> Option<u32> {
        let rest = key.strip_prefix(prefix)?;
        if rest.is_empty() || (rest.len() > 1 && rest.starts_with('0')) {
            return None;
        }
        rest.parse().ok()
    };
    matches!(max("ide"), Some(0..=3))
        || matches!(max("sata"), Some(0..=5))
        || matches!(max("scsi"), Some(0..=30))
        || matches!(max("virtio"), Some(0..=15))
}

/// Whether `key` is `unused<N>`.
pub(super) fn is_unused_key(key: &str) -> bool {
    key.strip_prefix("unused")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `key` is `net<N>`.
pub(super) fn net_index(key: &str) -> Option<u32> {
    key.strip_prefix("net")?.parse().ok()
}

/// Split `a=b,c=d,head` into the value without a key (the property's default key) and pairs.
fn split_props(value: &str) -> (Option<String>, BTreeMap<String, String>) {
    let mut head = None;
    let mut kv = BTreeMap::new();
    for (i, token) in value.split(',').enumerate() {
        let token = token.trim();
        if token.is_empty() {
            continue;
        }
        match token.split_once('=') {
            Some((k, v)) => {
                kv.insert(k.to_string(), v.to_string());
            }
            None if i == 0 => head = Some(token.to_string()),
            None => {
                kv.insert(token.to_string(), String::new());
            }
        }
    }
    (head, kv)
}

/// A drive: its volume (`file`) and options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Drive {
    /// `local-lvm:vm-100-disk-0`, `none`, `cdrom`, `local-lvm:32`, `/dev/sdb`, ...
    pub(super) file: String,
    /// Every other option (`size`, `media`, `iothread`, ...), printed sorted.
    pub(super) opts: BTreeMap<String, String>,
}

impl Drive {
    /// Parse a drive property string; `None` when it has no volume.
    pub(super) fn parse(value: &str) -> Option<Self> {
        let (head, mut opts) = split_props(value);
        let file = head
            .or_else(|| opts.remove("file"))
            .or_else(|| opts.remove("volume"))?;
        Some(Self { file, opts })
    }

    /// `file,key=value,...` with keys sorted, as `print_drive`.
    pub(super) fn print(&self) -> String {
        let mut out = self.file.clone();
        for (k, v) in &self.opts {
            out.push(',');
            out.push_str(k);
            out.push('=');
            out.push_str(v);
        }
        out
    }

    /// `media=cdrom` (or the bare `cdrom` pass-through).
    pub(super) fn is_cdrom(&self) -> bool {
        self.file == "cdrom" || self.opts.get("media").is_some_and(|m| m == "cdrom")
    }

    /// A cloud-init drive (`vm-<vmid>-cloudinit` volume).
    pub(super) fn is_cloudinit(&self) -> bool {
        let name = split_volid(&self.file)
            .map(|(_, v)| v)
            .unwrap_or(self.file.as_str());
        let base = name.rsplit('/').next().unwrap_or(name);
        let stem = base.split('.').next().unwrap_or(base);
        stem.starts_with("vm-") && stem.ends_with("-cloudinit")
    }

    /// The `size=` option in bytes.
    pub(super) fn size(&self) -> Option<u64> {
        self.opts.get("size").and_then(|s| parse_size(s))
    }

    /// Set `size=` to `bytes`, printed with [`format_size`].
    pub(super) fn set_size(&mut self, bytes: u64) {
        self.opts.insert("size".into(), format_size(bytes));
    }

    /// The managed volume id, when the drive refers to one on a storage.
    pub(super) fn volid(&self) -> Option<(&str, &str)> {
        split_volid(&self.file)
    }
}

/// A network device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Net {
    /// `virtio`, `e1000`, ...
    pub(super) model: String,
    /// MAC address, when set.
    pub(super) mac: Option<String>,
    /// `bridge`, `firewall`, `tag`, ... printed sorted after `model=MAC`.
    pub(super) opts: BTreeMap<String, String>,
}

impl Net {
    /// Parse `virtio,bridge=vmbr0`, `virtio=BC:..,bridge=..` or `model=virtio,macaddr=..`.
    pub(super) fn parse(value: &str) -> Option<Self> {
        let (head, kv) = split_props(value);
        let mut model = head.filter(|h| NIC_MODELS.contains(&h.as_str()));
        let mut mac = None;
        let mut opts = BTreeMap::new();
        for (k, v) in kv {
            if NIC_MODELS.contains(&k.as_str()) {
                model = Some(k);
                if !v.is_empty() {
                    mac = Some(v);
                }
            } else if k == "model" {
                model = Some(v);
            } else if k == "macaddr" {
                mac = Some(v);
            } else {
                opts.insert(k, v);
            }
        }
        Some(Self {
            model: model?,
            mac,
            opts,
        })
    }

    /// `model=MAC,key=value,...` as `print_net`.
    pub(super) fn print(&self) -> String {
        let mut out = self.model.clone();
        if let Some(mac) = &self.mac {
            out.push('=');
            out.push_str(mac);
        }
        for (k, v) in &self.opts {
            out.push(',');
            out.push_str(k);
            out.push('=');
            out.push_str(v);
        }
        out
    }

    /// The bridge, when set.
    pub(super) fn bridge(&self) -> Option<&str> {
        self.opts.get("bridge").map(String::as_str)
    }
}

/// Parse a plain `key=value,...` property string (agent, smbios1, cicustom, ipconfig, boot).
pub(super) fn parse_kv(value: &str, default_key: &str) -> BTreeMap<String, String> {
    let (head, mut kv) = split_props(value);
    if let Some(h) = head {
        kv.insert(default_key.to_string(), h);
    }
    kv
}

/// Split `storage:volname`; `None` for `none`, `cdrom`, absolute paths and new-disk sizes
/// without a storage.
pub(super) fn split_volid(s: &str) -> Option<(&str, &str)> {
    if s.starts_with('/') {
        return None;
    }
    let (store, name) = s.split_once(':')?;
    let valid = store.len() >= 2
        && store.starts_with(|c: char| c.is_ascii_alphabetic())
        && store.ends_with(|c: char| c.is_ascii_alphanumeric())
        && store
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    (valid && !name.is_empty()).then_some((store, name))
}

/// `STORAGE:SIZE` (GiB) or bare `SIZE` of a new disk: the storage (if given) and the size.
pub(super) fn parse_new_disk(file: &str) -> Option<(Option<&str>, f64)> {
    let (store, size) = match file.rsplit_once(':') {
        Some((s, n)) => (Some(s), n),
        None => (None, file),
    };
    if store.is_some_and(|s| s.is_empty() || s.contains('/') || s.contains(char::is_whitespace)) {
        return None;
    }
    let mut parts = size.splitn(2, '.');
    let int_ok = parts
        .next()
        .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let frac_ok = parts
        .next()
        .is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if !(int_ok && frac_ok) {
        return None;
    }
    Some((store, size.parse().ok()?))
}

/// GiB (possibly fractional) to bytes, rounded to whole KiB as `vdisk_alloc` allocates.
pub(super) fn gib_to_bytes(gib: f64) -> u64 {
    let kib = (gib * 1024.0 * 1024.0).round();
    if kib <= 0.0 {
        0
    } else {
        (kib as u64).saturating_mul(1024)
    }
}

/// PVE's `format_size`: the largest unit that divides exactly (`32G`, `512M`, `1T`, bytes).
pub(super) fn format_size(size: u64) -> String {
    let units = [
        (1u64 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    for (div, unit) in units {
        if size >= div && size.is_multiple_of(div) {
            return format!("{}{unit}", size / div);
        }
    }
    size.to_string()
}

/// A size with optional unit `K`/`M`/`G`/`T` (no unit = bytes), decimals allowed.
pub(super) fn parse_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1u64 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        'T' => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    Some((v * mult as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drive_round_trips_with_sorted_options() {
        let d = Drive::parse("local-lvm:vm-100-disk-0,size=32G,iothread=1").unwrap();
        assert_eq!(d.file, "local-lvm:vm-100-disk-0");
        assert_eq!(d.print(), "local-lvm:vm-100-disk-0,iothread=1,size=32G");
        assert_eq!(d.size(), Some(32 << 30));
        let c = Drive::parse("file=none,media=cdrom").unwrap();
        assert!(c.is_cdrom());
        assert_eq!(c.print(), "none,media=cdrom");
        let ci = Drive::parse("ceph:vm-9000-cloudinit,media=cdrom").unwrap();
        assert!(ci.is_cloudinit());
        let imp = Drive::parse("local-lvm:0,import-from=ceph:base-9000-disk-0").unwrap();
        assert_eq!(imp.opts["import-from"], "ceph:base-9000-disk-0");
    }

    #[test]
    fn net_prints_model_mac_first() {
        let n = Net::parse("virtio,bridge=vmbr0,firewall=1").unwrap();
        assert_eq!(n.model, "virtio");
        assert_eq!(n.mac, None);
        let n = Net::parse("bridge=vmbr0,virtio=BC:24:11:00:00:01,tag=5").unwrap();
        assert_eq!(n.print(), "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=5");
        let n = Net::parse("model=e1000,macaddr=AA:BB:CC:DD:EE:FF").unwrap();
        assert_eq!(n.print(), "e1000=AA:BB:CC:DD:EE:FF");
        assert!(Net::parse("bridge=vmbr0").is_none());
    }

    #[test]
    fn sizes_format_and_parse_like_pve() {
        for (bytes, text) in [
            (32u64 << 30, "32G"),
            (512 << 20, "512M"),
            (1 << 40, "1T"),
            (4 << 20, "4M"),
            (1000, "1000"),
        ] {
            assert_eq!(format_size(bytes), text);
            assert_eq!(parse_size(text), Some(bytes));
        }
        assert_eq!(parse_size("1.5G"), Some(1536 << 20));
        assert_eq!(parse_size("x"), None);
        assert_eq!(gib_to_bytes(0.5), 512 << 20);
    }

    #[test]
    fn volids_and_new_disks_are_recognised() {
        assert_eq!(
            split_volid("local-lvm:vm-1-disk-0"),
            Some(("local-lvm", "vm-1-disk-0"))
        );
        assert_eq!(split_volid("none"), None);
        assert_eq!(split_volid("/dev/sdb"), None);
        assert_eq!(
            parse_new_disk("local-lvm:32"),
            Some((Some("local-lvm"), 32.0))
        );
        assert_eq!(parse_new_disk("8"), Some((None, 8.0)));
        assert_eq!(parse_new_disk("local-lvm:vm-1-disk-0"), None);
        assert!(is_drive_key("scsi30") && !is_drive_key("scsi31") && !is_drive_key("ide01"));
        assert!(is_unused_key("unused3") && !is_unused_key("unused"));
    }
}
