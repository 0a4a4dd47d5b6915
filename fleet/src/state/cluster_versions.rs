//! [`ClusterVersions`]: the replicated record of the cluster version and of what each
//! member's build reads. The rules that change it are in `versions`.

use std::collections::BTreeMap;

use protocol::NodeId;
use protocol::version::{OLDEST, Version, VersionRange};
use serde::{Deserialize, Serialize};

/// The cluster version and what each member's build reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterVersions {
    /// The version entries and snapshots are written at.
    pub cluster: Version,
    /// Each member's build, as it last reported it.
    pub members: BTreeMap<NodeId, VersionRange>,
}

impl Default for ClusterVersions {
    fn default() -> ClusterVersions {
        ClusterVersions {
            cluster: OLDEST,
            members: BTreeMap::new(),
        }
    }
}
