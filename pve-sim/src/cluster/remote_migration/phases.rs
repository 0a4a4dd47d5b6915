//! The phases of a remote migration (`worker.rs` runs them in order and
//! handles their failures), as `PVE::QemuMigrate` has them for a remote target: `prepare`
//! opens the tunnel, `phase1` locks the source VM, scans and copies its volumes and sends the
//! config, `phase2` starts the VM on the target and migrates disks and RAM while it runs,
//! `phase3` (`phase3_cleanup`) switches over: resume on the target, stop (and with `delete`
//! destroy) the source, unlock on the target, quit the tunnel.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::volumes::{LocalVolume, scan, targets};
use super::worker::{Cancelled, Conversation, OpenTunnel, Step};
use crate::cluster::drive::{Drive, Net, net_index};
use crate::cluster::mtunnel::commands::TUNNEL_VERSION;
use crate::cluster::ops::destroy::volumes;
use crate::cluster::power::mark_stopped;
use crate::cluster::state::State;
use crate::cluster::vm::{check_lock, conf_missing};

/// Simulated seconds (before scaling) to copy or mirror one volume.
const COPY_SECS: f64 = 2.0;
/// Simulated seconds (before scaling) of the live migration of the RAM.
const LIVE_SECS: f64 = 4.0;

impl Conversation {
    /// `prepare`: open the tunnel and agree on its version.
    pub(super) async fn prepare(&mut self) -> Step<Result<(), String>> {
        let plan = self.plan.clone();
        let found = self.with_source(|st| {
            let vm = st
                .vm_on(&plan.node, plan.vmid)
                .ok_or_else(|| conf_missing(&plan.node, plan.vmid))?;
            check_lock(&vm.conf)?;
            let running = vm.run.running;
            let (storages, bridges) =
                targets(st, &plan.node, plan.vmid, &plan.storages, &plan.bridges);
            Ok::<_, String>((storages, bridges, running))
        });
        let (storages, bridges, running) = match found {
            Some(Ok(t)) => t,
            Some(Err(e)) => return Ok(Err(e)),
            None => return Err(Cancelled),
        };
        if running {
            self.info(
                "conntrack state migration not supported or disabled, active connections might get dropped",
            );
        }
        let join =
            |set: std::collections::BTreeSet<String>| set.into_iter().collect::<Vec<_>>().join(",");
        let path = format!(
            "/nodes/{}/qemu/{}/mtunnel",
            plan.target_node, plan.target_vmid
        );
        let form = [("storages", join(storages)), ("bridges", join(bridges))];
        let opened = match self.step(self.client.post(&path, &form)).await? {
            Ok(v) => v,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let field = |k: &str| opened.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(ticket), Some(socket), Some(upid)) =
            (field("ticket"), field("socket"), field("upid"))
        else {
            return Ok(Err(format!("unexpected answer of mtunnel: {opened}")));
        };
        self.info(format!("remote: started tunnel worker '{upid}'"));
        self.tunnel = Some(OpenTunnel { ticket, socket });
        let reply = match self.command("version", Map::new()).await? {
            Ok(r) => r,
            Err(e) => return Ok(Err(format!("can't open tunnel - {e}"))),
        };
        let Some(version) = reply.get("api").and_then(Value::as_u64) else {
            return Ok(Err(format!(
                "can't open tunnel - received invalid tunnel version string '{}'",
                reply.get("api").unwrap_or(&Value::Null)
            )));
        };
        let age = reply.get("age").and_then(Value::as_u64).unwrap_or(0);
        let min = version.saturating_sub(age);
        self.info(format!("local WS tunnel version: {TUNNEL_VERSION}"));
        self.info(format!("remote WS tunnel version: {version}"));
        self.info(format!("minimum required WS tunnel version: {min}"));
        if TUNNEL_VERSION < min {
            return Ok(Err(
                "Remote tunnel endpoint not compatible, upgrade required".into(),
            ));
        }
        if TUNNEL_VERSION > version {
            return Ok(Err(
                "Remote tunnel endpoint too old, upgrade required".into()
            ));
        }
        self.print("websocket tunnel started");
        Ok(Ok(()))
    }

    /// `phase1` with `phase1_remote`: lock, scan, copy, allocate, send the config.
    pub(super) async fn phase1(&mut self) -> Step<Result<Phase1, String>> {
        let plan = self.plan.clone();
        self.info(format!(
            "starting migration of VM {} to node '{}' ({})",
            plan.vmid, plan.target_node, plan.host
        ));
        let progress = Arc::clone(&self.progress);
        let scanned = self.with_source(|st| {
            let vm = st
                .vm_on_mut(&plan.node, plan.vmid)
                .ok_or_else(|| (Vec::new(), conf_missing(&plan.node, plan.vmid)))?;
            check_lock(&vm.conf).map_err(|e| (Vec::new(), e))?;
            vm.conf.set("lock", "migrate");
            let running = vm.run.running;
            let was_paused = vm.run.paused;
            let uptime = vm.run.guest_booted.map(|b| b.elapsed().as_secs_f64());
            progress.lock().unwrap_or_else(|e| e.into_inner()).locked = true;
            let found = scan(st, &plan.node, plan.vmid, running, &plan.storages)?;
            Ok((found, running, was_paused, uptime))
        });
        let (found, running, was_paused, uptime) = match scanned {
            Some(Ok(s)) => s,
            Some(Err((lines, e))) => {
                for line in lines {
                    self.info(line);
                }
                return Ok(Err(e));
            }
            None => return Err(Cancelled),
        };
        for line in &found.log {
            self.info(line);
        }
        let mut moved: BTreeMap<String, String> = BTreeMap::new();
        let offline: Vec<&LocalVolume> = found.volumes.iter().filter(|v| !v.online).collect();
        if !offline.is_empty() {
            self.info("copying local disk images");
        }
        for v in offline {
            let reply = match self.command("disk", disk_params(v)).await? {
                Ok(r) => r,
                Err(e) => return Ok(Err(e)),
            };
            self.work(COPY_SECS).await?;
            let new = reply["volid"].as_str().unwrap_or_default().to_string();
            self.info(format!("volume '{}' is '{new}' on the target", v.volid));
            moved.insert(v.key.clone(), new);
        }
        let Some(Some(mut conf)) =
            self.with_source(|st| st.vm_on(&plan.node, plan.vmid).map(|vm| vm.conf.clone()))
        else {
            return Ok(Err(conf_missing(&plan.node, plan.vmid)));
        };
        for (key, new) in &moved {
            match conf.get(key).and_then(Drive::parse) {
                Some(mut d) => {
                    d.file = new.clone();
                    conf.set(key, d.print());
                }
                None => conf.set(key, new.as_str()),
            }
        }
        let nics: Vec<(String, String)> = conf
            .main
            .iter()
            .filter(|(k, _)| net_index(k).is_some())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (nic, value) in nics {
            let Some(mut net) = Net::parse(&value) else {
                continue;
            };
            let Some(bridge) = net.bridge().map(str::to_string) else {
                continue;
            };
            let target = plan.bridges.map(&bridge).to_string();
            self.info(format!("mapped: {nic} from {bridge} to {target}"));
            net.opts.insert("bridge".into(), target);
            conf.set(&nic, net.print());
        }
        let mut nbd = Map::new();
        let mut mirrored = Vec::new();
        for v in found.volumes.iter().filter(|v| v.online && !v.cdrom) {
            self.info(format!(
                "Allocating volume for drive '{}' on remote storage '{}'..",
                v.key, v.target_storage
            ));
            let reply = match self.command("disk", disk_params(v)).await? {
                Ok(r) => r,
                Err(e) => return Ok(Err(e)),
            };
            let volid = reply["volid"].as_str().unwrap_or_default().to_string();
            let drivestr = reply["drivestr"].as_str().unwrap_or_default().to_string();
            self.info(format!("volume '{}' is '{volid}' on the target", v.volid));
            conf.set(&v.key, drivestr.as_str());
            nbd.insert(
                v.key.clone(),
                json!({ "volid": volid, "drivestr": drivestr }),
            );
            mirrored.push((v.key.clone(), v.size));
        }
        let mut params = Map::new();
        params.insert("conf".into(), json!(conf.render()));
        if let Err(e) = self.command("config", params).await? {
            return Ok(Err(e));
        }
        if !running && let Some(msg) = self.injected_fault() {
            return Ok(Err(msg));
        }
        Ok(Ok(Phase1 {
            running,
            was_paused,
            uptime,
            nbd,
            mirrored,
        }))
    }

    /// The injected `qmigrate` fault for this VM, consumed.
    fn injected_fault(&self) -> Option<String> {
        let inner = self.inner.upgrade()?;
        inner
            .faults
            .take_task_failure(Some(self.plan.vmid), "qmigrate")
    }

    /// `phase2`: start on the target, mirror the disks, migrate the RAM.
    pub(super) async fn phase2(&mut self, p1: &Phase1) -> Step<Result<(), String>> {
        let (vmid, target_vmid) = (self.plan.vmid, self.plan.target_vmid);
        let mut params = Map::new();
        params.insert(
            "start_params".into(),
            json!({ "statefile": "unix", "skiplock": 1 }),
        );
        params.insert(
            "migrate_opts".into(),
            json!({
                "type": "websocket",
                "migratedfrom": self.plan.node,
                "remote_node": self.plan.target_node,
                "nbd_proto_version": 1,
                "nbd": Value::Object(p1.nbd.clone()),
            }),
        );
        if let Some(up) = p1.uptime {
            params.insert("sim-guest-uptime".into(), json!(up));
        }
        let reply = match self.command("start", params).await? {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        self.target_started = true;
        let migrate = &reply["migrate"];
        if migrate["proto"] != "unix" {
            return Ok(Err(
                "only UNIX sockets are supported for remote migration".into()
            ));
        }
        let addr = migrate["addr"].as_str().unwrap_or_default();
        let valid = addr
            .strip_prefix("/run/qemu-server/")
            .and_then(|a| a.strip_suffix(".migrate"))
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()));
        if !valid {
            return Ok(Err(format!("unexpected socket address '{addr}'")));
        }
        let local_socket = addr.replace(&target_vmid.to_string(), &vmid.to_string());
        self.info(format!("Setting up tunnel for '{local_socket}'"));
        let mut uris = Vec::new();
        for (ds, size) in &p1.mirrored {
            let uri = reply["drives"][ds]["nbd_uri"].as_str().unwrap_or_default();
            let from = format!("/run/qemu-server/{target_vmid}_");
            if !uri.contains(&from) {
                return Ok(Err(format!("unexpected NBD uri for '{ds}': {uri}")));
            }
            uris.push((
                ds.clone(),
                *size,
                uri.replace(&from, &format!("/run/qemu-server/{vmid}_")),
            ));
        }
        if !uris.is_empty() {
            self.info("starting storage migration");
            for (ds, size, uri) in &uris {
                self.info(format!("{ds}: start migration to {uri}"));
                self.info(format!("drive mirror is starting for drive-{ds}"));
                self.work(COPY_SECS).await?;
                let total = render_bytes(*size);
                self.info(format!(
                    "drive-{ds}: transferred {total} of {total} (100.00%) in 1s, ready"
                ));
            }
            self.info("all 'mirror' jobs are ready");
        }
        if let Some(msg) = self.injected_fault() {
            return Ok(Err(msg));
        }
        if !uris.is_empty() {
            self.info("switching mirror jobs to actively synced mode");
        }
        self.info(format!(
            "starting online/live migration on unix:{local_socket}"
        ));
        self.info("set migration capabilities");
        self.info("migration downtime limit: 100 ms");
        self.info("set migration parameters");
        self.info(format!("start migrate command to unix:{local_socket}"));
        self.work(LIVE_SECS).await?;
        self.info("migration status: completed");
        if !uris.is_empty() {
            self.info("all 'mirror' jobs are ready");
            for (ds, _, _) in &uris {
                self.info(format!("drive-{ds}: Completing block job..."));
                self.info(format!("drive-{ds}: Completed successfully."));
                self.info(format!("drive-{ds}: mirror-job finished"));
            }
        }
        Ok(Ok(()))
    }

    /// `phase3_cleanup`: the switchover. `true` = there were errors.
    pub(super) async fn phase3(&mut self, p1: &Phase1) -> Step<bool> {
        let mut errors = false;
        if p1.running {
            if !p1.mirrored.is_empty() {
                self.info("stopping NBD storage migration server on target.");
                if let Err(e) = self.command("nbdstop", Map::new()).await? {
                    self.error(e);
                    errors = true;
                }
            }
            if !p1.was_paused
                && let Err(e) = self.command("resume", Map::new()).await?
            {
                self.error(e);
                errors = true;
            }
        }
        let (node, vmid) = (self.plan.node.clone(), self.plan.vmid);
        self.with_source(|st| mark_stopped(st, vmid));
        if let Err(e) = self.command("unlock", Map::new()).await? {
            self.error(e);
            return Ok(true);
        }
        if let Err(e) = self.finish_tunnel(false).await? {
            self.error(e);
            return Ok(true);
        }
        if self.plan.delete {
            let destroyed = self.with_source(|st| destroy_source(st, &node, vmid));
            if let Some(Err(e)) = destroyed {
                self.print(format!("Failed to remove source VM - {e}"));
            }
            self.progress().locked = false;
        }
        Ok(errors)
    }
}

/// What phase 1 learned for the phases after it.
pub(super) struct Phase1 {
    /// The VM ran when phase 1 locked it (phase 2 migrates it live).
    pub(super) running: bool,
    was_paused: bool,
    /// Seconds the guest has been up (carried to the target).
    uptime: Option<f64>,
    /// `$self->{nbd}`: drive → `{volid, drivestr}` on the target.
    nbd: Map<String, Value>,
    /// The mirrored drives and their sizes.
    mirrored: Vec<(String, u64)>,
}

/// The `disk` command for a volume: its storage on the target, format and drive (options
/// without the volume, size in bytes).
fn disk_params(v: &LocalVolume) -> Map<String, Value> {
    let mut drive: Map<String, Value> = v
        .drive
        .iter()
        .filter(|(k, _)| !["size", "format", "file", "volume"].contains(&k.as_str()))
        .map(|(k, val)| (k.clone(), json!(val)))
        .collect();
    let split = v.key.find(|c: char| c.is_ascii_digit());
    if let Some(i) = split.filter(|_| !v.key.starts_with("unused")) {
        drive.insert("interface".into(), json!(&v.key[..i]));
        if let Ok(index) = v.key[i..].parse::<u32>() {
            drive.insert("index".into(), json!(index));
        }
    }
    drive.insert("size".into(), json!(v.size));
    let mut params = Map::new();
    params.insert("storage".into(), json!(v.target_storage));
    params.insert("format".into(), json!(v.format));
    params.insert("drive".into(), Value::Object(drive));
    params
}

/// `render_bytes` with one decimal (`8.0 GiB`).
fn render_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", units[unit])
}

/// `destroy_vm` of the source after a successful migration with `delete`: its volumes and
/// its config.
fn destroy_source(st: &mut State, node: &str, vmid: u32) -> Result<(), String> {
    let vm = st
        .vm_on(node, vmid)
        .ok_or_else(|| conf_missing(node, vmid))?;
    let mut vols: Vec<String> = volumes(&vm.conf.main);
    for snap in vm.conf.snapshots.values() {
        vols.extend(volumes(snap));
    }
    for volid in vols {
        if st
            .storages
            .find(&volid, node)
            .is_some_and(|v| v.vmid == Some(vmid))
        {
            st.storages.free(&volid, node)?;
        }
    }
    mark_stopped(st, vmid);
    st.vms.remove(&vmid);
    Ok(())
}
