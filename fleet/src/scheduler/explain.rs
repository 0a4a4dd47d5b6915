//! The scheduler's account of every host for one VM: its scores, or the filter that excluded
//! it. `pvefleet vm explain NAME` prints these; a failed placement reports them too.

#[cfg(test)]
use std::cmp::Ordering;
use std::fmt;

use protocol::identity::NodeId;
use serde::Serialize;

use super::filters::FilterName;

/// What the scheduler concluded about one host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostVerdict {
    /// The host's node id.
    pub host_id: NodeId,
    /// The host's PVE node name.
    pub host_name: String,
    /// Excluded or scored.
    pub verdict: Verdict,
}

/// Excluded by a hard filter, or scored by TOPSIS.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Verdict {
    /// A hard filter refused the host.
    Excluded {
        /// The first filter the host failed.
        filter: FilterName,
        /// What was missing, for an operator.
        detail: String,
    },
    /// The host is eligible; the criteria are utilizations (0-1, over every online host, as PVE
    /// counts every online node) if the VM were placed on this host.
    Scored {
        /// CPU utilization of the hosts, as PVE averages it: the root mean square.
        avg_cpu: f64,
        /// Highest CPU utilization.
        max_cpu: f64,
        /// Memory utilization of the hosts, as PVE averages it: the root mean square.
        avg_mem: f64,
        /// Highest memory utilization.
        max_mem: f64,
        /// TOPSIS closeness to the ideal (higher is better).
        closeness: f64,
    },
}

impl HostVerdict {
    /// The closeness if the host was scored.
    pub fn closeness(&self) -> Option<f64> {
        match self.verdict {
            Verdict::Scored { closeness, .. } => Some(closeness),
            Verdict::Excluded { .. } => None,
        }
    }
}

/// Explanation order: scored hosts best first, then excluded hosts; ties by name, then id.
/// (The scheduler builds its verdicts in this order directly; the tests check they are.)
#[cfg(test)]
pub(crate) fn rank(a: &HostVerdict, b: &HostVerdict) -> Ordering {
    let by_score = match (a.closeness(), b.closeness()) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    by_score
        .then_with(|| a.host_name.cmp(&b.host_name))
        .then_with(|| a.host_id.cmp(&b.host_id))
}

impl fmt::Display for HostVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.verdict {
            Verdict::Excluded { filter, detail } => {
                write!(f, "{}: excluded by {filter}: {detail}", self.host_name)
            }
            Verdict::Scored {
                avg_cpu,
                max_cpu,
                avg_mem,
                max_mem,
                closeness,
            } => write!(
                f,
                "{}: score {closeness:.4} (rms cpu {avg_cpu:.3}, max cpu {max_cpu:.3}, rms mem {avg_mem:.3}, max mem {max_mem:.3})",
                self.host_name
            ),
        }
    }
}
