//! The host-failure controls over HTTPS (`/_sim/nodes/{node}/power`,
//! `/_sim/pmxcfs/move-config`, `/_sim/ha/resources`) and what the PVE API shows afterwards.

// Test helpers outside #[test] functions may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{FormBody, RO_TOKEN, Served, serve_node, token_header};
use pve_sim::Sim;
use pve_sim::config::TokenConfig;
use serde_json::{Value, json};

/// A node agent's token: not `root@pam`, not read-only.
const AGENT_TOKEN: &str = "agent@pve!pve2=6c1d0a52-3e0f-4b8e-9a51-7d2e4f6a8b90";

/// The fast cluster with an agent token, served as `pve1`.
async fn served() -> Served {
    let mut c = common::config();
    c.tokens.push(TokenConfig {
        userid: "agent@pve".into(),
        tokenid: "pve2".into(),
        secret: "6c1d0a52-3e0f-4b8e-9a51-7d2e4f6a8b90".into(),
        read_only: false,
        withheld: vec![],
    });
    serve_node(&Sim::new(c).unwrap(), "pve1").await
}

fn control(s: &Served, path: &str) -> String {
    format!("https://127.0.0.1:{}/_sim{path}", s.addr.port())
}

/// `(status, body)` of a control call with the agent token.
async fn post(s: &Served, path: &str, body: &Value) -> (u16, Value) {
    let resp = s
        .client()
        .post(control(s, path))
        .header("Authorization", token_header(AGENT_TOKEN))
        .json(body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

/// `(status, body)` of an API GET with `token`.
async fn get(s: &Served, path: &str, token: &str) -> (u16, Value) {
    let resp = s
        .client()
        .get(s.url(path))
        .header("Authorization", token_header(token))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Create VM 100 on `pve2` with a disk on the shared storage and start it, over HTTPS.
async fn running_vm_on_pve2(s: &Served) {
    for (path, pairs) in [
        (
            "/nodes/pve2/qemu",
            vec![("vmid", "100"), ("scsi0", "ceph:8")],
        ),
        ("/nodes/pve2/qemu/100/status/start", vec![]),
    ] {
        let resp = s
            .client()
            .post(s.url(path))
            .header("Authorization", token_header(AGENT_TOKEN))
            .form_body(&pairs)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{path}");
    }
    assert_eq!(s.sim.vm_running(100), Some(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_powered_off_stops_its_vms_and_is_unreachable_until_powered_on() {
    let s = served().await;
    running_vm_on_pve2(&s).await;
    let (status, body) = post(&s, "/nodes/pve2/power", &json!({"action": "off"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({"node": "pve2", "action": "off", "online": false, "stopped": [100]})
    );
    assert_eq!(s.sim.vm_running(100), Some(false));
    let (status, _) = get(&s, "/nodes/pve2/qemu/100/status/current", AGENT_TOKEN).await;
    assert_eq!(status, 595, "proxied to a node that is off");

    let (status, body) = post(&s, "/nodes/pve2/power", &json!({"action": "on"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["online"], true);
    let (status, body) = get(&s, "/nodes/pve2/qemu/100/status/current", AGENT_TOKEN).await;
    assert_eq!(status, 200);
    assert_eq!(
        body["data"]["status"], "stopped",
        "no onboot: the VM stays off"
    );
    let (_, body) = get(&s, "/nodes/pve2/status", AGENT_TOKEN).await;
    assert!(body["data"]["uptime"].as_u64().unwrap() < 60, "a new boot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_power_refuses_unknown_nodes_actions_and_read_only_tokens() {
    let s = served().await;
    let (status, body) = post(&s, "/nodes/pve2/power", &json!({"action": "cycle"})).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["message"],
        "unknown power action 'cycle' - allowed: off, on, reset\n"
    );
    let (status, body) = post(&s, "/nodes/pve9/power", &json!({"action": "reset"})).await;
    assert_eq!(status, 404);
    assert_eq!(body["message"], "no such cluster node 'pve9'\n");
    let resp = s
        .client()
        .post(control(&s, "/nodes/pve2/power"))
        .header("Authorization", token_header(RO_TOKEN))
        .json(&json!({"action": "reset"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert!(!s.sim.faults().node_down("pve2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_stops_the_vms_and_the_node_answers_at_once() {
    let s = served().await;
    running_vm_on_pve2(&s).await;
    let (status, body) = post(&s, "/nodes/pve2/power", &json!({"action": "reset"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["stopped"], json!([100]));
    assert_eq!(body["data"]["online"], true);
    let (status, body) = get(&s, "/nodes/pve2/qemu/100/status/current", AGENT_TOKEN).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["status"], "stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_config_is_read_at_the_new_node_and_missing_at_the_old() {
    let s = served().await;
    running_vm_on_pve2(&s).await;
    let mv = json!({"vmid": 100, "from": "pve2", "to": "pve3"});
    let (status, body) = post(&s, "/pmxcfs/move-config", &mv).await;
    assert_eq!(status, 409, "a running VM's config is not stolen");
    assert_eq!(
        body["message"],
        "VM 100 is running on node 'pve2' - its config cannot be moved\n"
    );
    post(&s, "/nodes/pve2/power", &json!({"action": "off"})).await;
    let (status, body) = post(&s, "/pmxcfs/move-config", &mv).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!({"vmid": 100, "node": "pve3"}));
    let (status, body) = get(&s, "/nodes/pve3/qemu/100/config", AGENT_TOKEN).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["scsi0"], "ceph:vm-100-disk-0,size=8G");
    post(&s, "/nodes/pve2/power", &json!({"action": "on"})).await;
    let (status, body) = get(&s, "/nodes/pve2/qemu/100/config", AGENT_TOKEN).await;
    assert_eq!(status, 500);
    assert_eq!(
        body["message"],
        "Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist\n"
    );
    let (status, body) = post(&s, "/pmxcfs/move-config", &mv).await;
    assert_eq!(status, 404);
    assert_eq!(
        body["message"],
        "Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist\n"
    );
    let (status, _) = post(&s, "/pmxcfs/move-config", &json!({"vmid": 100})).await;
    assert_eq!(status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ha_resources_set_by_the_control_are_read_through_the_api() {
    let s = served().await;
    let resp = s
        .client()
        .put(control(&s, "/ha/resources"))
        .header("Authorization", token_header(AGENT_TOKEN))
        .json(&json!([{"sid": "vm:100", "state": "started", "max_restart": 1}]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["data"],
        json!([{"sid": "vm:100", "type": "vm", "state": "started", "max_restart": 1}])
    );
    // Sys.Audit on `/` is enough: a read-only token may list them.
    let (status, body) = get(&s, "/cluster/ha/resources", RO_TOKEN).await;
    assert_eq!(status, 200);
    let list = body["data"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["sid"], "vm:100");
    assert_eq!(list[0]["state"], "started");
    let (status, body) = get(&s, "/cluster/ha/resources/vm%3A100", RO_TOKEN).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["max_restart"], 1);
    assert_eq!(body["data"]["digest"], list[0]["digest"]);
    let (status, body) = get(&s, "/cluster/ha/resources/vm:101", RO_TOKEN).await;
    assert_eq!(status, 500);
    assert_eq!(body["message"], "no such resource 'vm:101'\n");
    let (status, body) = get(&s, "/cluster/ha/resources/VM", RO_TOKEN).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"]["sid"],
        "invalid format - value does not look like a valid ha resource id\n"
    );

    let resp = s
        .client()
        .put(control(&s, "/ha/resources"))
        .header("Authorization", token_header(AGENT_TOKEN))
        .json(&json!([{"sid": "ct:200"}]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "unknown section type 'ct'\n");
    assert_eq!(
        s.sim.ha_resources().len(),
        1,
        "a refused list changes nothing"
    );
}

/// The `/cluster/resources?type=vm` entry of VM 100, as the served (live) node answers.
async fn resource_100(s: &Served) -> Value {
    let (status, body) = get(s, "/cluster/resources?type=vm", RO_TOKEN).await;
    assert_eq!(status, 200, "{body}");
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["vmid"] == 100)
        .cloned()
        .unwrap_or_else(|| panic!("VM 100 not in {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_set_by_the_control_is_reported_until_cleared() {
    let s = served().await;
    running_vm_on_pve2(&s).await;
    let (status, body) = post(&s, "/vm/100/lock", &json!({"lock": "backup"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!({"vmid": 100, "lock": "backup"}));
    assert_eq!(resource_100(&s).await["lock"], "backup");
    let (_, body) = get(&s, "/nodes/pve2/qemu/100/config", AGENT_TOKEN).await;
    assert_eq!(body["data"]["lock"], "backup");

    let (status, body) = post(&s, "/vm/100/lock", &json!({"lock": "nap"})).await;
    assert_eq!(status, 400);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("lock: value 'nap' does not have a value in the enumeration 'backup, "),
        "{body}"
    );
    let (status, _) = post(&s, "/vm/100/lock", &json!({})).await;
    assert_eq!(status, 400, "a missing lock is not a clear");
    let (status, body) = post(&s, "/vm/555/lock", &json!({"lock": "backup"})).await;
    assert_eq!(status, 404);
    assert_eq!(body["message"], "VM 555 does not exist\n");
    assert_eq!(resource_100(&s).await["lock"], "backup");

    let (status, body) = post(&s, "/vm/100/lock", &json!({"lock": null})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!({"vmid": 100, "lock": null}));
    assert!(resource_100(&s).await.get("lock").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_nodes_locked_config_is_listed_unlocked_and_moved_through_a_live_node() {
    let s = served().await;
    running_vm_on_pve2(&s).await;
    post(&s, "/vm/100/lock", &json!({"lock": "migrate"})).await;
    let (status, _) = post(&s, "/nodes/pve2/power", &json!({"action": "off"})).await;
    assert_eq!(status, 200);
    // pve1 still lists the dead node's guest with its node and its lock; pve2's pvestatd
    // sends nothing, so its run state is unknown.
    let entry = resource_100(&s).await;
    assert_eq!(entry["node"], "pve2");
    assert_eq!(entry["lock"], "migrate");
    assert_eq!(entry["status"], "unknown");
    assert_eq!(s.sim.vm_running(100), Some(false));

    let clear = json!({"vmid": 100, "node": "pve2"});
    let (status, body) = post(&s, "/pmxcfs/clear-lock", &clear).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({"vmid": 100, "node": "pve2", "lock": "migrate"})
    );
    assert!(resource_100(&s).await.get("lock").is_none());
    let (_, body) = post(&s, "/pmxcfs/clear-lock", &clear).await;
    assert_eq!(body["data"]["lock"], Value::Null, "nothing left to clear");
    let (status, body) = post(
        &s,
        "/pmxcfs/clear-lock",
        &json!({"vmid": 100, "node": "pve9"}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(body["message"], "no such cluster node 'pve9'\n");
    let (status, body) = post(
        &s,
        "/pmxcfs/clear-lock",
        &json!({"vmid": 100, "node": "pve3"}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(
        body["message"],
        "Configuration file 'nodes/pve3/qemu-server/100.conf' does not exist\n"
    );
    let (status, _) = post(&s, "/pmxcfs/clear-lock", &json!({"vmid": 100})).await;
    assert_eq!(status, 400);

    // The dead node's config moves to a live node, where the guest starts.
    let mv = json!({"vmid": 100, "from": "pve2", "to": "pve3"});
    let (status, body) = post(&s, "/pmxcfs/move-config", &mv).await;
    assert_eq!(status, 200, "{body}");
    let entry = resource_100(&s).await;
    assert_eq!(
        (&entry["node"], &entry["status"]),
        (&json!("pve3"), &json!("stopped"))
    );
    let resp = s
        .client()
        .post(s.url("/nodes/pve3/qemu/100/status/start"))
        .header("Authorization", token_header(AGENT_TOKEN))
        .form_body(&[])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(s.sim.vm_running(100), Some(true), "tasks are instant here");
}
