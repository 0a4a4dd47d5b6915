//! pvefleet's end-to-end tests, one binary (support code in the `pvefleet_tests` library):
//! the architecture rules, the client, coordinator clusters and whole fleets as processes, the
//! examples, the schema, proxmoxer and the systemd units. The packaging test is a binary of its
//! own (`make package-test`): it builds the release package and boots containers.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

mod admins;
mod architecture;
mod chaos;
mod client_errors;
mod client_lifecycle;
mod coordinator_cluster;
mod dashboard;
mod disk_fault;
mod doc_links;
mod doctor;
mod examples;
mod fleet_apply;
mod fleet_e2e;
mod golden;
mod host_admin;
mod host_failure;
mod host_recovery;
mod launcher;
mod leader_changes;
mod link_delay;
mod maintenance;
mod migration;
mod power_cut;
mod proxmoxer;
mod remote_migration;
mod retried_writes;
mod scenarios;
mod schema_conformance;
mod units;
mod vips;
mod vm_groups;
