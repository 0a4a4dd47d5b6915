//! The testbed's network namespaces: [`lab::netns::Netns`] (made with `ip netns add`, loopback
//! up, deleted when dropped, even when a test fails) under a name unique to this process and
//! run (`pvf-<pid>-<n>-<role>`), and threads of the testbed moved into one with setns (a
//! socket made by a thread afterwards belongs to the namespace for good).

use std::sync::atomic::{AtomicU32, Ordering};

pub use lab::netns::Netns;

use super::error::{BedError, io};

/// The number of the next testbed in this process, so two testbeds never share a name.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// A fresh prefix for the namespaces of one testbed: `pvf-<pid>-<n>`.
pub fn unique_prefix() -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("pvf-{}-{n}", std::process::id())
}

/// Moves the calling thread into the namespace named `name`.
///
/// # Errors
/// [`BedError::Lab`] with [`lab::LabError::Enter`].
pub fn enter(name: &str) -> Result<(), BedError> {
    Ok(lab::netns::enter(name)?)
}

/// Spawns a thread named `thread` that moves into the namespace `netns` and runs `body`
/// there.
///
/// # Errors
/// [`BedError::Io`] if the thread cannot be spawned; the thread's own result (a failed move
/// included) is its join handle's.
pub fn spawn_in<T: Send + 'static>(
    netns: &str,
    thread: &str,
    body: impl FnOnce() -> Result<T, BedError> + Send + 'static,
) -> Result<std::thread::JoinHandle<Result<T, BedError>>, BedError> {
    let netns = netns.to_string();
    std::thread::Builder::new()
        .name(thread.to_string())
        .spawn(move || {
            enter(&netns)?;
            body()
        })
        .map_err(io(format!("spawn thread {thread}")))
}
