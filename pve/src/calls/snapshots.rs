//! Snapshots: list (`GET .../snapshot`), create (`qmsnapshot`), delete (`qmdelsnapshot`),
//! read a snapshot's config, roll back (`qmrollback`).

use crate::calls::paths::vm_path;
use crate::client::Client;
use crate::error::PveError;
use crate::props::check_snapname;
use crate::request::{ApiRequest, Method, segment};
use crate::types::{SnapshotEntry, VmConfig};
use crate::upid::Upid;

/// Snapshot creation parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotOptions {
    /// Save the RAM state too (running VMs).
    pub vmstate: Option<bool>,
    /// Description.
    pub description: Option<String>,
}

fn snapshot_path(node: &str, vmid: u32, name: &str, tail: &str) -> Result<String, PveError> {
    let base = vm_path(node, vmid, "/snapshot")?;
    check_snapname("snapname", name)?;
    Ok(format!("{base}/{}{tail}", segment(name)))
}

/// `GET /nodes/{node}/qemu/{vmid}/snapshot`.
pub fn snapshots_request(node: &str, vmid: u32) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(
        Method::Get,
        vm_path(node, vmid, "/snapshot")?,
    ))
}

/// `POST /nodes/{node}/qemu/{vmid}/snapshot`: take snapshot `name`.
pub fn create_snapshot_request(
    node: &str,
    vmid: u32,
    name: &str,
    opts: &SnapshotOptions,
) -> Result<ApiRequest, PveError> {
    let path = vm_path(node, vmid, "/snapshot")?;
    check_snapname("snapname", name)?;
    Ok(ApiRequest::new(Method::Post, path)
        .param("snapname", name)
        .flag("vmstate", opts.vmstate)
        .opt("description", opts.description.as_deref()))
}

/// `DELETE /nodes/{node}/qemu/{vmid}/snapshot/{snapname}`; `force` removes the config entry
/// even if removing the disk snapshots fails.
pub fn delete_snapshot_request(
    node: &str,
    vmid: u32,
    name: &str,
    force: Option<bool>,
) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Delete, snapshot_path(node, vmid, name, "")?).flag("force", force))
}

/// `GET /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config`.
pub fn snapshot_config_request(node: &str, vmid: u32, name: &str) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(
        Method::Get,
        snapshot_path(node, vmid, name, "/config")?,
    ))
}

/// `POST /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback`; `start` starts the VM after.
pub fn rollback_snapshot_request(
    node: &str,
    vmid: u32,
    name: &str,
    start: Option<bool>,
) -> Result<ApiRequest, PveError> {
    Ok(
        ApiRequest::new(Method::Post, snapshot_path(node, vmid, name, "/rollback")?)
            .flag("start", start),
    )
}

impl Client {
    /// Snapshots of a VM, ending with the `current` pseudo-entry.
    pub async fn snapshots(&self, node: &str, vmid: u32) -> Result<Vec<SnapshotEntry>, PveError> {
        self.fetch(&snapshots_request(node, vmid)?).await
    }

    /// Take a snapshot (`qmsnapshot` task).
    pub async fn create_snapshot(
        &self,
        node: &str,
        vmid: u32,
        name: &str,
        opts: &SnapshotOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&create_snapshot_request(node, vmid, name, opts)?)
            .await
    }

    /// Delete a snapshot (`qmdelsnapshot` task).
    pub async fn delete_snapshot(
        &self,
        node: &str,
        vmid: u32,
        name: &str,
        force: Option<bool>,
    ) -> Result<Upid, PveError> {
        self.start_task(&delete_snapshot_request(node, vmid, name, force)?)
            .await
    }

    /// The config saved in a snapshot.
    pub async fn snapshot_config(
        &self,
        node: &str,
        vmid: u32,
        name: &str,
    ) -> Result<VmConfig, PveError> {
        self.fetch(&snapshot_config_request(node, vmid, name)?)
            .await
    }

    /// Roll back to a snapshot (`qmrollback` task).
    pub async fn rollback_snapshot(
        &self,
        node: &str,
        vmid: u32,
        name: &str,
        start: Option<bool>,
    ) -> Result<Upid, PveError> {
        self.start_task(&rollback_snapshot_request(node, vmid, name, start)?)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_calls_build_exact_requests() {
        let opts = SnapshotOptions {
            vmstate: Some(true),
            description: Some("before upgrade".into()),
        };
        let c = create_snapshot_request("pve1", 100, "pre-upgrade", &opts).unwrap();
        assert_eq!(
            (c.method, c.path.as_str()),
            (Method::Post, "/nodes/pve1/qemu/100/snapshot")
        );
        let got: Vec<(&str, &str)> = c
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("snapname", "pre-upgrade"),
                ("vmstate", "1"),
                ("description", "before upgrade")
            ]
        );
        let d = delete_snapshot_request("pve1", 100, "s1", Some(true)).unwrap();
        assert_eq!(
            (d.method, d.path.as_str(), d.get("force")),
            (
                Method::Delete,
                "/nodes/pve1/qemu/100/snapshot/s1",
                Some("1")
            )
        );
        let r = rollback_snapshot_request("pve1", 100, "s1", Some(false)).unwrap();
        assert_eq!(
            (r.path.as_str(), r.get("start")),
            ("/nodes/pve1/qemu/100/snapshot/s1/rollback", Some("0"))
        );
        assert_eq!(
            snapshot_config_request("pve1", 100, "s1").unwrap().path,
            "/nodes/pve1/qemu/100/snapshot/s1/config"
        );
        assert_eq!(
            snapshots_request("pve1", 100).unwrap().path,
            "/nodes/pve1/qemu/100/snapshot"
        );
    }

    #[test]
    fn reserved_and_bad_names_are_refused_naming_snapname() {
        for bad in ["current", "pending", "x", "1st", "a/b", "../x"] {
            for r in [
                create_snapshot_request("pve1", 100, bad, &SnapshotOptions::default()),
                delete_snapshot_request("pve1", 100, bad, None),
                rollback_snapshot_request("pve1", 100, bad, None),
                snapshot_config_request("pve1", 100, bad),
            ] {
                assert!(
                    matches!(r, Err(PveError::Invalid { ref field, .. }) if field == "snapname"),
                    "{bad}"
                );
            }
        }
    }
}
