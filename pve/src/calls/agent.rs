//! Guest agent calls: `GET .../agent/network-get-interfaces` and `POST .../agent/ping`.
//! Both fail synchronously (HTTP 500) when no agent is configured, the VM is not running, or
//! the agent does not answer.

use crate::calls::paths::vm_path;
use crate::client::Client;
use crate::error::PveError;
use crate::request::{ApiRequest, Method};
use crate::types::AgentInterfaces;

/// `GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces`.
pub fn agent_network_interfaces_request(node: &str, vmid: u32) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(
        Method::Get,
        vm_path(node, vmid, "/agent/network-get-interfaces")?,
    ))
}

/// `POST /nodes/{node}/qemu/{vmid}/agent/ping`.
pub fn agent_ping_request(node: &str, vmid: u32) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(
        Method::Post,
        vm_path(node, vmid, "/agent/ping")?,
    ))
}

impl Client {
    /// The guest's network interfaces as its agent reports them.
    pub async fn agent_network_interfaces(
        &self,
        node: &str,
        vmid: u32,
    ) -> Result<AgentInterfaces, PveError> {
        self.fetch(&agent_network_interfaces_request(node, vmid)?)
            .await
    }

    /// Whether the guest agent answers (`Ok` when it does).
    pub async fn agent_ping(&self, node: &str, vmid: u32) -> Result<(), PveError> {
        self.execute(&agent_ping_request(node, vmid)?)
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_paths() {
        let r = agent_network_interfaces_request("pve1", 100).unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (
                Method::Get,
                "/nodes/pve1/qemu/100/agent/network-get-interfaces"
            )
        );
        let p = agent_ping_request("pve1", 100).unwrap();
        assert_eq!(
            (p.method, p.path.as_str()),
            (Method::Post, "/nodes/pve1/qemu/100/agent/ping")
        );
        assert!(agent_ping_request("pve1", 1).is_err());
    }
}
