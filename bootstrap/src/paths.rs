//! The node directory on disk and how files in it are written and read: atomically (temp file,
//! fsync, rename, fsync of the directory) and, for private keys, created with mode 0600 from the
//! start, so a key is never readable by others even for an instant.
//!
//! ```text
//! <dir>/ca.pem        cluster CA certificate (every node)
//! <dir>/ca.key        cluster CA key (coordinators only, 0600)
//! <dir>/node.pem      this node's certificate
//! <dir>/node.key      this node's key (0600)
//! <dir>/cluster.toml  cluster id, node id, role, member addresses
//! <dir>/admin.pem     the operator CLI's certificate
//! <dir>/admin.key     the operator CLI's key (0600)
//! ```

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use transport::TlsMaterial;

use crate::ca::ClusterCa;
use crate::error::BootstrapError;

/// Permission bits of a private key file.
pub const SECRET_MODE: u32 = 0o600;
/// Permission bits of a certificate or configuration file.
pub const PUBLIC_MODE: u32 = 0o644;
/// Permission bits of a node directory created here.
pub const DIR_MODE: u32 = 0o700;

/// The files of one node (or of the CLI) under a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDir {
    root: PathBuf,
}

impl NodeDir {
    /// The layout under `dir` (nothing is touched on disk).
    pub fn new(dir: impl Into<PathBuf>) -> NodeDir {
        NodeDir { root: dir.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `ca.pem`: the cluster CA certificate.
    pub fn ca_cert(&self) -> PathBuf {
        self.root.join("ca.pem")
    }

    /// `ca.key`: the cluster CA key (coordinators only).
    pub fn ca_key(&self) -> PathBuf {
        self.root.join("ca.key")
    }

    /// `node.pem`: this node's certificate.
    pub fn node_cert(&self) -> PathBuf {
        self.root.join("node.pem")
    }

    /// `node.key`: this node's key.
    pub fn node_key(&self) -> PathBuf {
        self.root.join("node.key")
    }

    /// `cluster.toml`: see [`ClusterConfig`](crate::cluster_config::ClusterConfig).
    pub fn cluster_config(&self) -> PathBuf {
        self.root.join("cluster.toml")
    }

    /// `admin.pem`: the operator CLI's certificate.
    pub fn admin_cert(&self) -> PathBuf {
        self.root.join("admin.pem")
    }

    /// `admin.key`: the operator CLI's key.
    pub fn admin_key(&self) -> PathBuf {
        self.root.join("admin.key")
    }

    /// The first file of a node found in the directory, if any: a directory with one of them is
    /// (or was being) initialized and must not be overwritten.
    pub fn existing_node_file(&self) -> Option<PathBuf> {
        [
            self.cluster_config(),
            self.ca_cert(),
            self.ca_key(),
            self.node_cert(),
            self.node_key(),
            self.admin_cert(),
            self.admin_key(),
        ]
        .into_iter()
        .find(|p| p.symlink_metadata().is_ok())
    }

    /// Creates the directory (and parents); a new directory gets mode 0700. An existing one is
    /// refused when group or others may write to it ([`BootstrapError::SharedDirectory`]).
    ///
    /// Refused rather than tightened: `chmod` cannot undo what another user may already have
    /// put there (a symlink or hard link named like a file we write next), and such a directory
    /// is often shared on purpose (`/tmp`), so changing its mode would break others. A directory
    /// others may only read is kept as it is: every key file is 0600 and checked when read.
    pub fn create(&self) -> Result<(), BootstrapError> {
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(&self.root)
            .map_err(io_err("create directory", &self.root))?;
        let mode = fs::metadata(&self.root)
            .map_err(io_err("inspect", &self.root))?
            .mode()
            & 0o7777;
        if mode & 0o022 != 0 {
            return Err(BootstrapError::SharedDirectory {
                dir: self.root.clone(),
                mode,
            });
        }
        Ok(())
    }

    /// The CA, node certificate and node key, as transport takes them. The key file must be
    /// private (see [`read_secret`]).
    pub fn load_node_material(&self) -> Result<TlsMaterial, BootstrapError> {
        Ok(TlsMaterial::new(
            read_public(&self.ca_cert())?,
            read_public(&self.node_cert())?,
            read_secret(&self.node_key())?,
        ))
    }

    /// The cluster CA with its signing key (coordinators only); `ca.key` must be private.
    pub fn load_ca(&self) -> Result<ClusterCa, BootstrapError> {
        ClusterCa::load(
            &read_public(&self.ca_cert())?,
            &read_secret(&self.ca_key())?,
        )
    }

    /// The CA, admin certificate and admin key, for the CLI.
    pub fn load_admin_material(&self) -> Result<TlsMaterial, BootstrapError> {
        Ok(TlsMaterial::new(
            read_public(&self.ca_cert())?,
            read_public(&self.admin_cert())?,
            read_secret(&self.admin_key())?,
        ))
    }
}

/// Writes a private key (mode 0600) atomically.
pub fn write_secret(path: &Path, contents: &str) -> Result<(), BootstrapError> {
    write_atomic(path, contents.as_bytes(), SECRET_MODE)
}

/// Writes a certificate or configuration (mode 0644) atomically.
pub fn write_public(path: &Path, contents: &str) -> Result<(), BootstrapError> {
    write_atomic(path, contents.as_bytes(), PUBLIC_MODE)
}

/// Writes `contents` to `path` so that a reader (or a crash) sees the old file or the new one,
/// never a mix. The temporary file is created with `mode`, never widened later.
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<(), BootstrapError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| -> io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_err("write", &tmp)(e));
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(io_err("rename into place", path)(e));
    }
    // The rename is durable only once the directory entry is.
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("sync directory", dir))
}

/// Reads a private key, refusing a file that group or others may read (or that is not a
/// regular file). The mode is checked on the opened file, not on the path.
pub fn read_secret(path: &Path) -> Result<String, BootstrapError> {
    let file = File::open(path).map_err(io_err("open", path))?;
    let meta = file.metadata().map_err(io_err("inspect", path))?;
    if !meta.is_file() {
        return Err(io_err("read", path)(io::Error::other("not a regular file")));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(BootstrapError::InsecureKeyFile {
            path: path.to_path_buf(),
            mode,
        });
    }
    io::read_to_string(file).map_err(io_err("read", path))
}

/// Reads a certificate or configuration file.
pub fn read_public(path: &Path) -> Result<String, BootstrapError> {
    fs::read_to_string(path).map_err(io_err("read", path))
}

pub(crate) fn io_err(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> BootstrapError {
    let path = path.to_path_buf();
    move |source| BootstrapError::Io { op, path, source }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode_of(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn secrets_are_written_0600_and_certificates_0644() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = NodeDir::new(tmp.path().join("node"));
        dir.create().unwrap();
        assert_eq!(mode_of(dir.root()), DIR_MODE);
        write_secret(&dir.node_key(), "KEY").unwrap();
        write_public(&dir.node_cert(), "CERT").unwrap();
        assert_eq!(mode_of(&dir.node_key()), 0o600);
        // Certificates are public; the umask may only narrow 0644.
        assert_eq!(mode_of(&dir.node_cert()) & !0o644, 0);
        assert_eq!(read_secret(&dir.node_key()).unwrap(), "KEY");
        assert_eq!(read_public(&dir.node_cert()).unwrap(), "CERT");
    }

    #[test]
    fn rewriting_a_wide_open_key_leaves_it_private() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("node.key");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        write_secret(&path, "new").unwrap();
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(read_secret(&path).unwrap(), "new");
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["node.key"]);
    }

    #[test]
    fn loader_refuses_a_key_readable_by_others_and_says_how_to_fix_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("node.key");
        for mode in [0o644, 0o640, 0o604] {
            fs::write(&path, "KEY").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            let err = read_secret(&path).unwrap_err();
            assert!(matches!(err, BootstrapError::InsecureKeyFile { mode: m, .. } if m == mode));
            let msg = err.to_string();
            assert!(
                msg.contains(&format!("chmod 600 {}", path.display())),
                "{msg}"
            );
        }
        fs::set_permissions(&path, fs::Permissions::from_mode(0o400)).unwrap();
        assert_eq!(read_secret(&path).unwrap(), "KEY");
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = NodeDir::new(tmp.path());
        let err = dir.load_node_material().unwrap_err().to_string();
        assert!(err.contains("ca.pem"), "{err}");
    }

    #[test]
    fn existing_node_file_finds_any_of_the_node_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = NodeDir::new(tmp.path());
        assert_eq!(dir.existing_node_file(), None);
        write_public(&dir.admin_cert(), "x").unwrap();
        assert_eq!(dir.existing_node_file(), Some(dir.admin_cert()));
    }
}
