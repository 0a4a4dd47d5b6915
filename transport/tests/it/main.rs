//! The transport's integration tests, one binary (support code compiled once): calls, mutual
//! TLS, joins, the gate, certificate reload, bad input and the unauthenticated (Join) surface.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

mod bad_input;
mod calls;
mod gate;
mod join;
mod join_surface;
mod mtls;
mod reload;
mod support;
