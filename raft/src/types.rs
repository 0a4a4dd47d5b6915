//! The openraft type configuration shared by every member: opaque commands and replies (the
//! coordinator encodes them), `u64` node ids and a member's QUIC address.

use std::fmt;
use std::io::Cursor;

use serde::{Deserialize, Serialize};

/// A replicated command: opaque bytes, encoded and decoded by the coordinator's state machine.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command(pub Vec<u8>);

/// What applying a [`Command`] answered: opaque bytes for the coordinator.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply(pub Vec<u8>);

// Debug shows sizes, not contents: commands can be large and are logged by openraft.
impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Command({} bytes)", self.0.len())
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Reply({} bytes)", self.0.len())
    }
}

/// A Raft member as stored in the membership: where its QUIC endpoint listens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberNode {
    /// `host:port` of the member's QUIC endpoint.
    pub addr: String,
}

impl fmt::Display for MemberNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.addr)
    }
}

/// A member's id in the Raft group (the node id in its certificate).
pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The openraft type configuration of the coordinator group.
    pub TypeConfig:
        D = Command,
        R = Reply,
        NodeId = NodeId,
        Node = MemberNode,
        SnapshotData = Cursor<Vec<u8>>,
);

/// A log id of this group.
pub type LogId = openraft::LogId<NodeId>;
/// A log entry of this group.
pub type Entry = openraft::Entry<TypeConfig>;
/// A membership with its log id, as this group stores it.
pub type StoredMembership = openraft::StoredMembership<NodeId, MemberNode>;
/// A snapshot's metadata in this group.
pub type SnapshotMeta = openraft::SnapshotMeta<NodeId, MemberNode>;
/// A storage error as openraft expects it.
pub type StorageError = openraft::StorageError<NodeId>;
/// The openraft node of this group.
pub type Raft = openraft::Raft<TypeConfig>;
