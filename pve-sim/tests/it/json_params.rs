//! JSON request bodies over HTTPS as PVE judges them: `decode_json` keeps objects, arrays and
//! booleans as Perl references, so the schema check refuses them for scalar parameters
//! (`type check ('integer') failed - got HASH`), while strings, numbers and booleans for
//! boolean parameters work as form values do; an array for a `*-list` string is joined with
//! commas first.

use crate::common;

use std::time::{Duration, Instant};

use common::{Served, TOKEN, serve, status_line, token_header};
use serde_json::{Value, json};

/// A JSON request as `root@pam!fleet`; (status, body).
async fn send_json(s: &Served, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let client = s.client();
    let url = s.url(path);
    let req = match method {
        "POST" => client.post(url),
        "PUT" => client.put(url),
        _ => client.get(url),
    };
    let resp = req
        .header("Authorization", token_header(TOKEN))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn get(s: &Served, path: &str) -> Value {
    let resp = s
        .client()
        .get(s.url(path))
        .header("Authorization", token_header(TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "GET {path}");
    resp.json::<Value>().await.unwrap()["data"].clone()
}

/// Create VM `vmid` on pve1 from a JSON body and wait for its task to end OK.
async fn create_vm(s: &Served, vmid: u32) {
    let (status, body) = send_json(
        s,
        "POST",
        "/nodes/pve1/qemu",
        &json!({"vmid": vmid, "memory": "512", "cores": 1, "start": false}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let upid = body["data"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let st = get(s, &format!("/nodes/pve1/tasks/{upid}/status")).await;
        if st["status"] == "stopped" {
            assert_eq!(st["exitstatus"], "OK", "{st}");
            return;
        }
        assert!(Instant::now() < deadline, "create of {vmid} still running");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_objects_and_arrays_fail_scalar_parameters_as_in_pve() {
    let s = serve().await;
    create_vm(&s, 210).await;
    let config = "/nodes/pve1/qemu/210/config";
    let cases = [
        (
            json!({"cores": {"a": 1}}),
            "cores",
            "type check ('integer') failed - got HASH",
        ),
        // `memory` is a property string (`[current=]<integer>`) since qemu-server 8.
        (
            json!({"memory": {"a": 1}}),
            "memory",
            "type check ('string') failed - got HASH",
        ),
        (
            json!({"cores": [2]}),
            "cores",
            "type check ('integer') failed - got ARRAY",
        ),
        (
            json!({"name": ["web"]}),
            "name",
            "type check ('string') failed - got ARRAY",
        ),
        (
            json!({"cpulimit": [1]}),
            "cpulimit",
            "type check ('number') failed - got ARRAY",
        ),
        (
            json!({"onboot": {}}),
            "onboot",
            "type check ('boolean') failed - got HASH",
        ),
        (
            json!({"cores": true}),
            "cores",
            "type check ('integer') failed - got JSON::PP::Boolean",
        ),
        (
            json!({"description": false}),
            "description",
            "type check ('string') failed - got JSON::PP::Boolean",
        ),
    ];
    for method in ["PUT", "POST"] {
        for (body, key, message) in &cases {
            let (status, answer) = send_json(&s, method, config, body).await;
            assert_eq!(status, 400, "{method} {body}");
            assert_eq!(
                answer,
                json!({
                    "data": null,
                    "message": "Parameter verification failed.\n",
                    "errors": {*key: *message},
                }),
                "{method} {body}"
            );
        }
    }
    // The status line carries the message's first line.
    let body = r#"{"cores": {"a": 1}}"#;
    let raw = s
        .raw(&format!(
            "PUT /api2/json{config} HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            token_header(TOKEN),
            body.len()
        ))
        .await;
    assert_eq!(
        status_line(&raw),
        "HTTP/1.1 400 Parameter verification failed."
    );
    // Every failing parameter is reported at once, the others stay unjudged by the type.
    let (status, answer) = send_json(
        &s,
        "PUT",
        config,
        &json!({"cores": {"a": 1}, "sockets": [1], "name": "ok", "bogus": null}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["errors"],
        json!({
            "cores": "type check ('integer') failed - got HASH",
            "sockets": "type check ('integer') failed - got ARRAY",
            "bogus": "property is not defined in schema and the schema does not allow \
                      additional properties",
        })
    );
    // A path parameter sent as an object never equals the path segment.
    let (status, answer) = send_json(&s, "PUT", config, &json!({"vmid": {"a": 1}})).await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["errors"],
        json!({"vmid": "duplicate parameter (already defined in URI) with conflicting values!"})
    );
    // Nothing of the refused requests reached the config.
    let cfg = get(&s, config).await;
    assert_eq!(cfg["cores"], 1, "{cfg}");
    assert!(cfg.get("name").is_none(), "{cfg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_json_values_work_like_form_values() {
    let s = serve().await;
    create_vm(&s, 211).await;
    let config = "/nodes/pve1/qemu/211/config";
    let (status, answer) = send_json(
        &s,
        "PUT",
        config,
        &json!({
            "cores": 2,
            "sockets": "1",
            // Perl holds 2.0 as a double that prints as 2: a valid integer.
            "vcpus": 2.0,
            "cpulimit": 1.5,
            "onboot": true,
            "tablet": false,
            "name": "json-web",
            "description": "from JSON",
            "tags": ["blue", "green"],
            "balloon": null,
        }),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({"data": null}));
    let cfg = get(&s, config).await;
    assert_eq!(cfg["cores"], 2, "{cfg}");
    assert_eq!(cfg["sockets"], 1, "{cfg}");
    assert_eq!(cfg["vcpus"], 2, "{cfg}");
    assert_eq!(cfg["cpulimit"], 1.5, "{cfg}");
    assert_eq!(cfg["onboot"], 1, "{cfg}");
    assert_eq!(cfg["tablet"], 0, "{cfg}");
    assert_eq!(cfg["name"], "json-web", "{cfg}");
    assert_eq!(cfg["description"], "from JSON", "{cfg}");
    // The array of a `pve-tag-list` is joined with commas before validation.
    assert_eq!(cfg["tags"], "blue;green", "{cfg}");
    assert!(cfg.get("balloon").is_none(), "{cfg}");

    // `delete` (a `pve-configid-list`) as an array works like its comma-separated string.
    let (status, answer) = send_json(
        &s,
        "PUT",
        config,
        &json!({"delete": ["description", "tablet"], "start": null}),
    )
    .await;
    // `start` is no parameter of the config update: even a null for it is an unknown key.
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["errors"],
        json!({"start": "property is not defined in schema and the schema does not allow \
                          additional properties"})
    );
    let (status, answer) = send_json(
        &s,
        "PUT",
        config,
        &json!({"delete": ["description", "tablet"]}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let cfg = get(&s, config).await;
    assert!(cfg.get("description").is_none(), "{cfg}");
    assert!(cfg.get("tablet").is_none(), "{cfg}");
    assert_eq!(cfg["onboot"], 1, "{cfg}");
}
