//! The simulator's integration tests, one binary (support code compiled once): its HTTP edge,
//! its pipeline, the `pve-sim` binary and the `pvesh-sim` shim.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

mod common;
mod host_failure;
mod http_edge;
mod pve_sim_binary;
mod pvesh_shim;
mod sim_pipeline;
