//! The node agent's integration tests, one binary (support code compiled once): the executor,
//! journal (durability across SIGKILL: `lab::crash_child` re-runs this binary as the process to
//! kill), session and VM operations against the simulator (`ops_support`), the VIPs in network
//! namespaces the tests make (`netns_support`, as root), and the `pvefleet-agent` binary (its
//! fence guard included).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

mod agent_cli;
mod agent_config_and_docs;
mod executor;
mod fence_agent;
mod fence_guard;
mod inventory;
mod journal_durability;
mod journal_reopen;
mod netns_support;
mod ops_delete;
mod ops_ensure;
mod ops_power;
mod ops_snapshot;
mod ops_support;
mod session;
mod session_renew;
mod systemd_notify;
mod vip_addresses;
mod vip_announce;
mod vip_gate;
