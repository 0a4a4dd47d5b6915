//! `pvefleet-agent`, the node agent that runs on every PVE host: it keeps a session with the
//! coordinators (leader following, heartbeats, the lease), reports the host's inventory, and
//! runs the leader's commands against the local PVE API, each at most once (safety rules 3
//! and 4 of docs/design/architecture.md).
//!
//! ```text
//!  config (agent.toml) ─▶ daemon::Agent::start ─▶ NodeDir (join wrote it) ─▶ backend::connect
//!                          └─▶ platform::Platform (host | lab)                (https | pvesh)
//!   inventory::Collector ── sysinfo + PVE reads ──▶ InventoryFeed ──┐
//!                                                                   ▼
//!   session::Session ── Heartbeat{inventory on change, results, running} ──▶ leader (QUIC mTLS)
//!        ▲  ◀── HeartbeatAck{lease, commands, acked results} ────────────────┘
//!        │        │ commands (per VM in order, 8 at once)
//!        │        ▼
//!        └── Executor ── Journal (sled: begin, finish; repeated id → stored result)
//!                   └── ops::VmOps ── pve::Client ──▶ local PVE API
//!   fence::Fencer ── lease + HA guests ──▶ at lease end − lead: stop HA guests, drop VIPs
//!        └── fence.json ──▶ fence guard (another process): reset the host at the lease end
//! ```
//!
//! [`join`] admits a host with a join token and writes its directory; [`daemon`] runs it.

pub mod backend;
pub mod capabilities;
pub mod clock_watch;
pub mod command_line;
pub mod config;
pub mod daemon;
pub mod diagnosis;
mod error;
mod executor;
pub mod fence;
pub mod inventory;
pub mod join;
mod journal;
mod journaled;
pub mod leave_probe;
pub mod migration_address;
pub mod ops;
pub mod platform;
mod record;
pub mod required_privileges;
pub mod session;
mod systemd;
mod typed;
pub mod vip;

pub use error::JournalError;
pub use executor::Executor;
pub use journal::{Begin, Journal, MAX_COMMAND_ID_LEN};
pub use journaled::Journaled;
pub use typed::TypedJournal;
