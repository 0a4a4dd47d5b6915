//! Scenario tests of the read endpoints: version, cluster status, nextid, resources, nodes,
//! VM lists and status, storages and networks, including the quirks mode.

use serde_json::Value;

use super::support::{fast, with};
use crate::{Route, SimConfig};

const N1: (&str, &str) = ("node", "pve1");
const V100: (&str, &str) = ("vmid", "100");

#[tokio::test]
async fn version_and_cluster_status() {
    let s = fast();
    let v = s.ok(Route::Version, &[]).await;
    assert_eq!(
        (v["version"].as_str(), v["release"].as_str()),
        (Some("9.1.1"), Some("9.1"))
    );
    assert_eq!(v["repoid"].as_str().unwrap().len(), 8);
    s.faults.set_node_down("pve3", true);
    let st = s.ok(Route::ClusterStatus, &[]).await;
    let items = st.as_array().unwrap();
    assert_eq!(items[0]["type"], "cluster");
    assert_eq!(items[0]["nodes"], 3);
    assert_eq!(items[0]["quorate"], 1);
    let pve3 = items.iter().find(|i| i["id"] == "node/pve3").unwrap();
    assert_eq!(
        (pve3["online"].as_u64(), pve3["nodeid"].as_u64()),
        (Some(0), Some(3))
    );
    assert_eq!(pve3["ip"], "192.0.2.13");
    let mut single = SimConfig::fast();
    single.nodes.truncate(1);
    let one = with(single).ok(Route::ClusterStatus, &[]).await;
    assert_eq!(one.as_array().unwrap().len(), 1);
    assert_eq!(one[0]["nodeid"], 0);
    assert_eq!(one[0]["local"], 1);
}

#[tokio::test]
async fn nextid_is_the_lowest_free_and_asserts_a_given_id() {
    let s = fast();
    assert_eq!(s.ok(Route::ClusterNextid, &[]).await, Value::from(100));
    s.create_vm("pve2", "100", "local-lvm").await;
    assert_eq!(s.ok(Route::ClusterNextid, &[]).await, Value::from(101));
    let e = s.err(Route::ClusterNextid, &[("vmid", "100")]).await;
    assert_eq!(
        (e.status, e.errors["vmid"].as_str()),
        (400, "VM 100 already exists")
    );
    assert_eq!(
        s.ok(Route::ClusterNextid, &[("vmid", "4242")]).await,
        Value::from(4242)
    );
    let q = with(SimConfig {
        quirks: true,
        ..SimConfig::fast()
    });
    assert_eq!(q.ok(Route::ClusterNextid, &[]).await, Value::from("100"));
}

#[tokio::test]
async fn resources_list_vms_nodes_and_storage_per_node() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.ok(Route::VmConfigPut, &[N1, V100, ("tags", "web")]).await;
    s.start("pve1", "100").await;
    let vms = s.ok(Route::ClusterResources, &[("type", "vm")]).await;
    let vm = vms
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["vmid"] == 100)
        .cloned()
        .unwrap();
    assert_eq!(vm["id"], "qemu/100");
    assert_eq!(
        (vm["status"].as_str(), vm["node"].as_str()),
        (Some("running"), Some("pve1"))
    );
    assert_eq!(vm["maxmem"], Value::from(2048u64 << 20));
    assert_eq!(vm["maxdisk"], Value::from(8u64 << 30));
    assert_eq!(vm["tags"], "web");
    let tpl = vms
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["vmid"] == 9000)
        .cloned()
        .unwrap();
    assert_eq!(tpl["template"], 1);
    let storage = s.ok(Route::ClusterResources, &[("type", "storage")]).await;
    assert_eq!(
        storage.as_array().unwrap().len(),
        9,
        "3 storages on 3 nodes"
    );
    let ceph1 = storage
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == "storage/pve1/ceph")
        .cloned()
        .unwrap();
    assert_eq!(
        (ceph1["shared"].as_u64(), ceph1["plugintype"].as_str()),
        (Some(1), Some("rbd"))
    );
    let nodes = s.ok(Route::ClusterResources, &[("type", "node")]).await;
    assert_eq!(nodes.as_array().unwrap().len(), 3);
    let all = s.ok(Route::ClusterResources, &[]).await;
    assert_eq!(all.as_array().unwrap().len(), 2 + 9 + 3);
    s.faults.set_node_down("pve1", true);
    let vms = s.ok(Route::ClusterResources, &[("type", "vm")]).await;
    assert!(
        vms.as_array()
            .unwrap()
            .iter()
            .all(|v| v["status"] == "unknown")
    );
}

#[tokio::test]
async fn nodes_report_load_and_offline_state() {
    let s = fast();
    let before = s.ok(Route::Nodes, &[]).await;
    let mem = |v: &Value, n: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|x| x["node"] == n)
            .unwrap()["mem"]
            .as_u64()
            .unwrap()
    };
    s.create_vm("pve1", "100", "local-lvm").await;
    s.start("pve1", "100").await;
    let after = s.ok(Route::Nodes, &[]).await;
    assert!(mem(&after, "pve1") > mem(&before, "pve1"));
    assert_eq!(mem(&after, "pve2"), mem(&before, "pve2"));
    let pve1 = after
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["node"] == "pve1")
        .cloned()
        .unwrap();
    assert_eq!(
        (
            pve1["status"].as_str(),
            pve1["maxcpu"].as_u64(),
            pve1["type"].as_str()
        ),
        (Some("online"), Some(16), Some("node"))
    );
    assert_eq!(pve1["ssl_fingerprint"].as_str().unwrap().len(), 95);
    s.faults.set_node_down("pve2", true);
    let down = s.ok(Route::Nodes, &[]).await;
    let pve2 = down
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["node"] == "pve2")
        .cloned()
        .unwrap();
    assert_eq!(pve2["status"], "offline");
    assert!(pve2.get("mem").is_none());
    let status = s.ok(Route::NodeStatus, &[N1]).await;
    assert_eq!(status["memory"]["total"], Value::from(64u64 << 30));
    assert!(
        status["pveversion"]
            .as_str()
            .unwrap()
            .starts_with("pve-manager/9.1.1/")
    );
    assert_eq!(status["loadavg"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn vm_list_and_status_objects() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("agent", "1"), ("lock", "backup")],
    )
    .await;
    let cur = s.ok(Route::VmStatusCurrent, &[N1, V100]).await;
    assert_eq!(
        (cur["status"].as_str(), cur["qmpstatus"].as_str()),
        (Some("stopped"), Some("stopped"))
    );
    assert_eq!(cur["ha"], serde_json::json!({ "managed": 0 }));
    assert_eq!(
        (cur["agent"].as_u64(), cur["lock"].as_str()),
        (Some(1), Some("backup"))
    );
    assert!(cur.get("pid").is_none());
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("delete", "lock"), ("skiplock", "1")],
    )
    .await;
    s.start("pve1", "100").await;
    let cur = s.ok(Route::VmStatusCurrent, &[N1, V100]).await;
    assert!(cur["pid"].as_u64().unwrap() > 0);
    assert!(cur["mem"].as_u64().unwrap() > 0);
    assert_eq!(cur["maxmem"], Value::from(2048u64 << 20));
    assert_eq!(cur["name"], "VM 100");
    let list = s.ok(Route::VmList, &[N1]).await;
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert!(list[0].get("qmpstatus").is_none());
    let full = s.ok(Route::VmList, &[N1, ("full", "1")]).await;
    assert!(full[0].get("qmpstatus").is_some());
    assert_eq!(
        s.ok(Route::VmList, &[("node", "pve2")]).await,
        Value::Array(vec![])
    );
    let q = with(SimConfig {
        quirks: true,
        ..SimConfig::fast()
    });
    let ql = q.ok(Route::VmList, &[N1]).await;
    assert_eq!(ql[0]["vmid"], "9000");
    assert_eq!(ql[0]["maxmem"], Value::from((2048u64 << 20).to_string()));
    assert_eq!(ql[0]["maxdisk"], Value::from((8u64 << 30).to_string()));
}

#[tokio::test]
async fn storages_and_networks_of_a_node() {
    let mut cfg = SimConfig::fast();
    cfg.storages[1].nodes = vec!["pve1".into(), "pve2".into()];
    let s = with(cfg);
    let list = s.ok(Route::StorageList, &[N1]).await;
    assert_eq!(list.as_array().unwrap().len(), 3);
    let local = list
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["storage"] == "local")
        .cloned()
        .unwrap();
    assert_eq!(local["content"], "backup,images,iso,snippets,vztmpl");
    assert_eq!(
        (local["shared"].as_u64(), local["active"].as_u64()),
        (Some(0), Some(1))
    );
    let images = s
        .ok(Route::StorageList, &[N1, ("content", "snippets")])
        .await;
    assert_eq!(images.as_array().unwrap().len(), 1);
    let to3 = s.ok(Route::StorageList, &[N1, ("target", "pve3")]).await;
    assert_eq!(to3.as_array().unwrap().len(), 2);
    assert_eq!(
        s.ok(Route::StorageList, &[("node", "pve3")])
            .await
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let e = s
        .err(
            Route::StorageStatus,
            &[("node", "pve3"), ("storage", "local-lvm")],
        )
        .await;
    assert_eq!(e.errors["storage"], "No such storage.");
    let ceph = s.ok(Route::StorageStatus, &[N1, ("storage", "ceph")]).await;
    assert_eq!(ceph["used"], Value::from((8u64 << 30) + (4 << 20)));
    assert_eq!(ceph["total"], Value::from(4u64 << 40));
    let e = s
        .err(Route::StorageContent, &[N1, ("storage", "nope")])
        .await;
    assert_eq!(e.message, "storage 'nope' does not exist");
    s.c.write_snippet("pve1", "local", "user.yaml", "#cloud-config\n")
        .unwrap();
    let snippets = s
        .ok(
            Route::StorageContent,
            &[N1, ("storage", "local"), ("content", "snippets")],
        )
        .await;
    assert_eq!(snippets[0]["volid"], "local:snippets/user.yaml");
    assert_eq!(snippets[0]["size"], 14);
    let net = s.ok(Route::NetworkList, &[N1]).await;
    assert_eq!(net.as_array().unwrap().len(), 3);
    let bridges = s
        .ok(Route::NetworkList, &[N1, ("type", "any_bridge")])
        .await;
    assert_eq!(bridges[0]["iface"], "vmbr0");
    assert_eq!(bridges[0]["address"], "192.0.2.11");
    assert_eq!(bridges.as_array().unwrap().len(), 2);
    assert_eq!(
        s.ok(Route::NetworkList, &[N1, ("type", "bond")]).await,
        Value::Array(vec![])
    );
}
