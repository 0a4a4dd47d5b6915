//! Storages and the volumes on them. A shared storage is one pool for every node; a local one
//! has a pool per node. Volume names follow `PVE::Storage::Plugin`: `vm-100-disk-0`,
//! `base-100-disk-0`, linked clones `base-100-disk-0/vm-101-disk-0` on block storages and
//! `100/base-100-disk-0.qcow2/101/vm-101-disk-0.qcow2` on directory storages.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::StorageConfig;

/// Plugin types whose volumes are files in a directory tree.
const PATH_BASED: &[&str] = &["dir", "nfs", "cifs", "glusterfs", "cephfs", "btrfs"];
/// Block plugin types with thin snapshots and linked clones.
const THIN_BLOCK: &[&str] = &["lvmthin", "rbd", "zfspool"];

/// A storage definition (`storage.cfg` entry).
#[derive(Debug, Clone)]
pub(super) struct Storage {
    pub(super) id: String,
    pub(super) kind: String,
    pub(super) content: BTreeSet<String>,
    pub(super) shared: bool,
    pub(super) total: u64,
    nodes: Vec<String>,
}

impl Storage {
    fn from_config(c: &StorageConfig) -> Self {
        Self {
            id: c.id.clone(),
            kind: c.kind.clone(),
            content: c.content.iter().cloned().collect(),
            shared: c.shared,
            total: c.total,
            nodes: c.nodes.clone(),
        }
    }

    /// Whether the storage exists on `node` (`nodes` restriction).
    pub(super) fn on_node(&self, node: &str) -> bool {
        self.nodes.is_empty() || self.nodes.iter().any(|n| n == node)
    }

    /// Directory-like storage (volumes are files with an extension).
    pub(super) fn path_based(&self) -> bool {
        PATH_BASED.contains(&self.kind.as_str())
    }

    /// Formats the storage can hold; the first is the default.
    pub(super) fn formats(&self) -> &'static [&'static str] {
        if self.path_based() {
            &["raw", "qcow2", "vmdk"]
        } else {
            &["raw"]
        }
    }

    /// `format` if supported, else the storage default (`resolve_dst_disk_format`).
    pub(super) fn resolve_format(&self, wanted: Option<&str>) -> String {
        match wanted {
            Some(f) if self.formats().contains(&f) => f.to_string(),
            _ => self.formats()[0].to_string(),
        }
    }

    /// Whether volumes of `format` here support snapshots.
    pub(super) fn can_snapshot(&self, format: &str) -> bool {
        THIN_BLOCK.contains(&self.kind.as_str()) || (self.path_based() && format == "qcow2")
    }

    /// Whether a base volume of `format` here can be linked-cloned.
    pub(super) fn can_link(&self, format: &str) -> bool {
        self.can_snapshot(format)
    }

    /// The `content` list as PVE prints it (`images,rootdir`), sorted.
    pub(super) fn content_string(&self) -> String {
        self.content.iter().cloned().collect::<Vec<_>>().join(",")
    }
}

/// One volume.
#[derive(Debug, Clone)]
pub(super) struct Volume {
    /// Name inside the storage (`vm-100-disk-0`, `snippets/user.yaml`).
    pub(super) name: String,
    /// Owner VM.
    pub(super) vmid: Option<u32>,
    pub(super) size: u64,
    pub(super) format: String,
    /// `images`, `snippets`, `iso`, ...
    pub(super) content: String,
    pub(super) ctime: i64,
    /// Base volume name of a linked clone.
    pub(super) parent: Option<String>,
}

type PoolKey = (String, String);

/// All storages and their volumes.
#[derive(Debug, Default)]
pub(super) struct Storages {
    defs: Vec<Storage>,
    pools: BTreeMap<PoolKey, BTreeMap<String, Volume>>,
}

/// The last path component without extension: `vm-101-disk-0` of any volume name.
fn stem(name: &str) -> &str {
    let last = name.rsplit('/').next().unwrap_or(name);
    last.split('.').next().unwrap_or(last)
}

impl Storages {
    /// Build from the simulator config.
    pub(super) fn new(configs: &[StorageConfig]) -> Self {
        Self {
            defs: configs.iter().map(Storage::from_config).collect(),
            pools: BTreeMap::new(),
        }
    }

    /// All definitions in config order.
    pub(super) fn all(&self) -> &[Storage] {
        &self.defs
    }

    /// A definition by id.
    pub(super) fn def(&self, id: &str) -> Option<&Storage> {
        self.defs.iter().find(|s| s.id == id)
    }

    /// `storage_config`: the definition or `storage 'x' does not exist`.
    pub(super) fn config(&self, id: &str) -> Result<&Storage, String> {
        self.def(id)
            .ok_or_else(|| format!("storage '{id}' does not exist"))
    }

    /// `storage_check_enabled`: exists and is available on `node`.
    pub(super) fn check_enabled(&self, id: &str, node: &str) -> Result<&Storage, String> {
        let s = self.config(id)?;
        if !s.on_node(node) {
            return Err(format!("storage '{id}' is not available on node '{node}'"));
        }
        Ok(s)
    }

    fn key(&self, storage: &str, node: &str) -> PoolKey {
        let shared = self.def(storage).is_some_and(|s| s.shared);
        (
            storage.to_string(),
            if shared {
                String::new()
            } else {
                node.to_string()
            },
        )
    }

    /// The volume `volid` as seen from `node`.
    pub(super) fn find(&self, volid: &str, node: &str) -> Option<&Volume> {
        let (storage, name) = super::drive::split_volid(volid)?;
        self.pools.get(&self.key(storage, node))?.get(name)
    }

    fn find_mut(&mut self, volid: &str, node: &str) -> Option<&mut Volume> {
        let (storage, name) = super::drive::split_volid(volid)?;
        let key = self.key(storage, node);
        self.pools.get_mut(&key)?.get_mut(name)
    }

    /// Set a volume's size (resize).
    pub(super) fn set_size(&mut self, volid: &str, node: &str, size: u64) {
        if let Some(v) = self.find_mut(volid, node) {
            v.size = size;
        }
    }

    /// Volumes of `storage` as seen from `node`.
    pub(super) fn list(&self, storage: &str, node: &str) -> Vec<&Volume> {
        self.pools
            .get(&self.key(storage, node))
            .map(|p| p.values().collect())
            .unwrap_or_default()
    }

    /// Bytes used on `storage` as seen from `node`.
    pub(super) fn used(&self, storage: &str, node: &str) -> u64 {
        self.list(storage, node).iter().map(|v| v.size).sum()
    }

    fn insert(&mut self, storage: &str, node: &str, vol: Volume) -> String {
        let volid = format!("{storage}:{}", vol.name);
        let key = self.key(storage, node);
        self.pools
            .entry(key)
            .or_default()
            .insert(vol.name.clone(), vol);
        volid
    }

    fn free_disk_index(&self, storage: &str, node: &str, vmid: u32) -> u32 {
        let used: BTreeSet<u32> = self
            .list(storage, node)
            .iter()
            .filter_map(|v| {
                let s = stem(&v.name);
                s.strip_prefix(&format!("vm-{vmid}-disk-"))
                    .or_else(|| s.strip_prefix(&format!("base-{vmid}-disk-")))
                    .and_then(|n| n.parse().ok())
            })
            .collect();
        (0..).find(|n| !used.contains(n)).unwrap_or(0)
    }

    /// `vdisk_alloc` of a new image `vm-<vmid>-disk-<n>` (or a named one such as
    /// `vm-<vmid>-cloudinit`), returning its volid.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn alloc(
        &mut self,
        storage: &str,
        node: &str,
        vmid: u32,
        name: Option<&str>,
        format: Option<&str>,
        size: u64,
        ctime: i64,
    ) -> Result<String, String> {
        let s = self.check_enabled(storage, node)?.clone();
        let format = s.resolve_format(format);
        let stem = match name {
            Some(n) => n.to_string(),
            None => format!(
                "vm-{vmid}-disk-{}",
                self.free_disk_index(storage, node, vmid)
            ),
        };
        let name = if s.path_based() {
            format!("{vmid}/{stem}.{format}")
        } else {
            stem
        };
        if self.find(&format!("{storage}:{name}"), node).is_some() {
            return Err(format!(
                "unable to create volume '{storage}:{name}' - volume already exists"
            ));
        }
        let vol = Volume {
            name,
            vmid: Some(vmid),
            size,
            format,
            content: "images".into(),
            ctime,
            parent: None,
        };
        Ok(self.insert(storage, node, vol))
    }

    /// Whether `volid` is a base volume some linked clone still uses.
    pub(super) fn is_base_and_used(&self, volid: &str, node: &str) -> bool {
        let Some((storage, name)) = super::drive::split_volid(volid) else {
            return false;
        };
        self.list(storage, node)
            .iter()
            .any(|v| v.parent.as_deref() == Some(name))
    }

    /// `vdisk_free`.
    pub(super) fn free(&mut self, volid: &str, node: &str) -> Result<(), String> {
        let (storage, name) = super::drive::split_volid(volid)
            .ok_or_else(|| format!("unable to parse volume ID '{volid}'"))?;
        if self.is_base_and_used(volid, node) {
            return Err(format!(
                "base volume '{name}' is still in use by linked clones"
            ));
        }
        let key = self.key(storage, node);
        self.pools.get_mut(&key).and_then(|p| p.remove(name));
        Ok(())
    }

    /// `vdisk_create_base`: rename `vm-<vmid>-disk-<n>` to `base-<vmid>-disk-<n>`.
    pub(super) fn create_base(&mut self, volid: &str, node: &str) -> Result<String, String> {
        let (storage, name) = super::drive::split_volid(volid)
            .map(|(s, n)| (s.to_string(), n.to_string()))
            .ok_or_else(|| format!("unable to parse volume ID '{volid}'"))?;
        let key = self.key(&storage, node);
        let pool = self.pools.entry(key).or_default();
        let mut vol = pool
            .remove(&name)
            .ok_or_else(|| format!("volume '{volid}' does not exist"))?;
        let stem_old = stem(&name).to_string();
        let stem_new = stem_old.replacen("vm-", "base-", 1);
        vol.name = name.replacen(&stem_old, &stem_new, 1);
        let new = format!("{storage}:{}", vol.name);
        pool.insert(vol.name.clone(), vol);
        Ok(new)
    }

    /// Linked clone of base volume `volid` for `newid` on the same storage.
    pub(super) fn clone_linked(
        &mut self,
        volid: &str,
        node: &str,
        newid: u32,
        ctime: i64,
    ) -> Result<String, String> {
        let base = self
            .find(volid, node)
            .cloned()
            .ok_or_else(|| format!("volume '{volid}' does not exist"))?;
        let (storage, _) = super::drive::split_volid(volid).unwrap_or_default();
        let storage = storage.to_string();
        let s = self.config(&storage)?.clone();
        let n = self.free_disk_index(&storage, node, newid);
        let own = if s.path_based() {
            format!("{newid}/vm-{newid}-disk-{n}.{}", base.format)
        } else {
            format!("vm-{newid}-disk-{n}")
        };
        let vol = Volume {
            name: format!("{}/{own}", base.name),
            vmid: Some(newid),
            size: base.size,
            format: base.format.clone(),
            content: "images".into(),
            ctime,
            parent: Some(base.name.clone()),
        };
        Ok(self.insert(&storage, node, vol))
    }

    /// Full copy of `volid` (seen from `src_node`) to `storage` on `dst_node` for `newid`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn copy_full(
        &mut self,
        volid: &str,
        src_node: &str,
        storage: &str,
        dst_node: &str,
        newid: u32,
        format: Option<&str>,
        ctime: i64,
    ) -> Result<String, String> {
        let src = self
            .find(volid, src_node)
            .cloned()
            .ok_or_else(|| format!("volume '{volid}' does not exist"))?;
        let wanted = format.unwrap_or(&src.format).to_string();
        let cloudinit = stem(&src.name).ends_with("-cloudinit");
        let name = cloudinit.then(|| format!("vm-{newid}-cloudinit"));
        self.alloc(
            storage,
            dst_node,
            newid,
            name.as_deref(),
            Some(&wanted),
            src.size,
            ctime,
        )
    }

    /// Move a volume of a local storage from one node's pool to another's (migration).
    pub(super) fn move_local(&mut self, volid: &str, from: &str, to: &str) -> Result<(), String> {
        let (storage, name) = super::drive::split_volid(volid)
            .map(|(s, n)| (s.to_string(), n.to_string()))
            .ok_or_else(|| format!("unable to parse volume ID '{volid}'"))?;
        let s = self.check_enabled(&storage, to)?;
        if s.shared {
            return Ok(());
        }
        let from_key = self.key(&storage, from);
        let vol = self
            .pools
            .get_mut(&from_key)
            .and_then(|p| p.remove(&name))
            .ok_or_else(|| format!("volume '{volid}' does not exist"))?;
        let to_key = self.key(&storage, to);
        self.pools.entry(to_key).or_default().insert(name, vol);
        Ok(())
    }

    /// Store a snippet file, returning `storage:snippets/<file>`.
    pub(super) fn put_snippet(
        &mut self,
        storage: &str,
        node: &str,
        file: &str,
        data: &str,
        ctime: i64,
    ) -> String {
        let vol = Volume {
            name: format!("snippets/{file}"),
            vmid: None,
            size: data.len() as u64,
            format: "snippet".into(),
            content: "snippets".into(),
            ctime,
            parent: None,
        };
        self.insert(storage, node, vol)
    }

    /// Volumes of `vmid` on every storage visible from `node` (`destroy-unreferenced-disks`).
    pub(super) fn owned_by(&self, vmid: u32, node: &str) -> Vec<String> {
        self.defs
            .iter()
            .filter(|s| s.on_node(node))
            .flat_map(|s| {
                self.list(&s.id, node)
                    .into_iter()
                    .filter(|v| v.vmid == Some(vmid) && v.content == "images")
                    .map(|v| format!("{}:{}", s.id, v.name))
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storages() -> Storages {
        let cfg = crate::SimConfig::default();
        Storages::new(&cfg.storages)
    }

    #[test]
    fn allocation_names_follow_the_plugin() {
        let mut s = storages();
        let a = s
            .alloc("local-lvm", "pve1", 100, None, None, 1 << 30, 0)
            .unwrap();
        let b = s
            .alloc("local-lvm", "pve1", 100, None, None, 1 << 30, 0)
            .unwrap();
        let c = s
            .alloc("local", "pve1", 100, None, Some("qcow2"), 1 << 30, 0)
            .unwrap();
        let d = s
            .alloc(
                "local",
                "pve1",
                100,
                Some("vm-100-cloudinit"),
                Some("qcow2"),
                4 << 20,
                0,
            )
            .unwrap();
        assert_eq!(a, "local-lvm:vm-100-disk-0");
        assert_eq!(b, "local-lvm:vm-100-disk-1");
        assert_eq!(c, "local:100/vm-100-disk-0.qcow2");
        assert_eq!(d, "local:100/vm-100-cloudinit.qcow2");
        // local storage: per node pools
        assert_eq!(
            s.alloc("local-lvm", "pve2", 100, None, None, 1, 0).unwrap(),
            "local-lvm:vm-100-disk-0"
        );
        assert!(s.find("local-lvm:vm-100-disk-1", "pve2").is_none());
    }

    #[test]
    fn linked_clones_pin_their_base() {
        let mut s = storages();
        let v = s
            .alloc("local-lvm", "pve1", 100, None, None, 8 << 30, 0)
            .unwrap();
        let base = s.create_base(&v, "pve1").unwrap();
        assert_eq!(base, "local-lvm:base-100-disk-0");
        let linked = s.clone_linked(&base, "pve1", 101, 0).unwrap();
        assert_eq!(linked, "local-lvm:base-100-disk-0/vm-101-disk-0");
        assert!(s.is_base_and_used(&base, "pve1"));
        assert_eq!(
            s.free(&base, "pve1").unwrap_err(),
            "base volume 'base-100-disk-0' is still in use by linked clones"
        );
        s.free(&linked, "pve1").unwrap();
        s.free(&base, "pve1").unwrap();
        let q = s
            .alloc("local", "pve1", 100, None, Some("qcow2"), 1, 0)
            .unwrap();
        let qb = s.create_base(&q, "pve1").unwrap();
        assert_eq!(
            s.clone_linked(&qb, "pve1", 101, 0).unwrap(),
            "local:100/base-100-disk-0.qcow2/101/vm-101-disk-0.qcow2"
        );
    }

    #[test]
    fn storage_checks_have_pve_texts() {
        let s = storages();
        assert_eq!(
            s.config("nope").unwrap_err(),
            "storage 'nope' does not exist"
        );
        assert!(s.check_enabled("ceph", "pve3").is_ok());
    }
}
