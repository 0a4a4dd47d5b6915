//! Conformance against the official PVE API schemas (9.1 and 8.4): every route the simulator
//! serves exists; every request the client can build uses only declared parameters with
//! compatible types, formats and enums and sends every required one; every field the client
//! reads is declared where the schema lists properties; and what the simulator answers has
//! the declared types.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::collections::BTreeSet;

use pve::calls::{PVE9_ONLY_PARAMS, ResponseShape, catalog};
use pve_sim::schema::{MethodSchema, Schema};
use pve_sim::{HttpMethod, Route};
use pvefleet_tests::reference_data::read_reference;

fn load(rel: &str) -> Schema {
    Schema::from_json(&read_reference(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn http(m: pve::Method) -> HttpMethod {
    match m {
        pve::Method::Get => HttpMethod::Get,
        pve::Method::Post => HttpMethod::Post,
        pve::Method::Put => HttpMethod::Put,
        pve::Method::Delete => HttpMethod::Delete,
    }
}

/// Properties a `returns` schema lists for an object (or for the items of an array).
fn listed_properties(returns: &serde_json::Value, array: bool) -> Option<BTreeSet<String>> {
    let obj = if array { &returns["items"] } else { returns };
    obj["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
}

fn returns_optional(returns: &serde_json::Value, array: bool, field: &str) -> bool {
    let obj = if array { &returns["items"] } else { returns };
    obj["properties"][field]["optional"].as_u64() == Some(1)
}

/// The simulator's embedded `[{path, info}]` subset of the 9.1 schema.
fn embedded_subset() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../pve-sim/schema/endpoints-9.1.json"),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every node of the full schema tree by path.
fn nodes_by_path(
    nodes: &[serde_json::Value],
    out: &mut std::collections::BTreeMap<String, serde_json::Value>,
) {
    for n in nodes {
        if let Some(path) = n["path"].as_str() {
            out.insert(path.to_string(), n.clone());
        }
        if let Some(children) = n["children"].as_array() {
            nodes_by_path(children, out);
        }
    }
}

#[test]
fn the_simulators_embedded_schema_is_the_official_subset() {
    let full: serde_json::Value =
        serde_json::from_str(&read_reference("pve-api/apidata.json")).unwrap();
    let mut nodes = std::collections::BTreeMap::new();
    nodes_by_path(full.as_array().unwrap(), &mut nodes);
    let subset = embedded_subset();
    let mut methods = 0;
    for entry in &subset {
        let path = entry["path"].as_str().unwrap();
        let node = nodes
            .get(path)
            .unwrap_or_else(|| panic!("{path}: not in apidata.json"));
        for (method, schema) in entry["info"].as_object().unwrap() {
            assert!(
                &node["info"][method] == schema,
                "pve-sim/schema/endpoints-9.1.json: {method} {path} differs from apidata.json"
            );
            methods += 1;
        }
    }
    assert_eq!(methods, 53, "the fleet uses 53 PVE methods");
}

#[test]
fn every_simulator_route_exists_in_both_schemas() {
    for rel in ["pve-api/apidata.json", "pve-api/apidata-pve8.4.json"] {
        let schema = load(rel);
        for route in Route::ALL {
            assert!(
                schema.method(route.method(), route.template()).is_some(),
                "{rel}: simulator serves {} {} which the schema does not declare",
                route.method().as_str(),
                route.template()
            );
        }
    }
}

#[test]
fn client_catalog_covers_every_method_the_fleet_uses() {
    let mut wanted = BTreeSet::new();
    for e in &embedded_subset() {
        for m in e["info"].as_object().unwrap().keys() {
            wanted.insert((m.clone(), e["path"].as_str().unwrap().to_string()));
        }
    }
    let built: BTreeSet<(String, String)> = catalog()
        .iter()
        .map(|c| {
            (
                c.request.method.as_str().to_string(),
                c.template.to_string(),
            )
        })
        .collect();
    let missing: Vec<_> = wanted.difference(&built).collect();
    assert!(
        missing.is_empty(),
        "client has no typed call for: {missing:?}"
    );
}

fn check_client_against(rel: &str, is_pve8: bool) {
    let schema = load(rel);
    let full91 = if is_pve8 {
        Some(load("pve-api/apidata.json"))
    } else {
        None
    };
    let mut problems = Vec::new();
    for entry in catalog() {
        let req = &entry.request;
        let what = format!("{} {}", req.method, req.path);
        let Some((template, path_params)) = schema.match_path(http(req.method), &req.path) else {
            problems.push(format!("{what}: path/method not in {rel}"));
            continue;
        };
        if template != entry.template {
            problems.push(format!(
                "{what}: matches {template}, catalog says {}",
                entry.template
            ));
        }
        let method: &MethodSchema = schema.method(http(req.method), &template).unwrap();
        let mut params = path_params.clone();
        for (k, v) in &req.params {
            if is_pve8 && PVE9_ONLY_PARAMS.contains(&k.as_str()) {
                // Gated by version in the client; it must really be 9.x-only.
                assert!(
                    !method.parameters.contains_key(k),
                    "{k} is listed as PVE 9 only but PVE 8.4 declares it for {what}"
                );
                continue;
            }
            params.push((k.clone(), v.clone()));
        }
        if let Err(errors) = schema.validate(http(req.method), &template, &params) {
            problems.push(format!("{what}: {errors:?}"));
        }
        let (fields, array) = match &entry.response {
            ResponseShape::Object(f) => (*f, false),
            ResponseShape::ArrayOf(f) => (*f, true),
            ResponseShape::Upid | ResponseShape::OptionalUpid => {
                if method.returns["type"] != "string" {
                    problems.push(format!(
                        "{what}: client expects a UPID, schema returns {}",
                        method.returns
                    ));
                }
                continue;
            }
            ResponseShape::Null => {
                if method.returns["type"] != "null" {
                    problems.push(format!(
                        "{what}: client expects null, schema returns {}",
                        method.returns
                    ));
                }
                continue;
            }
            _ => continue,
        };
        let Some(listed) = listed_properties(&method.returns, array) else {
            continue;
        };
        for field in fields {
            if listed.contains(*field) {
                continue;
            }
            if pve::types::UNDECLARED_FIELDS_READ.contains(&(entry.template, *field)) {
                continue;
            }
            if let Some(s91) = &full91 {
                // Declared only from 9.x on: allowed when 9.1 makes it optional, so the
                // client cannot depend on it.
                let m91 = s91.method(http(req.method), &template).unwrap();
                if returns_optional(&m91.returns, array, field) {
                    continue;
                }
            }
            problems.push(format!(
                "{what}: client reads '{field}', not declared in {rel} returns"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} conformance problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn client_requests_and_fields_conform_to_pve_9_1() {
    check_client_against("pve-api/apidata.json", false);
}

#[test]
fn client_requests_and_fields_conform_to_pve_8_4() {
    check_client_against("pve-api/apidata-pve8.4.json", true);
}

#[test]
fn the_schema_checker_catches_a_bad_request() {
    // The check above must be able to fail: an undeclared parameter and a bad enum value.
    let schema = load("pve-api/apidata.json");
    let bad = vec![
        ("node".to_string(), "pve1".to_string()),
        ("vmid".to_string(), "100".to_string()),
        ("bogus".to_string(), "1".to_string()),
        ("scsihw".to_string(), "nonsense".to_string()),
    ];
    let errors = schema
        .validate(HttpMethod::Put, "/nodes/{node}/qemu/{vmid}/config", &bad)
        .unwrap_err();
    assert!(errors.contains_key("bogus"), "{errors:?}");
    assert!(errors.contains_key("scsihw"), "{errors:?}");
}

/// Run the full lifecycle in process with every read the client has, recording each answer,
/// then check every answer against `returns` of the given schema.
async fn simulator_answers_against(rel: &str) {
    use pvefleet_tests::lifecycle::{Plan, full_lifecycle};
    use pvefleet_tests::recording::Recording;
    use pvefleet_tests::sim_backend::SimBackend;

    let schema = load(rel);
    let sim = pve_sim::Sim::new(pve_sim::SimConfig {
        quirks: false,
        ..pve_sim::SimConfig::fast()
    })
    .unwrap();
    let backend = Recording::new(SimBackend::new(
        sim.clone(),
        pve_sim::Caller::token("root@pam", "fleet"),
        "pve1",
    ));
    let log = backend.log();
    let client = pve::Client::new(backend);
    full_lifecycle(
        &client,
        &sim,
        &Plan::default_cluster("10.20.0.30".parse().unwrap()),
        "conform",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    pvefleet_tests::tour::tour(&client, "pve1", 9000, 300)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // PVE's HA manager holds one guest, so the HA resource list answers with an entry.
    sim.set_ha_resources(vec![pve_sim::ha::HaResource {
        sid: "vm:9000".into(),
        state: Some(pve_sim::ha::HaState::Started),
        ..pve_sim::ha::HaResource::default()
    }])
    .unwrap();
    // Every read method once more, on a VM that exists, so each route's answer is seen.
    let entries = catalog();
    for entry in &entries {
        if entry.request.method == pve::Method::Get && !entry.template.contains("{upid}") {
            let mut req = entry.request.clone();
            req.path = req.path.replace("/qemu/100", "/qemu/9000");
            req.params
                .retain(|(k, _)| k != "snapshot" && k != "vmid" && k != "target");
            let _ = client.execute(&req).await;
        }
    }
    // What an agent does on the target of a remote migration (the move itself needs a second
    // PVE cluster: tests/tests/it/remote_migration.rs).
    let user = "pvefleet-migrate@pve";
    client.create_user(user, "conformance").await.unwrap();
    client
        .create_role("FleetMigrate", &["VM.Allocate"])
        .await
        .unwrap();
    client
        .update_role("FleetMigrate", &["VM.Allocate", "Sys.Incoming"])
        .await
        .unwrap();
    let token = client
        .create_token(user, "vm9000", "conformance", 4_000_000_000, true)
        .await
        .unwrap();
    client
        .put_acl(
            "/vms/9000",
            "FleetMigrate",
            pve::calls::AclSubject::Token(&token.full_tokenid),
            false,
        )
        .await
        .unwrap();
    client.delete_token(user, "vm9000").await.unwrap();
    // What `pvefleet doctor` asks of the agent's own token.
    let held = client.permissions("/vms").await.unwrap();
    assert!(held.contains("VM.Allocate"), "{held:?}");
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (req, data) in log.lock().unwrap().iter() {
        let (template, _) = schema
            .match_path(http(req.method), &req.path)
            .expect("recorded path is in the schema");
        seen.insert((req.method.as_str().to_string(), template.clone()));
        for p in schema.check_returns(http(req.method), &template, data) {
            problems.push(format!("{} {}: {p}", req.method, req.path));
        }
    }
    // All 53 but the ticket login (tokens may not log in), task stop (nothing left running)
    // and the remote migration (it needs a second PVE cluster).
    let unseen: Vec<String> = Route::ALL
        .iter()
        .filter(|r| !seen.contains(&(r.method().as_str().to_string(), r.template().to_string())))
        .map(|r| format!("{} {}", r.method().as_str(), r.template()))
        .collect();
    assert_eq!(
        unseen,
        [
            "POST /access/ticket",
            "POST /nodes/{node}/qemu/{vmid}/remote_migrate",
            "DELETE /nodes/{node}/tasks/{upid}"
        ],
        "routes whose answers were not checked"
    );
    assert!(
        problems.is_empty(),
        "{rel}: simulator answers off-schema:\n{}",
        problems.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulator_answers_match_the_pve_9_1_return_schemas() {
    simulator_answers_against("pve-api/apidata.json").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulator_answers_match_the_pve_8_4_return_schemas() {
    simulator_answers_against("pve-api/apidata-pve8.4.json").await;
}
