//! Node reads: `GET /nodes`, `GET /nodes/{node}/status`, and the node's VM list
//! `GET /nodes/{node}/qemu`.

use crate::calls::paths::node_path;
use crate::client::Client;
use crate::error::PveError;
use crate::request::{ApiRequest, Method};
use crate::types::{NodeEntry, NodeStatus, VmListEntry};

/// `GET /nodes`.
pub fn nodes_request() -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Get, "/nodes"))
}

/// `GET /nodes/{node}/status`.
pub fn node_status_request(node: &str) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Get, node_path(node, "/status")?))
}

/// `GET /nodes/{node}/qemu[?full=]`; `full` adds live details (`qmpstatus`, ...).
pub fn vm_list_request(node: &str, full: Option<bool>) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Get, node_path(node, "/qemu")?).flag("full", full))
}

impl Client {
    /// The cluster's nodes.
    pub async fn nodes(&self) -> Result<Vec<NodeEntry>, PveError> {
        self.fetch(&nodes_request()?).await
    }

    /// Resources of one node.
    pub async fn node_status(&self, node: &str) -> Result<NodeStatus, PveError> {
        self.fetch(&node_status_request(node)?).await
    }

    /// The VMs of one node.
    pub async fn vm_list(
        &self,
        node: &str,
        full: Option<bool>,
    ) -> Result<Vec<VmListEntry>, PveError> {
        self.fetch(&vm_list_request(node, full)?).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_send_exact_paths_and_params() {
        assert_eq!(nodes_request().unwrap().path, "/nodes");
        assert_eq!(
            node_status_request("pve1").unwrap().path,
            "/nodes/pve1/status"
        );
        let r = vm_list_request("pve1", Some(true)).unwrap();
        assert_eq!(
            (r.path.as_str(), r.params.clone()),
            ("/nodes/pve1/qemu", vec![("full".into(), "1".into())])
        );
        assert!(
            matches!(node_status_request("bad/node"), Err(PveError::Invalid { ref field, .. }) if field == "node")
        );
    }
}
