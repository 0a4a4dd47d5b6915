//! The Raft store's integration tests, one binary (support code compiled once): the store
//! suite, durability across SIGKILL (`lab::crash_child` re-runs this binary as the process to kill),
//! clean reopen, clusters and the network.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

mod cluster;
mod common;
mod network;
mod store_durability;
mod store_reopen;
mod store_suite;
