//! Support for pvefleet's end-to-end tests: the architecture rules as data, locating the
//! vendored reference data and built binaries, and an in-process adapter that lets the real
//! `pve` client drive the simulator without HTTP.
//!
//! ```text
//!  pve::Client ──▶ SimBackend (this crate) ──▶ pve_sim::Sim::handle_raw ──▶ model
//!  pve::Client ──▶ HttpsBackend ──TLS──▶ pve-sim serve (process) ──▶ model
//!  proxmoxer (Python) ──TLS──────────▶ pve-sim serve (process)
//! ```
//!
//! This crate is test support only (nothing ships from it): setting up a harness that cannot
//! be set up is a test failure, so it may panic with `expect`.
#![allow(clippy::expect_used)]

pub mod architecture;
pub mod browser;
pub mod coord_cluster;
pub mod dashboard_http;
pub mod demo_process;
pub mod doc_links;
pub mod fleet;
pub mod golden;
pub mod https_sim;
pub mod import_cycles;
pub mod lifecycle;
pub mod nspawn;
pub mod proc_stats;
pub mod recording;
pub mod reference_data;
pub mod sim_backend;
pub mod sim_process;
pub mod test_lab;
pub mod tour;
pub mod units;
pub mod vip_bed;
