//! Wire types shared by node agents, coordinators and the `pvefleet` CLI: identities, the
//! typed-RPC trait, and the fleet model's requests and answers. Serde only: no runtime, no
//! network, so every side can depend on it.
//!
//! Wire types evolve additively and accept unknown fields; configuration files use
//! `deny_unknown_fields` so typos fail loudly.

pub mod admin;
pub mod agent;
pub mod fleet;
pub mod identity;
pub mod join;
pub mod rpc;
pub mod spec;
pub mod time;

pub use identity::{NodeId, Role};
pub use rpc::Rpc;
