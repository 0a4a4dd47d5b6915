//! A thread of the testbed (a probe, the holder sampler, a responder) that runs in a network
//! namespace until it is told to stop; dropping it stops it and waits for it (each loop checks
//! its flag at least every few tens of milliseconds).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use super::error::BedError;
use super::netns::spawn_in;

/// A running thread of the testbed.
#[derive(Debug)]
pub struct Worker {
    name: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), BedError>>>,
}

/// The flag a worker's loop checks.
#[derive(Debug, Clone)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// Whether the worker is to stop.
    pub fn stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl Worker {
    /// Spawns the thread `name` in the namespace `netns`, running `body` until its flag says
    /// stop.
    ///
    /// # Errors
    /// [`BedError::Io`] if the thread cannot be spawned.
    pub fn spawn(
        netns: &str,
        name: &str,
        body: impl FnOnce(StopFlag) -> Result<(), BedError> + Send + 'static,
    ) -> Result<Worker, BedError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = StopFlag(stop.clone());
        let thread = spawn_in(netns, name, move || body(flag))?;
        Ok(Worker {
            name: name.to_string(),
            stop,
            thread: Some(thread),
        })
    }

    /// Its error if it ended early (it stops only when told to).
    ///
    /// # Errors
    /// What ended it, or [`BedError::NoSuch`] if it ended without one or panicked.
    pub fn check(&mut self) -> Result<(), BedError> {
        if self.thread.as_ref().is_some_and(JoinHandle::is_finished) {
            return self.join();
        }
        Ok(())
    }

    /// Stops it and waits for it; its error if it failed.
    ///
    /// # Errors
    /// What ended it.
    pub fn finish(mut self) -> Result<(), BedError> {
        self.stop.store(true, Ordering::Relaxed);
        self.join()
    }

    fn join(&mut self) -> Result<(), BedError> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        let stopped = self.stop.load(Ordering::Relaxed);
        match thread.join() {
            Ok(Ok(())) if stopped => Ok(()),
            Ok(Ok(())) => Err(BedError::NoSuch(format!("{} ended on its own", self.name))),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(BedError::NoSuch(format!("{} panicked", self.name))),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
