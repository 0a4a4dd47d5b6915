//! Where the PVE nodes of other clusters reach this host's PVE API (`[pve] migration_address`):
//! what the agent hands out, with a migration token, to the source of a remote migration.

/// An address and port of this node's API as other clusters reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationAddress {
    /// Host name or IP address.
    pub host: String,
    /// Port (8006 on PVE).
    pub port: u16,
}
