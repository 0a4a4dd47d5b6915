//! Migration: `GET .../migrate` (preconditions: allowed nodes, local disks and resources) and
//! `POST .../migrate` (task `qmigrate`).

use std::net::IpAddr;

use crate::calls::paths::vm_path;
use crate::client::Client;
use crate::error::PveError;
use crate::props::kv::invalid;
use crate::props::str_enum::str_enum;
use crate::props::{check_node, check_storage};
use crate::request::{ApiRequest, Method};
use crate::types::MigratePrecondition;
use crate::upid::Upid;

str_enum! {
    /// Migration traffic transport.
    pub enum MigrationType: "migration_type" {
        Secure = "secure",
        Insecure = "insecure",
    }
}

/// Migration parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrateOptions {
    /// Live-migrate a running VM.
    pub online: Option<bool>,
    /// Copy local disks too.
    pub with_local_disks: Option<bool>,
    /// Storage mapping: one storage id, `1` (same ids), or `src:dst,src2:dst2`.
    pub targetstorage: Option<String>,
    /// I/O limit in KiB/s.
    pub bwlimit: Option<u64>,
    /// Transport (root@pam only).
    pub migration_type: Option<MigrationType>,
    /// Network for migration traffic, CIDR (root@pam only).
    pub migration_network: Option<String>,
    /// Migrate despite local devices (root@pam only).
    pub force: Option<bool>,
    /// Carry conntrack state on live migration (PVE 9 only, see
    /// [`PVE9_ONLY_PARAMS`](crate::calls::PVE9_ONLY_PARAMS)).
    pub with_conntrack_state: Option<bool>,
}

fn check_targetstorage(value: &str) -> Result<(), PveError> {
    if value == "1" {
        return Ok(());
    }
    let items: Vec<&str> = value
        .split([',', ';', ' '])
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Err(invalid("targetstorage", "empty storage mapping"));
    }
    for item in items {
        match item.split_once(':') {
            Some((src, dst)) => {
                check_storage("targetstorage", src)?;
                check_storage("targetstorage", dst)?;
            }
            None => check_storage("targetstorage", item)?,
        }
    }
    Ok(())
}

fn check_cidr(field: &str, value: &str) -> Result<(), PveError> {
    let bad = || invalid(field, format!("'{value}' is not ADDRESS/PREFIX"));
    let (addr, prefix) = value.split_once('/').ok_or_else(bad)?;
    let addr: IpAddr = addr.parse().map_err(|_| bad())?;
    let prefix: u8 = prefix.parse().map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if prefix > max {
        return Err(bad());
    }
    Ok(())
}

/// `GET /nodes/{node}/qemu/{vmid}/migrate[?target=]`.
pub fn migrate_precondition_request(
    node: &str,
    vmid: u32,
    target: Option<&str>,
) -> Result<ApiRequest, PveError> {
    let path = vm_path(node, vmid, "/migrate")?;
    if let Some(t) = target {
        check_node("target", t)?;
    }
    Ok(ApiRequest::new(Method::Get, path).opt("target", target))
}

/// `POST /nodes/{node}/qemu/{vmid}/migrate` to `target`.
pub fn migrate_vm_request(
    node: &str,
    vmid: u32,
    target: &str,
    opts: &MigrateOptions,
) -> Result<ApiRequest, PveError> {
    let path = vm_path(node, vmid, "/migrate")?;
    check_node("target", target)?;
    if target == node {
        return Err(invalid(
            "target",
            format!("'{target}' is the node the VM is on"),
        ));
    }
    if let Some(t) = &opts.targetstorage {
        check_targetstorage(t)?;
    }
    if let Some(n) = &opts.migration_network {
        check_cidr("migration_network", n)?;
    }
    Ok(ApiRequest::new(Method::Post, path)
        .param("target", target)
        .flag("online", opts.online)
        .flag("with-local-disks", opts.with_local_disks)
        .opt("targetstorage", opts.targetstorage.as_deref())
        .opt("bwlimit", opts.bwlimit)
        .opt("migration_type", opts.migration_type)
        .opt("migration_network", opts.migration_network.as_deref())
        .flag("force", opts.force)
        .flag("with-conntrack-state", opts.with_conntrack_state))
}

impl Client {
    /// Whether and where a VM can migrate.
    pub async fn migrate_precondition(
        &self,
        node: &str,
        vmid: u32,
        target: Option<&str>,
    ) -> Result<MigratePrecondition, PveError> {
        self.fetch(&migrate_precondition_request(node, vmid, target)?)
            .await
    }

    /// Migrate a VM (`qmigrate` task, on the source node).
    pub async fn migrate_vm(
        &self,
        node: &str,
        vmid: u32,
        target: &str,
        opts: &MigrateOptions,
    ) -> Result<Upid, PveError> {
        self.start_task(&migrate_vm_request(node, vmid, target, opts)?)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(r: Result<ApiRequest, PveError>) -> String {
        r.unwrap_err()
            .invalid_field()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("not Invalid"))
    }

    #[test]
    fn migrate_sends_every_option() {
        let opts = MigrateOptions {
            online: Some(true),
            with_local_disks: Some(true),
            targetstorage: Some("local-lvm:ceph,local:local".into()),
            bwlimit: Some(0),
            migration_type: Some(MigrationType::Insecure),
            migration_network: Some("10.10.0.0/24".into()),
            force: Some(false),
            with_conntrack_state: Some(true),
        };
        let r = migrate_vm_request("pve1", 100, "pve2", &opts).unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (Method::Post, "/nodes/pve1/qemu/100/migrate")
        );
        let got: Vec<(&str, &str)> = r
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("target", "pve2"),
                ("online", "1"),
                ("with-local-disks", "1"),
                ("targetstorage", "local-lvm:ceph,local:local"),
                ("bwlimit", "0"),
                ("migration_type", "insecure"),
                ("migration_network", "10.10.0.0/24"),
                ("force", "0"),
                ("with-conntrack-state", "1"),
            ]
        );
        let pre = migrate_precondition_request("pve1", 100, Some("pve2")).unwrap();
        assert_eq!((pre.method, pre.get("target")), (Method::Get, Some("pve2")));
    }

    #[test]
    fn migrate_validation_names_fields() {
        let none = MigrateOptions::default();
        assert_eq!(
            field_of(migrate_vm_request("pve1", 100, "pve1", &none)),
            "target"
        );
        assert_eq!(
            field_of(migrate_vm_request("pve1", 100, "pve_2", &none)),
            "target"
        );
        for bad in ["", "a:", "1x", "a:b:c"] {
            let o = MigrateOptions {
                targetstorage: Some(bad.into()),
                ..Default::default()
            };
            assert_eq!(
                field_of(migrate_vm_request("pve1", 100, "pve2", &o)),
                "targetstorage",
                "{bad}"
            );
        }
        for good in ["1", "ceph", "local-lvm:ceph"] {
            let o = MigrateOptions {
                targetstorage: Some(good.into()),
                ..Default::default()
            };
            migrate_vm_request("pve1", 100, "pve2", &o).unwrap();
        }
        let o = MigrateOptions {
            migration_network: Some("10.0.0.0/33".into()),
            ..Default::default()
        };
        assert_eq!(
            field_of(migrate_vm_request("pve1", 100, "pve2", &o)),
            "migration_network"
        );
        assert_eq!(
            field_of(migrate_precondition_request("pve1", 100, Some("-"))),
            "target"
        );
    }
}
