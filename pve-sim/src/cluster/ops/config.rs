//! `PUT /nodes/{node}/qemu/{vmid}/config` (synchronous) and `POST` (task `qmconfig`, with
//! `background_delay`): parameter verification before the fork, early config checks, then the
//! update of `config/update.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::cluster::config::disks::{add_random_macs, precheck};
use crate::cluster::config::keys::option_exists;
use crate::cluster::config::update::{UpdateReq, early_checks, run_update};
use crate::cluster::ids::random_uuid;
use crate::cluster::inner::Inner;
use crate::cluster::request::{node, root_only, upid_reply, vmid};
use crate::cluster::state::State;
use crate::cluster::tasks::job::{Job, JobCx, TaskOwner};
use crate::cluster::tasks::task::TaskLog;
use crate::{ApiError, Caller, Params, Reply};

/// Parameters that steer the update rather than being config keys.
const CONTROL: &[&str] = &[
    "node",
    "vmid",
    "digest",
    "background_delay",
    "skip_cloud_init",
    "import-working-storage",
    "skiplock",
    "delete",
    "revert",
    "force",
];

/// `PVE::Tools::split_list`.
pub(crate) fn split_list(s: &str) -> Vec<String> {
    s.split([';', ',', ' ', '\t', '\n', '\0'])
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// A `die` inside a worker prints the exception: parameter errors list their reasons.
pub(super) fn task_text(e: &ApiError) -> String {
    let mut msg = e.message.clone();
    for (k, v) in &e.errors {
        msg.push_str(&format!("\n{k}: {v}"));
    }
    msg
}

/// Everything `update_vm_api` verifies before forking.
fn parse_request(st: &mut State, p: &Params, caller: &Caller) -> Result<UpdateReq, ApiError> {
    root_only(p, caller, &["skiplock"])?;
    let log_args: Vec<String> =
        p.0.iter()
            .filter(|(k, _)| {
                ![
                    "node",
                    "vmid",
                    "digest",
                    "background_delay",
                    "skip_cloud_init",
                    "import-working-storage",
                ]
                .contains(&k.as_str())
            })
            .map(|(k, v)| {
                format!(
                    "-{k} {}",
                    if k == "cipassword" {
                        "<hidden>"
                    } else {
                        v.as_str()
                    }
                )
            })
            .collect();
    let mut set: BTreeMap<String, String> =
        p.0.iter()
            .filter(|(k, _)| !CONTROL.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    let delete_str = p.get("delete").unwrap_or("");
    let revert_str = p.get("revert").unwrap_or("");
    if delete_str.is_empty() && revert_str.is_empty() && set.is_empty() {
        return Err(ApiError::internal("no options specified"));
    }
    if let Some(mut cd) = set.remove("cdrom") {
        if !cd.contains("media=") {
            cd.push_str(",media=cdrom");
        }
        set.insert("ide2".into(), cd);
    }
    let mut revert = Vec::new();
    for opt in split_list(revert_str) {
        if !option_exists(&opt) {
            return Err(ApiError::param("revert", format!("unknown option '{opt}'")));
        }
        if set.contains_key(&opt) {
            return Err(ApiError::param(
                "delete",
                format!("you can't use '-{opt}' and -revert {opt}' at the same time"),
            ));
        }
        revert.push(opt);
    }
    let mut delete = Vec::new();
    for opt in split_list(delete_str) {
        let opt = if opt == "cdrom" {
            "ide2".to_string()
        } else {
            opt
        };
        if set.contains_key(&opt) {
            return Err(ApiError::param(
                "delete",
                format!("you can't use '-{opt}' and -delete {opt}' at the same time"),
            ));
        }
        if revert.contains(&opt) {
            return Err(ApiError::param(
                "revert",
                format!("you can't use '-delete {opt}' and -revert {opt}' at the same time"),
            ));
        }
        if !option_exists(&opt) {
            return Err(ApiError::param("delete", format!("unknown option '{opt}'")));
        }
        delete.push(opt);
    }
    precheck(st, &mut set, None)?;
    add_random_macs(st, &mut set)?;
    if set.get("vmgenid").is_some_and(|v| v == "1") {
        set.insert("vmgenid".into(), random_uuid(&mut st.rng));
    }
    Ok(UpdateReq {
        set,
        delete,
        revert,
        force: p.flag("force", false),
        digest: p.get("digest").map(str::to_string),
        skiplock: p.flag("skiplock", false),
        log_args: log_args.join(" "),
    })
}

/// `PUT .../config`: the update happens before the answer.
pub(crate) fn put(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let vmid = vmid(p)?;
    let mut st = cx.state();
    let req = parse_request(&mut st, p, caller)?;
    early_checks(&st, node, vmid, &req)?;
    run_update(&mut st, node, vmid, &req, &mut TaskLog::default())?;
    Ok(Reply::null())
}

/// `POST .../config`: a `qmconfig` task; with `background_delay`, wait for it.
pub(crate) async fn post(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let vmid = vmid(p)?;
    let upid = {
        let mut st = cx.state();
        let req = parse_request(&mut st, p, caller)?;
        early_checks(&st, node, vmid, &req)?;
        let owner = TaskOwner {
            node: node.to_string(),
            kind: "qmconfig",
            vmid,
            user: caller.upid_user(),
        };
        cx.start_task(
            &mut st,
            owner,
            Box::new(ConfigJob {
                node: node.to_string(),
                vmid,
                req,
            }),
        )
    };
    if let Some(delay) = p.int("background_delay").filter(|d| *d > 0) {
        let wait = Duration::from_secs_f64(delay as f64 * cx.time_scale);
        if let Some(end) = cx.wait_task(&upid, wait).await {
            let ok = end.exitstatus == "OK" || end.exitstatus.starts_with("WARNINGS: ");
            if ok {
                return Ok(Reply::null());
            }
            return Err(ApiError::internal(format!(
                "failed to update VM {vmid}: {}",
                end.exitstatus
            )));
        }
    }
    Ok(upid_reply(upid))
}

struct ConfigJob {
    node: String,
    vmid: u32,
    req: UpdateReq,
}

impl Job for ConfigJob {
    fn begin(&mut self, _cx: &mut JobCx<'_>) -> Result<f64, String> {
        Ok(0.3)
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        run_update(cx.st, &self.node, self.vmid, &self.req, cx.log).map_err(|e| task_text(&e))
    }
}
