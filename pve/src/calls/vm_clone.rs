//! Copying and reshaping VMs: `POST .../clone` (task `qmclone`, UPID id = source VMID),
//! `PUT .../resize` (task `resize` since qemu-server 8.0) and `POST .../template`
//! (task `qmtemplate`).
//!
//! Clone goes through [`Client::start_create`] like create: the new VMID makes a retried clone
//! safe to recognize.

use crate::calls::paths::vm_path;
use crate::client::Client;
use crate::create_retry::CreateIdentity;
use crate::error::PveError;
use crate::props::kv::invalid;
use crate::props::str_enum::str_enum;
use crate::props::{
    DiskSlot, SizeChange, check_digest, check_dns_name, check_node, check_pool, check_snapname,
    check_storage, check_vmid,
};
use crate::request::{ApiRequest, Method};
use crate::upid::Upid;

str_enum! {
    /// Image format of a full clone's disks.
    pub enum CloneFormat: "format" {
        Raw = "raw",
        Qcow2 = "qcow2",
        Vmdk = "vmdk",
    }
}

/// Clone parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloneOptions {
    /// Name of the new VM (`dns-name`; default `Copy-of-VM-<name>`).
    pub name: Option<String>,
    /// Description of the new VM.
    pub description: Option<String>,
    /// Full copy (`true`) or linked clone (`false`, templates only); PVE's default is full for
    /// VMs and linked for templates.
    pub full: Option<bool>,
    /// Target storage (full clones only).
    pub storage: Option<String>,
    /// Target image format (full clones only).
    pub format: Option<CloneFormat>,
    /// Clone from this snapshot.
    pub snapname: Option<String>,
    /// Create the clone on this node (needs shared storage).
    pub target: Option<String>,
    /// Add the new VM to this pool.
    pub pool: Option<String>,
    /// I/O limit in KiB/s.
    pub bwlimit: Option<u64>,
}

/// Resize parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResizeOptions {
    /// Apply only if the config still has this digest.
    pub digest: Option<String>,
    /// Ignore the config lock (root@pam only).
    pub skiplock: Option<bool>,
}

/// `POST /nodes/{node}/qemu/{vmid}/clone`: copy VM `vmid` to `newid`.
pub fn clone_vm_request(
    node: &str,
    vmid: u32,
    newid: u32,
    opts: &CloneOptions,
) -> Result<ApiRequest, PveError> {
    let path = vm_path(node, vmid, "/clone")?;
    check_vmid("newid", newid)?;
    if newid == vmid {
        return Err(invalid("newid", format!("{newid} is the source VMID")));
    }
    if let Some(n) = &opts.name {
        check_dns_name("name", n)?;
    }
    if opts.full == Some(false) {
        if opts.storage.is_some() {
            return Err(invalid("storage", "not allowed for linked clones (full=0)"));
        }
        if opts.format.is_some() {
            return Err(invalid("format", "not allowed for linked clones (full=0)"));
        }
    }
    if let Some(s) = &opts.storage {
        check_storage("storage", s)?;
    }
    if let Some(s) = &opts.snapname {
        check_snapname("snapname", s)?;
    }
    if let Some(t) = &opts.target {
        check_node("target", t)?;
    }
    if let Some(p) = &opts.pool {
        check_pool("pool", p)?;
    }
    Ok(ApiRequest::new(Method::Post, path)
        .param("newid", newid.to_string())
        .opt("name", opts.name.as_deref())
        .opt("description", opts.description.as_deref())
        .flag("full", opts.full)
        .opt("storage", opts.storage.as_deref())
        .opt("format", opts.format)
        .opt("snapname", opts.snapname.as_deref())
        .opt("target", opts.target.as_deref())
        .opt("pool", opts.pool.as_deref())
        .opt("bwlimit", opts.bwlimit))
}

/// `PUT /nodes/{node}/qemu/{vmid}/resize`: set or grow (`+`) a disk's size.
pub fn resize_disk_request(
    node: &str,
    vmid: u32,
    disk: DiskSlot,
    size: SizeChange,
    opts: &ResizeOptions,
) -> Result<ApiRequest, PveError> {
    let path = vm_path(node, vmid, "/resize")?;
    disk.validate("disk")?;
    if let Some(d) = &opts.digest {
        check_digest("digest", d)?;
    }
    Ok(ApiRequest::new(Method::Put, path)
        .param("disk", disk.to_string())
        .param("size", size.to_string())
        .opt("digest", opts.digest.as_deref())
        .flag("skiplock", opts.skiplock))
}

/// `POST /nodes/{node}/qemu/{vmid}/template`: convert the VM (or only `disk`) to a template.
pub fn template_request(
    node: &str,
    vmid: u32,
    disk: Option<DiskSlot>,
) -> Result<ApiRequest, PveError> {
    let path = vm_path(node, vmid, "/template")?;
    if let Some(d) = disk {
        d.validate("disk")?;
    }
    Ok(ApiRequest::new(Method::Post, path).opt("disk", disk))
}

impl Client {
    /// Clone a VM; returns the `qmclone` task (its UPID's id is the source VMID). Safe to call
    /// again after a lost answer.
    pub async fn clone_vm(
        &self,
        node: &str,
        vmid: u32,
        newid: u32,
        opts: &CloneOptions,
    ) -> Result<Upid, PveError> {
        let req = clone_vm_request(node, vmid, newid, opts)?;
        let identity = CreateIdentity {
            node: node.to_string(),
            vmid: newid,
            task_type: "qmclone",
            source_vmid: Some(vmid),
        };
        self.start_create(&req, &identity).await
    }

    /// Resize a disk (`resize` task; grow only).
    pub async fn resize_disk(
        &self,
        node: &str,
        vmid: u32,
        disk: DiskSlot,
        size: SizeChange,
        opts: &ResizeOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&resize_disk_request(node, vmid, disk, size, opts)?)
            .await
    }

    /// Convert a stopped VM without snapshots into a template (`qmtemplate` task).
    pub async fn convert_to_template(
        &self,
        node: &str,
        vmid: u32,
        disk: Option<DiskSlot>,
    ) -> Result<Upid, PveError> {
        self.start_task(&template_request(node, vmid, disk)?).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::props::DiskBus;

    fn pairs(r: &ApiRequest) -> Vec<(&str, &str)> {
        r.params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    fn field_of(r: Result<ApiRequest, PveError>) -> String {
        r.unwrap_err()
            .invalid_field()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("not Invalid"))
    }

    #[test]
    fn full_clone_sends_every_option() {
        let opts = CloneOptions {
            name: Some("web2".into()),
            description: Some("copy".into()),
            full: Some(true),
            storage: Some("local-lvm".into()),
            format: Some(CloneFormat::Raw),
            snapname: Some("base".into()),
            target: Some("pve2".into()),
            pool: Some("fleet".into()),
            bwlimit: Some(10240),
        };
        let r = clone_vm_request("pve1", 100, 101, &opts).unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (Method::Post, "/nodes/pve1/qemu/100/clone")
        );
        assert_eq!(
            pairs(&r),
            [
                ("newid", "101"),
                ("name", "web2"),
                ("description", "copy"),
                ("full", "1"),
                ("storage", "local-lvm"),
                ("format", "raw"),
                ("snapname", "base"),
                ("target", "pve2"),
                ("pool", "fleet"),
                ("bwlimit", "10240"),
            ]
        );
    }

    #[test]
    fn clone_validation_names_fields() {
        let linked = CloneOptions {
            full: Some(false),
            ..Default::default()
        };
        let opts = |f: fn(&mut CloneOptions)| {
            let mut o = CloneOptions::default();
            f(&mut o);
            o
        };
        let cases: Vec<(u32, CloneOptions, &str)> = vec![
            (
                101,
                CloneOptions {
                    storage: Some("x".into()),
                    ..linked.clone()
                },
                "storage",
            ),
            (
                101,
                CloneOptions {
                    format: Some(CloneFormat::Qcow2),
                    ..linked
                },
                "format",
            ),
            (100, CloneOptions::default(), "newid"),
            (42, CloneOptions::default(), "newid"),
            (101, opts(|o| o.name = Some("a_b".into())), "name"),
            (
                101,
                opts(|o| o.snapname = Some("current".into())),
                "snapname",
            ),
            (101, opts(|o| o.target = Some("pve_2".into())), "target"),
            (101, opts(|o| o.pool = Some("a b".into())), "pool"),
        ];
        for (newid, o, field) in cases {
            assert_eq!(
                field_of(clone_vm_request("pve1", 100, newid, &o)),
                field,
                "{o:?}"
            );
        }
    }

    #[test]
    fn resize_and_template_send_slots_and_sizes() {
        let r = resize_disk_request(
            "pve1",
            100,
            DiskSlot::Drive(DiskBus::Scsi, 0),
            SizeChange::Grow(1 << 30),
            &ResizeOptions {
                digest: Some("abc".into()),
                skiplock: Some(true),
            },
        )
        .unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (Method::Put, "/nodes/pve1/qemu/100/resize")
        );
        assert_eq!(
            pairs(&r),
            [
                ("disk", "scsi0"),
                ("size", "+1G"),
                ("digest", "abc"),
                ("skiplock", "1")
            ]
        );
        let bad = resize_disk_request(
            "pve1",
            100,
            DiskSlot::Drive(DiskBus::Ide, 4),
            SizeChange::Set(1),
            &ResizeOptions::default(),
        );
        assert_eq!(field_of(bad), "disk.ide4");
        let bad = resize_disk_request(
            "pve1",
            100,
            DiskSlot::EfiDisk0,
            SizeChange::Set(1),
            &ResizeOptions {
                digest: Some("zz".into()),
                skiplock: None,
            },
        );
        assert_eq!(field_of(bad), "digest");
        let t = template_request("pve1", 100, Some(DiskSlot::Drive(DiskBus::Virtio, 1))).unwrap();
        assert_eq!(pairs(&t), [("disk", "virtio1")]);
        assert!(
            template_request("pve1", 100, None)
                .unwrap()
                .params
                .is_empty()
        );
    }
}
