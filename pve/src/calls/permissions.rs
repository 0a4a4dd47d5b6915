//! `GET /access/permissions`: the privileges the caller (the agent's API token) holds on an
//! ACL path, as PVE's own permission evaluation computes them (`PVE::RPCEnvironment::
//! permissions`: roles of the most specific ACL entries, propagation, a privilege-separated
//! token's intersection with its user). `pvefleet doctor` compares them with what the agent
//! needs.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::client::Client;
use crate::error::PveError;
use crate::props::kv::invalid;
use crate::request::{ApiRequest, Method};

/// `GET /access/permissions?path=PATH` for the caller itself.
pub fn permissions_request(path: &str) -> Result<ApiRequest, PveError> {
    if !path.starts_with('/') || path.chars().any(char::is_whitespace) {
        return Err(invalid(
            "path",
            format!("'{path}' is not an ACL path (/, /vms, /storage/local, ...)"),
        ));
    }
    Ok(ApiRequest::new(Method::Get, "/access/permissions").param("path", path))
}

impl Client {
    /// Every privilege the caller holds on `path` (empty when it holds none there).
    pub async fn permissions(&self, path: &str) -> Result<BTreeSet<String>, PveError> {
        let map: BTreeMap<String, BTreeMap<String, Value>> =
            self.fetch(&permissions_request(path)?).await?;
        // PVE answers `{path: {privilege: propagate}}`; a privilege is held whatever its flag.
        Ok(map.into_values().flat_map(BTreeMap::into_keys).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_must_be_an_acl_path() {
        assert!(permissions_request("/vms").is_ok());
        let e = permissions_request("vms").unwrap_err().to_string();
        assert!(e.contains("'vms' is not an ACL path"), "{e}");
    }
}
