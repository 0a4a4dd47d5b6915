//! Cluster-wide reads: `GET /version`, `GET /cluster/resources`, `GET /cluster/status`,
//! `GET /cluster/nextid`.

use serde::Deserialize;

use crate::client::Client;
use crate::de;
use crate::error::PveError;
use crate::props::check_vmid;
use crate::props::str_enum::str_enum;
use crate::request::{ApiRequest, Method};
use crate::types::{ClusterResource, ClusterStatusEntry, Version};

str_enum! {
    /// Filter of `GET /cluster/resources`.
    pub enum ResourceType: "type" {
        Vm = "vm",
        Storage = "storage",
        Node = "node",
        Sdn = "sdn",
    }
}

/// `GET /version`.
pub fn version_request() -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Get, "/version"))
}

/// `GET /cluster/resources[?type=]`.
pub fn cluster_resources_request(kind: Option<ResourceType>) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Get, "/cluster/resources").opt("type", kind))
}

/// `GET /cluster/status`.
pub fn cluster_status_request() -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Get, "/cluster/status"))
}

/// `GET /cluster/nextid[?vmid=]`: the lowest free VMID, or checks that `vmid` is free (a 400
/// "VM n already exists" otherwise).
pub fn next_id_request(vmid: Option<u32>) -> Result<ApiRequest, PveError> {
    if let Some(v) = vmid {
        check_vmid("vmid", v)?;
    }
    Ok(ApiRequest::new(Method::Get, "/cluster/nextid").opt("vmid", vmid))
}

/// `nextid` is documented as an integer but often arrives as a string (`"100"`).
#[derive(Deserialize)]
#[serde(transparent)]
pub(crate) struct NextId(#[serde(deserialize_with = "de::u32_lenient")] pub(crate) u32);

impl Client {
    /// API version of the node answering.
    pub async fn version(&self) -> Result<Version, PveError> {
        self.fetch(&version_request()?).await
    }

    /// Everything in the cluster (guests, storages, nodes, ...), optionally of one type.
    pub async fn cluster_resources(
        &self,
        kind: Option<ResourceType>,
    ) -> Result<Vec<ClusterResource>, PveError> {
        self.fetch(&cluster_resources_request(kind)?).await
    }

    /// Quorum and membership.
    pub async fn cluster_status(&self) -> Result<Vec<ClusterStatusEntry>, PveError> {
        self.fetch(&cluster_status_request()?).await
    }

    /// The lowest free VMID (or `vmid` itself when it is free).
    pub async fn next_id(&self, vmid: Option<u32>) -> Result<u32, PveError> {
        let NextId(id) = self.fetch(&next_id_request(vmid)?).await?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_send_exact_params() {
        assert_eq!(
            cluster_resources_request(Some(ResourceType::Vm))
                .unwrap()
                .params,
            vec![("type".to_string(), "vm".to_string())]
        );
        assert!(cluster_resources_request(None).unwrap().params.is_empty());
        let r = next_id_request(Some(100)).unwrap();
        assert_eq!(
            (r.method, r.path.as_str(), r.get("vmid")),
            (Method::Get, "/cluster/nextid", Some("100"))
        );
        assert!(
            matches!(next_id_request(Some(99)), Err(PveError::Invalid { ref field, .. }) if field == "vmid")
        );
        assert_eq!(version_request().unwrap().path, "/version");
        assert_eq!(cluster_status_request().unwrap().path, "/cluster/status");
    }

    #[test]
    fn nextid_decodes_number_or_string() {
        for v in [serde_json::json!(100), serde_json::json!("100")] {
            let NextId(id) = serde_json::from_value(v).unwrap();
            assert_eq!(id, 100);
        }
        assert!(serde_json::from_value::<NextId>(serde_json::json!("abc")).is_err());
    }
}
