//! Cloud-init user data: written as the snippet `pvefleet-<vm>.yaml` on a storage of this node
//! whose content includes `snippets` (shared storages first, so the file follows the VM to
//! other nodes, then by name), and referenced from the VM's `cicustom: user=<volume>`.

use protocol::agent::{CommandFailure, EnsureVm, FailureKind};
use pve::calls::{StorageContent, StorageFilter};
use pve::types::StorageEntry;

use super::VmOps;
use super::desired::snippet_file;
use super::failure::{AtStep, Subject};
use super::snippets::SnippetError;

const STEP: &str = "user-data";

/// The storage a snippet goes to, among the node's storages.
pub(super) fn snippet_storage(storages: &[StorageEntry]) -> Option<&StorageEntry> {
    let mut usable: Vec<&StorageEntry> = storages
        .iter()
        .filter(|s| s.holds("snippets") && s.active != Some(false) && s.enabled != Some(false))
        .collect();
    usable.sort_by_key(|s| (s.shared != Some(true), s.storage.clone()));
    usable.into_iter().next()
}

fn snippet_failure(s: &Subject<'_>, err: &SnippetError) -> CommandFailure {
    let kind = match err {
        SnippetError::Io { .. } => FailureKind::Transient,
        SnippetError::Storage { .. }
        | SnippetError::Simulator(_)
        | SnippetError::Unsupported(_) => FailureKind::Permanent,
    };
    s.fail(kind, STEP, format!("writing the user-data snippet: {err}"))
}

impl VmOps {
    /// Writes the spec's user data; returns the snippet's volume id (`None` without user data).
    pub(super) async fn write_user_data(
        &self,
        cmd: &EnsureVm,
        s: &Subject<'_>,
    ) -> Result<Option<String>, CommandFailure> {
        let Some(data) = cmd
            .spec
            .cloud_init
            .as_ref()
            .and_then(|c| c.user_data.as_deref())
        else {
            return Ok(None);
        };
        let filter = StorageFilter {
            content: vec![StorageContent::Snippets],
            enabled: Some(true),
            ..StorageFilter::default()
        };
        let storages = self
            .client
            .storage_list(&self.node, &filter)
            .await
            .at(s, STEP)?;
        let storage = snippet_storage(&storages).ok_or_else(|| {
            s.fail(
                FailureKind::Permanent,
                STEP,
                format!(
                    "node {} has no storage for snippets, which cloud-init user data needs; \
                     add the content type 'snippets' to a directory storage \
                     (e.g. `pvesm set local --content iso,vztmpl,backup,snippets`) \
                     or remove user_data from the spec",
                    self.node
                ),
            )
        })?;
        let file = snippet_file(&cmd.spec.name);
        let volid = self
            .snippets
            .write(&self.node, &storage.storage, &file, data)
            .await
            .map_err(|e| snippet_failure(s, &e))?;
        Ok(Some(volid))
    }

    /// Removes the VM's own snippet named in `cicustom`, if any; failures only warn (the VM
    /// is already gone, a stale file harms nothing).
    pub(super) async fn remove_user_data(&self, name: &str, cicustom: Option<&str>) {
        let file = snippet_file(name);
        let own = format!(":snippets/{file}");
        let Some(storage) = cicustom.and_then(|c| {
            c.split(',')
                .filter_map(|part| part.split_once('=').map(|(_, v)| v))
                .find(|volid| volid.ends_with(&own))
                .and_then(|volid| volid.split_once(':').map(|(s, _)| s.to_string()))
        }) else {
            return;
        };
        if let Err(e) = self.snippets.remove(&self.node, &storage, &file).await {
            tracing::warn!(vm = name, storage, file, error = %e, "user-data snippet left behind");
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn storage(v: serde_json::Value) -> StorageEntry {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn shared_snippet_storages_win_then_names() {
        let list = vec![
            storage(json!({"storage": "zlocal", "content": "snippets,iso", "active": 1})),
            storage(json!({"storage": "alocal", "content": "snippets", "active": 1})),
            storage(json!({"storage": "lvm", "content": "images", "active": 1})),
            storage(json!({"storage": "off", "content": "snippets", "active": 0})),
        ];
        assert_eq!(snippet_storage(&list).unwrap().storage, "alocal");
        let mut with_shared = list.clone();
        with_shared.push(storage(
            json!({"storage": "nfs", "content": "snippets", "active": 1, "shared": 1}),
        ));
        assert_eq!(snippet_storage(&with_shared).unwrap().storage, "nfs");
        assert!(snippet_storage(&list[2..]).is_none());
    }
}
