//! The HTTPS edge against real TLS on 127.0.0.1: envelope, status lines, authentication,
//! parameter handling, limits, faults and the `/_sim` control endpoints.

// Test helpers outside #[test] functions may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use common::{FormBody, RO_TOKEN, TOKEN, body_of, serve, serve_node, status_line, token_header};
use pve_sim::faults::FaultSettings;
use serde_json::{Value, json};

async fn json_of(resp: reqwest::Response) -> Value {
    resp.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn success_has_the_envelope_and_pve_headers() {
    let s = serve().await;
    let resp = s
        .client()
        .get(s.url("/version"))
        .header("Authorization", token_header(TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "application/json;charset=UTF-8"
    );
    assert_eq!(resp.headers()["server"], "pve-api-daemon/3.0");
    let body = json_of(resp).await;
    assert!(body["data"]["version"].is_string(), "{body}");
    assert_eq!(body.as_object().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_lines_carry_the_first_message_line() {
    let s = serve().await;
    let raw = s
        .raw(&format!(
            "GET /api2/json/nodes/pve1/foo HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
            token_header(TOKEN)
        ))
        .await;
    assert_eq!(
        status_line(&raw),
        "HTTP/1.1 501 Method 'GET /nodes/pve1/foo' not implemented"
    );
    let body: Value = serde_json::from_str(body_of(&raw)).unwrap();
    assert_eq!(
        body,
        json!({"data": null, "message": "Method 'GET /nodes/pve1/foo' not implemented"})
    );

    let raw = s
        .raw(&format!(
            "GET /api2/json/cluster/nextid?vmid=abc HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
            token_header(TOKEN)
        ))
        .await;
    assert_eq!(
        status_line(&raw),
        "HTTP/1.1 400 Parameter verification failed."
    );
    assert!(raw.contains("Connection: close\r\n"), "{raw}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_failures_are_401_without_body() {
    let s = serve().await;
    // PVE's auth_handler dies with "Authentication failed!" for a bad ticket as for a bad
    // token; the inner "permission denied - invalid PVE ticket" only goes to its log.
    let bad_ticket = "PVEAuthCookie=PVE:root@pam:00000000::Zm9v";
    let cases = [
        (None, "No ticket"),
        (
            Some(("Authorization", token_header("root@pam!fleet=wrong"))),
            "Authentication failed!",
        ),
        (
            Some(("Authorization", bad_ticket.to_string())),
            "Authentication failed!",
        ),
        (
            Some(("Cookie", bad_ticket.to_string())),
            "Authentication failed!",
        ),
    ];
    for (header, reason) in cases {
        let mut req =
            "GET /api2/json/nodes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n".to_string();
        if let Some((name, value)) = header {
            req.push_str(&format!("{name}: {value}\r\n"));
        }
        req.push_str("\r\n");
        let raw = s.raw(&req).await;
        assert_eq!(status_line(&raw), format!("HTTP/1.1 401 {reason}"));
        assert_eq!(body_of(&raw), "");
        assert!(!raw.to_ascii_lowercase().contains("content-type"), "{raw}");
    }
}

/// Log in as root@pam; returns (ticket, CSRF token).
async fn login(s: &common::Served) -> (String, String) {
    let resp = s
        .client()
        .post(s.url("/access/ticket"))
        .form_body(&[("username", "root@pam"), ("password", "simulator")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let data = json_of(resp).await["data"].clone();
    assert_eq!(data["username"], "root@pam");
    assert_eq!(data["clustername"], "simcluster");
    assert!(data["cap"].is_object());
    let ticket = data["ticket"].as_str().unwrap().to_string();
    assert!(ticket.starts_with("PVE:root@pam:"));
    (
        ticket,
        data["CSRFPreventionToken"].as_str().unwrap().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticket_login_then_writes_need_the_csrf_token() {
    let s = serve().await;
    let (ticket, csrf) = login(&s).await;
    let c = s.client();
    let cookie = format!("PVEAuthCookie={ticket}");
    let resp = c
        .get(s.url("/nodes"))
        .header("Cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);

    let form = [("vmid", "200"), ("name", "edge-test"), ("memory", "512")];
    let resp = c
        .post(s.url("/nodes/pve1/qemu"))
        .header("Cookie", &cookie)
        .form_body(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.bytes().await.unwrap().len(), 0);

    let resp = c
        .post(s.url("/nodes/pve1/qemu"))
        .header("Cookie", &cookie)
        .header("CSRFPreventionToken", &csrf)
        .form_body(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let upid = json_of(resp).await["data"].as_str().unwrap().to_string();
    assert!(
        upid.starts_with("UPID:pve1:") && upid.ends_with(":qmcreate:200:root@pam:"),
        "{upid}"
    );

    let resp = c
        .post(s.url("/access/ticket"))
        .form_body(&[("username", "root@pam"), ("password", "wrong")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(json_of(resp).await["message"], "authentication failure\n");

    // Renewal: the old ticket as password.
    let resp = c
        .post(s.url("/access/ticket"))
        .form_body(&[("username", "root@pam"), ("password", ticket.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_tokens_get_403_on_writes() {
    let s = serve().await;
    let c = s.client();
    let resp = c
        .get(s.url("/nodes"))
        .header("Authorization", token_header(RO_TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let resp = c
        .post(s.url("/nodes/pve1/qemu/9000/status/start"))
        .header("Authorization", token_header(RO_TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(
        json_of(resp).await["message"],
        "Permission check failed (/vms/9000, VM.PowerMgmt)\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameter_errors_come_as_an_errors_map() {
    let s = serve().await;
    let resp = s
        .client()
        .get(s.url("/cluster/nextid?vmid=abc&bogus=1"))
        .header("Authorization", token_header(TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(
        json_of(resp).await,
        json!({"data": null, "message": "Parameter verification failed.\n", "errors": {
            "vmid": "type check ('integer') failed - got 'abc'",
            "bogus": "property is not defined in schema and the schema does not allow additional properties",
        }})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_form_bodies_are_equivalent_and_the_query_wins() {
    let s = serve().await;
    let c = s.client();
    let auth = token_header(TOKEN);
    // JSON true becomes 1 (valid); the string "true" does not.
    let resp = c
        .post(s.url("/nodes/pve1/qemu"))
        .header("Authorization", &auth)
        .json(&json!({"vmid": "abc", "start": true, "cores": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(resp).await["errors"],
        json!({"vmid": "type check ('integer') failed - got 'abc'"})
    );
    let resp = c
        .post(s.url("/nodes/pve1/qemu"))
        .header("Authorization", &auth)
        .form_body(&[("vmid", "abc"), ("start", "true")])
        .send()
        .await
        .unwrap();
    let errors = json_of(resp).await["errors"].clone();
    assert_eq!(
        errors["start"],
        "type check ('boolean') failed - got 'true'"
    );
    // Query parameters override the body.
    let resp = c
        .post(s.url("/nodes/pve1/qemu?vmid=xyz"))
        .header("Authorization", &auth)
        .form_body(&[("vmid", "abc")])
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(resp).await["errors"]["vmid"],
        "type check ('integer') failed - got 'xyz'"
    );
    // A JSON body creates a VM like a form body does.
    let resp = c
        .post(s.url("/nodes/pve1/qemu"))
        .header("Authorization", &auth)
        .json(&json!({"vmid": 201, "memory": "512", "start": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        json_of(resp).await["data"]
            .as_str()
            .unwrap()
            .contains(":qmcreate:201:root@pam!fleet:")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_uri_and_the_body_must_agree() {
    let s = serve().await;
    let resp = s
        .client()
        .get(s.url("/nodes/pve1/status?node=pve2"))
        .header("Authorization", token_header(TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(
        json_of(resp).await["errors"]["node"],
        "duplicate parameter (already defined in URI) with conflicting values!"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_limits_are_501() {
    let s = serve().await;
    let auth = token_header(TOKEN);
    let raw = s
        .raw(&format!(
            "GET /api2/json/version HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"
        ))
        .await;
    assert_eq!(
        status_line(&raw),
        "HTTP/1.1 501 Unexpected content for method 'GET'"
    );
    let big = "a".repeat(600 * 1024);
    let resp = s
        .client()
        .post(s.url("/nodes/pve1/qemu"))
        .header("Authorization", &auth)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(big)
        .send()
        .await;
    // The server may close before reading everything; when an answer arrives it is a 501.
    if let Ok(resp) = resp {
        assert_eq!(resp.status(), 501);
    }
    let raw = s
        .raw(&format!(
            "GET /api2/extjs/version HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\nConnection: close\r\n\r\n"
        ))
        .await;
    assert_eq!(
        status_line(&raw),
        "HTTP/1.1 501 no formatter for uri /version, extjs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_on_the_login_path_is_refused() {
    let s = serve().await;
    let resp = s
        .client()
        .post(s.url("/access/ticket"))
        .header("Authorization", token_header(TOKEN))
        .form_body(&[("username", "root@pam"), ("password", "simulator")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drop_fault_closes_the_connection_after_the_effect() {
    let s = serve().await;
    s.sim.faults().drop_responses("POST", "/nodes/pve1/qemu", 1);
    let c = s.client();
    let auth = token_header(TOKEN);
    let dropped = c
        .post(s.url("/nodes/pve1/qemu"))
        .header("Authorization", &auth)
        .form_body(&[("vmid", "300"), ("memory", "512")])
        .send()
        .await;
    assert!(dropped.is_err(), "{dropped:?}");
    // The request took effect: the VM exists.
    assert_eq!(s.sim.vm_node(300).as_deref(), Some("pve1"));
    let resp = c
        .get(s.url("/version"))
        .header("Authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_nodes_listener_never_answers_and_proxying_to_it_fails() {
    let s = serve().await;
    let dead = serve_node(&s.sim, "pve2").await;
    s.sim.faults().set_node_down("pve2", true);
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(common::client_tls(&dead.ca_pem))
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let resp = client
        .get(dead.url("/version"))
        .header("Authorization", token_header(TOKEN))
        .send()
        .await;
    assert!(resp.unwrap_err().is_timeout());

    let raw = s
        .raw(&format!(
            "GET /api2/json/nodes/pve2/status HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
            token_header(TOKEN)
        ))
        .await;
    assert_eq!(status_line(&raw), "HTTP/1.1 595 No route to host");
    assert_eq!(body_of(&raw), "");

    s.sim.faults().set_node_down("pve2", false);
    let resp = client
        .get(dead.url("/version"))
        .header("Authorization", token_header(TOKEN))
        .send()
        .await;
    assert_eq!(resp.unwrap().status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_rate_fault_answers_503_without_effect() {
    let s = serve().await;
    s.sim.faults().set_error_rate(1.0);
    let resp = s
        .client()
        .post(s.url("/nodes/pve1/qemu"))
        .header("Authorization", token_header(TOKEN))
        .form_body(&[("vmid", "400"), ("memory", "512")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(s.sim.vm_node(400), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_settings_round_trip_through_the_control_endpoint() {
    let s = serve().await;
    let c = s.client();
    let auth = token_header(TOKEN);
    let url = format!("https://127.0.0.1:{}/_sim/faults", s.addr.port());
    let got = json_of(
        c.get(&url)
            .header("Authorization", &auth)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        got["data"],
        serde_json::to_value(FaultSettings::default()).unwrap()
    );

    let settings = FaultSettings {
        latency_ms: 1,
        dead_agents: [9000].into(),
        dead_nodes: ["pve3".to_string()].into(),
        ..FaultSettings::default()
    };
    let resp = c
        .put(&url)
        .header("Authorization", &auth)
        .json(&settings)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let got = json_of(
        c.get(&url)
            .header("Authorization", &auth)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        serde_json::from_value::<FaultSettings>(got["data"].clone()).unwrap(),
        settings
    );
    assert!(s.sim.faults().node_down("pve3"));

    let resp = c
        .get(&url)
        .header("Authorization", token_header(RO_TOKEN))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let resp = c
        .put(&url)
        .header("Authorization", &auth)
        .body("{\"bogus\": 1}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vm_power_and_snippets_can_be_controlled() {
    let s = serve().await;
    let c = s.client();
    let auth = token_header(TOKEN);
    let base = format!("https://127.0.0.1:{}/_sim", s.addr.port());
    let resp = c
        .post(format!("{base}/vm/9000/power"))
        .header("Authorization", &auth)
        .json(&json!({"running": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(s.sim.vm_running(9000), Some(true));
    let resp = c
        .post(format!("{base}/vm/4242/power"))
        .header("Authorization", &auth)
        .json(&json!({"running": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let resp = c
        .put(format!("{base}/snippets/pve1/local/user-data.yaml"))
        .header("Authorization", &auth)
        .body("#cloud-config\n")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(json_of(resp).await["data"], "local:snippets/user-data.yaml");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_request_header_is_dropped_after_the_header_timeout() {
    use std::sync::Arc;

    use rustls::pki_types::ServerName;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = pve_sim::Sim::new(common::config()).unwrap();
    let config = pve_sim::server::ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        node: "pve1".into(),
        cert: pve_sim::server::CertSource::SelfSigned { dir: None },
    };
    let bound = pve_sim::server::Server::new(sim, config)
        .bind()
        .await
        .unwrap()
        .with_header_read_timeout(Duration::from_millis(300));
    let addr = bound.local_addr();
    let ca_pem = bound.ca_pem().to_string();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    tokio::spawn(bound.run(shutdown));

    let connector = tokio_rustls::TlsConnector::from(Arc::new(common::client_tls(&ca_pem)));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    // The request line and one header, never the blank line that ends the header.
    tls.write_all(b"GET /api2/json/version HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    // Far beyond the 300 ms limit: without a limit the server would hold the connection
    // until shutdown and this read would time out.
    let closed = tokio::time::timeout(Duration::from_secs(30), tls.read_to_end(&mut answer)).await;
    assert!(
        closed.is_ok(),
        "the server still holds a connection whose request header never ended"
    );
}
