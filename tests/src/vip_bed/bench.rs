//! The VIP failover benchmark's pieces (`tests/benches/vip_failover.rs`): rounds
//! of faults with a random phase on the pvefleet testbed, keepalived on the same kind of
//! namespace network for comparison, VRRP dropped between the hosts, a CPU hog with a watch for
//! spurious moves, and the printed tables.
//!
//! ```text
//!  run ──▶ rounds (pvefleet: VipBed::exercise) ──┐
//!      ──▶ keepalived_bed (keepalived, any_sampler) ├─▶ rounds::Series ─▶ tables
//!      ──▶ split_brain, hog + no_fault ────────────┘
//! ```

pub mod any_sampler;
pub mod hog;
pub mod keepalived;
pub mod keepalived_bed;
pub mod no_fault;
pub mod phase;
pub mod rounds;
pub mod run;
pub mod split_brain;
pub mod tables;
