//! A minimal Debian booted under `systemd-nspawn`, for the packaging test: the package is
//! installed with `dpkg`, started by a real systemd, upgraded and purged, as on a PVE host.
//!
//! ```text
//!  debootstrap (cached: target/debootstrap/<suite>.base) ──cp -a──▶ per-run copy (target/nspawn/)
//!      ──systemd-nspawn --boot──▶ Container ──nsenter -t <its PID 1> -a──▶ commands inside
//! ```
//!
//! Everything here needs root (CI runs as root) and the tools [`preflight()`] names; a machine
//! without them fails the test with the fix, it never skips. Dropping a [`Container`] powers it
//! off, kills what is left and removes the copy, also when the test panicked; a [`Footprint`]
//! taken before proves afterwards that nothing was left behind.

pub mod container;
pub mod dpkg;
pub mod phases;
pub mod preflight;
pub mod process;
pub mod root;
pub mod systemd;

pub use container::{Container, Footprint};
pub use phases::Phases;
pub use preflight::{Tool, preflight};
pub use root::{DebianRoot, RootCopy};
pub use systemd::UnitState;
