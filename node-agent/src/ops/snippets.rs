//! Where cloud-init user data goes: a snippet file on a storage of this host whose content
//! includes `snippets`. PVE's API has no call to upload a snippet, so on a real host the agent
//! writes the file into the storage's directory (`<path>/snippets/<file>`, the path from
//! `/etc/pve/storage.cfg`); on the lab platform the simulator's control API takes it
//! (`platform::lab_snippets`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use pve::backend::BoxFuture;

/// Why a snippet could not be written or removed.
#[derive(Debug, thiserror::Error)]
pub enum SnippetError {
    /// The storage is not in the storage config, or has no directory.
    #[error("storage '{storage}': {reason}")]
    Storage {
        /// Storage id.
        storage: String,
        /// What is wrong.
        reason: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The simulator refused the file or could not be reached.
    #[error("simulator: {0}")]
    Simulator(String),
    /// This writer cannot do the operation.
    #[error("{0}")]
    Unsupported(&'static str),
}

/// Puts snippet files on a storage of this host.
pub trait SnippetWriter: Send + Sync + fmt::Debug {
    /// Writes `content` as `<storage>:snippets/<file>` on `node`; returns that volume id.
    /// Writing the same content again is harmless.
    fn write<'a>(
        &'a self,
        node: &'a str,
        storage: &'a str,
        file: &'a str,
        content: &'a str,
    ) -> BoxFuture<'a, Result<String, SnippetError>>;

    /// Removes `<storage>:snippets/<file>`; `Ok(false)` when it was not there.
    fn remove<'a>(
        &'a self,
        node: &'a str,
        storage: &'a str,
        file: &'a str,
    ) -> BoxFuture<'a, Result<bool, SnippetError>>;
}

/// The default PVE storage config.
pub const PVE_STORAGE_CFG: &str = "/etc/pve/storage.cfg";

/// Storage types mounted by PVE under `/mnt/pve/<id>` when the config names no `path`.
const MOUNTED_TYPES: &[&str] = &["nfs", "cifs", "cephfs", "glusterfs"];

/// Writes snippets into storage directories on this host's filesystem.
#[derive(Debug, Clone)]
pub struct FsSnippetWriter {
    storage_cfg: PathBuf,
    overrides: BTreeMap<String, PathBuf>,
}

impl Default for FsSnippetWriter {
    fn default() -> Self {
        Self::new(PVE_STORAGE_CFG)
    }
}

impl FsSnippetWriter {
    /// A writer that looks storage directories up in `storage_cfg` (PVE's `storage.cfg`).
    pub fn new(storage_cfg: impl Into<PathBuf>) -> Self {
        Self {
            storage_cfg: storage_cfg.into(),
            overrides: BTreeMap::new(),
        }
    }

    /// Uses `dir` as the directory of `storage` instead of the storage config's.
    pub fn with_storage_dir(mut self, storage: &str, dir: impl Into<PathBuf>) -> Self {
        self.overrides.insert(storage.to_string(), dir.into());
        self
    }

    /// The `snippets` directory of `storage`.
    async fn snippets_dir(&self, storage: &str) -> Result<PathBuf, SnippetError> {
        if let Some(dir) = self.overrides.get(storage) {
            return Ok(dir.join("snippets"));
        }
        let text = tokio::fs::read_to_string(&self.storage_cfg)
            .await
            .map_err(|source| SnippetError::Io {
                path: self.storage_cfg.display().to_string(),
                source,
            })?;
        storage_dir(&text, storage).map(|d| d.join("snippets"))
    }
}

/// The directory of `storage` in a `storage.cfg` text: its `path`, or `/mnt/pve/<id>` for
/// network file systems PVE mounts itself.
pub fn storage_dir(storage_cfg: &str, storage: &str) -> Result<PathBuf, SnippetError> {
    let err = |reason: &str| SnippetError::Storage {
        storage: storage.to_string(),
        reason: reason.to_string(),
    };
    let mut kind: Option<&str> = None;
    let mut path: Option<&str> = None;
    for line in storage_cfg.lines() {
        let starts_section = !line.starts_with([' ', '\t']) && line.contains(':');
        if starts_section {
            if kind.is_some() {
                break;
            }
            if let Some((t, id)) = line.split_once(':')
                && id.trim() == storage
            {
                kind = Some(t.trim());
            }
        } else if kind.is_some()
            && let Some(("path", value)) = line.trim().split_once(char::is_whitespace)
        {
            path = Some(value.trim());
        }
    }
    let kind = kind.ok_or_else(|| err("not defined in the storage config"))?;
    match path {
        Some(p) => Ok(PathBuf::from(p)),
        None if MOUNTED_TYPES.contains(&kind) => Ok(Path::new("/mnt/pve").join(storage)),
        None => Err(err(&format!(
            "type '{kind}' has no directory for snippets; use a dir, nfs, cifs or cephfs storage"
        ))),
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SnippetError + '_ {
    move |source| SnippetError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl SnippetWriter for FsSnippetWriter {
    fn write<'a>(
        &'a self,
        _node: &'a str,
        storage: &'a str,
        file: &'a str,
        content: &'a str,
    ) -> BoxFuture<'a, Result<String, SnippetError>> {
        Box::pin(async move {
            let dir = self.snippets_dir(storage).await?;
            let target = dir.join(file);
            let volid = format!("{storage}:snippets/{file}");
            if tokio::fs::read(&target).await.ok().as_deref() == Some(content.as_bytes()) {
                return Ok(volid);
            }
            tokio::fs::create_dir_all(&dir)
                .await
                .map_err(io_err(&dir))?;
            // Write then rename: PVE never reads a half-written file when it builds the
            // cloud-init image at start.
            let tmp = dir.join(format!(".{file}.tmp"));
            tokio::fs::write(&tmp, content)
                .await
                .map_err(io_err(&tmp))?;
            tokio::fs::rename(&tmp, &target)
                .await
                .map_err(io_err(&target))?;
            Ok(volid)
        })
    }

    fn remove<'a>(
        &'a self,
        _node: &'a str,
        storage: &'a str,
        file: &'a str,
    ) -> BoxFuture<'a, Result<bool, SnippetError>> {
        Box::pin(async move {
            let target = self.snippets_dir(storage).await?.join(file);
            match tokio::fs::remove_file(&target).await {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(io_err(&target)(e)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: &str = "dir: local\n\tpath /var/lib/vz\n\tcontent iso,vztmpl,backup,snippets\n\n\
lvmthin: local-lvm\n\tthinpool data\n\tvgname pve\n\tcontent rootdir,images\n\n\
nfs: shared\n\texport /srv\n\tserver 10.0.0.2\n\tcontent snippets\n\n\
dir: other\n\tpath /srv/other\n";

    #[test]
    fn storage_directories_come_from_the_storage_config() {
        assert_eq!(
            storage_dir(CFG, "local").unwrap(),
            PathBuf::from("/var/lib/vz")
        );
        assert_eq!(
            storage_dir(CFG, "other").unwrap(),
            PathBuf::from("/srv/other")
        );
        assert_eq!(
            storage_dir(CFG, "shared").unwrap(),
            PathBuf::from("/mnt/pve/shared")
        );
        let e = storage_dir(CFG, "local-lvm").unwrap_err().to_string();
        assert!(e.contains("lvmthin"), "{e}");
        let e = storage_dir(CFG, "nope").unwrap_err().to_string();
        assert!(e.contains("not defined"), "{e}");
    }

    #[tokio::test]
    async fn files_are_written_replaced_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("storage.cfg");
        let root = dir.path().join("vz");
        std::fs::write(&cfg, format!("dir: local\n\tpath {}\n", root.display())).unwrap();
        let w = FsSnippetWriter::new(&cfg);
        let volid = w.write("pve1", "local", "a.yaml", "one").await.unwrap();
        assert_eq!(volid, "local:snippets/a.yaml");
        let file = root.join("snippets/a.yaml");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "one");
        w.write("pve1", "local", "a.yaml", "two").await.unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "two");
        assert!(w.remove("pve1", "local", "a.yaml").await.unwrap());
        assert!(!w.remove("pve1", "local", "a.yaml").await.unwrap());
    }
}
