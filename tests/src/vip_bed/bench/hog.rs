//! A CPU hog for the benchmark's "no spurious move under load" run: busy-looping threads, two
//! per core by default, at the benchmark's own niceness (0 under `make bench`), so every core
//! is saturated and the agents, members and probes get CPU only as the scheduler shares it.
//! Threads of the benchmark process share its scheduling group (its session's autogroup) with
//! the fleet processes it started, so the scheduler weighs them against the fleet's threads one
//! by one. Each thread stops when told or at its
//! deadline, whichever comes first; dropping the hog stops and joins them.
//!
//! [`CpuTimes`] reads `/proc/stat` around the run, so the table can say how busy the machine
//! really was.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::vip_bed::error::{BedError, io};

/// The busy threads.
#[derive(Debug)]
pub struct Hog {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Hog {
    /// Starts `threads` busy threads, each ending by itself after `limit`.
    ///
    /// # Errors
    /// [`BedError::Io`] if a thread cannot be spawned (those started are stopped).
    pub fn start(threads: usize, limit: Duration) -> Result<Hog, BedError> {
        let mut hog = Hog {
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::with_capacity(threads),
        };
        let deadline = Instant::now() + limit;
        for n in 0..threads {
            let stop = hog.stop.clone();
            let thread = std::thread::Builder::new()
                .name(format!("vip-bench-hog-{n}"))
                .spawn(move || spin(&stop, deadline))
                .map_err(io(format!("spawn hog thread {n}")))?;
            hog.threads.push(thread);
        }
        Ok(hog)
    }

    /// How many threads it runs.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }
}

fn spin(stop: &AtomicBool, deadline: Instant) {
    let mut n: u64 = 0;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        // Pure computation between the checks, no system call, no sleep.
        for _ in 0..100_000 {
            n = black_box(n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The machine's CPU time so far (`/proc/stat`, first line), in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    busy: u64,
    total: u64,
}

impl CpuTimes {
    /// Reads them now.
    ///
    /// # Errors
    /// [`BedError::Io`], or [`BedError::NoSuch`] if the line is not as Linux writes it.
    pub fn now() -> Result<CpuTimes, BedError> {
        let text = std::fs::read_to_string("/proc/stat").map_err(io("read /proc/stat"))?;
        let fields: Vec<u64> = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("cpu "))
            .map(|l| {
                l.split_whitespace()
                    .filter_map(|f| f.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        // user nice system idle iowait irq softirq steal ...
        if fields.len() < 8 {
            return Err(BedError::NoSuch(format!(
                "/proc/stat starts with an unknown line: {:?}",
                text.lines().next()
            )));
        }
        let total: u64 = fields[..8].iter().sum();
        Ok(CpuTimes {
            busy: total - fields[3] - fields[4],
            total,
        })
    }

    /// The share of CPU time spent busy between `earlier` and `self`, in percent.
    pub fn busy_since(self, earlier: CpuTimes) -> f64 {
        let total = self.total.saturating_sub(earlier.total);
        if total == 0 {
            return 0.0;
        }
        let busy = self.busy.saturating_sub(earlier.busy);
        // Tick counts over a run are far below 2^52: exact as f64.
        #[allow(clippy::cast_precision_loss)]
        let share = busy as f64 * 100.0 / total as f64;
        share
    }
}
