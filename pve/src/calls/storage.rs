//! Storage reads: a node's storages (`GET /nodes/{node}/storage`), one storage's usage
//! (`.../status`) and its volumes (`.../content`).

use crate::calls::paths::node_path;
use crate::client::Client;
use crate::error::PveError;
use crate::props::str_enum::str_enum;
use crate::props::{check_node, check_storage, check_vmid};
use crate::request::{ApiRequest, Method};
use crate::types::{StorageEntry, StorageStatus, StorageVolume};

str_enum! {
    /// A storage content type.
    pub enum StorageContent: "content" {
        Images = "images",
        Rootdir = "rootdir",
        Vztmpl = "vztmpl",
        Iso = "iso",
        Backup = "backup",
        Snippets = "snippets",
        Import = "import",
    }
}

/// Filters of `GET /nodes/{node}/storage`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StorageFilter {
    /// Only storages holding all of these content types.
    pub content: Vec<StorageContent>,
    /// Only enabled storages.
    pub enabled: Option<bool>,
    /// Include format information.
    pub format: Option<bool>,
    /// Only this storage.
    pub storage: Option<String>,
    /// Only shared storages also reachable from this node.
    pub target: Option<String>,
}

/// `GET /nodes/{node}/storage`.
pub fn storage_list_request(node: &str, filter: &StorageFilter) -> Result<ApiRequest, PveError> {
    let path = node_path(node, "/storage")?;
    if let Some(s) = &filter.storage {
        check_storage("storage", s)?;
    }
    if let Some(t) = &filter.target {
        check_node("target", t)?;
    }
    let content = (!filter.content.is_empty()).then(|| {
        filter
            .content
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(",")
    });
    Ok(ApiRequest::new(Method::Get, path)
        .opt("content", content)
        .flag("enabled", filter.enabled)
        .flag("format", filter.format)
        .opt("storage", filter.storage.as_deref())
        .opt("target", filter.target.as_deref()))
}

fn storage_path(node: &str, storage: &str, tail: &str) -> Result<String, PveError> {
    check_storage("storage", storage)?;
    node_path(node, &format!("/storage/{storage}{tail}"))
}

/// `GET /nodes/{node}/storage/{storage}/status`.
pub fn storage_status_request(node: &str, storage: &str) -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(
        Method::Get,
        storage_path(node, storage, "/status")?,
    ))
}

/// `GET /nodes/{node}/storage/{storage}/content[?content=&vmid=]`.
pub fn storage_content_request(
    node: &str,
    storage: &str,
    content: Option<StorageContent>,
    vmid: Option<u32>,
) -> Result<ApiRequest, PveError> {
    let path = storage_path(node, storage, "/content")?;
    if let Some(v) = vmid {
        check_vmid("vmid", v)?;
    }
    Ok(ApiRequest::new(Method::Get, path)
        .opt("content", content)
        .opt("vmid", vmid))
}

impl Client {
    /// A node's storages.
    pub async fn storage_list(
        &self,
        node: &str,
        filter: &StorageFilter,
    ) -> Result<Vec<StorageEntry>, PveError> {
        self.fetch(&storage_list_request(node, filter)?).await
    }

    /// Usage of one storage on one node.
    pub async fn storage_status(
        &self,
        node: &str,
        storage: &str,
    ) -> Result<StorageStatus, PveError> {
        self.fetch(&storage_status_request(node, storage)?).await
    }

    /// Volumes on one storage.
    pub async fn storage_content(
        &self,
        node: &str,
        storage: &str,
        content: Option<StorageContent>,
        vmid: Option<u32>,
    ) -> Result<Vec<StorageVolume>, PveError> {
        self.fetch(&storage_content_request(node, storage, content, vmid)?)
            .await
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
    fn storage_requests_send_exact_params() {
        let f = StorageFilter {
            content: vec![StorageContent::Images, StorageContent::Iso],
            enabled: Some(true),
            format: Some(false),
            storage: Some("local-lvm".into()),
            target: Some("pve2".into()),
        };
        let r = storage_list_request("pve1", &f).unwrap();
        assert_eq!(r.path, "/nodes/pve1/storage");
        assert_eq!(
            pairs(&r),
            [
                ("content", "images,iso"),
                ("enabled", "1"),
                ("format", "0"),
                ("storage", "local-lvm"),
                ("target", "pve2")
            ]
        );
        assert_eq!(
            storage_status_request("pve1", "local").unwrap().path,
            "/nodes/pve1/storage/local/status"
        );
        let c =
            storage_content_request("pve1", "local", Some(StorageContent::Iso), Some(100)).unwrap();
        assert_eq!(
            (c.path.as_str(), pairs(&c)),
            (
                "/nodes/pve1/storage/local/content",
                vec![("content", "iso"), ("vmid", "100")]
            )
        );
    }

    #[test]
    fn storage_validation_names_fields() {
        let e = storage_status_request("pve1", "../etc").unwrap_err();
        assert!(matches!(e, PveError::Invalid { ref field, .. } if field == "storage"));
        let e = storage_content_request("pve1", "local", None, Some(1)).unwrap_err();
        assert!(matches!(e, PveError::Invalid { ref field, .. } if field == "vmid"));
        let f = StorageFilter {
            target: Some("x_y".into()),
            ..Default::default()
        };
        let e = storage_list_request("pve1", &f).unwrap_err();
        assert!(matches!(e, PveError::Invalid { ref field, .. } if field == "target"));
    }
}
