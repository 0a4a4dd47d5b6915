//! The coordinator daemon (`pvefleet-coordinator`): the runtime around the pure `fleet` core.
//! It wires the fleet state into Raft as the replicated machine, serves the Admin, Join, Agent
//! and renewal services, runs the leader's control loop (the reconciler's effects: proposals
//! and agent commands), serves local HTTP metrics and health, and (when configured) the web
//! dashboard.
//!
//! ```text
//!  pvefleet CLI ──admin RPC──▶ service ──forward──▶ leader ──Raft log──▶ machine (fleet::state)
//!  agents ──Heartbeat──▶ service::agent ──▶ control (soft state) ◀── reconciler (fleet::reconcile)
//!  node: init/join (setup), Raft + transport + services + reconciler + HTTP, ordered shutdown
//! ```

pub mod command_line;
pub mod config;
mod control;
pub mod dashboard;
pub mod error;
#[cfg(feature = "fault-points")]
pub mod fault_point;
mod forward;
mod gate;
mod host_watch;
mod http;
mod leader_ticks;
mod machine;
pub mod node;
mod reconciler;
mod service;
pub mod setup;
pub mod tokens;
mod vip_manager;
