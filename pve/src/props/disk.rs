//! Drives: `scsi[n]`, `virtio[n]`, `sata[n]`, `ide[n]`, e.g. `local-lvm:vm-100-disk-0,size=32G`.
//!
//! The source is an existing volume (`STORAGE:VOLNAME`, `none`, `cdrom`, an absolute path) or,
//! on create/update only, a new volume `STORAGE:SIZE_GiB` (`local-lvm:32`; `STORAGE:0` with
//! `import-from`). Written like qemu-server's `print_drive`: the source first, then the keys
//! sorted. Keys this client does not model (`aio`, `mbps`, ...) are kept in `extra`.

use std::fmt;
use std::str::FromStr;

use crate::error::PveError;
use crate::props::ids::{check_abs_path, check_storage, check_volume_id};
use crate::props::kv::{self, invalid, parse_bool, split};
use crate::props::size::{format_size, parse_size_for};
use crate::props::str_enum::str_enum;

str_enum! {
    /// Cache mode of a drive.
    pub enum DiskCache: "cache" {
        None = "none",
        Writethrough = "writethrough",
        Writeback = "writeback",
        Unsafe = "unsafe",
        Directsync = "directsync",
    }
}

str_enum! {
    /// Whether discard/TRIM requests reach the storage.
    pub enum Discard: "discard" {
        Ignore = "ignore",
        On = "on",
    }
}

str_enum! {
    /// Media type of a drive.
    pub enum Media: "media" {
        Cdrom = "cdrom",
        Disk = "disk",
    }
}

str_enum! {
    /// Image format of a drive's backing file.
    pub enum DiskFormat: "format" {
        Raw = "raw",
        Qcow = "qcow",
        Qed = "qed",
        Qcow2 = "qcow2",
        Vmdk = "vmdk",
        Cloop = "cloop",
    }
}

/// The bus a drive hangs on; each has its own index range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DiskBus {
    /// `ide0`..`ide3`.
    Ide,
    /// `sata0`..`sata5`.
    Sata,
    /// `scsi0`..`scsi30`.
    Scsi,
    /// `virtio0`..`virtio15`.
    Virtio,
}

impl DiskBus {
    /// Every bus.
    pub const ALL: [DiskBus; 4] = [Self::Ide, Self::Sata, Self::Scsi, Self::Virtio];

    /// The key prefix (`scsi`).
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Ide => "ide",
            Self::Sata => "sata",
            Self::Scsi => "scsi",
            Self::Virtio => "virtio",
        }
    }

    /// The largest index PVE accepts on this bus.
    pub fn max_index(self) -> u8 {
        match self {
            Self::Ide => 3,
            Self::Sata => 5,
            Self::Scsi => 30,
            Self::Virtio => 15,
        }
    }

    /// The config key `<prefix><n>`, when `n` is in range.
    pub fn key(self, n: u8) -> Result<String, PveError> {
        let key = format!("{}{n}", self.prefix());
        if n > self.max_index() {
            return Err(invalid(
                key,
                format!(
                    "index {n} is out of range; {} allows 0..={}",
                    self.prefix(),
                    self.max_index()
                ),
            ));
        }
        Ok(key)
    }

    /// Whether `iothread=` is accepted on this bus.
    pub fn supports_iothread(self) -> bool {
        matches!(self, Self::Scsi | Self::Virtio)
    }

    /// Whether `ssd=` is accepted on this bus.
    pub fn supports_ssd(self) -> bool {
        !matches!(self, Self::Virtio)
    }
}

/// A drive slot that can be resized or converted: a bus drive, `efidisk0` or `tpmstate0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DiskSlot {
    /// `scsi0`, `virtio1`, ...
    Drive(DiskBus, u8),
    /// `efidisk0`.
    EfiDisk0,
    /// `tpmstate0`.
    TpmState0,
}

impl DiskSlot {
    /// Check the index against the bus range.
    pub fn validate(self, field: &str) -> Result<(), PveError> {
        if let Self::Drive(bus, n) = self {
            bus.key(n).map_err(|e| kv::within(field, e))?;
        }
        Ok(())
    }
}

impl fmt::Display for DiskSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Drive(bus, n) => write!(f, "{}{n}", bus.prefix()),
            Self::EfiDisk0 => f.write_str("efidisk0"),
            Self::TpmState0 => f.write_str("tpmstate0"),
        }
    }
}

impl FromStr for DiskSlot {
    type Err = PveError;

    fn from_str(s: &str) -> Result<Self, PveError> {
        match s {
            "efidisk0" => return Ok(Self::EfiDisk0),
            "tpmstate0" => return Ok(Self::TpmState0),
            _ => {}
        }
        let bad = || {
            invalid(
                "disk",
                format!(
                    "'{s}' is not a drive (ide0-3, sata0-5, scsi0-30, virtio0-15, efidisk0, tpmstate0)"
                ),
            )
        };
        let split_at = s.find(|c: char| c.is_ascii_digit()).ok_or_else(bad)?;
        let (prefix, index) = s.split_at(split_at);
        let bus = DiskBus::ALL
            .into_iter()
            .find(|b| b.prefix() == prefix)
            .ok_or_else(bad)?;
        if index.len() > 1 && index.starts_with('0') {
            return Err(bad());
        }
        let n: u8 = index.parse().map_err(|_| bad())?;
        if n > bus.max_index() {
            return Err(bad());
        }
        Ok(Self::Drive(bus, n))
    }
}

/// Where a drive's data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskSource {
    /// An existing volume `STORAGE:VOLNAME`, `none` (empty CD-ROM), `cdrom` (host drive) or an
    /// absolute path.
    Volume(String),
    /// Allocate a new volume of `size_gib` GiB on `storage` (create/update only; 0 with
    /// `import-from`).
    New {
        /// Storage id.
        storage: String,
        /// Size in GiB.
        size_gib: u64,
    },
}

/// One drive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    /// The data source (`file=`, the default key).
    pub source: DiskSource,
    /// Import the new volume's content from this volume id or absolute path.
    pub import_from: Option<String>,
    /// Size in bytes (informational; PVE writes it after allocation).
    pub size: Option<u64>,
    /// Cache mode.
    pub cache: Option<DiskCache>,
    /// Discard/TRIM pass-through.
    pub discard: Option<Discard>,
    /// Use an IO thread (SCSI with `virtio-scsi-single`, VirtIO).
    pub iothread: Option<bool>,
    /// Present as SSD (not on VirtIO).
    pub ssd: Option<bool>,
    /// `disk` or `cdrom`.
    pub media: Option<Media>,
    /// Image format.
    pub format: Option<DiskFormat>,
    /// Include in backups.
    pub backup: Option<bool>,
    /// Include in replication.
    pub replicate: Option<bool>,
    /// Sub-keys this client does not model, in the order read (written sorted among the rest).
    pub extra: Vec<(String, String)>,
}

impl Disk {
    fn with_source(source: DiskSource) -> Self {
        Self {
            source,
            import_from: None,
            size: None,
            cache: None,
            discard: None,
            iothread: None,
            ssd: None,
            media: None,
            format: None,
            backup: None,
            replicate: None,
            extra: Vec::new(),
        }
    }

    /// A new `size_gib` GiB volume on `storage` (`local-lvm:32`).
    pub fn new_volume(storage: &str, size_gib: u64) -> Self {
        Self::with_source(DiskSource::New {
            storage: storage.to_string(),
            size_gib,
        })
    }

    /// An existing volume (`local-lvm:vm-100-disk-0`).
    pub fn volume(volid: &str) -> Self {
        Self::with_source(DiskSource::Volume(volid.to_string()))
    }

    /// A new volume on `storage` filled from `source` (`local-lvm:0,import-from=...`).
    pub fn import(storage: &str, source: &str) -> Self {
        Self {
            import_from: Some(source.to_string()),
            ..Self::new_volume(storage, 0)
        }
    }

    /// A CD-ROM with `iso` inserted, or empty (`none,media=cdrom`).
    pub fn cdrom(iso: Option<&str>) -> Self {
        Self {
            media: Some(Media::Cdrom),
            ..Self::with_source(DiskSource::Volume(iso.unwrap_or("none").to_string()))
        }
    }

    /// The volume id when the source is an existing storage volume.
    pub fn volid(&self) -> Option<&str> {
        match &self.source {
            DiskSource::Volume(v) if v.contains(':') => Some(v),
            _ => None,
        }
    }

    /// The storage id of the source (existing or new volume).
    pub fn storage(&self) -> Option<&str> {
        match &self.source {
            DiskSource::Volume(v) => v.split_once(':').map(|(s, _)| s),
            DiskSource::New { storage, .. } => Some(storage),
        }
    }

    /// Whether this is a CD-ROM drive.
    pub fn is_cdrom(&self) -> bool {
        self.media == Some(Media::Cdrom)
    }

    /// Check every value against the schema's rules.
    pub fn validate(&self) -> Result<(), PveError> {
        match &self.source {
            DiskSource::Volume(v) if v == "none" || v == "cdrom" => {}
            DiskSource::Volume(v) if v.starts_with('/') => check_abs_path("file", v)?,
            DiskSource::Volume(v) => check_volume_id("file", v)?,
            DiskSource::New { storage, .. } => check_storage("file", storage)?,
        }
        if let Some(src) = &self.import_from {
            if !matches!(self.source, DiskSource::New { .. }) {
                return Err(invalid(
                    "import-from",
                    "needs a new volume as source (STORAGE:0,import-from=...)",
                ));
            }
            if src.starts_with('/') {
                check_abs_path("import-from", src)?;
            } else {
                check_volume_id("import-from", src)?;
            }
        }
        kv::check_extras("disk", &self.extra, is_known_key)?;
        Ok(())
    }

    /// The validated property string.
    pub fn to_property_string(&self) -> Result<String, PveError> {
        self.validate()?;
        let mut w = kv::Writer::default();
        match &self.source {
            DiskSource::Volume(v) => w.bare(v),
            DiskSource::New { storage, size_gib } => w.bare(format!("{storage}:{size_gib}")),
        }
        w.flag("backup", self.backup);
        w.opt("cache", self.cache);
        w.opt("discard", self.discard);
        w.opt("format", self.format);
        w.opt("import-from", self.import_from.as_deref());
        w.flag("iothread", self.iothread);
        w.opt("media", self.media);
        w.flag("replicate", self.replicate);
        w.opt("size", self.size.map(format_size));
        w.flag("ssd", self.ssd);
        for (k, v) in &self.extra {
            w.kv(k, v);
        }
        Ok(w.finish())
    }
}

fn is_known_key(key: &str) -> bool {
    matches!(
        key,
        "file"
            | "volume"
            | "import-from"
            | "size"
            | "cache"
            | "discard"
            | "iothread"
            | "ssd"
            | "media"
            | "format"
            | "backup"
            | "replicate"
    )
}

/// `STORAGE:N` (PVE's new-disk syntax `^(([^/:\s]+):)?(\d+(\.\d+)?)$`, whole GiB here).
fn parse_source(text: &str) -> Result<DiskSource, PveError> {
    if let Some((storage, size)) = text.split_once(':')
        && !storage.contains('/')
        && !size.is_empty()
        && size.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    {
        let size_gib = size
            .parse()
            .map_err(|_| invalid("file", format!("'{text}': new volume sizes are whole GiB")))?;
        return Ok(DiskSource::New {
            storage: storage.to_string(),
            size_gib,
        });
    }
    Ok(DiskSource::Volume(text.to_string()))
}

impl FromStr for Disk {
    type Err = PveError;

    fn from_str(text: &str) -> Result<Self, PveError> {
        let mut source = None;
        let mut d = Self::with_source(DiskSource::Volume(String::new()));
        for (key, value) in split("disk", text)? {
            match key {
                None | Some("file") | Some("volume") => {
                    if source.replace(parse_source(value)?).is_some() {
                        return Err(invalid("file", format!("given twice in '{text}'")));
                    }
                }
                Some("import-from") => d.import_from = Some(value.to_string()),
                Some("size") => d.size = Some(parse_size_for("size", value)?),
                Some("cache") => d.cache = Some(value.parse()?),
                Some("discard") => d.discard = Some(value.parse()?),
                Some("iothread") => d.iothread = Some(parse_bool("iothread", value)?),
                Some("ssd") => d.ssd = Some(parse_bool("ssd", value)?),
                Some("media") => d.media = Some(value.parse()?),
                Some("format") => d.format = Some(value.parse()?),
                Some("backup") => d.backup = Some(parse_bool("backup", value)?),
                Some("replicate") => d.replicate = Some(parse_bool("replicate", value)?),
                Some(k) => d.extra.push((k.to_string(), value.to_string())),
            }
        }
        d.source = source.ok_or_else(|| invalid("file", format!("missing in '{text}'")))?;
        d.validate()?;
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1 << 30;

    fn field_of(e: PveError) -> String {
        e.invalid_field()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("not Invalid"))
    }

    #[test]
    fn builds_pve_spelling() {
        let cases = [
            (Disk::new_volume("local-lvm", 32), "local-lvm:32"),
            (
                Disk {
                    cache: Some(DiskCache::Writeback),
                    discard: Some(Discard::On),
                    iothread: Some(true),
                    ssd: Some(true),
                    size: Some(32 * G),
                    ..Disk::volume("local-lvm:vm-100-disk-0")
                },
                "local-lvm:vm-100-disk-0,cache=writeback,discard=on,iothread=1,size=32G,ssd=1",
            ),
            (
                Disk::import("local-lvm", "local:import/debian-12.qcow2"),
                "local-lvm:0,import-from=local:import/debian-12.qcow2",
            ),
            (Disk::cdrom(None), "none,media=cdrom"),
            (
                Disk::cdrom(Some("local:iso/x.iso")),
                "local:iso/x.iso,media=cdrom",
            ),
            (
                Disk {
                    backup: Some(false),
                    replicate: Some(false),
                    format: Some(DiskFormat::Qcow2),
                    ..Disk::volume("local:100/vm-100-disk-0.qcow2")
                },
                "local:100/vm-100-disk-0.qcow2,backup=0,format=qcow2,replicate=0",
            ),
        ];
        for (disk, text) in cases {
            assert_eq!(disk.to_property_string().unwrap(), text);
        }
    }

    #[test]
    fn parses_a_config_drive() {
        let d: Disk = "local-lvm:vm-100-disk-0,size=32G".parse().unwrap();
        assert_eq!(d.volid(), Some("local-lvm:vm-100-disk-0"));
        assert_eq!(d.storage(), Some("local-lvm"));
        assert_eq!(d.size, Some(32 * G));
        let d: Disk = "file=local-lvm:40,iothread=1,aio=native".parse().unwrap();
        assert_eq!(
            d.source,
            DiskSource::New {
                storage: "local-lvm".into(),
                size_gib: 40
            }
        );
        assert_eq!(d.extra, vec![("aio".to_string(), "native".to_string())]);
        let d: Disk = "none,media=cdrom".parse().unwrap();
        assert!(d.is_cdrom() && d.volid().is_none());
    }

    #[test]
    fn round_trips() {
        for text in [
            "local-lvm:vm-100-disk-0,size=32G",
            "local-lvm:base-100-disk-0/vm-101-disk-0,cache=none,discard=on,size=1536M",
            "local:iso/debian.iso,media=cdrom,size=600M",
            "/dev/disk/by-id/ata-X,backup=0",
            "ceph:vm-100-disk-1,aio=io_uring,iothread=1,mbps=100,size=10G,ssd=1",
        ] {
            let d: Disk = text.parse().unwrap();
            assert_eq!(d.to_property_string().unwrap(), text);
            assert_eq!(d.to_property_string().unwrap().parse::<Disk>().unwrap(), d);
        }
    }

    #[test]
    fn every_validation_error_names_its_field() {
        for (text, field) in [
            ("size=32G", "file"),
            ("local-lvm:1.5", "file"),
            ("9bad:vm-1", "file"),
            ("relative/path", "file"),
            ("local-lvm:vm-100-disk-0,cache=fast", "cache"),
            ("local-lvm:vm-100-disk-0,discard=off", "discard"),
            ("local-lvm:vm-100-disk-0,media=floppy", "media"),
            ("local-lvm:vm-100-disk-0,format=vdi", "format"),
            ("local-lvm:vm-100-disk-0,size=huge", "size"),
            ("local-lvm:vm-100-disk-0,ssd=2", "ssd"),
            ("local-lvm:vm-100-disk-0,iothread=x", "iothread"),
            ("local-lvm:vm-100-disk-0,import-from=local:x", "import-from"),
            ("local-lvm:0,import-from=no-colon", "import-from"),
            ("a:b,file=c:d", "file"),
        ] {
            assert_eq!(field_of(text.parse::<Disk>().unwrap_err()), field, "{text}");
        }
    }

    #[test]
    fn slots_and_bus_ranges() {
        for (s, slot) in [
            ("scsi0", DiskSlot::Drive(DiskBus::Scsi, 0)),
            ("scsi30", DiskSlot::Drive(DiskBus::Scsi, 30)),
            ("virtio15", DiskSlot::Drive(DiskBus::Virtio, 15)),
            ("sata5", DiskSlot::Drive(DiskBus::Sata, 5)),
            ("ide3", DiskSlot::Drive(DiskBus::Ide, 3)),
            ("efidisk0", DiskSlot::EfiDisk0),
            ("tpmstate0", DiskSlot::TpmState0),
        ] {
            assert_eq!(s.parse::<DiskSlot>().unwrap(), slot);
            assert_eq!(slot.to_string(), s);
        }
        for bad in [
            "scsi31", "virtio16", "sata6", "ide4", "scsi01", "nvme0", "scsi", "efidisk1",
        ] {
            assert_eq!(
                field_of(bad.parse::<DiskSlot>().unwrap_err()),
                "disk",
                "{bad}"
            );
        }
        assert_eq!(field_of(DiskBus::Ide.key(4).unwrap_err()), "ide4");
        assert_eq!(DiskBus::Scsi.key(30).unwrap(), "scsi30");
    }
}
