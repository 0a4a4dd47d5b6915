//! The task endpoints: status, log (paged, `limit=0` = all, `no content` when empty; or the
//! whole file as a `text/plain` download), stop (kills a running worker), the node task list
//! with its filters, and `/cluster/tasks`. A task is only found on the node named in its UPID,
//! as PVE reads the node-local task file.

use std::sync::Arc;

use serde_json::{Value, json};

use super::task::{Task, Upid};
use crate::api::Download;
use crate::cluster::clock::log_stamp;
use crate::cluster::inner::Inner;
use crate::cluster::ops::config::split_list;
use crate::cluster::request::node;
use crate::{ApiError, Params, Reply};

fn find<'a>(
    tasks: &'a super::task::TaskRegistry,
    node: &str,
    upid: &str,
) -> Result<&'a Task, ApiError> {
    if Upid::decode(upid).is_none() {
        return Err(ApiError::param("upid", "unable to parse worker upid"));
    }
    tasks
        .get(upid)
        .filter(|t| t.upid.node == node)
        .ok_or_else(|| ApiError::param("upid", "no such task"))
}

/// `GET /nodes/{node}/tasks/{upid}/status`.
pub(crate) fn status(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let st = cx.state();
    let task = find(&st.tasks, node(p)?, p.req("upid")?)?;
    Ok(Reply::data(task.status_json()))
}

/// `GET /nodes/{node}/tasks/{upid}/log`.
pub(crate) fn log(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    if p.flag("download", false) {
        return download_log(cx, p);
    }
    let st = cx.state();
    let task = find(&st.tasks, node(p)?, p.req("upid")?)?;
    let start = usize::try_from(p.int("start").unwrap_or(0).max(0)).unwrap_or(0);
    let limit = usize::try_from(p.int("limit").unwrap_or(50).max(0)).unwrap_or(50);
    let lines = &task.log.lines;
    if lines.is_empty() {
        return Ok(Reply::with_total(json!([{ "n": 1, "t": "no content" }]), 1));
    }
    let take = if limit == 0 { usize::MAX } else { limit };
    let items: Vec<Value> = lines
        .iter()
        .enumerate()
        .skip(start)
        .take(take)
        .map(|(i, t)| json!({ "n": i + 1, "t": t }))
        .collect();
    Ok(Reply::with_total(Value::Array(items), lines.len() as u64))
}

/// `GET .../log?download=1`, as pve-manager's `read_task_log`: refused (a plain `die`, 500)
/// with `start` or `limit` even when they are 0; otherwise the node-local task file as it is
/// (every line ending in a newline, the status line last once the task ended), `text/plain`,
/// named `task-<node>-<type>-<start time>.log`. PVE gzips files over 1024 bytes
/// (`Content-Encoding: gzip`); the simulator always sends them uncompressed.
fn download_log(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let upid = p.req("upid")?;
    let Some(decoded) = Upid::decode(upid) else {
        return Err(ApiError::param("upid", "unable to parse worker upid"));
    };
    if p.has("start") || p.has("limit") {
        return Err(ApiError::internal(
            "'download' cannot be used together with 'start' or 'limit' parameters",
        ));
    }
    let st = cx.state();
    let node = node(p)?;
    let Some(task) = st.tasks.get(upid).filter(|t| t.upid.node == node) else {
        return Err(ApiError::internal(format!(
            "Could not open file '{}' - No such file or directory",
            task_file(upid)
        )));
    };
    let mut body = String::new();
    for line in &task.log.lines {
        body.push_str(line);
        body.push('\n');
    }
    // strftime('%FT%TZ', gmtime(starttime)).
    let started = format!("{}Z", log_stamp(decoded.starttime).replace(' ', "T"));
    Ok(Reply::download(Download {
        content_type: "text/plain".into(),
        content_disposition: Some(format!(
            "attachment; filename=\"task-{}-{}-{started}.log\"",
            decoded.node, decoded.kind
        )),
        body: body.into_bytes(),
    }))
}

/// `PVE::UPID::decode`'s file name: `/var/log/pve/tasks/<last digit of the start time>/<UPID>`.
fn task_file(upid: &str) -> String {
    // The start time is the fifth field and has exactly 8 hex digits (checked by decoding).
    let subdir = upid
        .split(':')
        .nth(4)
        .and_then(|t| t.chars().last())
        .unwrap_or('0');
    format!("/var/log/pve/tasks/{subdir}/{upid}")
}

/// `DELETE /nodes/{node}/tasks/{upid}`.
pub(crate) fn stop(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let upid = p.req("upid")?.to_string();
    let mut st = cx.state();
    find(&st.tasks, node(p)?, &upid)?;
    cx.interrupt(&mut st, &upid);
    Ok(Reply::null())
}

/// Newest first (start time, then pid).
fn newest_first<'a>(tasks: impl Iterator<Item = &'a Task>) -> Vec<&'a Task> {
    let mut v: Vec<&Task> = tasks.collect();
    v.sort_by_key(|t| std::cmp::Reverse((t.upid.starttime, t.upid.pid)));
    v
}

fn status_class(t: &Task) -> &'static str {
    match &t.end {
        None => "running",
        Some(e) if e.exitstatus == "OK" => "ok",
        Some(e) if e.exitstatus.starts_with("WARNINGS: ") => "warning",
        Some(_) => "error",
    }
}

/// `GET /nodes/{node}/tasks`.
pub(crate) fn node_tasks(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let st = cx.state();
    let source = p.get("source").unwrap_or("archive");
    let statusfilter: Vec<String> = p.get("statusfilter").map(split_list).unwrap_or_default();
    let errors = p.flag("errors", false);
    let typefilter = p.get("typefilter");
    let userfilter = p.get("userfilter").map(str::to_lowercase);
    let vmid = p.get("vmid");
    let since = p.int("since");
    let until = p.int("until");
    let filtered: Vec<&Task> = newest_first(st.tasks.iter().filter(|t| t.upid.node == node))
        .into_iter()
        .filter(|t| match source {
            "active" => t.end.is_none(),
            "all" => true,
            _ => t.end.is_some(),
        })
        .filter(|t| {
            userfilter
                .as_deref()
                .is_none_or(|u| t.upid.user.to_lowercase().contains(u))
        })
        .filter(|t| typefilter.is_none_or(|k| t.upid.kind == k))
        .filter(|t| vmid.is_none_or(|v| t.upid.id == v))
        .filter(|t| since.is_none_or(|s| t.upid.starttime >= s))
        .filter(|t| until.is_none_or(|u| t.upid.starttime <= u))
        .filter(|t| !errors || status_class(t) != "ok")
        .filter(|t| statusfilter.is_empty() || statusfilter.iter().any(|f| f == status_class(t)))
        .collect();
    let start = usize::try_from(p.int("start").unwrap_or(0).max(0)).unwrap_or(0);
    let limit = usize::try_from(p.int("limit").unwrap_or(50).max(0)).unwrap_or(50);
    let items: Vec<Value> = filtered
        .iter()
        .skip(start)
        .take(limit)
        .map(|t| t.list_json(true))
        .collect();
    Ok(Reply::with_total(
        Value::Array(items),
        filtered.len() as u64,
    ))
}

/// `GET /cluster/tasks`.
pub(crate) fn cluster_tasks(cx: &Arc<Inner>) -> Reply {
    let st = cx.state();
    let items: Vec<Value> = newest_first(st.tasks.iter())
        .into_iter()
        .map(|t| t.list_json(false))
        .collect();
    Reply::data(Value::Array(items))
}
