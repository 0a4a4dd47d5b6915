//! Helpers for the model's scenario tests: build a cluster, call `dispatch` with string
//! parameters as the edge would, and wait for tasks with bounded polling.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::access::AccessControl;
use crate::cluster::tasks::task::Upid;
use crate::cluster::{Cluster, Request};
use crate::faults::Faults;
use crate::{ApiError, Caller, Params, Route, SimConfig};

/// A cluster under test with its fault registry.
pub(super) struct Sim {
    pub(super) c: Cluster,
    pub(super) faults: Arc<Faults>,
    pub(super) caller: Caller,
}

/// The default three-node cluster, tasks finishing at once.
pub(super) fn fast() -> Sim {
    with(SimConfig::fast())
}

/// The default cluster with a small nonzero time scale (a 4 s clone takes 4 * `scale` s).
pub(super) fn scaled(scale: f64) -> Sim {
    with(SimConfig {
        time_scale: scale,
        ..SimConfig::default()
    })
}

/// A cluster from `cfg`.
pub(super) fn with(cfg: SimConfig) -> Sim {
    let faults = Arc::new(Faults::new(cfg.seed));
    Sim {
        c: Cluster::new(&cfg, Arc::clone(&faults)).unwrap(),
        faults,
        caller: Caller::root(),
    }
}

/// Params from pairs.
pub(super) fn params(pairs: &[(&str, &str)]) -> Params {
    let mut p = Params::default();
    for (k, v) in pairs {
        p.set(*k, *v);
    }
    p
}

impl Sim {
    /// Call as the current caller.
    pub(super) async fn call(
        &self,
        route: Route,
        pairs: &[(&str, &str)],
    ) -> Result<crate::Reply, ApiError> {
        let grants = AccessControl::new(&SimConfig::default()).grants(&self.caller);
        let request = Request {
            caller: &self.caller,
            local_node: "pve1",
            grants: &grants,
        };
        self.c.dispatch(route, &params(pairs), &request).await
    }

    /// The `data` of a successful call.
    pub(super) async fn ok(&self, route: Route, pairs: &[(&str, &str)]) -> Value {
        match self.call(route, pairs).await {
            Ok(r) => r.data,
            Err(e) => panic!("{route:?} {pairs:?} failed: {e:?}"),
        }
    }

    /// The error of a call that must fail.
    pub(super) async fn err(&self, route: Route, pairs: &[(&str, &str)]) -> ApiError {
        match self.call(route, pairs).await {
            Ok(r) => panic!("{route:?} {pairs:?} unexpectedly succeeded: {:?}", r.data),
            Err(e) => e,
        }
    }

    /// Start a task and return its UPID.
    pub(super) async fn task(&self, route: Route, pairs: &[(&str, &str)]) -> String {
        let data = self.ok(route, pairs).await;
        data.as_str()
            .unwrap_or_else(|| panic!("{route:?} returned {data:?}, not a UPID"))
            .to_string()
    }

    /// Task status JSON.
    pub(super) async fn status(&self, upid: &str) -> Value {
        let node = Upid::decode(upid).unwrap().node;
        self.ok(Route::TaskStatus, &[("node", &node), ("upid", upid)])
            .await
    }

    /// Every log line of a task.
    pub(super) async fn log(&self, upid: &str) -> Vec<String> {
        let node = Upid::decode(upid).unwrap().node;
        let data = self
            .ok(
                Route::TaskLog,
                &[("node", &node), ("upid", upid), ("limit", "0")],
            )
            .await;
        data.as_array()
            .unwrap()
            .iter()
            .map(|l| l["t"].as_str().unwrap().to_string())
            .collect()
    }

    /// Wait (bounded) until the task stopped; its exit status.
    pub(super) async fn wait(&self, upid: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let s = self.status(upid).await;
            if s["status"] == "stopped" {
                return s["exitstatus"].as_str().unwrap().to_string();
            }
            assert!(Instant::now() < deadline, "task {upid} still running");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Run a task to its end and return its exit status.
    pub(super) async fn run(&self, route: Route, pairs: &[(&str, &str)]) -> String {
        let upid = self.task(route, pairs).await;
        self.wait(&upid).await
    }

    /// GET config (pending applied).
    pub(super) async fn config(&self, node: &str, vmid: &str) -> Value {
        self.ok(Route::VmConfigGet, &[("node", node), ("vmid", vmid)])
            .await
    }

    /// Create a stopped VM 100-style guest on `node` with a disk on `storage` and `net0`.
    pub(super) async fn create_vm(&self, node: &str, vmid: &str, storage: &str) {
        let disk = format!("{storage}:8");
        let status = self
            .run(
                Route::VmCreate,
                &[
                    ("node", node),
                    ("vmid", vmid),
                    ("scsi0", &disk),
                    ("net0", "virtio,bridge=vmbr0"),
                    ("memory", "2048"),
                ],
            )
            .await;
        assert_eq!(status, "OK");
    }

    /// Start a VM and wait for it.
    pub(super) async fn start(&self, node: &str, vmid: &str) {
        let status = self
            .run(Route::VmStart, &[("node", node), ("vmid", vmid)])
            .await;
        assert_eq!(status, "OK", "start {vmid}");
    }
}

/// Wait (bounded) until `f` holds.
pub(super) async fn eventually(mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "condition not reached in time");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
