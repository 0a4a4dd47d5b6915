//! The HTTPS backend against small HTTPS servers started on 127.0.0.1 by each test: token and
//! ticket authentication, the three certificate policies, request encoding, the reason-phrase
//! fallback, and how failures map to `PveError`.

// Only built as a test; lets helpers panic like tests do (clippy `allow-unwrap-in-tests`).
#![cfg(test)]

mod certs;
mod servers;
mod tickets;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pve::https::{HttpsAuth, HttpsBackend, HttpsConfig, TlsVerify};
use pve::{ApiRequest, Backend, Method, PveError};
use serde_json::json;
use tokio::net::TcpListener;

use certs::{NodeCert, ca_and_node, fingerprint, self_signed, tls_acceptor};
use servers::{Answer, Misbehave, Seen, serve, serve_ok, serve_raw};

const SECRET: &str = "5c2d7a3e-1f4b-4c8e-9a6d-0b1e2f3a4b5c";

pub(crate) fn secret_file(dir: &Path, name: &str, content: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn token_auth(dir: &Path) -> HttpsAuth {
    let token_file = secret_file(dir, "token", &format!("root@pam!fleet={SECRET}\n"), 0o600);
    HttpsAuth::Token { token_file }
}

pub(crate) fn config(addr: SocketAddr, auth: HttpsAuth, tls: TlsVerify) -> HttpsConfig {
    HttpsConfig {
        port: addr.port(),
        ..HttpsConfig::new(addr.ip().to_string(), auth, tls)
    }
}

pub(crate) fn pinned(cert: &NodeCert) -> TlsVerify {
    TlsVerify::PinnedSha256(fingerprint(&cert.der))
}

pub(crate) fn get(path: &str) -> ApiRequest {
    ApiRequest::new(Method::Get, path)
}

// ---------------------------------------------------------------- token, TLS, encoding

#[tokio::test]
async fn token_header_is_sent_exactly_and_nothing_else_authenticates() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1"]);
    let server = serve_ok(tls_acceptor(&cert, &cert.key)).await;
    let backend =
        HttpsBackend::new(config(server.addr, token_auth(dir.path()), pinned(&cert))).unwrap();

    let reply = backend.call(&get("/version")).await.unwrap();

    assert_eq!(reply.data, json!({"version": "9.1.1"}));
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/api2/json/version");
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("PVEAPIToken=root@pam!fleet={SECRET}").as_str())
    );
    assert_eq!(seen[0].header("cookie"), None);
    assert_eq!(seen[0].header("csrfpreventiontoken"), None);
    assert_eq!(
        backend.endpoint(),
        format!("https://127.0.0.1:{}", server.addr.port())
    );
    assert!(!backend.is_root());
    assert_eq!(backend.api_user().as_deref(), Some("root@pam!fleet"));
}

#[tokio::test]
async fn debug_output_never_shows_the_token_secret() {
    let dir = tempfile::tempdir().unwrap();
    let addr: SocketAddr = "127.0.0.1:8006".parse().unwrap();
    let backend = HttpsBackend::new(config(
        addr,
        token_auth(dir.path()),
        TlsVerify::InsecureSkipVerify,
    ))
    .unwrap();
    let shown = format!("{backend:?}");
    assert!(shown.contains("root@pam!fleet"), "{shown}");
    assert!(!shown.contains(SECRET), "{shown}");
}

#[tokio::test]
async fn token_file_readable_by_others_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = secret_file(
        dir.path(),
        "token",
        &format!("root@pam!fleet={SECRET}\n"),
        0o644,
    );
    let addr: SocketAddr = "127.0.0.1:8006".parse().unwrap();
    let auth = HttpsAuth::Token {
        token_file: path.clone(),
    };
    let err = HttpsBackend::new(config(addr, auth, TlsVerify::InsecureSkipVerify)).unwrap_err();
    let PveError::Config(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("0644"), "{msg}");
    assert!(
        msg.contains(&format!("chmod 600 {}", path.display())),
        "{msg}"
    );
    assert!(!msg.contains(SECRET), "{msg}");
}

#[tokio::test]
async fn malformed_token_file_is_refused_without_echoing_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let path = secret_file(
        dir.path(),
        "token",
        &format!("root@pam:fleet={SECRET}\n"),
        0o600,
    );
    let addr: SocketAddr = "127.0.0.1:8006".parse().unwrap();
    let auth = HttpsAuth::Token { token_file: path };
    let err = HttpsBackend::new(config(addr, auth, TlsVerify::InsecureSkipVerify)).unwrap_err();
    assert!(matches!(err, PveError::Config(_)), "{err:?}");
    assert!(!err.to_string().contains(SECRET), "{err}");
}

#[tokio::test]
async fn ca_file_of_the_issuing_ca_verifies_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let (ca_pem, node) = ca_and_node();
    let ca_file = dir.path().join("pve-root-ca.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();
    let server = serve_ok(tls_acceptor(&node, &node.key)).await;
    let backend = HttpsBackend::new(config(
        server.addr,
        token_auth(dir.path()),
        TlsVerify::CaFile(ca_file),
    ))
    .unwrap();
    assert!(backend.call(&get("/version")).await.is_ok());
}

#[tokio::test]
async fn ca_file_holding_the_self_signed_node_certificate_verifies_it() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["127.0.0.1", "pve1"]);
    let ca_file = dir.path().join("pve-ssl.pem");
    std::fs::write(&ca_file, &cert.pem).unwrap();
    let server = serve_ok(tls_acceptor(&cert, &cert.key)).await;
    let backend = HttpsBackend::new(config(
        server.addr,
        token_auth(dir.path()),
        TlsVerify::CaFile(ca_file),
    ))
    .unwrap();
    assert!(backend.call(&get("/version")).await.is_ok());
}

#[tokio::test]
async fn a_different_ca_fails_to_connect_and_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_, node) = ca_and_node();
    let (other_ca, _) = ca_and_node();
    let ca_file = dir.path().join("other-ca.pem");
    std::fs::write(&ca_file, other_ca).unwrap();
    let server = serve_ok(tls_acceptor(&node, &node.key)).await;
    let backend = HttpsBackend::new(config(
        server.addr,
        token_auth(dir.path()),
        TlsVerify::CaFile(ca_file),
    ))
    .unwrap();
    let err = backend.call(&get("/version")).await.unwrap_err();
    assert!(matches!(err, PveError::Connect { .. }), "{err:?}");
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn pinned_fingerprint_accepts_the_node_whatever_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1.example.org"]);
    let server = serve_ok(tls_acceptor(&cert, &cert.key)).await;
    let lower = TlsVerify::PinnedSha256(fingerprint(&cert.der).to_lowercase().replace(':', ""));
    let backend = HttpsBackend::new(config(server.addr, token_auth(dir.path()), lower)).unwrap();
    assert!(backend.call(&get("/version")).await.is_ok());
}

#[tokio::test]
async fn pinned_fingerprint_mismatch_fails_to_connect() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1"]);
    let other = self_signed(&["pve1"]);
    let server = serve_ok(tls_acceptor(&cert, &cert.key)).await;
    let backend =
        HttpsBackend::new(config(server.addr, token_auth(dir.path()), pinned(&other))).unwrap();
    let err = backend.call(&get("/version")).await.unwrap_err();
    let PveError::Connect { reason, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(reason.contains(&fingerprint(&cert.der)), "{reason}");
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn pinned_certificate_without_its_private_key_fails_to_connect() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1"]);
    let impostor = self_signed(&["pve1"]);
    // Presents the pinned certificate but signs the handshake with another key.
    let server = serve_ok(tls_acceptor(&cert, &impostor.key)).await;
    let backend =
        HttpsBackend::new(config(server.addr, token_auth(dir.path()), pinned(&cert))).unwrap();
    let err = backend.call(&get("/version")).await.unwrap_err();
    assert!(matches!(err, PveError::Connect { .. }), "{err:?}");
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn writes_send_a_form_body_and_reads_a_query_string() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1"]);
    let server = serve(
        tls_acceptor(&cert, &cert.key),
        Arc::new(|_: &Seen| Answer(200, None, r#"{"data":null}"#.into())),
    )
    .await;
    let backend =
        HttpsBackend::new(config(server.addr, token_auth(dir.path()), pinned(&cert))).unwrap();
    let params = |r: ApiRequest| {
        r.param("net0", "virtio,bridge=vmbr0")
            .param("description", "a b&c")
    };
    let encoded = "net0=virtio%2Cbridge%3Dvmbr0&description=a+b%26c";

    for method in [Method::Post, Method::Put, Method::Get, Method::Delete] {
        let req = params(ApiRequest::new(method, "/nodes/pve1/qemu/100/config"));
        assert_eq!(
            backend.call(&req).await.unwrap().data,
            serde_json::Value::Null
        );
    }

    let seen = server.seen();
    let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
    assert_eq!(methods, ["POST", "PUT", "GET", "DELETE"]);
    for write in &seen[..2] {
        assert_eq!(
            write.header("content-type"),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(write.body, encoded);
        assert_eq!(write.query, None);
    }
    for read in &seen[2..] {
        assert_eq!(read.query.as_deref(), Some(encoded));
        assert_eq!(read.body, "");
        assert_eq!(read.header("content-type"), None);
    }
    assert!(
        seen.iter()
            .all(|s| s.path == "/api2/json/nodes/pve1/qemu/100/config")
    );
}

#[tokio::test]
async fn reason_phrase_is_the_message_when_the_body_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1"]);
    let server = serve(
        tls_acceptor(&cert, &cert.key),
        Arc::new(|_: &Seen| Answer(500, Some("VM is locked (clone)"), r#"{"data":null}"#.into())),
    )
    .await;
    let backend =
        HttpsBackend::new(config(server.addr, token_auth(dir.path()), pinned(&cert))).unwrap();
    let err = backend
        .call(&ApiRequest::new(
            Method::Post,
            "/nodes/pve1/qemu/100/status/start",
        ))
        .await
        .unwrap_err();
    let PveError::Api { status, reason, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*status, 500);
    assert_eq!(reason, "VM is locked (clone)");
    assert_eq!(err.message(), Some("VM is locked (clone)"));
    assert_eq!(err.locked(), Some("clone"));
}

#[tokio::test]
async fn parameter_errors_of_a_new_server_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1"]);
    let body = r#"{"errors":{"vmid":"VM 2004 already exists"},"data":null,"message":"Parameter verification failed.\n"}"#;
    let server = serve(
        tls_acceptor(&cert, &cert.key),
        Arc::new(move |_: &Seen| Answer(400, Some("Parameter verification failed."), body.into())),
    )
    .await;
    let backend =
        HttpsBackend::new(config(server.addr, token_auth(dir.path()), pinned(&cert))).unwrap();
    let err = backend
        .call(&ApiRequest::new(Method::Post, "/nodes/pve1/qemu"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.param_error("vmid"), Some("VM 2004 already exists"));
    assert!(err.is_already_exists());
}

#[tokio::test]
async fn unauthorized_token_is_an_auth_error() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1"]);
    let server = serve(
        tls_acceptor(&cert, &cert.key),
        Arc::new(|_: &Seen| Answer(401, Some("Authentication failed!"), String::new())),
    )
    .await;
    let backend =
        HttpsBackend::new(config(server.addr, token_auth(dir.path()), pinned(&cert))).unwrap();
    let err = backend.call(&get("/version")).await.unwrap_err();
    let PveError::Auth { reason, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(reason, "Authentication failed!");
    assert_eq!(server.seen().len(), 1, "a token call is never resent");
}

// ---------------------------------------------------------------- failures

#[tokio::test]
async fn refused_connection_is_a_connect_error() {
    let dir = tempfile::tempdir().unwrap();
    let addr = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    };
    let backend = HttpsBackend::new(config(
        addr,
        token_auth(dir.path()),
        TlsVerify::InsecureSkipVerify,
    ))
    .unwrap();
    let err = backend
        .call(&ApiRequest::new(Method::Post, "/nodes/pve1/qemu"))
        .await
        .unwrap_err();
    assert!(matches!(err, PveError::Connect { .. }), "{err:?}");
    assert!(err.is_connect());
}

#[tokio::test]
async fn server_that_never_answers_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1"]);
    let addr = serve_raw(tls_acceptor(&cert, &cert.key), Misbehave::NeverAnswer).await;
    let mut cfg = config(addr, token_auth(dir.path()), pinned(&cert));
    cfg.timeout = Duration::from_millis(300);
    let backend = HttpsBackend::new(cfg).unwrap();
    let err = backend.call(&get("/cluster/resources")).await.unwrap_err();
    let PveError::Timeout { timeout, path, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*timeout, Duration::from_millis(300));
    assert_eq!(path, "/cluster/resources");
}

#[tokio::test]
async fn connection_closed_after_the_request_is_a_transport_error() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1"]);
    for how in [Misbehave::CloseWithoutAnswer, Misbehave::TruncatedBody] {
        let addr = serve_raw(tls_acceptor(&cert, &cert.key), how).await;
        let backend =
            HttpsBackend::new(config(addr, token_auth(dir.path()), pinned(&cert))).unwrap();
        let err = backend
            .call(&ApiRequest::new(Method::Post, "/nodes/pve1/qemu"))
            .await
            .unwrap_err();
        assert!(matches!(err, PveError::Transport { .. }), "{err:?}");
    }
}
