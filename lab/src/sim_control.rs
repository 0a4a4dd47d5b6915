//! A client of one `pve-sim serve` process for the things a test does behind the fleet's back:
//! power a host off, on or through a reset, leave or clear a config lock, move a dead node's
//! config, make tasks fail, put guests under PVE's own HA manager, and read the cluster's VMs
//! as PVE lists them (`GET /cluster/resources?type=vm`).
//!
//! ```text
//!  SimControl ──HTTPS, PVEAPIToken──▶ node listener 1 ─┐
//!             (on no answer: next) ─▶ node listener 2 ─┼─▶ one simulated cluster
//!                                     ...              ┘
//! ```
//!
//! A powered-off node's listener accepts connections and never answers, so every attempt has
//! its own deadline and the next listener is tried after it; the listener that answered last
//! is tried first next time, and a power action is sent through another node than its target
//! when there is one. An answer that is an error (4xx, 5xx) is final: another node would give
//! the same.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pve_sim::faults::{FaultSettings, TaskFault};
use reqwest::Method;
use serde_json::{Value, json};

use crate::error::LabError;

/// How long one listener may take to answer before the next is tried (a powered-off node's
/// listener never answers; a live one answers a control call at once).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);

/// A guest as `GET /cluster/resources?type=vm` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimVm {
    /// Its VMID.
    pub vmid: u32,
    /// Its name; `None` while its node is down (PVE has no fresh status to name it from).
    pub name: Option<String>,
    /// The node whose directory holds its config.
    pub node: String,
    /// `running`, `stopped`, or `unknown` while its node is down.
    pub status: String,
    /// Whether it runs (`status == "running"`).
    pub running: bool,
    /// The `lock:` of its config (`backup`, `migrate`, ...).
    pub lock: Option<String>,
    /// Whether it is a template.
    pub template: bool,
}

/// A client of one simulator process, over every node listener it has.
#[derive(Debug, Clone)]
pub struct SimControl {
    client: reqwest::Client,
    /// `(node, https://127.0.0.1:PORT)`, in the order given.
    listeners: Vec<(String, String)>,
    /// `root@pam!fleet=SECRET`.
    token: String,
    /// The index of the listener that answered last.
    preferred: Arc<AtomicUsize>,
    /// How long one listener may take to answer.
    attempt_timeout: Duration,
}

impl SimControl {
    /// A client of the simulator serving `listeners` (`(node, url)`), trusting the certificate
    /// in `cert` and authenticating with the first line of `token_file`.
    ///
    /// # Errors
    /// [`LabError::SimControl`] if a file cannot be read or the client cannot be made.
    pub fn new(
        listeners: &[(String, String)],
        cert: &Path,
        token_file: &Path,
    ) -> Result<SimControl, LabError> {
        let fail = |reason: String| LabError::SimControl {
            call: "client".into(),
            reason,
        };
        let read = |path: &Path| {
            std::fs::read(path).map_err(|e| fail(format!("cannot read {}: {e}", path.display())))
        };
        let token = String::from_utf8_lossy(&read(token_file)?)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        if token.is_empty() {
            return Err(fail(format!("{} holds no token", token_file.display())));
        }
        let certs = reqwest::Certificate::from_pem_bundle(&read(cert)?)
            .map_err(|e| fail(format!("{}: {e}", cert.display())))?;
        // pve-sim's and the agents' binaries install ring themselves; a test may not have.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .tls_certs_only(certs)
            .no_proxy()
            .build()
            .map_err(|e| fail(e.to_string()))?;
        if listeners.is_empty() {
            return Err(fail("no listener to call".into()));
        }
        Ok(SimControl {
            client,
            listeners: listeners.to_vec(),
            token,
            preferred: Arc::new(AtomicUsize::new(0)),
            attempt_timeout: ATTEMPT_TIMEOUT,
        })
    }

    /// The same client giving each listener `timeout` to answer (3 s by default) before the
    /// next is tried: longer when the simulator's `latency_ms` fault slows its API down.
    pub fn with_attempt_timeout(mut self, timeout: Duration) -> SimControl {
        self.attempt_timeout = timeout;
        self
    }

    /// The nodes whose listeners it calls, in the order given.
    pub fn nodes(&self) -> impl Iterator<Item = &str> {
        self.listeners.iter().map(|(node, _)| node.as_str())
    }

    /// Powers node `node` `off`, `on` or through a `reset` (`POST /_sim/nodes/{node}/power`);
    /// the VMIDs of the guests that were running on it and stopped.
    ///
    /// # Errors
    /// [`LabError::SimControl`] with the simulator's text (an unknown node or action), or
    /// when no listener answered.
    pub async fn power_node(&self, node: &str, action: &str) -> Result<Vec<u32>, LabError> {
        let path = format!("/_sim/nodes/{node}/power");
        let body = json!({ "action": action });
        let data = self
            .call(Method::POST, &path, Some(&body), Some(node))
            .await?;
        let stopped = data["stopped"]
            .as_array()
            .map(|ids| {
                ids.iter()
                    .filter_map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
                    .collect()
            })
            .unwrap_or_default();
        Ok(stopped)
    }

    /// Sets (`Some("backup")`) or clears (`None`) the `lock:` of VM `vmid`'s config
    /// (`POST /_sim/vm/{vmid}/lock`), as a backup or migration cut short leaves it.
    ///
    /// # Errors
    /// [`LabError::SimControl`]: an unknown VM, a lock PVE does not know, no answer.
    pub async fn set_vm_lock(&self, vmid: u32, lock: Option<&str>) -> Result<(), LabError> {
        let path = format!("/_sim/vm/{vmid}/lock");
        let body = json!({ "lock": lock });
        self.call(Method::POST, &path, Some(&body), None)
            .await
            .map(drop)
    }

    /// Removes the `lock:` line of VM `vmid`'s config in node `node`'s directory, even while
    /// `node` is off (`POST /_sim/pmxcfs/clear-lock`, root editing `/etc/pve`); the lock it had.
    ///
    /// # Errors
    /// [`LabError::SimControl`]: an unknown node, a config not on it, no answer.
    pub async fn clear_vm_lock(&self, vmid: u32, node: &str) -> Result<Option<String>, LabError> {
        let body = json!({ "vmid": vmid, "node": node });
        let data = self
            .call(Method::POST, "/_sim/pmxcfs/clear-lock", Some(&body), None)
            .await?;
        Ok(data["lock"].as_str().map(str::to_string))
    }

    /// Moves stopped VM `vmid`'s config from `from`'s directory to `to`'s
    /// (`POST /_sim/pmxcfs/move-config`), as pve-ha-manager does for a fenced node.
    ///
    /// # Errors
    /// [`LabError::SimControl`]: an unknown node, a config not on `from`, a running VM, no
    /// answer.
    pub async fn move_vm_config(&self, vmid: u32, from: &str, to: &str) -> Result<(), LabError> {
        let body = json!({ "vmid": vmid, "from": from, "to": to });
        self.call(Method::POST, "/_sim/pmxcfs/move-config", Some(&body), None)
            .await
            .map(drop)
    }

    /// Makes the next `remaining` tasks (all, when `None`) of `task_type` (`qmstart`,
    /// `qmclone`, ...) for VM `vmid` (any VM, when `None`) end with `TASK ERROR: <message>`,
    /// beside the task faults already set (`GET`, then `PUT /_sim/faults`).
    ///
    /// # Errors
    /// [`LabError::SimControl`] if a call fails.
    pub async fn fail_tasks(
        &self,
        vmid: Option<u32>,
        task_type: &str,
        message: &str,
        remaining: Option<u32>,
    ) -> Result<(), LabError> {
        self.edit_faults(|settings| {
            settings.failing_tasks.push(TaskFault {
                vmid,
                task_type: task_type.to_string(),
                message: message.to_string(),
                remaining,
            });
        })
        .await
    }

    /// Removes every task fault (the other faults stay).
    ///
    /// # Errors
    /// [`LabError::SimControl`] if a call fails.
    pub async fn clear_task_failures(&self) -> Result<(), LabError> {
        self.edit_faults(|settings| settings.failing_tasks.clear())
            .await
    }

    /// Reads the fault settings, changes them with `edit` and writes them back.
    async fn edit_faults(&self, edit: impl FnOnce(&mut FaultSettings)) -> Result<(), LabError> {
        let data = self.call(Method::GET, "/_sim/faults", None, None).await?;
        let mut settings: FaultSettings =
            serde_json::from_value(data).map_err(|e| LabError::SimControl {
                call: "GET /_sim/faults".into(),
                reason: format!("unreadable fault settings: {e}"),
            })?;
        edit(&mut settings);
        let body = serde_json::to_value(&settings).map_err(|e| LabError::SimControl {
            call: "PUT /_sim/faults".into(),
            reason: e.to_string(),
        })?;
        self.call(Method::PUT, "/_sim/faults", Some(&body), None)
            .await
            .map(drop)
    }

    /// Replaces PVE's own HA resources with `resources`, `(vmid, state)` each (`started`,
    /// `stopped`, `disabled`, `ignored`, ...) (`PUT /_sim/ha/resources`); an empty slice takes
    /// every guest out of PVE's HA.
    ///
    /// # Errors
    /// [`LabError::SimControl`] with PVE's text for a refused list, or no answer.
    pub async fn set_ha_resources(&self, resources: &[(u32, &str)]) -> Result<(), LabError> {
        let body: Vec<Value> = resources
            .iter()
            .map(|(vmid, state)| json!({ "sid": format!("vm:{vmid}"), "state": state }))
            .collect();
        self.call(Method::PUT, "/_sim/ha/resources", Some(&json!(body)), None)
            .await
            .map(drop)
    }

    /// Every guest of the cluster, templates included, as a live node lists them
    /// (`GET /api2/json/cluster/resources?type=vm`), in VMID order.
    ///
    /// # Errors
    /// [`LabError::SimControl`] if no listener answered or the answer is not a list.
    pub async fn vms(&self) -> Result<Vec<SimVm>, LabError> {
        let path = "/api2/json/cluster/resources?type=vm";
        let data = self.call(Method::GET, path, None, None).await?;
        let entries = data.as_array().ok_or_else(|| LabError::SimControl {
            call: format!("GET {path}"),
            reason: format!("answered {data} instead of a list"),
        })?;
        let mut vms: Vec<SimVm> = entries.iter().filter_map(sim_vm).collect();
        vms.sort_by_key(|vm| vm.vmid);
        Ok(vms)
    }

    /// The listener indexes in the order to try: the one that answered last first, and
    /// `avoid`'s own last (the node a power action targets may be off).
    fn order(&self, avoid: Option<&str>) -> Vec<usize> {
        let n = self.listeners.len();
        let first = self.preferred.load(Ordering::Relaxed) % n.max(1);
        let mut order: Vec<usize> = (0..n).map(|i| (first + i) % n).collect();
        order.sort_by_key(|i| avoid.is_some_and(|node| self.listeners[*i].0 == node));
        order
    }

    /// One call, listener after listener until one answers; the `data` of its answer.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        avoid: Option<&str>,
    ) -> Result<Value, LabError> {
        let call = format!("{method} {path}");
        let mut silent = Vec::new();
        for i in self.order(avoid) {
            let (node, url) = &self.listeners[i];
            let mut request = self
                .client
                .request(method.clone(), format!("{url}{path}"))
                .header("Authorization", format!("PVEAPIToken={}", self.token))
                .timeout(self.attempt_timeout);
            if let Some(body) = body {
                request = request.json(body);
            }
            let reply = match request.send().await {
                Ok(reply) => reply,
                Err(e) => {
                    silent.push(format!("{node} ({url}): {e}"));
                    continue;
                }
            };
            self.preferred.store(i, Ordering::Relaxed);
            let status = reply.status();
            let text = reply.text().await.unwrap_or_default();
            let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            if !status.is_success() {
                let message = value["message"].as_str().map_or(text.trim(), str::trim);
                return Err(LabError::SimControl {
                    call,
                    reason: format!("{node} answered {status}: {message}"),
                });
            }
            return Ok(value["data"].clone());
        }
        Err(LabError::SimControl {
            call,
            reason: format!("no listener answered: {}", silent.join("; ")),
        })
    }
}

/// One `/cluster/resources` entry; `None` for one that is not a guest.
fn sim_vm(entry: &Value) -> Option<SimVm> {
    let vmid = entry["vmid"]
        .as_u64()
        .or_else(|| entry["vmid"].as_str()?.parse().ok())?;
    let status = entry["status"].as_str().unwrap_or("unknown").to_string();
    Some(SimVm {
        vmid: u32::try_from(vmid).ok()?,
        name: entry["name"].as_str().map(str::to_string),
        node: entry["node"].as_str()?.to_string(),
        running: status == "running",
        status,
        lock: entry["lock"].as_str().map(str::to_string),
        template: entry["template"].as_u64() == Some(1) || entry["template"] == "1",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_entries_become_guests_with_their_node_lock_and_state() {
        let entry = json!({
            "id": "qemu/100", "type": "qemu", "vmid": 100, "node": "pve-b",
            "status": "unknown", "template": 0, "lock": "backup"
        });
        assert_eq!(
            sim_vm(&entry),
            Some(SimVm {
                vmid: 100,
                name: None,
                node: "pve-b".into(),
                status: "unknown".into(),
                running: false,
                lock: Some("backup".into()),
                template: false,
            })
        );
        let template = json!({
            "vmid": 9000, "node": "pve-a", "status": "stopped", "template": 1,
            "name": "debian-12-cloud"
        });
        let vm = sim_vm(&template).unwrap();
        assert!(vm.template && !vm.running && vm.lock.is_none());
        assert_eq!(vm.name.as_deref(), Some("debian-12-cloud"));
        assert_eq!(sim_vm(&json!({"type": "node", "node": "pve-a"})), None);
    }

    #[test]
    fn a_power_action_goes_through_another_node_first() {
        let tmp = tempfile::tempdir().unwrap();
        let token = tmp.path().join("token");
        std::fs::write(&token, "root@pam!fleet=s\n").unwrap();
        // Any certificate does here: the client is never used.
        let identity =
            pve_sim::server::TlsIdentity::self_signed(&["a".into()], Some(tmp.path())).unwrap();
        let cert = identity.cert_path().unwrap().to_path_buf();
        let listeners: Vec<(String, String)> = ["a", "b", "c"]
            .iter()
            .map(|n| (n.to_string(), format!("https://{n}")))
            .collect();
        let control = SimControl::new(&listeners, &cert, &token).unwrap();
        assert_eq!(control.order(None), [0, 1, 2]);
        assert_eq!(control.order(Some("a")), [1, 2, 0]);
        control.preferred.store(2, Ordering::Relaxed);
        assert_eq!(control.order(None), [2, 0, 1]);
        assert_eq!(control.order(Some("c")), [0, 1, 2]);
        let e = SimControl::new(&listeners, &cert, &tmp.path().join("none")).unwrap_err();
        assert!(e.to_string().contains("cannot read"), "{e}");
    }
}
