//! The PVE client's integration tests, one binary: the HTTPS backend against local servers
//! and the `pvesh` backend.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

mod https_backend;
mod pvesh_backend;
