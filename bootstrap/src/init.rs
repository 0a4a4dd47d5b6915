//! `pvefleet init`: creates a cluster from nothing on its first coordinator. Makes the CA, the
//! member's key and certificate, an operator (admin) key and certificate, and writes them with
//! `cluster.toml` into the node directory, which must not hold a node already.

use std::path::Path;

use protocol::{NodeId, Role};
use rand::Rng;

use crate::ca::{ClusterCa, DEFAULT_LEAF_VALIDITY};
use crate::cluster_config::ClusterConfig;
use crate::error::BootstrapError;
use crate::key::NodeKey;
use crate::paths::{NodeDir, write_public, write_secret};

/// The id of the admin certificate `init` makes. Admin ids are their own space (the role is part
/// of the identity), so the state machine hands out further admin ids starting after this one.
pub const FIRST_ADMIN_ID: NodeId = 1;

/// Longest cluster id accepted.
pub const MAX_CLUSTER_ID_LEN: usize = 32;

/// What `init` made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitOutcome {
    /// The cluster's id (given or generated).
    pub cluster_id: String,
    /// The first coordinator's node id.
    pub node_id: NodeId,
    /// The admin certificate's id ([`FIRST_ADMIN_ID`]).
    pub admin_id: NodeId,
    /// SHA-256 of the new CA certificate (what join tokens will pin).
    pub ca_sha256: [u8; 32],
}

/// Creates a cluster in `dir` with this node as its first coordinator, at `now` (unix seconds).
/// A missing `cluster_id` is generated. Refuses a directory that already holds a node file.
///
/// `cluster.toml` is written last and lists no members: the coordinator adds its own listen
/// address when it first starts, which `init` does not know.
pub fn init(
    dir: &Path,
    cluster_id: Option<String>,
    node_id: NodeId,
    now: u64,
) -> Result<InitOutcome, BootstrapError> {
    let node_dir = NodeDir::new(dir);
    refuse_existing(&node_dir)?;
    let cluster_id = match cluster_id {
        Some(id) => {
            validate_cluster_id(&id)?;
            id
        }
        None => generate_cluster_id(&mut rand::rng()),
    };

    // Everything is made in memory first, so a failure here leaves nothing on disk.
    let ca = ClusterCa::create(&cluster_id, now)?;
    let node_key = NodeKey::generate()?;
    let node_cert = ca.issue(
        &node_key.csr_pem()?,
        Role::Coordinator,
        node_id,
        DEFAULT_LEAF_VALIDITY,
        now,
    )?;
    let admin_key = NodeKey::generate()?;
    let admin_cert = ca.issue(
        &admin_key.csr_pem()?,
        Role::Admin,
        FIRST_ADMIN_ID,
        DEFAULT_LEAF_VALIDITY,
        now,
    )?;
    let config = ClusterConfig {
        cluster_id: cluster_id.clone(),
        node_id,
        role: Role::Coordinator,
        members: Vec::new(),
    };

    node_dir.create()?;
    // Checked again now that the directory exists: another init may have raced us.
    refuse_existing(&node_dir)?;
    write_secret(&node_dir.ca_key(), ca.key_pem())?;
    write_secret(&node_dir.node_key(), node_key.private_key_pem())?;
    write_secret(&node_dir.admin_key(), admin_key.private_key_pem())?;
    write_public(&node_dir.ca_cert(), ca.cert_pem())?;
    write_public(&node_dir.node_cert(), &node_cert)?;
    write_public(&node_dir.admin_cert(), &admin_cert)?;
    node_dir.write_cluster_config(&config)?;

    Ok(InitOutcome {
        cluster_id,
        node_id,
        admin_id: FIRST_ADMIN_ID,
        ca_sha256: ca.sha256(),
    })
}

/// Accepts 1-32 characters `[a-z0-9-]`, not starting or ending with `-` (a DNS label), since the
/// id appears in the CA's name and in operators' scripts.
pub fn validate_cluster_id(id: &str) -> Result<(), BootstrapError> {
    let bad = |reason| {
        Err(BootstrapError::InvalidClusterId {
            id: id.to_string(),
            reason,
        })
    };
    if id.is_empty() {
        return bad("it is empty");
    }
    if id.len() > MAX_CLUSTER_ID_LEN {
        return bad("it is longer than 32 characters");
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return bad("it has characters other than a-z, 0-9 and '-'");
    }
    if id.starts_with('-') || id.ends_with('-') {
        return bad("it starts or ends with '-'");
    }
    Ok(())
}

pub(crate) fn refuse_existing(dir: &NodeDir) -> Result<(), BootstrapError> {
    match dir.existing_node_file() {
        Some(found) => Err(BootstrapError::AlreadyInitialized {
            dir: dir.root().to_path_buf(),
            found,
        }),
        None => Ok(()),
    }
}

/// `pvf-` and 8 random characters `[a-z0-9]`.
fn generate_cluster_id(rng: &mut (impl rand::CryptoRng + ?Sized)) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let tail: String = (0..8)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect();
    format!("pvf-{tail}")
}

#[cfg(test)]
#[path = "init_tests.rs"]
mod tests;
