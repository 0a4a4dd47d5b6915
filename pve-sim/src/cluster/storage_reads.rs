//! Storage reads of a node: the storage list (filters `content`, `enabled`, `storage`,
//! `target`, `format`), one storage's status, and its content (volumes with `volid`, `format`,
//! `size`, `content`, `vmid`, `ctime`, `parent` of linked clones).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::inner::Inner;
use super::ops::config::split_list;
use super::request::node;
use super::state::State;
use super::volumes::Storage;
use crate::{ApiError, Params, Reply};

fn storage_status(st: &State, s: &Storage, node: &str, with_formats: bool) -> Map<String, Value> {
    let used = st.storages.used(&s.id, node).min(s.total);
    let mut o = Map::new();
    o.insert("storage".into(), Value::from(s.id.as_str()));
    o.insert("type".into(), Value::from(s.kind.as_str()));
    o.insert("content".into(), Value::from(s.content_string()));
    o.insert("active".into(), Value::from(1));
    o.insert("enabled".into(), Value::from(1));
    o.insert("shared".into(), Value::from(u8::from(s.shared)));
    o.insert("total".into(), Value::from(s.total));
    o.insert("used".into(), Value::from(used));
    o.insert("avail".into(), Value::from(s.total - used));
    let fraction = if s.total == 0 {
        0.0
    } else {
        used as f64 / s.total as f64
    };
    o.insert("used_fraction".into(), Value::from(fraction));
    if with_formats {
        o.insert(
            "formats".into(),
            json!({ "default": s.formats()[0], "supported": s.formats() }),
        );
        o.insert(
            "select_existing".into(),
            Value::from(u8::from(!s.path_based())),
        );
    }
    o
}

/// `GET /nodes/{node}/storage`.
pub(super) fn list(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let st = cx.state();
    let content: Vec<String> = p.get("content").map(split_list).unwrap_or_default();
    let only = p.get("storage");
    let target = p.get("target").filter(|t| *t != node && *t != "localhost");
    let items: Vec<Value> = st
        .storages
        .all()
        .iter()
        .filter(|s| s.on_node(node))
        .filter(|s| only.is_none_or(|o| o == s.id))
        .filter(|s| content.is_empty() || content.iter().any(|c| s.content.contains(c)))
        .filter(|s| target.is_none_or(|t| s.on_node(t)))
        .map(|s| Value::Object(storage_status(&st, s, node, p.flag("format", false))))
        .collect();
    Ok(Reply::data(Value::Array(items)))
}

/// `GET /nodes/{node}/storage/{storage}/status`.
pub(super) fn status(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let id = p.req("storage")?;
    let st = cx.state();
    let s = st
        .storages
        .def(id)
        .filter(|s| s.on_node(node))
        .ok_or_else(|| ApiError::param("storage", "No such storage."))?;
    Ok(Reply::data(Value::Object(storage_status(
        &st, s, node, false,
    ))))
}

/// `GET /nodes/{node}/storage/{storage}/content`.
pub(super) fn content(cx: &Arc<Inner>, p: &Params) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let id = p.req("storage")?;
    let st = cx.state();
    let s = st
        .storages
        .check_enabled(id, node)
        .map_err(ApiError::internal)?;
    let want = p.get("content");
    let vmid: Option<u32> = p.get("vmid").and_then(|v| v.parse().ok());
    let mut items: Vec<Value> = st
        .storages
        .list(id, node)
        .into_iter()
        .filter(|v| want.is_none_or(|c| c == v.content))
        .filter(|v| vmid.is_none_or(|id| v.vmid == Some(id)))
        .map(|v| {
            let mut o = Map::new();
            o.insert("volid".into(), Value::from(format!("{id}:{}", v.name)));
            o.insert("format".into(), Value::from(v.format.as_str()));
            o.insert("size".into(), Value::from(v.size));
            o.insert("content".into(), Value::from(v.content.as_str()));
            o.insert("ctime".into(), Value::from(v.ctime));
            if let Some(vmid) = v.vmid {
                o.insert("vmid".into(), Value::from(vmid));
            }
            if v.content == "images" {
                o.insert("used".into(), Value::from(v.size / 4));
            }
            if let Some(parent) = &v.parent {
                let shown = if s.path_based() {
                    format!("../{parent}")
                } else {
                    format!("{parent}@__base__")
                };
                o.insert("parent".into(), Value::from(shown));
            }
            Value::Object(o)
        })
        .collect();
    items.sort_by(|a, b| a["volid"].as_str().cmp(&b["volid"].as_str()));
    Ok(Reply::data(Value::Array(items)))
}
