//! Task lists: `GET /nodes/{node}/tasks` (one node's index, finished tasks by default) and
//! `GET /cluster/tasks` (recent tasks of all nodes). Status, log and stop of one task are in
//! [`crate::tasks`].

use serde::Deserialize;

use crate::de;
use crate::error::PveError;
use crate::tasks::classify_exitstatus;
use crate::upid::Upid;

/// One task of a node's task list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NodeTaskEntry {
    /// The UPID.
    #[serde(default)]
    pub upid: String,
    /// Node.
    #[serde(default)]
    pub node: String,
    /// Worker PID.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub pid: Option<u32>,
    /// Worker start in clock ticks.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub pstart: Option<u64>,
    /// Start (unix).
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub starttime: u64,
    /// End (unix), once finished.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub endtime: Option<u64>,
    /// Task type (`qmcreate`, `qmclone`, ...).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Object id (the VMID for VM tasks; the source VMID for clones).
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub id: String,
    /// `user@realm` or `user@realm!token`.
    #[serde(default)]
    pub user: String,
    /// `OK`, `WARNINGS: n`, the error text, or `RUNNING` for active tasks.
    #[serde(default)]
    pub status: Option<String>,
}

/// Shared task-entry logic.
fn outcome(status: Option<&str>) -> Option<Result<u32, String>> {
    match status {
        None | Some("RUNNING") => None,
        Some(s) => Some(classify_exitstatus(s).map_err(str::to_string)),
    }
}

impl NodeTaskEntry {
    /// The parsed UPID.
    pub fn parsed_upid(&self) -> Result<Upid, PveError> {
        self.upid.parse()
    }

    /// Whether the task is still running.
    pub fn is_running(&self) -> bool {
        self.endtime.is_none() && self.status.as_deref().is_none_or(|s| s == "RUNNING")
    }

    /// `None` while running; `Ok(warnings)` or `Err(exit status)` once finished.
    pub fn outcome(&self) -> Option<Result<u32, String>> {
        outcome(self.status.as_deref())
    }
}

/// One task of `GET /cluster/tasks`. The schema declares only `upid`; the other fields are
/// what PVE's cluster task index carries (see [`UNDECLARED_FIELDS_READ`](super::UNDECLARED_FIELDS_READ)).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ClusterTaskEntry {
    /// The UPID.
    #[serde(default)]
    pub upid: String,
    /// Node.
    #[serde(default)]
    pub node: Option<String>,
    /// Task type.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Object id.
    #[serde(default, deserialize_with = "de::opt_string_lenient")]
    pub id: Option<String>,
    /// User.
    #[serde(default)]
    pub user: Option<String>,
    /// Exit status once finished.
    #[serde(default)]
    pub status: Option<String>,
    /// Start (unix).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub starttime: Option<u64>,
    /// End (unix), once finished.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub endtime: Option<u64>,
}

impl ClusterTaskEntry {
    /// The parsed UPID (node, type, id, user and start time are all in it).
    pub fn parsed_upid(&self) -> Result<Upid, PveError> {
        self.upid.parse()
    }

    /// `None` while running; `Ok(warnings)` or `Err(exit status)` once finished.
    pub fn outcome(&self) -> Option<Result<u32, String>> {
        outcome(self.status.as_deref())
    }
}
