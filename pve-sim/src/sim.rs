//! The simulator facade: one cluster model, its faults and credentials, and the request
//! pipeline every call goes through, in process or over HTTPS.
//!
//! ```text
//!  latency ─▶ route match (501) ─▶ URI/body conflicts (400) ─▶ token allowed? (403)
//!    ─▶ permission of the caller's grants (403) ─▶ proxy to {node}: localhost, unknown (500),
//!    down (595) ─▶ schema validation (400) ─▶ root-only options (400) ─▶ error-rate fault (503)
//!    ─▶ access model (`/access/...`) or cluster model ─▶ drop fault
//! ```

mod permission;
mod raw;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use percent_encoding::percent_decode_str;

pub use raw::RawReply;

use crate::api::{ApiError, Caller, Reply};
use crate::auth::{Auth, Principal};
use crate::certificate::CertificateInfo;
use crate::cluster::{Cluster, Request};
use crate::config::SimConfig;
use crate::error::SimError;
use crate::faults::Faults;
use crate::ha::HaResource;
use crate::node_power::NodePowerAction;
use crate::param_value::ParamValue;
use crate::route::{HttpMethod, Route};
use crate::schema::Schema;

/// What a connection to a node that stopped answering ends with (AnyEvent::HTTP's code for a
/// failed connect, with the OS error text).
const NODE_DOWN_STATUS: u16 = 595;
const NODE_DOWN_REASON: &str = "No route to host";
/// Seconds (before scaling) until a connect to a dead host fails.
const NODE_DOWN_DELAY_SECS: f64 = 3.0;

struct Inner {
    cluster: Cluster,
    faults: Arc<Faults>,
    config: SimConfig,
    auth: Auth,
}

/// A simulated PVE cluster. Cheap to clone; clones share the same cluster.
#[derive(Clone)]
pub struct Sim {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("cluster", &self.inner.config.cluster_name)
            .finish()
    }
}

/// Unix time now (tickets are real-time, independent of the time scale).
pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// PVE's form decoding turns repeated keys into one NUL-joined value (a JSON body has no
/// repeated keys; should one come twice anyway, the later value wins).
fn combine(params: Vec<(String, ParamValue)>) -> BTreeMap<String, ParamValue> {
    let mut out: BTreeMap<String, ParamValue> = BTreeMap::new();
    for (k, v) in params {
        match (out.get_mut(&k), v) {
            (Some(ParamValue::Text(old)), ParamValue::Text(v)) => {
                old.push('\0');
                old.push_str(&v);
            }
            (_, v) => {
                out.insert(k, v);
            }
        }
    }
    out
}

/// Form strings as the parameters of an in-process call.
fn form_params(params: Vec<(String, String)>) -> Vec<(String, ParamValue)> {
    params
        .into_iter()
        .map(|(k, v)| (k, ParamValue::Text(v)))
        .collect()
}

impl Sim {
    /// Build the cluster described by `config`.
    pub fn new(config: SimConfig) -> Result<Sim, SimError> {
        let faults = Arc::new(Faults::new(config.seed));
        let cluster = Cluster::new(&config, Arc::clone(&faults))?;
        let auth = Auth::new(&config);
        Ok(Sim {
            inner: Arc::new(Inner {
                cluster,
                faults,
                config,
                auth,
            }),
        })
    }

    /// The configuration the cluster was built from.
    pub fn config(&self) -> &SimConfig {
        &self.inner.config
    }

    /// The fault registry (shared with the model and the HTTPS server).
    pub fn faults(&self) -> &Faults {
        &self.inner.faults
    }

    pub(crate) fn auth(&self) -> &Auth {
        &self.inner.auth
    }

    /// `time_scale` × `secs` as a duration (never negative).
    pub(crate) fn scaled(&self, secs: f64) -> Duration {
        let s = secs * self.inner.config.time_scale;
        if s.is_finite() && s > 0.0 {
            Duration::from_secs_f64(s)
        } else {
            Duration::ZERO
        }
    }

    /// In-process call as `caller` talking to node `local_node` (which `localhost` means).
    /// `path` is below `/api2/json` and may be percent-encoded; `params` are raw form strings
    /// (booleans `1`/`0`).
    pub async fn handle(
        &self,
        caller: &Caller,
        local_node: &str,
        method: HttpMethod,
        path: &str,
        params: Vec<(String, String)>,
    ) -> Result<Reply, ApiError> {
        let rel = decode_path(path);
        self.process(
            &Principal::User(caller.clone()),
            local_node,
            method,
            &rel,
            form_params(params),
        )
        .await
    }

    /// The exact answer HTTP would carry for [`Sim::handle`], with the drop fault applied.
    pub async fn handle_raw(
        &self,
        caller: &Caller,
        local_node: &str,
        method: HttpMethod,
        path: &str,
        params: Vec<(String, String)>,
    ) -> RawReply {
        let rel = decode_path(path);
        self.process_raw(
            &Principal::User(caller.clone()),
            local_node,
            method,
            &rel,
            form_params(params),
        )
        .await
    }

    /// [`Sim::handle_raw`] for an authenticated principal and an already decoded path `rel`
    /// (the HTTPS edge decodes once, as PVE does); `params` as the edge decoded them (a JSON
    /// body's references intact).
    pub(crate) async fn process_raw(
        &self,
        who: &Principal,
        local_node: &str,
        method: HttpMethod,
        rel: &str,
        params: Vec<(String, ParamValue)>,
    ) -> RawReply {
        let result = self.process(who, local_node, method, rel, params).await;
        let mut raw = RawReply::from_result(&result);
        raw.drop = self.inner.faults.take_drop(method.as_str(), rel);
        raw
    }

    /// The request pipeline (see the module documentation for the order); `rel` is the
    /// decoded path below `/api2/json`.
    pub(crate) async fn process(
        &self,
        who: &Principal,
        local_node: &str,
        method: HttpMethod,
        rel: &str,
        params: Vec<(String, ParamValue)>,
    ) -> Result<Reply, ApiError> {
        let latency = self.inner.faults.latency();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let schema = Schema::embedded();
        let not_implemented = || {
            ApiError::status(
                501,
                format!("Method '{} {rel}' not implemented", method.as_str()),
            )
        };
        let (template, path_params) = schema.match_path(method, rel).ok_or_else(not_implemented)?;
        let route = Route::SERVED
            .iter()
            .copied()
            .find(|r| r.method() == method && r.template() == template)
            .ok_or_else(not_implemented)?;
        let ms = schema
            .method(method, &template)
            .ok_or_else(not_implemented)?;

        let mut merged: BTreeMap<String, ParamValue> = path_params
            .into_iter()
            .map(|(k, v)| (k, ParamValue::Text(v)))
            .collect();
        for (k, v) in combine(params) {
            // `$uri_param->{$p} ne $params->{$p}`: a reference never equals a path segment.
            if merged
                .get(&k)
                .is_some_and(|uri| uri.perl_string() != v.perl_string())
            {
                return Err(ApiError::param(
                    k,
                    "duplicate parameter (already defined in URI) with conflicting values!",
                ));
            }
            merged.insert(k, v);
        }
        // What the permission check interpolates: Perl's string of each defined value.
        let texts: BTreeMap<String, String> = merged
            .iter()
            .filter_map(|(k, v)| v.perl_string().map(|t| (k.clone(), t)))
            .collect();

        let via_token = match who {
            Principal::Anonymous { token } => *token,
            Principal::User(c) => c.tokenid.is_some(),
        };
        if via_token && !ms.allowtoken {
            return Err(ApiError::status(
                403,
                format!(
                    "Permission check failed (URI '{rel}' not available with API token, need \
                     proper ticket.\n)"
                ),
            ));
        }
        let grants = match who {
            Principal::User(caller) => Some(self.inner.auth.access().grants(caller)),
            Principal::Anonymous { .. } => None,
        };
        permission::check(&ms.permissions, route, grants.as_ref(), &texts)?;

        if ms.proxyto.as_deref() == Some("node")
            && let Some(node) = texts.get("node").cloned()
        {
            let target = if node == "localhost" {
                local_node.to_string()
            } else {
                node
            };
            if target != local_node && !self.inner.cluster.has_node(&target) {
                return Err(ApiError::internal(format!(
                    "hostname lookup '{target}' failed - failed to get address info for: \
                         {target}: Name or service not known"
                )));
            }
            if self.inner.faults.node_down(&target) {
                tokio::time::sleep(self.scaled(NODE_DOWN_DELAY_SECS)).await;
                return Err(ApiError::status(NODE_DOWN_STATUS, NODE_DOWN_REASON));
            }
            merged.insert("node".into(), ParamValue::Text(target));
        }

        let params = schema
            .validate_values(method, &template, merged)
            .map_err(ApiError::params)?;
        if self.inner.faults.roll_error() {
            return Err(ApiError::status(503, "Service Unavailable"));
        }
        match (route, who, grants) {
            (Route::AccessTicket, _, _) => {
                self.inner.auth.login(&params, unix_now()).map(Reply::data)
            }
            (_, Principal::User(caller), Some(grants)) => {
                match crate::access::handle(self.inner.auth.access(), route, &params, &grants) {
                    Some(answer) => answer,
                    None => {
                        let request = Request {
                            caller,
                            local_node,
                            grants: &grants,
                        };
                        self.inner.cluster.dispatch(route, &params, &request).await
                    }
                }
            }
            // The permission check refuses anonymous callers everywhere else.
            _ => Err(ApiError::status(
                403,
                "Permission check failed (user != null)",
            )),
        }
    }

    /// One command of an open migration tunnel on `local_node` (the receiving end of a remote
    /// migration, see the `server` module's tunnel endpoint): `command` is the JSON line PVE's
    /// source would write, the answer the line the tunnel replies (`{"success": ...}`).
    /// Errors: `401 permission denied - invalid PVETUNNEL ticket` unless the ticket and socket
    /// are those of VM `vmid`'s open tunnel and `caller` opened it; 500 when the VM's config is
    /// not on `local_node`.
    pub(crate) fn tunnel_command(
        &self,
        caller: &Caller,
        local_node: &str,
        vmid: u32,
        ticket: &str,
        socket: &str,
        command: &serde_json::Value,
    ) -> Result<serde_json::Value, ApiError> {
        let grants = self.inner.auth.access().grants(caller);
        let request = Request {
            caller,
            local_node,
            grants: &grants,
        };
        self.inner
            .cluster
            .tunnel_command(&request, vmid, ticket, socket, command)
    }

    /// Bound each request an outgoing remote migration sends to the target cluster (default
    /// 10 s): a target that stops answering fails the migration after about that long.
    pub fn set_remote_timeout(&self, limit: Duration) {
        self.inner.cluster.set_remote_timeout(limit);
    }

    /// Names of all nodes.
    pub fn node_names(&self) -> Vec<String> {
        self.inner.cluster.node_names()
    }

    /// Whether the cluster has this node.
    pub fn has_node(&self, node: &str) -> bool {
        self.inner.cluster.has_node(node)
    }

    /// The raw config file text of a VM (as `/etc/pve/qemu-server/<vmid>.conf`).
    pub fn vm_config_text(&self, vmid: u32) -> Option<String> {
        self.inner.cluster.vm_config_text(vmid)
    }

    /// The node holding a VM's config.
    pub fn vm_node(&self, vmid: u32) -> Option<String> {
        self.inner.cluster.vm_node(vmid)
    }

    /// Whether a VM runs (`None` = no such VM).
    pub fn vm_running(&self, vmid: u32) -> Option<bool> {
        self.inner.cluster.vm_running(vmid)
    }

    /// Power a VM on or off behind the API's back (a crash, a guest shutdown); `false` = no
    /// such VM.
    pub fn set_vm_running(&self, vmid: u32, running: bool) -> bool {
        self.inner.cluster.set_vm_running(vmid, running)
    }

    /// Power a node off, on or through a reset, as its BMC would (see [`crate::node_power`]):
    /// returns the VMs that were running on it and stopped. An unknown node is a 404 error
    /// (`no such cluster node 'x'`).
    pub fn power_node(&self, node: &str, action: NodePowerAction) -> Result<Vec<u32>, ApiError> {
        self.inner.cluster.power_node(node, action)
    }

    /// Move a VM's config from node `from`'s directory to node `to`'s in the cluster file
    /// system, as pve-ha-manager does for a guest of a fenced node. Errors carry the status a
    /// control endpoint answers: 404 for an unknown node or a config not on `from`
    /// (`Configuration file 'nodes/<from>/qemu-server/<vmid>.conf' does not exist`), 409 for a
    /// running VM. Volumes stay where they are: on storage local to `from` a later start on
    /// `to` fails.
    pub fn move_vm_config(&self, vmid: u32, from: &str, to: &str) -> Result<(), ApiError> {
        self.inner.cluster.move_vm_config(vmid, from, to)
    }

    /// Set (`Some("backup")`) or clear (`None`) the `lock:` line of a VM's config behind the
    /// API, as a backup, clone or migration that was running when its node died leaves it;
    /// works whatever the power state of the node holding the config. Errors carry the status
    /// a control endpoint answers: 404 `VM <vmid> does not exist`, 400 for a value PVE does not
    /// know (backup, clone, create, migrate, rollback, snapshot, snapshot-delete, suspending,
    /// suspended, copy, disk, fstrim, mounted), with nothing changed.
    pub fn set_vm_lock(&self, vmid: u32, lock: Option<&str>) -> Result<(), ApiError> {
        self.inner.cluster.set_vm_lock(vmid, lock)
    }

    /// Remove the `lock:` line from VM `vmid`'s config file in node `node`'s directory, as
    /// root does by editing `/etc/pve/nodes/<node>/qemu-server/<vmid>.conf` on a live node of
    /// the cluster (so `node` may be powered off); returns the lock it had (`None`: the config
    /// was not locked, nothing changed). 404 for an unknown node or a config not on `node`
    /// (`Configuration file 'nodes/<node>/qemu-server/<vmid>.conf' does not exist`).
    pub fn clear_vm_lock(&self, vmid: u32, node: &str) -> Result<Option<String>, ApiError> {
        self.inner.cluster.clear_vm_lock(vmid, node)
    }

    /// Replace PVE's HA resources (`/etc/pve/ha/resources.cfg`) with `resources`; returns
    /// them as stored (full sids such as `vm:100`, `type` filled in). A refused list (400,
    /// PVE's text) leaves the configuration as it was.
    pub fn set_ha_resources(
        &self,
        resources: Vec<HaResource>,
    ) -> Result<Vec<HaResource>, ApiError> {
        self.inner
            .cluster
            .set_ha_resources(resources)
            .map_err(|e| ApiError::status(400, e.to_string()))
    }

    /// PVE's HA resources, in sid order.
    pub fn ha_resources(&self) -> Vec<HaResource> {
        self.inner.cluster.ha_resources()
    }

    /// Record the certificate served for `node` (its fingerprint shows in `/nodes`, the rest
    /// in `GET /nodes/{node}/certificates/info`).
    pub(crate) fn set_node_certificate(&self, node: &str, info: &CertificateInfo) {
        self.inner.cluster.set_node_certificate(node, info);
    }

    /// Put a file on a storage's `snippets` content (as an admin copying a cloud-init file);
    /// returns its volume id (`local:snippets/<filename>`).
    pub fn write_snippet(
        &self,
        node: &str,
        storage: &str,
        filename: &str,
        content: &str,
    ) -> Result<String, ApiError> {
        self.inner
            .cluster
            .write_snippet(node, storage, filename, content)
    }
}

/// PVE URI-unescapes the path before routing.
fn decode_path(path: &str) -> String {
    percent_decode_str(path).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_parameters_are_nul_joined() {
        let got = combine(form_params(vec![
            ("a".into(), "1".into()),
            ("b".into(), "x".into()),
            ("a".into(), "2".into()),
        ]));
        assert_eq!(got["a"], ParamValue::Text("1\u{0}2".into()));
        assert_eq!(got["b"], ParamValue::Text("x".into()));
    }

    #[test]
    fn paths_are_percent_decoded() {
        assert_eq!(
            decode_path("/nodes/pve1/tasks/UPID%3Apve1%3A0/status"),
            "/nodes/pve1/tasks/UPID:pve1:0/status"
        );
    }
}
