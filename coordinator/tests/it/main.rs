//! The coordinator's integration tests, one binary (support code compiled once): members run
//! in process (`daemon_support`) or as `pvefleet-coordinator` processes, driven through the
//! fleet client.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

mod config_files_and_docs;
mod control_heartbeat;
mod daemon_cluster;
mod daemon_membership;
mod daemon_pools;
mod daemon_renewal;
mod daemon_support;
mod daemon_tokens;
mod join_surface;
mod ops_agent;
mod ops_daemon;
mod systemd_notify;
