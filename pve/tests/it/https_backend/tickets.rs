//! Ticket authentication against a PVE-like ticket service: login, cookie and CSRF token,
//! re-login after a 401, renewal of an old ticket.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use pve::https::{HttpsAuth, HttpsBackend, TlsVerify};
use pve::{ApiRequest, Backend, Method, PveError};
use serde_json::json;

use crate::https_backend::certs::{self_signed, tls_acceptor};
use crate::https_backend::servers::{Answer, Handler, Seen, Server, serve};
use crate::https_backend::{config, get, pinned, secret_file};

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A PVE-like ticket service: `/access/ticket` takes the password or a valid ticket; other
/// calls need the cookie, and the CSRF token unless GET.
#[derive(Default)]
struct Tickets {
    issued: u32,
    valid: HashSet<String>,
    /// Issue time offsets (seconds in the past) for the next tickets, first first.
    ages: Vec<u64>,
    /// Refuse every call but the login (a user whose privileges were revoked mid-way).
    refuse_calls: bool,
}

const CSRF: &str = "4EEC61E2:Y3NyZg==";

fn ticket_server_handler(state: Arc<Mutex<Tickets>>) -> Handler {
    Arc::new(move |seen: &Seen| {
        let mut st = state.lock().unwrap();
        if seen.path == "/api2/json/access/ticket" {
            let form: Vec<(String, String)> = form_urlencoded::parse(seen.body.as_bytes())
                .into_owned()
                .collect();
            let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            let password = field("password").unwrap_or_default();
            if field("username").as_deref() != Some("root@pam")
                || (password != "pw with space" && !st.valid.contains(&password))
            {
                return Answer(
                    401,
                    Some("authentication failure"),
                    r#"{"data":null}"#.into(),
                );
            }
            st.issued += 1;
            let age = if st.ages.is_empty() {
                0
            } else {
                st.ages.remove(0)
            };
            let ticket = format!(
                "PVE:root@pam:{:08X}::c2ln+{}/=",
                unix_now() - age,
                st.issued
            );
            st.valid.insert(ticket.clone());
            let data =
                json!({"username": "root@pam", "ticket": ticket, "CSRFPreventionToken": CSRF});
            return Answer(200, None, json!({ "data": data }).to_string());
        }
        let cookie = seen.header("cookie").unwrap_or_default();
        let ticket = cookie
            .split(';')
            .find_map(|c| c.trim().strip_prefix("PVEAuthCookie="))
            .map(|t| {
                percent_encoding::percent_decode_str(t)
                    .decode_utf8()
                    .unwrap()
                    .into_owned()
            });
        if st.refuse_calls || !ticket.is_some_and(|t| st.valid.contains(&t)) {
            return Answer(401, Some("No ticket"), String::new());
        }
        if seen.method != "GET" && seen.header("csrfpreventiontoken") != Some(CSRF) {
            return Answer(
                401,
                Some("Permission denied - invalid csrf token"),
                String::new(),
            );
        }
        Answer(200, None, r#"{"data":"ok"}"#.into())
    })
}

struct TicketFixture {
    _dir: tempfile::TempDir,
    server: Server,
    state: Arc<Mutex<Tickets>>,
    backend: HttpsBackend,
}

async fn ticket_fixture(password: &str) -> TicketFixture {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(&["pve1"]);
    let state = Arc::new(Mutex::new(Tickets::default()));
    let server = serve(
        tls_acceptor(&cert, &cert.key),
        ticket_server_handler(state.clone()),
    )
    .await;
    let password_file = secret_file(dir.path(), "password", &format!("{password}\n"), 0o600);
    let auth = HttpsAuth::Ticket {
        username: "root@pam".into(),
        password_file,
    };
    let backend = HttpsBackend::new(config(server.addr, auth, pinned(&cert))).unwrap();
    TicketFixture {
        _dir: dir,
        server,
        state,
        backend,
    }
}

fn form_field(seen: &Seen, key: &str) -> Option<String> {
    form_urlencoded::parse(seen.body.as_bytes())
        .into_owned()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

#[tokio::test]
async fn ticket_login_then_cookie_on_every_call_and_csrf_only_on_writes() {
    let f = ticket_fixture("pw with space").await;

    f.backend.call(&get("/cluster/resources")).await.unwrap();
    f.backend
        .call(&ApiRequest::new(
            Method::Post,
            "/nodes/pve1/qemu/100/status/start",
        ))
        .await
        .unwrap();
    f.backend
        .call(&ApiRequest::new(Method::Delete, "/nodes/pve1/qemu/100"))
        .await
        .unwrap();

    let seen = f.server.seen();
    let calls: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("POST", "/api2/json/access/ticket"),
            ("GET", "/api2/json/cluster/resources"),
            ("POST", "/api2/json/nodes/pve1/qemu/100/status/start"),
            ("DELETE", "/api2/json/nodes/pve1/qemu/100"),
        ]
    );
    assert_eq!(
        form_field(&seen[0], "username").as_deref(),
        Some("root@pam")
    );
    assert_eq!(
        form_field(&seen[0], "password").as_deref(),
        Some("pw with space")
    );
    assert!(seen[1..].iter().all(|s| {
        s.header("cookie")
            .is_some_and(|c| c.starts_with("PVEAuthCookie=PVE:root@pam:"))
    }));
    assert_eq!(seen[1].header("csrfpreventiontoken"), None);
    assert_eq!(seen[2].header("csrfpreventiontoken"), Some(CSRF));
    assert_eq!(seen[3].header("csrfpreventiontoken"), Some(CSRF));
    assert!(seen.iter().all(|s| s.header("authorization").is_none()));
    assert!(f.backend.is_root());
    assert_eq!(f.backend.api_user().as_deref(), Some("root@pam"));
}

#[tokio::test]
async fn refused_ticket_is_replaced_once_and_the_call_resent() {
    let f = ticket_fixture("pw with space").await;
    f.backend.call(&get("/version")).await.unwrap();
    // The node forgets the ticket (restart, key rotation): the next call gets a 401.
    f.state.lock().unwrap().valid.clear();

    let reply = f
        .backend
        .call(&ApiRequest::new(
            Method::Post,
            "/nodes/pve1/qemu/100/status/stop",
        ))
        .await
        .unwrap();

    assert_eq!(reply.data, json!("ok"));
    let seen = f.server.seen();
    let calls: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        calls,
        [
            "/api2/json/access/ticket",
            "/api2/json/version",
            "/api2/json/nodes/pve1/qemu/100/status/stop",
            "/api2/json/access/ticket",
            "/api2/json/nodes/pve1/qemu/100/status/stop",
        ]
    );
    assert_eq!(
        form_field(&seen[3], "password").as_deref(),
        Some("pw with space")
    );
    assert_ne!(seen[2].header("cookie"), seen[4].header("cookie"));
}

#[tokio::test]
async fn second_refusal_after_relogin_is_an_auth_error() {
    let f = ticket_fixture("pw with space").await;
    f.backend.call(&get("/version")).await.unwrap();
    f.state.lock().unwrap().refuse_calls = true;

    let err = f
        .backend
        .call(&ApiRequest::new(Method::Put, "/nodes/pve1/qemu/100/config"))
        .await
        .unwrap_err();

    assert!(matches!(err, PveError::Auth { .. }), "{err:?}");
    let seen = f.server.seen();
    let calls: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        calls,
        [
            "/api2/json/access/ticket",
            "/api2/json/version",
            "/api2/json/nodes/pve1/qemu/100/config",
            "/api2/json/access/ticket",
            "/api2/json/nodes/pve1/qemu/100/config",
        ]
    );
}

#[tokio::test]
async fn wrong_password_is_an_auth_error() {
    let f = ticket_fixture("wrong").await;
    let err = f.backend.call(&get("/version")).await.unwrap_err();
    let PveError::Auth { reason, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(reason, "authentication failure");
    assert!(!err.to_string().contains("wrong"), "{err}");
    assert_eq!(f.server.seen().len(), 1);
}

#[tokio::test]
async fn old_ticket_is_renewed_by_posting_it_as_the_password() {
    let f = ticket_fixture("pw with space").await;
    // The first ticket is issued 1 h 50 min in the past: it serves the first call, and is
    // renewed before the second.
    f.state.lock().unwrap().ages = vec![110 * 60, 0];

    f.backend.call(&get("/version")).await.unwrap();
    f.backend.call(&get("/version")).await.unwrap();

    let seen = f.server.seen();
    let calls: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        calls,
        [
            "/api2/json/access/ticket",
            "/api2/json/version",
            "/api2/json/access/ticket",
            "/api2/json/version",
        ]
    );
    let first_ticket = {
        let st = f.state.lock().unwrap();
        st.valid
            .iter()
            .find(|t| t.ends_with("+1/="))
            .unwrap()
            .clone()
    };
    assert_eq!(form_field(&seen[2], "password"), Some(first_ticket));
    assert_eq!(
        form_field(&seen[2], "username").as_deref(),
        Some("root@pam")
    );
    assert!(seen[1].header("cookie").unwrap().ends_with("%2B1%2F%3D"));
    assert!(seen[3].header("cookie").unwrap().ends_with("%2B2%2F%3D"));
}

#[tokio::test]
async fn password_file_readable_by_group_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let password_file = secret_file(dir.path(), "password", "pw\n", 0o640);
    let addr: SocketAddr = "127.0.0.1:8006".parse().unwrap();
    let auth = HttpsAuth::Ticket {
        username: "root@pam".into(),
        password_file: password_file.clone(),
    };
    let err = HttpsBackend::new(config(addr, auth, TlsVerify::InsecureSkipVerify)).unwrap_err();
    let PveError::Config(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(
        msg.contains("0640") && msg.contains(&format!("chmod 600 {}", password_file.display())),
        "{msg}"
    );
}

#[tokio::test]
async fn ticket_of_another_user_is_not_root() {
    let dir = tempfile::tempdir().unwrap();
    let password_file = secret_file(dir.path(), "password", "pw\n", 0o600);
    let addr: SocketAddr = "127.0.0.1:8006".parse().unwrap();
    let auth = HttpsAuth::Ticket {
        username: "fleet@pve".into(),
        password_file,
    };
    let backend = HttpsBackend::new(config(addr, auth, TlsVerify::InsecureSkipVerify)).unwrap();
    assert!(!backend.is_root());
    let bad = HttpsAuth::Ticket {
        username: "root".into(),
        password_file: dir.path().join("password"),
    };
    assert!(matches!(
        HttpsBackend::new(config(addr, bad, TlsVerify::InsecureSkipVerify)),
        Err(PveError::Config(_))
    ));
}
