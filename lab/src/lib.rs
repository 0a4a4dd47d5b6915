//! pvefleet's one launcher: a fleet of real processes on one machine — coordinators, node
//! agents and simulated PVE hosts (`pve-sim serve`) — on loopback, or members and agents each
//! in a network namespace the caller made ([`netns`]: the VIP testbed). `pvefleet-lab demo`, the
//! end-to-end tests and the benches all start, fault and stop their fleets through it, so
//! process spawning, readiness waiting and teardown exist once.
//!
//! ```text
//!  Lab::new ─▶ found (init + run member 1) ─▶ join_member.. ─▶ wait_voters
//!           ─▶ add_agent (pve-sim serve if https/pvesh, join, config, run) ─▶ wait_hosts_online
//!  faults:     kill / terminate / pause / resume a Part (Member(i) | Agent(i)); start_ again
//!  teardown:   stop(): agents, then their PVE hosts, then members (SIGTERM, grace, SIGKILL)
//! ```
//!
//! Every child runs in its own process group with its log in the lab's directory
//! ([`layout`]); its first stdout line is its ready line ([`process`]). Tests of a single
//! daemon binary start it with [`process::Process`] too, and the `Type=notify` tests talk to
//! it through [`fake_systemd`]. The stores' crash tests kill their child process at a chosen
//! step with [`crash_child`].

pub mod arp;
pub mod binaries;
pub mod chaos;
pub mod crash_child;
pub mod error;
pub mod fake_systemd;
mod guards;
pub mod host;
pub mod host_network;
pub mod join_step;
pub mod lab;
pub mod layout;
pub mod linearizability;
pub mod link_delay;
pub mod loopback_forward;
pub mod netns;
pub mod partition;
pub mod process;
pub mod pve_cluster;
pub mod pve_node;
pub mod scenario;
pub mod sim_control;
pub mod vip_probe;

pub use binaries::Binaries;
pub use error::LabError;
pub use host::{HostOptions, PveAccess, VipHolding};
pub use lab::{Agent, Lab, LabOptions, Member, MemberAt, Part, Teardown};
pub use partition::Partitions;
pub use process::{Stderr, Stopped};
pub use pve_cluster::{PveCluster, PveClusterOptions, PveNodeOptions};
pub use sim_control::{SimControl, SimVm};
