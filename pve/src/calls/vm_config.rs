//! VM configuration: read (`GET .../config`, `GET .../pending`) and change it synchronously
//! (`PUT .../config`, errors come back as HTTP errors) or as a task (`POST .../config`, for
//! changes that take time such as disk allocation).

use crate::calls::ConfigChanges;
use crate::calls::paths::vm_path;
use crate::client::{Client, decode_upid};
use crate::error::PveError;
use crate::props::check_snapname;
use crate::props::kv::{check_range, invalid};
use crate::request::{ApiRequest, Method};
use crate::types::{PendingEntry, VmConfig};
use crate::upid::Upid;

/// Which values `GET .../config` returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ConfigView {
    /// The config with pending changes applied (PVE's default).
    #[default]
    WithPending,
    /// The values in effect now, ignoring pending changes (`current=1`).
    Current,
    /// The config saved in a snapshot (`snapshot=<name>`).
    Snapshot(String),
}

/// `GET /nodes/{node}/qemu/{vmid}/config`.
pub fn vm_config_request(node: &str, vmid: u32, view: &ConfigView) -> Result<ApiRequest, PveError> {
    let req = ApiRequest::new(Method::Get, vm_path(node, vmid, "/config")?);
    Ok(match view {
        ConfigView::WithPending => req,
        ConfigView::Current => req.flag("current", Some(true)),
        ConfigView::Snapshot(name) => {
            check_snapname("snapshot", name)?;
            req.param("snapshot", name.as_str())
        }
    })
}

fn update_params(req: ApiRequest, changes: &ConfigChanges) -> Result<ApiRequest, PveError> {
    // A refused setter leaves nothing set: report its error, not "no options specified".
    changes.validate()?;
    if changes.is_empty() {
        return Err(invalid(
            "config",
            "no options specified (nothing set, deleted or reverted)",
        ));
    }
    let mut req = req;
    req.params.extend(changes.to_params()?);
    Ok(req)
}

/// `PUT /nodes/{node}/qemu/{vmid}/config`: apply `changes` synchronously.
pub fn update_vm_request(
    node: &str,
    vmid: u32,
    changes: &ConfigChanges,
) -> Result<ApiRequest, PveError> {
    update_params(
        ApiRequest::new(Method::Put, vm_path(node, vmid, "/config")?),
        changes,
    )
}

/// `POST /nodes/{node}/qemu/{vmid}/config`: apply `changes` in a task; `background_delay`
/// (1..=30 s) lets a quick change finish before the call returns.
pub fn update_vm_async_request(
    node: &str,
    vmid: u32,
    changes: &ConfigChanges,
    background_delay: Option<u32>,
) -> Result<ApiRequest, PveError> {
    if let Some(d) = background_delay {
        check_range("background_delay", d, 1, 30)?;
    }
    let req = update_params(
        ApiRequest::new(Method::Post, vm_path(node, vmid, "/config")?),
        changes,
    )?;
    Ok(req.opt("background_delay", background_delay))
}

/// `GET /nodes/{node}/qemu/{vmid}/pending`.
pub fn vm_pending_request(node: &str, vmid: u32) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(
        Method::Get,
        vm_path(node, vmid, "/pending")?,
    ))
}

impl Client {
    /// A VM's config.
    pub async fn vm_config(
        &self,
        node: &str,
        vmid: u32,
        view: &ConfigView,
    ) -> Result<VmConfig, PveError> {
        self.fetch(&vm_config_request(node, vmid, view)?).await
    }

    /// Apply config changes synchronously (`qm set`).
    pub async fn update_vm(
        &self,
        node: &str,
        vmid: u32,
        changes: &ConfigChanges,
    ) -> Result<(), PveError> {
        self.execute(&update_vm_request(node, vmid, changes)?)
            .await
            .map(|_| ())
    }

    /// Apply config changes in a task; `None` when the server finished without one.
    pub async fn update_vm_async(
        &self,
        node: &str,
        vmid: u32,
        changes: &ConfigChanges,
        background_delay: Option<u32>,
    ) -> Result<Option<Upid>, PveError> {
        let req = update_vm_async_request(node, vmid, changes, background_delay)?;
        let reply = self.execute(&req).await?;
        if reply.data.is_null() {
            return Ok(None);
        }
        decode_upid(&req, &reply.data).map(Some)
    }

    /// Pending (not yet applied) config changes.
    pub async fn vm_pending(&self, node: &str, vmid: u32) -> Result<Vec<PendingEntry>, PveError> {
        self.fetch(&vm_pending_request(node, vmid)?).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(r: &ApiRequest) -> Vec<(&str, &str)> {
        r.params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn a_refused_setter_is_reported_not_hidden_as_an_empty_update() {
        let err = update_vm_request("pve1", 100, &ConfigChanges::new().memory_mib(8)).unwrap_err();
        assert!(
            matches!(&err, PveError::Invalid { field, .. } if field == "memory"),
            "{err}"
        );
        let err = update_vm_request("pve1", 100, &ConfigChanges::new()).unwrap_err();
        assert!(err.to_string().contains("no options specified"), "{err}");
    }

    #[test]
    fn config_views_send_exclusive_params() {
        let r = vm_config_request("pve1", 100, &ConfigView::WithPending).unwrap();
        assert_eq!(
            (r.path.as_str(), r.params.len()),
            ("/nodes/pve1/qemu/100/config", 0)
        );
        assert_eq!(
            pairs(&vm_config_request("pve1", 100, &ConfigView::Current).unwrap()),
            [("current", "1")]
        );
        let snap = vm_config_request("pve1", 100, &ConfigView::Snapshot("before".into())).unwrap();
        assert_eq!(pairs(&snap), [("snapshot", "before")]);
        let e =
            vm_config_request("pve1", 100, &ConfigView::Snapshot("current".into())).unwrap_err();
        assert!(matches!(e, PveError::Invalid { ref field, .. } if field == "snapshot"));
    }

    #[test]
    fn updates_send_changes_and_controls() {
        let c = ConfigChanges::new()
            .cores(2)
            .delete(&["net1"])
            .digest("abc123");
        let put = update_vm_request("pve1", 100, &c).unwrap();
        assert_eq!(
            (put.method, put.path.as_str()),
            (Method::Put, "/nodes/pve1/qemu/100/config")
        );
        assert_eq!(
            pairs(&put),
            [("cores", "2"), ("delete", "net1"), ("digest", "abc123")]
        );
        let post = update_vm_async_request("pve1", 100, &c, Some(5)).unwrap();
        assert_eq!(post.method, Method::Post);
        assert_eq!(pairs(&post).last(), Some(&("background_delay", "5")));
    }

    #[test]
    fn updates_refuse_empty_and_bad_delay() {
        let e = update_vm_request("pve1", 100, &ConfigChanges::new()).unwrap_err();
        assert!(matches!(e, PveError::Invalid { ref field, .. } if field == "config"));
        let c = ConfigChanges::new().cores(1);
        for d in [0, 31] {
            let e = update_vm_async_request("pve1", 100, &c, Some(d)).unwrap_err();
            assert!(
                matches!(e, PveError::Invalid { ref field, .. } if field == "background_delay")
            );
        }
        assert_eq!(
            vm_pending_request("pve1", 100).unwrap().path,
            "/nodes/pve1/qemu/100/pending"
        );
    }
}
