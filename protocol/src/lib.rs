//! Wire types shared by node agents, coordinators and the `pvefleet` CLI: identities, the
//! typed-RPC trait, the fleet model's requests and answers, and their versioned encoding
//! (bincode behind a version, see [`version`]). No runtime, no network, so every side can
//! depend on it.
//!
//! On the wire and in the Raft log a value is bincode: positional, so a changed layout is a new
//! [`version::Version`] with an explicit decoder of every older one, never a silent
//! reinterpretation. Configuration and spec files (TOML, JSON) use `deny_unknown_fields` so
//! typos fail loudly.

pub mod admin;
pub mod agent;
pub mod encoding;
pub mod fleet;
pub mod identity;
pub mod join;
pub mod request_id;
pub mod rpc;
pub mod secret;
pub mod spec;
pub mod time;
pub mod timing;
pub mod version;

pub use identity::{NodeId, Role};
pub use request_id::RequestId;
pub use rpc::Rpc;
pub use secret::Secret;
pub use version::Version;
