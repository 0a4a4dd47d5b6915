//! The in-process facade: the request pipeline's order and texts, the raw answer bytes, and
//! the schema conformance of the simulator's answers.

// Test helpers outside #[test] functions may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use crate::common;

use pve_sim::schema::Schema;
use pve_sim::{Caller, HttpMethod, Route, Sim};
use serde_json::{Value, json};

fn sim() -> Sim {
    Sim::new(common::config()).unwrap()
}

fn p(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn token() -> Caller {
    Caller::token("root@pam", "fleet")
}

#[tokio::test]
async fn localhost_means_the_node_being_talked_to() {
    let s = sim();
    let r = s
        .handle(
            &token(),
            "pve2",
            HttpMethod::Post,
            "/nodes/localhost/qemu",
            p(&[("vmid", "150"), ("memory", "512")]),
        )
        .await;
    let upid = r.unwrap().data.as_str().unwrap().to_string();
    assert!(upid.starts_with("UPID:pve2:"), "{upid}");
    assert_eq!(s.vm_node(150).as_deref(), Some("pve2"));
}

#[tokio::test]
async fn unknown_and_dead_nodes_fail_like_a_proxy() {
    let s = sim();
    let err = s
        .handle(
            &token(),
            "pve1",
            HttpMethod::Get,
            "/nodes/nope/status",
            vec![],
        )
        .await
        .unwrap_err();
    assert_eq!(err.status, 500);
    assert_eq!(
        err.message,
        "hostname lookup 'nope' failed - failed to get address info for: nope: Name or service not known"
    );
    s.faults().set_node_down("pve3", true);
    let err = s
        .handle(
            &token(),
            "pve1",
            HttpMethod::Get,
            "/nodes/pve3/status",
            vec![],
        )
        .await
        .unwrap_err();
    assert_eq!(
        (err.status, err.message.as_str()),
        (595, "No route to host")
    );
    // Validation happens on the target node: a dead node hides parameter errors.
    let err = s
        .handle(
            &token(),
            "pve1",
            HttpMethod::Get,
            "/nodes/pve3/storage",
            p(&[("bogus", "1")]),
        )
        .await
        .unwrap_err();
    assert_eq!(err.status, 595);
}

#[tokio::test]
async fn unknown_methods_are_501_with_the_decoded_path() {
    let s = sim();
    let err = s
        .handle(
            &token(),
            "pve1",
            HttpMethod::Get,
            "/nodes/pve1/fo%6F",
            vec![],
        )
        .await
        .unwrap_err();
    assert_eq!(
        (err.status, err.message.as_str()),
        (501, "Method 'GET /nodes/pve1/foo' not implemented")
    );
    let err = s
        .handle(&token(), "pve1", HttpMethod::Put, "/nodes", vec![])
        .await
        .unwrap_err();
    assert_eq!(err.message, "Method 'PUT /nodes' not implemented");
}

#[tokio::test]
async fn root_only_options_are_refused_for_tokens_after_validation() {
    let s = sim();
    let path = "/nodes/pve1/qemu/9000/status/stop";
    let err = s
        .handle(
            &token(),
            "pve1",
            HttpMethod::Post,
            path,
            p(&[("skiplock", "1")]),
        )
        .await
        .unwrap_err();
    assert_eq!(err.status, 400);
    assert_eq!(err.errors["skiplock"], "Only root may use this option.");
    // Schema errors come first.
    let err = s
        .handle(
            &token(),
            "pve1",
            HttpMethod::Post,
            path,
            p(&[("skiplock", "yes")]),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.errors["skiplock"],
        "type check ('boolean') failed - got 'yes'"
    );
    let ok = s
        .handle(
            &Caller::root(),
            "pve1",
            HttpMethod::Post,
            path,
            p(&[("skiplock", "1")]),
        )
        .await;
    assert!(ok.is_ok(), "{ok:?}");
}

#[tokio::test]
async fn raw_answers_are_the_bytes_http_sends() {
    let s = sim();
    let raw = s
        .handle_raw(
            &token(),
            "pve1",
            HttpMethod::Get,
            "/cluster/nextid",
            p(&[("vmid", "x")]),
        )
        .await;
    assert_eq!(
        (raw.status, raw.reason.as_str(), raw.drop),
        (400, "Parameter verification failed.", false)
    );
    let body: Value = serde_json::from_slice(&raw.body).unwrap();
    assert_eq!(
        body,
        json!({"data": null, "message": "Parameter verification failed.\n",
               "errors": {"vmid": "type check ('integer') failed - got 'x'"}})
    );
    let raw = s
        .handle_raw(&token(), "pve1", HttpMethod::Get, "/version", vec![])
        .await;
    assert_eq!((raw.status, raw.reason.as_str()), (200, "OK"));
    assert!(serde_json::from_slice::<Value>(&raw.body).unwrap()["data"].is_object());

    s.faults().drop_responses("GET", "/version", 1);
    assert!(
        s.handle_raw(&token(), "pve1", HttpMethod::Get, "/version", vec![])
            .await
            .drop
    );
    assert!(
        !s.handle_raw(&token(), "pve1", HttpMethod::Get, "/version", vec![])
            .await
            .drop
    );
}

#[tokio::test]
async fn the_error_rate_fault_has_no_effect() {
    let s = sim();
    s.faults().set_error_rate(1.0);
    let err = s
        .handle(
            &token(),
            "pve1",
            HttpMethod::Post,
            "/nodes/pve1/qemu",
            p(&[("vmid", "500")]),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (err.status, err.message.as_str()),
        (503, "Service Unavailable")
    );
    assert_eq!(s.vm_node(500), None);
}

#[tokio::test]
async fn answers_of_the_read_methods_conform_to_the_schema() {
    let s = sim();
    s.set_ha_resources(vec![pve_sim::ha::HaResource {
        sid: "vm:9000".into(),
        state: Some(pve_sim::ha::HaState::Stopped),
        ..Default::default()
    }])
    .unwrap();
    let schema = Schema::embedded();
    let reads = [
        (Route::HaResourceList, "/cluster/ha/resources"),
        (Route::HaResourceRead, "/cluster/ha/resources/vm:9000"),
        (Route::Version, "/version"),
        (Route::ClusterResources, "/cluster/resources"),
        (Route::ClusterStatus, "/cluster/status"),
        (Route::ClusterNextid, "/cluster/nextid"),
        (Route::Nodes, "/nodes"),
        (Route::NodeStatus, "/nodes/pve1/status"),
        (Route::VmList, "/nodes/pve1/qemu"),
        (Route::VmConfigGet, "/nodes/pve1/qemu/9000/config"),
        (
            Route::VmStatusCurrent,
            "/nodes/pve1/qemu/9000/status/current",
        ),
        (Route::SnapshotList, "/nodes/pve1/qemu/9000/snapshot"),
        (Route::StorageList, "/nodes/pve1/storage"),
        (
            Route::StorageContent,
            "/nodes/pve1/storage/local-lvm/content",
        ),
        (Route::NetworkList, "/nodes/pve1/network"),
    ];
    for (route, path) in reads {
        let reply = s
            .handle(&Caller::root(), "pve1", HttpMethod::Get, path, vec![])
            .await;
        let reply = reply.unwrap_or_else(|e| panic!("{path}: {e}"));
        let problems = schema.check_returns(route.method(), route.template(), &reply.data);
        assert!(problems.is_empty(), "{path}: {problems:?}");
    }
}
