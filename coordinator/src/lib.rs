//! The replicated coordinator of a pvefleet cluster: the fleet state machine that every member
//! applies in Raft log order, and (in later modules) the services, controllers and CLI around it.
//!
//! ```text
//!  pvefleet CLI ──admin RPC──▶ member ──forward──▶ leader ──Raft log──▶ state::FleetState::apply
//! ```

pub mod config;
mod control;
pub mod error;
mod forward;
pub mod generate;
mod http;
pub mod node;

mod machine;
mod service;
pub mod setup;
pub mod tokens;
