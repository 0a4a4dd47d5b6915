//! The operating system's view of the host (sysinfo): CPUs, memory, load and mounted disks.
//!
//! Reading it touches `/proc` and calls `statvfs` on every mount, which can block (a hung
//! mount), so [`HostProbe::sample`] runs on the blocking pool with a deadline and answers the
//! previous sample while an earlier read is still stuck.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use protocol::agent::{DiskUsage, HostResources};
use sysinfo::{CpuRefreshKind, DiskRefreshKind, Disks, MemoryRefreshKind, System};

/// How long one sample may take before the previous one is answered instead.
const SAMPLE_DEADLINE: Duration = Duration::from_secs(5);

/// Reads host resources; cheap to clone (clones share the sysinfo state).
#[derive(Clone)]
pub struct HostProbe {
    state: Arc<Mutex<ProbeState>>,
    last: Arc<Mutex<HostResources>>,
}

impl std::fmt::Debug for HostProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostProbe").finish_non_exhaustive()
    }
}

struct ProbeState {
    system: Option<System>,
    disks: Option<Disks>,
    warned: bool,
}

impl Default for HostProbe {
    fn default() -> Self {
        HostProbe::new()
    }
}

impl HostProbe {
    /// A probe; nothing is read until the first sample.
    pub fn new() -> HostProbe {
        HostProbe {
            state: Arc::new(Mutex::new(ProbeState {
                system: None,
                disks: None,
                warned: false,
            })),
            last: Arc::new(Mutex::new(HostResources::default())),
        }
    }

    /// The host's resources now, or the last sample when reading takes too long (or is still
    /// stuck from an earlier call).
    pub async fn sample(&self) -> HostResources {
        let state = Arc::clone(&self.state);
        let read = tokio::task::spawn_blocking(move || {
            // Never queue behind a read that is stuck: answer the previous sample instead.
            let mut guard = match state.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return None,
            };
            Some(guard.read())
        });
        let fresh = match tokio::time::timeout(SAMPLE_DEADLINE, read).await {
            Ok(Ok(Some(resources))) => Some(resources),
            Ok(Ok(None)) => None,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "reading host resources failed");
                None
            }
            Err(_) => {
                tracing::warn!(
                    "reading host resources takes over 5 s (a hung mount?); reporting the previous values"
                );
                None
            }
        };
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(resources) = fresh {
            *last = resources;
        }
        last.clone()
    }
}

impl ProbeState {
    fn read(&mut self) -> HostResources {
        if self.system.is_none() {
            match System::new() {
                Ok(system) => self.system = Some(system),
                Err(e) => self.warn_once(&format!("system information unavailable: {e}")),
            }
        }
        if self.disks.is_none() {
            match Disks::new() {
                Ok(disks) => self.disks = Some(disks),
                Err(e) => self.warn_once(&format!("disk information unavailable: {e}")),
            }
        }
        let mut out = HostResources::default();
        if let Some(system) = self.system.as_mut() {
            system.refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram());
            system.refresh_cpu_list(CpuRefreshKind::nothing());
            out.cpus = u32::try_from(system.cpus().len()).unwrap_or(u32::MAX);
            out.memory_total_bytes = system.total_memory();
            out.memory_used_bytes = system.used_memory();
        }
        if let Ok(load) = System::load_average() {
            out.load_milli = [milli(load.one), milli(load.five), milli(load.fifteen)];
        }
        if let Some(disks) = self.disks.as_mut() {
            disks.refresh_specifics(true, DiskRefreshKind::nothing().with_storage());
            out.disks = disk_usage(disks.iter().map(|d| {
                (
                    d.mount_point().to_string_lossy().into_owned(),
                    d.total_space(),
                    d.available_space(),
                )
            }));
        }
        out
    }

    fn warn_once(&mut self, message: &str) {
        if !self.warned {
            self.warned = true;
            tracing::warn!("{message}; reporting zeros for it");
        }
    }
}

/// A load average in thousandths (1.5 → 1500).
fn milli(load: f64) -> u32 {
    if load.is_finite() && load > 0.0 {
        // Saturating float-to-int conversion: absurd loads clamp to u32::MAX.
        (load * 1000.0).round() as u32
    } else {
        0
    }
}

/// Mounted file systems with a size, one per mount point, sorted by mount point (so two
/// samples of an unchanged host compare equal).
fn disk_usage(disks: impl Iterator<Item = (String, u64, u64)>) -> Vec<DiskUsage> {
    let mut out: Vec<DiskUsage> = disks
        .filter(|(_, total, _)| *total > 0)
        .map(|(mount, total_bytes, available_bytes)| DiskUsage {
            mount,
            total_bytes,
            available_bytes,
        })
        .collect();
    out.sort_by(|a, b| a.mount.cmp(&b.mount));
    out.dedup_by(|a, b| a.mount == b.mount);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_are_thousandths_and_never_negative() {
        assert_eq!(milli(1.5), 1500);
        assert_eq!(milli(0.0004), 0);
        assert_eq!(milli(-1.0), 0);
        assert_eq!(milli(f64::NAN), 0);
    }

    #[test]
    fn disks_are_sorted_deduplicated_and_sized() {
        let got = disk_usage(
            [
                ("/var".to_string(), 10, 5),
                ("/".to_string(), 20, 1),
                ("/var".to_string(), 10, 5),
                ("/proc".to_string(), 0, 0),
            ]
            .into_iter(),
        );
        let mounts: Vec<_> = got.iter().map(|d| d.mount.as_str()).collect();
        assert_eq!(mounts, ["/", "/var"]);
    }

    #[tokio::test]
    async fn a_sample_of_this_machine_has_cpus_and_memory() {
        let r = HostProbe::new().sample().await;
        assert!(r.cpus >= 1, "{r:?}");
        assert!(r.memory_total_bytes >= r.memory_used_bytes, "{r:?}");
        assert!(r.memory_total_bytes > 0, "{r:?}");
    }
}
