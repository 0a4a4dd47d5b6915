//! Two simulated PVE clusters served over HTTPS in one process, for the remote migration and
//! access control tests: cluster A (three nodes, served as `pve1`) and cluster B (one node
//! `pveb1`), their APIs as `root@pam!fleet`, and the least-privilege migration token on B.

use std::time::{Duration, Instant};

use pve_sim::config::NodeConfig;
use pve_sim::schema::Schema;
use pve_sim::{HttpMethod, Sim, SimConfig};
use serde_json::{Value, json};

use super::{FormBody, Served, TOKEN, serve_node, token_header};

/// The privileges qemu-server checks for a migration of VM 100 with `name`, `memory`,
/// `cores`, a disk, `boot`, `smbios1` and a NIC: `GET /cluster/status` (`Sys.Audit` on `/`),
/// `mtunnel` (`VM.Allocate` on the VM, `Sys.Incoming` on `/`, `Datastore.AllocateSpace` on
/// each storage), its `config` command (`VM.Config.*` per key, `SDN.Use` per bridge).
pub const MIGRATOR: &str = "VM.Allocate,VM.Config.CPU,VM.Config.Memory,VM.Config.Network,\
                        VM.Config.Options,VM.Config.HWType,VM.Config.Disk,Sys.Incoming,\
                        Sys.Audit,Datastore.AllocateSpace,SDN.Use";

/// One cluster's API as `root@pam!fleet`.
pub struct Api {
    pub s: Served,
}

impl Api {
    pub async fn call(&self, method: &str, path: &str, pairs: &[(&str, &str)]) -> (u16, Value) {
        self.call_as(TOKEN, method, path, pairs).await
    }

    pub async fn call_as(
        &self,
        token: &str,
        method: &str,
        path: &str,
        pairs: &[(&str, &str)],
    ) -> (u16, Value) {
        let client = self.s.client();
        let url = self.s.url(path);
        let req = match method {
            "GET" => client.get(url),
            "POST" => client.post(url).form_body(pairs),
            "PUT" => client.put(url).form_body(pairs),
            _ => client.delete(url),
        };
        let resp = req
            .header("Authorization", token_header(token))
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// `data` of a call that must succeed.
    pub async fn ok(&self, method: &str, path: &str, pairs: &[(&str, &str)]) -> Value {
        let (status, body) = self.call(method, path, pairs).await;
        assert_eq!(status, 200, "{method} {path}: {body}");
        body["data"].clone()
    }

    /// Wait for a task and return (exit status, log lines).
    pub async fn wait(&self, upid: &str) -> (String, Vec<String>) {
        let node = upid.split(':').nth(1).unwrap().to_string();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let status = self
                .ok("GET", &format!("/nodes/{node}/tasks/{upid}/status"), &[])
                .await;
            if status["status"] == "stopped" {
                let log = self
                    .ok(
                        "GET",
                        &format!("/nodes/{node}/tasks/{upid}/log?limit=0"),
                        &[],
                    )
                    .await;
                let lines = log
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l["t"].as_str().unwrap().to_string())
                    .collect();
                return (status["exitstatus"].as_str().unwrap().to_string(), lines);
            }
            assert!(Instant::now() < deadline, "task {upid} still running");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Run a task to its end; its exit status.
    pub async fn run(&self, path: &str, pairs: &[(&str, &str)]) -> String {
        let upid = self.ok("POST", path, pairs).await;
        self.wait(upid.as_str().unwrap()).await.0
    }
}

/// Cluster A (three nodes, served as `pve1`) and cluster B (one node `pveb1`, no templates).
pub async fn clusters(scale: f64) -> (Api, Api) {
    let a = Sim::new(SimConfig {
        time_scale: scale,
        agent_ip_delay_secs: 0.0,
        ..SimConfig::default()
    })
    .unwrap();
    let b = Sim::new(SimConfig {
        cluster_name: "clusterb".into(),
        nodes: vec![NodeConfig {
            name: "pveb1".into(),
            cpus: 16,
            memory: 64 << 30,
            bridges: vec!["vmbr0".into(), "vmbr1".into()],
            ip: Some("198.51.100.10".into()),
        }],
        templates: vec![],
        ..SimConfig::fast()
    })
    .unwrap();
    (
        Api {
            s: serve_node(&a, "pve1").await,
        },
        Api {
            s: serve_node(&b, "pveb1").await,
        },
    )
}

/// VM 100 on A's `pve1`: 8 GiB on `local-lvm`, a NIC on `vmbr0`, started.
pub async fn running_vm(a: &Api) {
    let status = a
        .run(
            "/nodes/pve1/qemu",
            &[
                ("vmid", "100"),
                ("name", "web1"),
                ("memory", "2048"),
                ("cores", "2"),
                ("scsi0", "local-lvm:8"),
                ("net0", "virtio,bridge=vmbr0"),
            ],
        )
        .await;
    assert_eq!(status, "OK");
    assert_eq!(a.run("/nodes/pve1/qemu/100/status/start", &[]).await, "OK");
}

/// User `mig@pve`, role `Migrator` with `privs`, token `mig@pve!m100` granted the role (with
/// its user) on `/vms/100`, `/` (not propagated), `/storage/local` and
/// `/sdn/zones/localnetwork/vmbr1`; the token's `Authorization` value.
pub async fn migration_token(b: &Api, privs: &str, expire: Option<&str>) -> String {
    b.ok("POST", "/access/users", &[("userid", "mig@pve")])
        .await;
    b.ok(
        "POST",
        "/access/roles",
        &[("roleid", "Migrator"), ("privs", privs)],
    )
    .await;
    let mut pairs = vec![("comment", "move of VM 100")];
    if let Some(e) = expire {
        pairs.push(("expire", e));
    }
    let created = b
        .ok("POST", "/access/users/mig@pve/token/m100", &pairs)
        .await;
    assert_eq!(created["full-tokenid"], "mig@pve!m100");
    let template = "/access/users/{userid}/token/{tokenid}";
    let drift = Schema::embedded().check_returns(HttpMethod::Post, template, &created);
    assert!(drift.is_empty(), "{drift:?}");
    assert_eq!(created["info"]["privsep"], 1);
    for (path, propagate) in [
        ("/vms/100", "1"),
        ("/", "0"),
        ("/storage/local", "1"),
        ("/sdn/zones/localnetwork/vmbr1", "1"),
    ] {
        b.ok(
            "PUT",
            "/access/acl",
            &[
                ("path", path),
                ("roles", "Migrator"),
                ("users", "mig@pve"),
                ("tokens", "mig@pve!m100"),
                ("propagate", propagate),
            ],
        )
        .await;
    }
    format!("mig@pve!m100={}", created["value"].as_str().unwrap())
}

/// B's certificate fingerprint as `certificates/info` reports it.
pub async fn fingerprint(b: &Api) -> String {
    let certs = b.ok("GET", "/nodes/pveb1/certificates/info", &[]).await;
    let template = "/nodes/{node}/certificates/info";
    let drift = Schema::embedded().check_returns(HttpMethod::Get, template, &certs);
    assert!(drift.is_empty(), "{drift:?}");
    let cert = &certs[0];
    assert_eq!(cert["filename"], "pve-ssl.pem");
    assert!(
        cert["pem"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    assert!(
        cert["san"]
            .as_array()
            .unwrap()
            .contains(&json!("127.0.0.1"))
    );
    cert["fingerprint"].as_str().unwrap().to_string()
}

pub fn endpoint(b: &Api, token: &str, fp: &str) -> String {
    format!(
        "host=127.0.0.1,port={},apitoken=PVEAPIToken={token},fingerprint={fp}",
        b.s.addr.port()
    )
}

/// Start the online migration of VM 100 from A to B (`local-lvm` → `local`, `vmbr0` →
/// `vmbr1`); the UPID.
pub async fn migrate(a: &Api, endpoint: &str, extra: &[(&str, &str)]) -> String {
    let mut pairs = vec![
        ("target-endpoint", endpoint),
        ("target-storage", "local-lvm:local"),
        ("target-bridge", "vmbr0:vmbr1"),
        ("online", "1"),
    ];
    pairs.extend_from_slice(extra);
    let upid = a
        .ok("POST", "/nodes/pve1/qemu/100/remote_migrate", &pairs)
        .await;
    upid.as_str().unwrap().to_string()
}

pub fn has_line(log: &[String], text: &str) -> bool {
    log.iter().any(|l| l.contains(text))
}

/// A's VM 100 runs unlocked on `pve1`, its disk still there.
pub async fn source_untouched(a: &Api) {
    let conf = a.ok("GET", "/nodes/pve1/qemu/100/config", &[]).await;
    assert_eq!(conf["lock"], Value::Null, "{conf}");
    assert_eq!(conf["scsi0"], "local-lvm:vm-100-disk-0,size=8G");
    assert_eq!(a.s.sim.vm_running(100), Some(true));
}

/// Volumes of VM 100 on B's `local`.
pub async fn target_volumes(b: &Api) -> Vec<Value> {
    b.ok("GET", "/nodes/pveb1/storage/local/content", &[])
        .await
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["vmid"] == 100)
        .cloned()
        .collect()
}
