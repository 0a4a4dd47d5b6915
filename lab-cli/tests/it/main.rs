//! The `pvefleet-lab` binary's tests, one binary: its command line (the flags and defaults
//! `demo` and `sim` always had), exit codes for what is refused before anything starts, a
//! chaos campaign's schedule, and its man page and completions. Starting fleets is the
//! end-to-end tests' (`tests/tests/it/{fleet_e2e,scenarios,chaos,dashboard}.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

mod args;
mod docs;
mod refusals;
