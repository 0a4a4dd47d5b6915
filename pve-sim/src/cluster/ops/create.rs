//! `POST /nodes/{node}/qemu` (`create_vm`): vmid uniqueness and drive checks before the fork,
//! `lock: create` written before the UPID is returned, disks allocated by the `qmcreate`
//! worker, and the automatic keys PVE adds (`meta`, `smbios1`, `vmgenid`, `boot`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::start_job::StartJob;
use crate::cluster::bootstrap::QEMU_VERSION;
use crate::cluster::clock::now_unix;
use crate::cluster::config::disks::{add_random_macs, create_disk, precheck};
use crate::cluster::config::text::VmConfig;
use crate::cluster::config::update::unique_tags;
use crate::cluster::drive::is_drive_key;
use crate::cluster::ids::{hash_password, random_uuid};
use crate::cluster::inner::Inner;
use crate::cluster::request::{check_quorum, node, upid_reply, vmid};
use crate::cluster::tasks::job::{Job, JobCx, TaskOwner};
use crate::cluster::vm::{conf_missing, default_boot_order};
use crate::{ApiError, Caller, Params, Reply};

/// Parameters of create that are not config keys.
const CONTROL: &[&str] = &[
    "node",
    "vmid",
    "archive",
    "bwlimit",
    "force",
    "pool",
    "start",
    "ha-managed",
    "storage",
    "unique",
    "live-restore",
    "import-working-storage",
];

/// `POST /nodes/{node}/qemu`.
pub(crate) fn create(cx: &Arc<Inner>, p: &Params, caller: &Caller) -> Result<Reply, ApiError> {
    let node = node(p)?;
    let vmid = vmid(p)?;
    let mut st = cx.state();
    if st.node(node).is_none() {
        return Err(ApiError::internal(format!("no such cluster node '{node}'")));
    }
    check_quorum(&st, &cx.faults)?;
    if let Some(pool) = p.get("pool") {
        return Err(ApiError::param(
            "pool",
            format!("pool '{pool}' does not exist"),
        ));
    }
    if p.has("archive") {
        return Err(ApiError::internal(format!(
            "unable to restore VM {vmid} - restoring backup archives is not simulated"
        )));
    }
    let storage = p.get("storage").map(str::to_string);
    let mut params: BTreeMap<String, String> =
        p.0.iter()
            .filter(|(k, _)| !CONTROL.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    if !params.is_empty() {
        if let Some(mut cd) = params.remove("cdrom") {
            if !cd.contains("media=") {
                cd.push_str(",media=cdrom");
            }
            params.insert("ide2".into(), cd);
        }
        precheck(&st, &mut params, storage.as_deref())?;
        add_random_macs(&mut st, &mut params)?;
    }
    if let Some(existing) = st.vms.get(&vmid) {
        return Err(ApiError::internal(format!(
            "unable to create VM {vmid} - VM {vmid} already exists on node '{}'",
            existing.node
        )));
    }
    st.create_locked_config(node, vmid);
    let job = CreateJob {
        node: node.to_string(),
        vmid,
        params,
        storage,
        start: p.flag("start", false),
        ha: p.flag("ha-managed", false),
        user: caller.upid_user(),
    };
    let owner = TaskOwner {
        node: node.to_string(),
        kind: "qmcreate",
        vmid,
        user: caller.upid_user(),
    };
    Ok(upid_reply(cx.start_task(&mut st, owner, Box::new(job))))
}

struct CreateJob {
    node: String,
    vmid: u32,
    params: BTreeMap<String, String>,
    storage: Option<String>,
    start: bool,
    ha: bool,
    user: String,
}

impl CreateJob {
    fn remove_config(&self, cx: &mut JobCx<'_>) {
        if cx
            .st
            .vms
            .get(&self.vmid)
            .is_some_and(|vm| vm.node == self.node && vm.conf.lock() == Some("create"))
        {
            cx.st.vms.remove(&self.vmid);
        }
    }
}

impl Job for CreateJob {
    fn begin(&mut self, _cx: &mut JobCx<'_>) -> Result<f64, String> {
        Ok(2.0)
    }

    fn finish(&mut self, cx: &mut JobCx<'_>) -> Result<(), String> {
        let (node, vmid) = (self.node.clone(), self.vmid);
        let emsg = format!("unable to create VM {vmid} -");
        let mut conf = VmConfig::default();
        for (k, v) in &self.params {
            if !is_drive_key(k) {
                conf.set(k, v.as_str());
            }
        }
        let now = now_unix();
        conf.set("meta", format!("creation-qemu={QEMU_VERSION},ctime={now}"));
        let mut created = Vec::new();
        for (k, v) in &self.params {
            if !is_drive_key(k) {
                continue;
            }
            match create_disk(
                cx.st,
                &node,
                vmid,
                &conf,
                k,
                v,
                self.storage.as_deref(),
                &mut created,
                cx.log,
            ) {
                Ok(value) => conf.set(k, value),
                Err(e) => {
                    for volid in &created {
                        let _ = cx.st.storages.free(volid, &node);
                    }
                    return Err(format!("{emsg} {e}"));
                }
            }
        }
        if conf.get("boot").is_none() {
            let order = default_boot_order(&conf);
            conf.set("boot", order);
        }
        if conf.get("smbios1").is_none() {
            conf.set("smbios1", format!("uuid={}", random_uuid(&mut cx.st.rng)));
        }
        if conf.get("vmgenid").is_none_or(|v| v == "1") {
            conf.set("vmgenid", random_uuid(&mut cx.st.rng));
        }
        if let Some(tags) = conf.get("tags").map(unique_tags) {
            conf.set("tags", tags);
        }
        if let Some(pw) = conf.get("cipassword").map(str::to_string) {
            let hashed = hash_password(&mut cx.st.rng, &pw);
            conf.set("cipassword", hashed);
        }
        match cx.st.vms.get_mut(&vmid) {
            Some(vm) if vm.node == node => vm.conf = conf,
            _ => {
                return Err(format!("{emsg} {}", conf_missing(&node, vmid)));
            }
        }
        if self.ha {
            // HA is not part of the model: say so instead of pretending.
            cx.log.warn(format!(
                "HA is not simulated - vm:{vmid} was not added as HA resource"
            ));
        }
        if self.start {
            cx.log.line("Execute autostart");
            let owner = TaskOwner {
                node: node.clone(),
                kind: "qmstart",
                vmid,
                user: self.user.clone(),
            };
            cx.followups.push((
                owner,
                Box::new(StartJob {
                    node,
                    vmid,
                    skiplock: false,
                }),
            ));
        }
        Ok(())
    }

    fn abort(&mut self, cx: &mut JobCx<'_>) {
        self.remove_config(cx);
    }
}
