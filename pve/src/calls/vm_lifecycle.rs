//! Creating and destroying VMs: `POST /nodes/{node}/qemu` (task `qmcreate`) and
//! `DELETE /nodes/{node}/qemu/{vmid}` (task `qmdestroy`).
//!
//! Create goes through [`Client::start_create`], which makes a retried create safe: a VMID
//! exists only once, and an "already exists" answer to a retry is checked against the node's
//! task list to recognize our own earlier attempt.

use crate::calls::ConfigChanges;
use crate::calls::paths::{node_path, vm_path};
use crate::client::Client;
use crate::create_retry::CreateIdentity;
use crate::error::PveError;
use crate::props::kv::invalid;
use crate::props::{check_pool, check_storage, check_vmid};
use crate::request::{ApiRequest, Method};
use crate::upid::Upid;

/// Create-only parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateOptions {
    /// Add the VM to this pool.
    pub pool: Option<String>,
    /// Default storage for volumes created implicitly (e.g. EFI disk, restore).
    pub storage: Option<String>,
    /// Start the VM once created.
    pub start: Option<bool>,
    /// Add the VM as an HA resource (PVE 9 only, see
    /// [`PVE9_ONLY_PARAMS`](crate::calls::PVE9_ONLY_PARAMS)).
    pub ha_managed: Option<bool>,
}

/// Destroy parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestroyOptions {
    /// Also remove the VMID from backup jobs, replication and HA.
    pub purge: Option<bool>,
    /// Also destroy disks on enabled storages that carry the VMID but are not in the config.
    pub destroy_unreferenced_disks: Option<bool>,
    /// Ignore the config lock (root@pam only).
    pub skiplock: Option<bool>,
}

/// `POST /nodes/{node}/qemu`: create VM `vmid` with `config`.
pub fn create_vm_request(
    node: &str,
    vmid: u32,
    config: &ConfigChanges,
    opts: &CreateOptions,
) -> Result<ApiRequest, PveError> {
    let path = node_path(node, "/qemu")?;
    check_vmid("vmid", vmid)?;
    if let Some(control) = config.first_update_control() {
        return Err(invalid(
            control,
            "applies to config updates only, not to create",
        ));
    }
    if let Some(p) = &opts.pool {
        check_pool("pool", p)?;
    }
    if let Some(s) = &opts.storage {
        check_storage("storage", s)?;
    }
    let mut req = ApiRequest::new(Method::Post, path).param("vmid", vmid.to_string());
    req.params.extend(config.to_params()?);
    Ok(req
        .opt("pool", opts.pool.as_deref())
        .opt("storage", opts.storage.as_deref())
        .flag("start", opts.start)
        .flag("ha-managed", opts.ha_managed))
}

/// `DELETE /nodes/{node}/qemu/{vmid}`.
pub fn destroy_vm_request(
    node: &str,
    vmid: u32,
    opts: &DestroyOptions,
) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Delete, vm_path(node, vmid, "")?)
        .flag("purge", opts.purge)
        .flag(
            "destroy-unreferenced-disks",
            opts.destroy_unreferenced_disks,
        )
        .flag("skiplock", opts.skiplock))
}

impl Client {
    /// Create a VM; returns the `qmcreate` task. Safe to call again after a lost answer.
    pub async fn create_vm(
        &self,
        node: &str,
        vmid: u32,
        config: &ConfigChanges,
        opts: &CreateOptions,
    ) -> Result<Upid, PveError> {
        let req = create_vm_request(node, vmid, config, opts)?;
        let identity = CreateIdentity {
            node: node.to_string(),
            vmid,
            task_type: "qmcreate",
            source_vmid: None,
        };
        self.start_create(&req, &identity).await
    }

    /// Destroy a VM (must be stopped); returns the `qmdestroy` task.
    pub async fn destroy_vm(
        &self,
        node: &str,
        vmid: u32,
        opts: &DestroyOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&destroy_vm_request(node, vmid, opts)?)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::props::NetDevice;

    fn field_of(r: Result<ApiRequest, PveError>) -> String {
        r.unwrap_err()
            .invalid_field()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("not Invalid"))
    }

    #[test]
    fn create_sends_vmid_config_then_options() {
        let cfg = ConfigChanges::new()
            .name("web1")
            .memory_mib(1024)
            .net(0, &NetDevice::virtio("vmbr0"));
        let opts = CreateOptions {
            pool: Some("fleet".into()),
            storage: Some("local-lvm".into()),
            start: Some(true),
            ha_managed: Some(false),
        };
        let r = create_vm_request("pve1", 100, &cfg, &opts).unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (Method::Post, "/nodes/pve1/qemu")
        );
        let got: Vec<(&str, &str)> = r
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("vmid", "100"),
                ("memory", "1024"),
                ("name", "web1"),
                ("net0", "model=virtio,bridge=vmbr0"),
                ("pool", "fleet"),
                ("storage", "local-lvm"),
                ("start", "1"),
                ("ha-managed", "0"),
            ]
        );
    }

    #[test]
    fn create_refuses_update_controls_and_bad_values() {
        let ok = ConfigChanges::new();
        let none = CreateOptions::default();
        assert_eq!(
            field_of(create_vm_request(
                "pve1",
                100,
                &ok.clone().delete(&["net0"]),
                &none
            )),
            "delete"
        );
        assert_eq!(
            field_of(create_vm_request(
                "pve1",
                100,
                &ok.clone().digest("ab"),
                &none
            )),
            "digest"
        );
        assert_eq!(
            field_of(create_vm_request(
                "pve1",
                100,
                &ok.clone().skiplock(true),
                &none
            )),
            "skiplock"
        );
        assert_eq!(field_of(create_vm_request("pve1", 99, &ok, &none)), "vmid");
        assert_eq!(field_of(create_vm_request("-x", 100, &ok, &none)), "node");
        assert_eq!(
            field_of(create_vm_request("pve1", 100, &ok.clone().cores(0), &none)),
            "cores"
        );
        let bad_pool = CreateOptions {
            pool: Some("a b".into()),
            ..Default::default()
        };
        assert_eq!(
            field_of(create_vm_request("pve1", 100, &ok, &bad_pool)),
            "pool"
        );
        let bad_storage = CreateOptions {
            storage: Some("-x".into()),
            ..Default::default()
        };
        assert_eq!(
            field_of(create_vm_request("pve1", 100, &ok, &bad_storage)),
            "storage"
        );
    }

    #[test]
    fn destroy_sends_flags() {
        let opts = DestroyOptions {
            purge: Some(true),
            destroy_unreferenced_disks: Some(true),
            skiplock: Some(false),
        };
        let r = destroy_vm_request("pve1", 100, &opts).unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (Method::Delete, "/nodes/pve1/qemu/100")
        );
        let got: Vec<(&str, &str)> = r
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("purge", "1"),
                ("destroy-unreferenced-disks", "1"),
                ("skiplock", "0")
            ]
        );
        assert!(
            destroy_vm_request("pve1", 100, &DestroyOptions::default())
                .unwrap()
                .params
                .is_empty()
        );
    }
}
