//! Scenario tests of the cluster model, one file per topic: each calls `Cluster::dispatch` as
//! the edge would; `support.rs` holds the shared helpers.

mod agent;
mod clone;
mod config;
mod config_lock;
mod config_move;
mod ha_resources;
mod lifecycle;
mod migrate;
mod power;
mod reads;
mod snapshots;
mod support;
