//! Remote migration to another PVE cluster or standalone node: `POST
//! /nodes/{node}/qemu/{vmid}/remote_migrate` (task `qmigrate` on the source node), the call
//! Proxmox Datacenter Manager makes. The target is described by its endpoint, whose API token
//! is a secret: `target-endpoint` is a secret parameter ([`crate::request::is_secret_param`]),
//! hidden from `Debug` and refused by the `pvesh` backend (argv is visible to every user).

use crate::calls::paths::vm_path;
use crate::client::Client;
use crate::error::PveError;
use crate::props::kv::invalid;
use crate::props::{check_bridge, check_storage, check_vmid};
use crate::request::{ApiRequest, Method};
use crate::upid::Upid;

/// Remote migration parameters.
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteMigrateOptions {
    /// `target-endpoint` (format `proxmox-remote`: `host=..,apitoken=PVEAPIToken=..,
    /// fingerprint=..[,port=..]`). Secret.
    pub target_endpoint: String,
    /// `target-storage`: one storage id for all, or `src:dst,...`.
    pub target_storage: String,
    /// `target-bridge`: one bridge for all, or `src:dst,...`.
    pub target_bridge: String,
    /// The VMID on the target (default: the same).
    pub target_vmid: Option<u32>,
    /// Live-migrate a running VM.
    pub online: Option<bool>,
    /// Delete the source VM and its disks once the target runs it.
    pub delete: Option<bool>,
    /// I/O limit in KiB/s.
    pub bwlimit: Option<u64>,
}

impl std::fmt::Debug for RemoteMigrateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteMigrateOptions")
            .field("target_endpoint", &"<redacted>")
            .field("target_storage", &self.target_storage)
            .field("target_bridge", &self.target_bridge)
            .field("target_vmid", &self.target_vmid)
            .field("online", &self.online)
            .field("delete", &self.delete)
            .field("bwlimit", &self.bwlimit)
            .finish()
    }
}

/// A `storage-pair-list` or `bridge-pair-list`: one id, or `src:dst` pairs.
fn check_pairs(
    field: &str,
    value: &str,
    check: fn(&str, &str) -> Result<(), PveError>,
) -> Result<(), PveError> {
    let items: Vec<&str> = value
        .split([',', ';', ' '])
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Err(invalid(field, "empty mapping"));
    }
    for item in items {
        match item.split_once(':') {
            Some((src, dst)) => {
                check(field, src)?;
                check(field, dst)?;
            }
            None => check(field, item)?,
        }
    }
    Ok(())
}

fn check_endpoint(value: &str) -> Result<(), PveError> {
    // Never echo the value: it holds the token.
    let keys: Vec<&str> = value
        .split(',')
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
        .collect();
    for needed in ["host", "apitoken"] {
        if !keys.contains(&needed) {
            return Err(invalid(
                "target-endpoint",
                format!(
                    "missing '{needed}=' (format: host=..,apitoken=PVEAPIToken=..,fingerprint=..)"
                ),
            ));
        }
    }
    if let Some(k) = keys
        .iter()
        .find(|k| !matches!(**k, "host" | "apitoken" | "fingerprint" | "port"))
    {
        return Err(invalid(
            "target-endpoint",
            format!("unknown key '{k}' (known: host, apitoken, fingerprint, port)"),
        ));
    }
    Ok(())
}

/// `POST /nodes/{node}/qemu/{vmid}/remote_migrate`.
pub fn remote_migrate_request(
    node: &str,
    vmid: u32,
    opts: &RemoteMigrateOptions,
) -> Result<ApiRequest, PveError> {
    let path = vm_path(node, vmid, "/remote_migrate")?;
    check_endpoint(&opts.target_endpoint)?;
    check_pairs("target-storage", &opts.target_storage, check_storage)?;
    check_pairs("target-bridge", &opts.target_bridge, check_bridge)?;
    if let Some(t) = opts.target_vmid {
        check_vmid("target-vmid", t)?;
    }
    Ok(ApiRequest::new(Method::Post, path)
        .param("target-endpoint", opts.target_endpoint.as_str())
        .param("target-storage", opts.target_storage.as_str())
        .param("target-bridge", opts.target_bridge.as_str())
        .opt("target-vmid", opts.target_vmid)
        .flag("online", opts.online)
        .flag("delete", opts.delete)
        .opt("bwlimit", opts.bwlimit))
}

impl Client {
    /// Migrate a VM to another PVE cluster (`qmigrate` task on the source node). Sent once:
    /// a lost answer is settled by looking where the VM is, never by starting a second move.
    pub async fn remote_migrate_vm(
        &self,
        node: &str,
        vmid: u32,
        opts: &RemoteMigrateOptions,
    ) -> Result<Upid, PveError> {
        let req = remote_migrate_request(node, vmid, opts)?;
        let reply = self.execute_once(&req).await?;
        crate::client::decode_upid(&req, &reply.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> RemoteMigrateOptions {
        RemoteMigrateOptions {
            target_endpoint: "host=10.0.0.9,port=8006,fingerprint=AA:BB,apitoken=PVEAPIToken=pvefleet-migrate@pve!vm100=s3cr3t".into(),
            target_storage: "local-lvm".into(),
            target_bridge: "vmbr0:vmbr0,vmbr1:vmbr1".into(),
            target_vmid: Some(100),
            online: Some(true),
            delete: Some(true),
            bwlimit: None,
        }
    }

    #[test]
    fn sends_every_option_and_never_shows_the_token() {
        let r = remote_migrate_request("pve1", 100, &opts()).unwrap();
        assert_eq!(r.path, "/nodes/pve1/qemu/100/remote_migrate");
        assert_eq!(r.get("target-bridge"), Some("vmbr0:vmbr0,vmbr1:vmbr1"));
        assert_eq!(r.get("delete"), Some("1"));
        assert!(!format!("{r:?}").contains("s3cr3t"));
        assert!(!format!("{:?}", opts()).contains("s3cr3t"));
    }

    #[test]
    fn a_malformed_endpoint_is_refused_without_echoing_it() {
        let mut o = opts();
        o.target_endpoint = "apitoken=PVEAPIToken=x@pve!t=s3cr3t".into();
        let err = remote_migrate_request("pve1", 100, &o).unwrap_err();
        assert_eq!(err.invalid_field(), Some("target-endpoint"));
        assert!(!err.to_string().contains("s3cr3t"), "{err}");
        let mut o = opts();
        o.target_bridge = "vmbr0:".into();
        assert!(remote_migrate_request("pve1", 100, &o).is_err());
    }
}
