//! The pure core of pvefleet: what the coordinators replicate and what the leader decides,
//! with no runtime underneath. Every function here is a function of its inputs: no tokio, no
//! I/O, no clock (time comes in as values), no randomness. The coordinator crate is the
//! runtime around it, as openraft separates its engine from its runtime.
//!
//! ```text
//!            Command (bytes in the Raft log)
//!  coordinator ──────────────▶ state::FleetState::apply ──▶ CommandReply
//!      │                               │ read
//!      │ live view, inflight, clock    ▼
//!      └──────────────────▶ reconcile::plan ──▶ Vec<Action> ──▶ coordinator (effects)
//!                                   │ place
//!                                   ▼
//!                      scheduler::schedule (filters, TOPSIS, explanation)
//!                                   ▲
//!                      views::host_views (state + live usage → HostView)
//! ```
//!
//! - [`state`]: the replicated state machine: [`state::FleetState`], the [`state::Command`]s
//!   that change it, their encoding in the log and in snapshots.
//! - [`scheduler`]: where a VM may run and where it should (PVE's static-scheduler scores, the
//!   fleet's filters and the affinity rules).
//! - [`affinity`]: the groups the affinity rules tie VMs into, for the placers.
//! - [`migration`]: where an operator's `vm migrate` sends a VM (its PVE cluster, every rule).
//! - [`maintenance`]: draining a host in maintenance, and bringing its guests back home.
//! - [`failback`]: VMs back to the host their node affinity prefers, once it is available.
//! - [`rebalance`]: the moves that would even out the load (a plan, shown, not carried out).
//! - [`rebalancer`]: automatic rebalancing: one move at a time, after a hold, when it is on.
//! - [`shutdown`]: the shutdown policy: what a host going down cleanly does to its guests.
//! - [`reconcile`]: what to do next for every VM, and what an agent's result means.
//! - [`views`]: the scheduler's view of the hosts, from the state and the live usage.
//! - [`liveness`]: which silent hosts are unreachable, which are proven fenced (the lease
//!   arithmetic of safety rules 2 and 3), and what a host that beats again becomes.
//! - [`recovery`]: where the VMs of a fenced host go (relocate within its PVE cluster,
//!   recreate elsewhere), which wait for an eligible host, which recoveries are over.
//! - [`vip`]: VIP decisions: who should own one, the majority-granted lease, health rise/fall.

pub mod affinity;
pub mod doctor;
pub mod failback;
pub mod gather;
pub mod liveness;
pub mod maintenance;
pub mod migration;
pub mod rebalance;
pub mod rebalancer;
pub mod reconcile;
pub mod recovery;
pub mod remote_move;
pub mod scheduler;
pub mod shutdown;
pub mod state;
#[cfg(test)]
mod test_world;
pub mod views;
pub mod vip;
