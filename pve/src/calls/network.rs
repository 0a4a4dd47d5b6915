//! `GET /nodes/{node}/network`: the node's host interfaces, e.g. to check a bridge exists
//! before placing a VM NIC on it.

use crate::calls::paths::node_path;
use crate::client::Client;
use crate::error::PveError;
use crate::props::str_enum::str_enum;
use crate::request::{ApiRequest, Method};
use crate::types::NetworkInterface;

str_enum! {
    /// Interface type filter.
    pub enum NetworkType: "type" {
        Bridge = "bridge",
        Bond = "bond",
        Eth = "eth",
        Alias = "alias",
        Vlan = "vlan",
        Fabric = "fabric",
        OvsBridge = "OVSBridge",
        OvsBond = "OVSBond",
        OvsPort = "OVSPort",
        OvsIntPort = "OVSIntPort",
        Vnet = "vnet",
        AnyBridge = "any_bridge",
        AnyLocalBridge = "any_local_bridge",
        IncludeSdn = "include_sdn",
    }
}

/// `GET /nodes/{node}/network[?type=]`.
pub fn network_request(node: &str, kind: Option<NetworkType>) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Get, node_path(node, "/network")?).opt("type", kind))
}

impl Client {
    /// A node's network interfaces, optionally of one type (`AnyBridge` for VM bridges).
    pub async fn network(
        &self,
        node: &str,
        kind: Option<NetworkType>,
    ) -> Result<Vec<NetworkInterface>, PveError> {
        self.fetch(&network_request(node, kind)?).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_request_sends_type() {
        let r = network_request("pve1", Some(NetworkType::AnyBridge)).unwrap();
        assert_eq!(
            (r.path.as_str(), r.get("type")),
            ("/nodes/pve1/network", Some("any_bridge"))
        );
        assert!(network_request("pve1", None).unwrap().params.is_empty());
        assert_eq!(
            "OVSBridge".parse::<NetworkType>().unwrap(),
            NetworkType::OvsBridge
        );
        assert!(
            matches!("ovsbridge".parse::<NetworkType>(), Err(PveError::Invalid { ref field, .. }) if field == "type")
        );
    }
}
