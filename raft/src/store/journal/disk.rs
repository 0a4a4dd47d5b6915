//! The journal's files behind a small interface, the only place it touches the file system:
//! the real directory (positional writes, `fdatasync`, `fsync` of the directory) and, in the
//! tests, a simulated disk that can lose power ([`super::sim_disk`]).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A directory of journal files.
pub(crate) trait Disk: Send + Sync {
    /// The names of the files in the directory.
    fn list(&self) -> io::Result<Vec<String>>;
    /// The whole content of file `name`.
    fn read(&self, name: &str) -> io::Result<Vec<u8>>;
    /// Opens file `name` for writing; `create`: it must not exist and is made empty.
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn DiskFile>>;
    /// Deletes file `name`.
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Makes the creations and removals so far durable (`fsync` of the directory).
    fn sync_dir(&self) -> io::Result<()>;
}

/// One open journal file.
pub(crate) trait DiskFile: Send + Sync {
    /// Writes all of `bytes` at `offset`.
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()>;
    /// Cuts the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Makes everything written so far durable, the file's length included (`fdatasync`).
    fn sync(&self) -> io::Result<()>;
}

/// The journal directory on the real file system.
pub(crate) struct DirDisk {
    path: PathBuf,
}

impl DirDisk {
    /// The directory at `path`, which must exist.
    pub(crate) fn new(path: &Path) -> DirDisk {
        DirDisk {
            path: path.to_path_buf(),
        }
    }
}

impl Disk for DirDisk {
    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.path)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(names)
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.path.join(name))
    }

    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn DiskFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(create)
            .open(self.path.join(name))?;
        Ok(Arc::new(RealFile(file)))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        std::fs::remove_file(self.path.join(name))
    }

    fn sync_dir(&self) -> io::Result<()> {
        sync_dir(&self.path)
    }
}

/// `fsync` of a directory: its entries (files created, renamed or removed in it) are durable.
pub(crate) fn sync_dir(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

struct RealFile(File);

impl DiskFile for RealFile {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.0.write_all_at(bytes, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn sync(&self) -> io::Result<()> {
        self.0.sync_data()
    }
}
