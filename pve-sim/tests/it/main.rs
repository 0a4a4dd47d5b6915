//! The simulator's integration tests, one binary (support code compiled once): its HTTP edge,
//! its pipeline, remote migration between two simulators and the access control it needs, the
//! `pve-sim` binary and the `pvesh-sim` shim.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

mod access_control;
mod common;
mod host_failure;
mod http_edge;
mod json_params;
mod pve_sim_binary;
mod pvesh_shim;
mod remote_migration;
mod sim_pipeline;
mod task_log_download;
