//! A simulated disk that can lose power, for the journal's tests. Every file keeps what was
//! written (what a process sees, and what survives a SIGKILL: the page cache) apart from what
//! was synced (what survives a power cut); the directory keeps its names apart from the names
//! made durable by a directory sync. After a budget of I/O operations the power goes: that
//! operation fails (a write may have landed in part) and so does every later one.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::disk::{Disk, DiskFile};

#[derive(Default)]
struct SimFile {
    /// What was written: read back by the process, kept by a SIGKILL.
    written: Vec<u8>,
    /// What was synced: kept by a power cut.
    synced: Vec<u8>,
}

#[derive(Default)]
struct State {
    /// The directory as the process sees it.
    names: BTreeMap<String, Arc<Mutex<SimFile>>>,
    /// The directory as of its last sync.
    synced_names: BTreeMap<String, Arc<Mutex<SimFile>>>,
    /// I/O operations left before the power goes (`None`: it never goes).
    budget: Option<u64>,
    operations: u64,
}

/// The simulated disk; clones share it.
#[derive(Clone, Default)]
pub(crate) struct SimDisk {
    state: Arc<Mutex<State>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn power_lost() -> io::Error {
    io::Error::other("the power is off")
}

impl SimDisk {
    /// A disk whose power goes at its `budget`-th I/O operation (0: the first fails).
    pub(crate) fn failing_after(budget: u64) -> SimDisk {
        let disk = SimDisk::default();
        lock(&disk.state).budget = Some(budget);
        disk
    }

    /// How many I/O operations were made.
    pub(crate) fn operations(&self) -> u64 {
        lock(&self.state).operations
    }

    /// Counts an operation; `Err` once the power is off.
    fn spend(&self) -> io::Result<()> {
        let mut state = lock(&self.state);
        state.operations += 1;
        match &mut state.budget {
            Some(0) => Err(power_lost()),
            Some(left) => {
                *left -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// What a fresh boot finds after the power went: the synced names with their synced
    /// bytes, each followed by the first `torn(name, unsynced_len)` bytes of what was written
    /// after them (a write cut short). Never fails again.
    pub(crate) fn after_power_cut(&self, torn: impl Fn(&str, usize) -> usize) -> SimDisk {
        let state = lock(&self.state);
        let mut names = BTreeMap::new();
        for (name, file) in &state.synced_names {
            let file = lock(file);
            let mut bytes = file.synced.clone();
            if file.written.len() > bytes.len() && file.written.starts_with(&bytes) {
                let extra = &file.written[bytes.len()..];
                let keep = torn(name, extra.len()).min(extra.len());
                bytes.extend_from_slice(&extra[..keep]);
            }
            names.insert(
                name.clone(),
                Arc::new(Mutex::new(SimFile {
                    written: bytes.clone(),
                    synced: bytes,
                })),
            );
        }
        SimDisk {
            state: Arc::new(Mutex::new(State {
                synced_names: names.clone(),
                names,
                budget: None,
                operations: 0,
            })),
        }
    }

    /// What the process finds after a SIGKILL: everything written (the page cache survives).
    pub(crate) fn after_kill(&self) -> SimDisk {
        let state = lock(&self.state);
        let names: BTreeMap<_, _> = state
            .names
            .iter()
            .map(|(name, file)| {
                let bytes = lock(file).written.clone();
                (
                    name.clone(),
                    Arc::new(Mutex::new(SimFile {
                        written: bytes.clone(),
                        synced: bytes,
                    })),
                )
            })
            .collect();
        SimDisk {
            state: Arc::new(Mutex::new(State {
                synced_names: names.clone(),
                names,
                budget: None,
                operations: 0,
            })),
        }
    }
}

impl Disk for SimDisk {
    fn list(&self) -> io::Result<Vec<String>> {
        self.spend()?;
        Ok(lock(&self.state).names.keys().cloned().collect())
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        self.spend()?;
        let state = lock(&self.state);
        let file = state
            .names
            .get(name)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        Ok(lock(file).written.clone())
    }

    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn DiskFile>> {
        self.spend()?;
        let mut state = lock(&self.state);
        let file = match (state.names.get(name), create) {
            (Some(_), true) => return Err(io::Error::from(io::ErrorKind::AlreadyExists)),
            (Some(file), false) => Arc::clone(file),
            (None, true) => {
                let file = Arc::new(Mutex::new(SimFile::default()));
                state.names.insert(name.to_owned(), Arc::clone(&file));
                file
            }
            (None, false) => return Err(io::Error::from(io::ErrorKind::NotFound)),
        };
        Ok(Arc::new(SimHandle {
            disk: self.clone(),
            file,
        }))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.spend()?;
        lock(&self.state)
            .names
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    fn sync_dir(&self) -> io::Result<()> {
        self.spend()?;
        let mut state = lock(&self.state);
        state.synced_names = state.names.clone();
        Ok(())
    }
}

struct SimHandle {
    disk: SimDisk,
    file: Arc<Mutex<SimFile>>,
}

impl DiskFile for SimHandle {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let spent = self.disk.spend();
        let mut file = lock(&self.file);
        let offset = usize::try_from(offset).map_err(io::Error::other)?;
        // A write the power cut lands in part: its first half.
        let landed = if spent.is_ok() {
            bytes
        } else {
            &bytes[..bytes.len() / 2]
        };
        if file.written.len() < offset + landed.len() {
            file.written.resize(offset + landed.len(), 0);
        }
        file.written[offset..offset + landed.len()].copy_from_slice(landed);
        spent
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.disk.spend()?;
        let len = usize::try_from(len).map_err(io::Error::other)?;
        lock(&self.file).written.resize(len, 0);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.disk.spend()?;
        let mut file = lock(&self.file);
        file.synced = file.written.clone();
        Ok(())
    }
}
