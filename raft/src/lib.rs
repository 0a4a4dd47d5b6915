//! openraft 0.9 building blocks for the pvefleet coordinators: the type configuration, the
//! replicated [`Machine`] trait, a store (log and vote in an fsynced journal, snapshots in sled)
//! with openraft's durability contract, the recommended [`config::default_config`], and the Raft network over `transport`.

pub mod config;
pub mod error;
pub mod machine;
pub mod network;
pub mod store;
pub mod types;

pub use error::RaftStoreError;
pub use machine::Machine;
pub use types::{Command, MemberNode, NodeId, Reply, TypeConfig};
