//! The replicated coordinator of a pvefleet cluster: the fleet state machine that every member
//! applies in Raft log order, and (in later modules) the services, controllers and CLI around it.
//!
//! ```text
//!  pvefleet CLI ──admin RPC──▶ member ──forward──▶ leader ──Raft log──▶ state::FleetState::apply
//! ```

pub mod state;
