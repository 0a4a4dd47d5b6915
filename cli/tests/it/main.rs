//! The `pvefleet` CLI's tests, one binary (support code compiled once): argument parsing,
//! the configuration file, the client's routing and renewal against stand-in members, every
//! command's requests and output, exit codes, and the binary's man page and completions.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

mod admin;
mod admin_client;
mod args;
mod commands;
mod config;
mod docs;
mod exit;
mod ops;
mod ops_output;
mod ops_wait;
mod output_escaping;
mod output_fleet;
mod output_resources;
mod renewal;
mod settings;
mod support;
