//! Fencing on lease loss (safety rule 3 of docs/design/architecture.md; the argument is in
//! docs/design/fencing-agent.md): the agent stops its HA guests and drops its VIPs *before* its
//! lease ends, and a guard process resets the host if the agent could not.
//!
//! ```text
//!  agent:  session lease + inventory (HA guests) ─▶ plan::decide ─▶ fencer
//!            at lease_end − lead: start gate closed, VIP keeper lets go, HA guests stopped
//!            (guests), confirmed ─▶ record disarmed
//!          every renewal ─▶ fence.json {boot_id, lease_end_mono_ns, armed, agent_pid} (record)
//!  guard:  fence.json every 50 ms ─▶ armed and CLOCK_MONOTONIC ≥ lease_end ─▶ HostReset (reset)
//!            host: reboot(2) │ simulated: SIGKILL the agent, reset the simulated node
//! ```
//!
//! The decisions ([`plan`], [`guard::judge`]) are pure and table-tested; the effects sit in
//! [`fencer`], [`guests`] and [`reset`] (a lab's reset goes through `crate::platform`).

pub mod agent_process;
pub mod clock;
pub mod fencer;
pub mod guard;
pub mod guests;
pub mod launch;
pub mod plan;
pub mod record;
pub mod reset;
pub mod settings;
pub mod start_gate;

pub use fencer::{FenceError, Fencer, FencerConfig};
pub use launch::{GuardOptions, LaunchError, run_guard, spawn_child_guard};
pub use record::{FenceRecord, RECORD_FILE};
pub use start_gate::StartGate;
