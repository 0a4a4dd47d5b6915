//! Task lists: `GET /nodes/{node}/tasks` (one node's index, filterable, paged with `total`)
//! and `GET /cluster/tasks` (recent tasks cluster-wide). One task's status, log and stop are
//! in [`crate::tasks`].

use crate::calls::paths::node_path;
use crate::client::{Client, decode};
use crate::error::PveError;
use crate::props::check_vmid;
use crate::props::kv::invalid;
use crate::props::str_enum::str_enum;
use crate::request::{ApiRequest, Method};
use crate::types::{ClusterTaskEntry, NodeTaskEntry};

str_enum! {
    /// Which tasks a node lists.
    pub enum TaskSource: "source" {
        Archive = "archive",
        Active = "active",
        All = "all",
    }
}

str_enum! {
    /// Outcome classes of `statusfilter`.
    pub enum TaskStatusFilter: "statusfilter" {
        Ok = "ok",
        Warning = "warning",
        Error = "error",
        Unknown = "unknown",
    }
}

/// Filters of `GET /nodes/{node}/tasks`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskListFilter {
    /// Skip this many entries.
    pub start: Option<u64>,
    /// At most this many entries (server default 50; 0 = all).
    pub limit: Option<u64>,
    /// Started at or after (unix).
    pub since: Option<u64>,
    /// Started at or before (unix).
    pub until: Option<u64>,
    /// Finished (`archive`, the default), running (`active`) or both.
    pub source: Option<TaskSource>,
    /// Only these outcomes.
    pub statusfilter: Vec<TaskStatusFilter>,
    /// Only failed tasks.
    pub errors: Option<bool>,
    /// Only this task type (`qmcreate`).
    pub typefilter: Option<String>,
    /// Only users matching this.
    pub userfilter: Option<String>,
    /// Only tasks of this VMID.
    pub vmid: Option<u32>,
}

fn check_filter_text(field: &str, value: &str) -> Result<(), PveError> {
    if value.is_empty()
        || value
            .chars()
            .any(|c| c == ':' || c == '/' || c.is_whitespace())
    {
        return Err(invalid(
            field,
            format!("'{value}' must be non-empty without ':', '/' or whitespace"),
        ));
    }
    Ok(())
}

/// `GET /nodes/{node}/tasks`.
pub fn node_tasks_request(node: &str, filter: &TaskListFilter) -> Result<ApiRequest, PveError> {
    let path = node_path(node, "/tasks")?;
    if let Some(t) = &filter.typefilter {
        check_filter_text("typefilter", t)?;
    }
    if let Some(u) = &filter.userfilter {
        check_filter_text("userfilter", u)?;
    }
    if let Some(v) = filter.vmid {
        check_vmid("vmid", v)?;
    }
    if let (Some(s), Some(u)) = (filter.since, filter.until)
        && s > u
    {
        return Err(invalid("until", format!("{u} is before since {s}")));
    }
    let status = (!filter.statusfilter.is_empty()).then(|| {
        filter
            .statusfilter
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(",")
    });
    Ok(ApiRequest::new(Method::Get, path)
        .opt("start", filter.start)
        .opt("limit", filter.limit)
        .opt("since", filter.since)
        .opt("until", filter.until)
        .opt("source", filter.source)
        .opt("statusfilter", status)
        .flag("errors", filter.errors)
        .opt("typefilter", filter.typefilter.as_deref())
        .opt("userfilter", filter.userfilter.as_deref())
        .opt("vmid", filter.vmid))
}

/// `GET /cluster/tasks`.
pub fn cluster_tasks_request() -> Result<ApiRequest, PveError> {
    Ok(ApiRequest::new(Method::Get, "/cluster/tasks"))
}

impl Client {
    /// One page of a node's tasks and the total number matching.
    pub async fn node_tasks(
        &self,
        node: &str,
        filter: &TaskListFilter,
    ) -> Result<(Vec<NodeTaskEntry>, Option<u64>), PveError> {
        let req = node_tasks_request(node, filter)?;
        let reply = self.execute(&req).await?;
        let total = reply.total;
        Ok((decode(&req, reply.data)?, total))
    }

    /// Recent tasks of the whole cluster.
    pub async fn cluster_tasks(&self) -> Result<Vec<ClusterTaskEntry>, PveError> {
        self.fetch(&cluster_tasks_request()?).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_tasks_sends_every_filter() {
        let f = TaskListFilter {
            start: Some(0),
            limit: Some(100),
            since: Some(1_700_000_000),
            until: Some(1_800_000_000),
            source: Some(TaskSource::All),
            statusfilter: vec![TaskStatusFilter::Ok, TaskStatusFilter::Error],
            errors: Some(false),
            typefilter: Some("qmcreate".into()),
            userfilter: Some("fleet@pve!agent".into()),
            vmid: Some(100),
        };
        let r = node_tasks_request("pve1", &f).unwrap();
        assert_eq!(r.path, "/nodes/pve1/tasks");
        let got: Vec<(&str, &str)> = r
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("start", "0"),
                ("limit", "100"),
                ("since", "1700000000"),
                ("until", "1800000000"),
                ("source", "all"),
                ("statusfilter", "ok,error"),
                ("errors", "0"),
                ("typefilter", "qmcreate"),
                ("userfilter", "fleet@pve!agent"),
                ("vmid", "100"),
            ]
        );
        assert!(
            node_tasks_request("pve1", &TaskListFilter::default())
                .unwrap()
                .params
                .is_empty()
        );
        assert_eq!(cluster_tasks_request().unwrap().path, "/cluster/tasks");
    }

    #[test]
    fn task_filters_are_validated() {
        for (f, field) in [
            (
                TaskListFilter {
                    typefilter: Some("qm create".into()),
                    ..Default::default()
                },
                "typefilter",
            ),
            (
                TaskListFilter {
                    userfilter: Some(String::new()),
                    ..Default::default()
                },
                "userfilter",
            ),
            (
                TaskListFilter {
                    vmid: Some(7),
                    ..Default::default()
                },
                "vmid",
            ),
            (
                TaskListFilter {
                    since: Some(5),
                    until: Some(4),
                    ..Default::default()
                },
                "until",
            ),
        ] {
            let e = node_tasks_request("pve1", &f).unwrap_err();
            assert!(
                matches!(e, PveError::Invalid { field: ref got, .. } if got == field),
                "{field}"
            );
        }
    }
}
