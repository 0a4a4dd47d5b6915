//! What a move to another PVE cluster (or a standalone node) asks of its target host, as pure
//! functions of the VM's spec and the host's facts: the target storage and bridges PVE's
//! remote migration maps the VM's disks and NICs onto, and the spec the scheduler judges such
//! a move with. A remote migration copies the disks, so it needs neither the VM's template nor
//! its named storages on the target: only room for the disks on one storage holding images,
//! and every bridge its NICs use.

use std::collections::BTreeSet;

use protocol::spec::VmSpec;

use crate::scheduler::{FilterName, HostView};

/// Bytes in a GiB.
const GIB: u64 = 1 << 30;

/// Where a remote migration puts a VM on its target host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteMapping {
    /// The storage every disk goes to (PVE's `target-storage` with one id maps them all).
    pub storage: String,
    /// The bridges its NICs attach to, each to the bridge of the same name.
    pub bridges: Vec<String>,
}

impl RemoteMapping {
    /// PVE's `target-bridge`: `vmbr0:vmbr0,...`, or the one bridge given when the VM has no
    /// NIC (PVE requires the parameter).
    pub fn target_bridge(&self) -> String {
        self.bridges
            .iter()
            .map(|b| format!("{b}:{b}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The spec a remote move is judged with: no template to clone from and no named storage (the
/// disks are copied onto whatever [`mapping`] picks); every other rule and need as placed.
pub fn judged_spec(spec: &VmSpec) -> VmSpec {
    let mut judged = spec.clone();
    judged.template = None;
    for disk in &mut judged.disks {
        disk.storage = None;
    }
    judged
}

/// The mapping onto `target`, or the filter and detail that refuse it: a storage holding
/// images with room for every disk (the one the spec names first if the target has it, else
/// the one with the most free space), and every NIC's bridge.
pub fn mapping(spec: &VmSpec, target: &HostView) -> Result<RemoteMapping, (FilterName, String)> {
    let need: u64 = spec.disks.iter().map(|d| u64::from(d.size_gib) * GIB).sum();
    let named: Vec<&str> = spec
        .disks
        .iter()
        .filter_map(|d| d.storage.as_deref())
        .chain(spec.template.as_ref().and_then(|t| t.storage.as_deref()))
        .collect();
    let fits: Vec<_> = target
        .storages
        .iter()
        .filter(|s| s.content.contains("images") && s.free_bytes >= need)
        .collect();
    let storage = named
        .iter()
        .find_map(|n| fits.iter().find(|s| s.id == *n))
        .or_else(|| {
            fits.iter()
                .max_by_key(|s| (s.free_bytes, std::cmp::Reverse(&s.id)))
        })
        .ok_or_else(|| {
            (
                FilterName::Storage,
                format!(
                    "no storage holding disk images with {} GiB free for the copied disks",
                    need.div_ceil(GIB)
                ),
            )
        })?;
    let mut bridges: BTreeSet<String> = spec.nics.iter().map(|n| n.bridge.clone()).collect();
    if let Some(missing) = bridges.iter().find(|b| !target.bridges.contains(*b)) {
        return Err((
            FilterName::Bridge,
            format!("bridge {missing} not present for the VM's NICs"),
        ));
    }
    if bridges.is_empty() {
        let any = target.bridges.iter().next().ok_or_else(|| {
            (
                FilterName::Bridge,
                "no bridge at all (PVE's remote migration needs one)".to_string(),
            )
        })?;
        bridges.insert(any.clone());
    }
    Ok(RemoteMapping {
        storage: storage.id.clone(),
        bridges: bridges.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use protocol::fleet::Capacity;
    use protocol::spec::{DiskSpec, NicSpec, TemplateSpec, VmSpec};

    use super::*;
    use crate::scheduler::StorageView;

    fn host(storages: &[(&str, &str, u64)], bridges: &[&str]) -> HostView {
        let mut h = HostView::new(
            2,
            "pve-b",
            Capacity {
                cpus: 8,
                memory_mib: 32_768,
            },
        );
        h.storages = storages
            .iter()
            .map(|(id, content, gib)| StorageView {
                id: (*id).into(),
                content: content.split(',').map(str::to_string).collect(),
                free_bytes: gib * GIB,
            })
            .collect();
        h.bridges = bridges
            .iter()
            .map(|b| (*b).to_string())
            .collect::<BTreeSet<_>>();
        h
    }

    fn vm(disks: &[(&str, u32)], bridges: &[&str]) -> VmSpec {
        let mut spec = VmSpec::new("db", 1024);
        spec.disks = disks
            .iter()
            .enumerate()
            .map(|(i, (storage, gib))| DiskSpec {
                slot: format!("scsi{i}"),
                storage: Some((*storage).into()),
                size_gib: *gib,
                options: Default::default(),
            })
            .collect();
        spec.nics = bridges
            .iter()
            .map(|b| NicSpec {
                model: Default::default(),
                bridge: (*b).into(),
                vlan: None,
                mac: None,
                firewall: false,
                mtu: None,
                ip: None,
            })
            .collect();
        spec
    }

    #[test]
    fn the_named_storage_is_kept_when_the_target_has_room_on_it() {
        let target = host(
            &[("local-lvm", "images,rootdir", 100), ("big", "images", 900)],
            &["vmbr0"],
        );
        let m = mapping(&vm(&[("local-lvm", 30)], &["vmbr0"]), &target).unwrap();
        assert_eq!(m.storage, "local-lvm");
        assert_eq!(m.target_bridge(), "vmbr0:vmbr0");
    }

    #[test]
    fn otherwise_the_images_storage_with_the_most_room_and_never_one_without_images() {
        let target = host(
            &[
                ("local", "iso,vztmpl", 5000),
                ("small", "images", 40),
                ("big", "images", 900),
            ],
            &["vmbr0", "vmbr1"],
        );
        let m = mapping(
            &vm(&[("ceph", 30), ("ceph", 20)], &["vmbr1", "vmbr0", "vmbr1"]),
            &target,
        )
        .unwrap();
        assert_eq!(m.storage, "big");
        assert_eq!(m.target_bridge(), "vmbr0:vmbr0,vmbr1:vmbr1");
        // 50 GiB of disks fit nowhere but on `big`; with 60 GiB `small` is out too.
        let none = host(
            &[("local", "iso", 5000), ("small", "images", 40)],
            &["vmbr0"],
        );
        let (filter, detail) = mapping(&vm(&[("ceph", 50)], &["vmbr0"]), &none).unwrap_err();
        assert_eq!(filter, FilterName::Storage);
        assert!(detail.contains("50 GiB"), "{detail}");
    }

    #[test]
    fn a_missing_bridge_refuses_and_a_vm_without_nics_takes_any_bridge() {
        let target = host(&[("big", "images", 900)], &["vmbr9"]);
        let (filter, detail) = mapping(&vm(&[("x", 1)], &["vmbr0"]), &target).unwrap_err();
        assert_eq!(filter, FilterName::Bridge);
        assert!(detail.contains("vmbr0"), "{detail}");
        let m = mapping(&vm(&[("x", 1)], &[]), &target).unwrap();
        assert_eq!(m.target_bridge(), "vmbr9:vmbr9");
    }

    #[test]
    fn the_judged_spec_needs_no_template_and_no_named_storage() {
        let mut spec = vm(&[("ceph", 10)], &["vmbr0"]);
        spec.template = Some(TemplateSpec {
            name: Some("debian-12".into()),
            vmid: None,
            clone: Default::default(),
            storage: Some("local".into()),
        });
        let judged = judged_spec(&spec);
        assert!(judged.template.is_none());
        assert!(judged.disks.iter().all(|d| d.storage.is_none()));
        assert_eq!(judged.disks[0].size_gib, 10);
    }
}
