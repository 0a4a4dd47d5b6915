//! The cluster filesystem (pmxcfs, `/etc/pve`) as a relocation needs it: clearing a leftover
//! lock in a fenced node's copy of a VM's configuration, and moving that configuration into
//! this node's directory. PVE has no API call for either (pve-ha-manager renames the file
//! itself), so on a PVE host the agent, as root, does what PVE's HA manager does to the files;
//! in testbeds the simulator's control API does it to the simulated cluster.
//!
//! ```text
//!  /etc/pve/nodes/<fenced>/qemu-server/<vmid>.conf ─ drop `lock:` (main section) ─▶ same file
//!                                                  ─ rename ─▶ /etc/pve/nodes/<this>/qemu-server/
//!  simulator: POST /_sim/pmxcfs/clear-lock {vmid, node}, POST /_sim/pmxcfs/move-config {vmid, from, to}
//! ```

use std::path::PathBuf;

use crate::platform::lab_control::{ControlError, LabControl};

/// Where VM configurations are moved between nodes.
#[derive(Debug, Clone)]
pub enum ClusterFs {
    /// The files of pmxcfs under this root (`/etc/pve`).
    Pmxcfs(PathBuf),
    /// The simulator serving the node (its control API, the lab platform).
    Simulator(LabControl),
}

/// A cluster filesystem operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterFsError {
    /// A file could not be read, written or renamed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The simulator refused or could not be reached.
    #[error("{0}")]
    Simulator(#[from] ControlError),
}

impl ClusterFs {
    /// `nodes/<node>/qemu-server/<vmid>.conf` under `root`.
    fn conf(root: &std::path::Path, node: &str, vmid: u32) -> PathBuf {
        root.join("nodes")
            .join(node)
            .join("qemu-server")
            .join(format!("{vmid}.conf"))
    }

    /// Removes the `lock` of VM `vmid`'s configuration in node `node`'s directory.
    pub async fn clear_lock(&self, vmid: u32, node: &str) -> Result<(), ClusterFsError> {
        match self {
            ClusterFs::Pmxcfs(root) => {
                let path = Self::conf(root, node, vmid);
                let io = |source| ClusterFsError::Io {
                    path: path.clone(),
                    source,
                };
                let text = tokio::fs::read_to_string(&path).await.map_err(io)?;
                tokio::fs::write(&path, without_lock(&text))
                    .await
                    .map_err(io)?;
                Ok(())
            }
            ClusterFs::Simulator(sim) => {
                sim.post(
                    "clear-lock",
                    "/_sim/pmxcfs/clear-lock",
                    &serde_json::json!({"vmid": vmid, "node": node}),
                )
                .await?;
                Ok(())
            }
        }
    }

    /// Moves VM `vmid`'s configuration from node `from`'s directory to node `to`'s.
    pub async fn move_config(&self, vmid: u32, from: &str, to: &str) -> Result<(), ClusterFsError> {
        match self {
            ClusterFs::Pmxcfs(root) => {
                let source = Self::conf(root, from, vmid);
                let target = Self::conf(root, to, vmid);
                // pmxcfs renames within the cluster filesystem atomically, cluster-wide.
                tokio::fs::rename(&source, &target)
                    .await
                    .map_err(|e| ClusterFsError::Io {
                        path: source.clone(),
                        source: e,
                    })
            }
            ClusterFs::Simulator(sim) => {
                sim.post(
                    "move-config",
                    "/_sim/pmxcfs/move-config",
                    &serde_json::json!({"vmid": vmid, "from": from, "to": to}),
                )
                .await?;
                Ok(())
            }
        }
    }
}

/// A configuration file's text without the `lock:` line of its main section (snapshot
/// sections, after the first `[name]` line, keep theirs: they are history).
pub(crate) fn without_lock(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut main = true;
    for line in text.split_inclusive('\n') {
        if line.starts_with('[') {
            main = false;
        }
        if main && line.trim_start().starts_with("lock:") {
            continue;
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_main_sections_lock_is_dropped() {
        let text = "boot: order=scsi0\nlock: backup\nmemory: 2048\n\n[snap1]\nlock: snapshot\nmemory: 1024\n";
        assert_eq!(
            without_lock(text),
            "boot: order=scsi0\nmemory: 2048\n\n[snap1]\nlock: snapshot\nmemory: 1024\n"
        );
        assert_eq!(without_lock("memory: 1\n"), "memory: 1\n");
    }

    #[tokio::test]
    async fn pmxcfs_files_are_unlocked_and_renamed_into_this_nodes_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for node in ["dead", "me"] {
            std::fs::create_dir_all(root.join("nodes").join(node).join("qemu-server")).unwrap();
        }
        let conf = root.join("nodes/dead/qemu-server/100.conf");
        std::fs::write(&conf, "lock: migrate\nname: db\n").unwrap();
        let fs = ClusterFs::Pmxcfs(root.to_path_buf());
        fs.clear_lock(100, "dead").await.unwrap();
        fs.move_config(100, "dead", "me").await.unwrap();
        assert!(!conf.exists());
        assert_eq!(
            std::fs::read_to_string(root.join("nodes/me/qemu-server/100.conf")).unwrap(),
            "name: db\n"
        );
        let e = fs.move_config(100, "dead", "me").await.unwrap_err();
        assert!(
            e.to_string().contains("nodes/dead/qemu-server/100.conf"),
            "{e}"
        );
    }
}
