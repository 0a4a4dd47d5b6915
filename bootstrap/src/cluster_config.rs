//! `cluster.toml`: which cluster this node belongs to, who it is, and where the coordinator
//! members listen. Unknown fields are refused so a typo fails loudly instead of being ignored.

use protocol::{NodeId, Role};
use serde::{Deserialize, Serialize};

use crate::error::BootstrapError;
use crate::paths::{NodeDir, io_err, write_public};

/// The contents of `cluster.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// The cluster's id (also in the CA's name).
    pub cluster_id: String,
    /// This node's id (the one in its certificate).
    pub node_id: NodeId,
    /// This node's role (the one in its certificate).
    pub role: Role,
    /// The coordinator members known when the file was written.
    #[serde(default)]
    pub members: Vec<MemberAddr>,
}

/// Where a coordinator member listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberAddr {
    /// The member's node id.
    pub node_id: NodeId,
    /// `host:port` of its QUIC endpoint.
    pub addr: String,
}

impl ClusterConfig {
    /// The TOML text.
    pub fn to_toml(&self) -> Result<String, BootstrapError> {
        Ok(toml::to_string(self)?)
    }

    /// Parses TOML text; errors name the line and the field.
    pub fn from_toml(text: &str) -> Result<ClusterConfig, toml::de::Error> {
        toml::from_str(text)
    }
}

impl NodeDir {
    /// Reads `cluster.toml`.
    pub fn read_cluster_config(&self) -> Result<ClusterConfig, BootstrapError> {
        let path = self.cluster_config();
        let text = std::fs::read_to_string(&path).map_err(io_err("read", &path))?;
        ClusterConfig::from_toml(&text)
            .map_err(|source| BootstrapError::ConfigParse { path, source })
    }

    /// Writes `cluster.toml` atomically.
    pub fn write_cluster_config(&self, config: &ClusterConfig) -> Result<(), BootstrapError> {
        write_public(&self.cluster_config(), &config.to_toml()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ClusterConfig {
        ClusterConfig {
            cluster_id: "lab".into(),
            node_id: 3,
            role: Role::Coordinator,
            members: vec![
                MemberAddr {
                    node_id: 1,
                    addr: "10.0.0.1:7400".into(),
                },
                MemberAddr {
                    node_id: 3,
                    addr: "[fd00::3]:7400".into(),
                },
            ],
        }
    }

    #[test]
    fn cluster_config_round_trips_through_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = NodeDir::new(tmp.path());
        dir.write_cluster_config(&config()).unwrap();
        assert_eq!(dir.read_cluster_config().unwrap(), config());
        let text = std::fs::read_to_string(dir.cluster_config()).unwrap();
        assert!(text.contains("role = \"coordinator\""), "{text}");
    }

    #[test]
    fn unknown_fields_and_bad_roles_are_refused_with_the_path() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = NodeDir::new(tmp.path());
        let good = config().to_toml().unwrap();
        for (text, expected) in [
            (format!("nodeid = 4\n{good}"), "nodeid"),
            (good.replace("coordinator", "root"), "root"),
            (good.replace("addr =", "address ="), "address"),
        ] {
            std::fs::write(dir.cluster_config(), text).unwrap();
            let err = dir.read_cluster_config().unwrap_err().to_string();
            assert!(err.contains("cluster.toml"), "{err}");
            assert!(err.contains(expected), "{err}");
        }
    }

    #[test]
    fn members_may_be_omitted() {
        let text = "cluster_id = \"lab\"\nnode_id = 1\nrole = \"agent\"\n";
        let c = ClusterConfig::from_toml(text).unwrap();
        assert!(c.members.is_empty());
    }
}
