//! `pvefleet admin ls|add|revoke` against stand-in members: the list as golden text and JSON,
//! an added admin's key made here (only its CSR is sent) and written with its certificate, the
//! CA and a working configuration into a directory of its own, the refusals made before
//! anything is sent (a bad name, a non-empty directory, revoking one's own identity), and the
//! cluster's own refusals reaching the user unchanged.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::fixtures::*;
use crate::support::{FakeMember, Pki, bounded, pvefleet};
use bootstrap::cli_config::CliConfig;
use bootstrap::paths::{read_public, read_secret};
use bootstrap::{NodeDir, NodeKey, cert_identity};
use clap::Parser;
use cli::exit::ExitStatus;
use cli::output::{AdminAdded, AdminRevoked, admin_state};
use cli::{Cli, default_out_dir, run};
use protocol::Role;
use protocol::admin::{
    AdminAdd, AdminAddReply, AdminList, AdminListReply, AdminRevoke, Done, ReadMode,
};
use protocol::fleet::AdminRecord;
use serde_json::json;
use transport::{Caller, RemoteError, Router, Service};

type Log<T> = Arc<Mutex<Vec<T>>>;

fn log<T>() -> Log<T> {
    Arc::new(Mutex::new(Vec::new()))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn record(id: u64, name: &str) -> AdminRecord {
    AdminRecord {
        id,
        name: name.into(),
        issued_at: NOW - 10 * DAY,
        expires_at: NOW + 20 * DAY,
        renew_until: NOW + 355 * DAY,
        revoked_at: None,
    }
}

/// An active, an expired and a revoked admin.
fn admins() -> AdminListReply {
    let mut expired = record(2, "ci-deploy");
    expired.issued_at = NOW - 40 * DAY;
    expired.expires_at = NOW - 10 * DAY;
    let mut revoked = record(3, "bob (laptop)");
    revoked.revoked_at = Some(NOW - 2 * HOUR);
    AdminListReply {
        admins: vec![record(1, "alice"), expired, revoked],
    }
}

#[test]
fn admin_ls_shows_when_each_certificate_expires_and_whether_it_is_accepted() {
    let list = admins();
    assert_eq!(
        table(&list),
        "\
ID   NAME           ISSUED    EXPIRES   RENEWABLE-UNTIL   STATE
1    alice          10d ago   in 20d    in 355d           active
2    ci-deploy      40d ago   10d ago   in 355d           expired
3    bob (laptop)   10d ago   in 20d    in 355d           revoked 2h ago
"
    );
    assert_eq!(
        json_of(&list),
        json!({"admins": [
            {"id": 1, "name": "alice", "issued_at": NOW - 10 * DAY, "expires_at": NOW + 20 * DAY,
             "renew_until": NOW + 355 * DAY, "revoked_at": null},
            {"id": 2, "name": "ci-deploy", "issued_at": NOW - 40 * DAY,
             "expires_at": NOW - 10 * DAY, "renew_until": NOW + 355 * DAY, "revoked_at": null},
            {"id": 3, "name": "bob (laptop)", "issued_at": NOW - 10 * DAY,
             "expires_at": NOW + 20 * DAY, "renew_until": NOW + 355 * DAY,
             "revoked_at": NOW - 2 * HOUR},
        ]})
    );
    // A revocation outlasts expiry; a certificate expiring this very millisecond is still valid.
    let mut both = admins().admins[1].clone();
    both.revoked_at = Some(NOW - 11 * DAY);
    assert_eq!(admin_state(&both, NOW), "revoked 11d ago");
    let mut edge = record(4, "edge");
    edge.expires_at = NOW;
    assert_eq!(admin_state(&edge, NOW), "active");

    let empty = AdminListReply { admins: Vec::new() };
    assert_eq!(
        table(&empty),
        "no admins: add one with `pvefleet admin add NAME`\n"
    );
    assert_eq!(json_of(&empty), json!({"admins": []}));
}

#[test]
fn admin_ls_escapes_a_name_sent_by_a_member() {
    let mut list = admins();
    list.admins[0].name = "evil\u{1b}[2J\nforged row".into();
    let text = table(&list);
    assert!(text.contains("evil\\u{1b}[2J\\nforged row"), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");
}

#[test]
fn admin_add_and_revoke_reports() {
    let added = AdminAdded {
        record: record(7, "alice"),
        dir: "/home/op/pvefleet-admin-alice".into(),
        key: "/home/op/pvefleet-admin-alice/admin.key".into(),
        cert: "/home/op/pvefleet-admin-alice/admin.pem".into(),
        ca: "/home/op/pvefleet-admin-alice/ca.pem".into(),
        config: "/home/op/pvefleet-admin-alice/pvefleet.toml".into(),
    };
    assert_eq!(
        table(&added),
        "\
Added admin 7 and wrote its credentials to /home/op/pvefleet-admin-alice.

id:               7
name:             alice
expires:          2025-03-21T12:00:00Z (in 20d)
renewable until:  2026-02-19T12:00:00Z (in 355d)
key:              /home/op/pvefleet-admin-alice/admin.key (mode 0600)
certificate:      /home/op/pvefleet-admin-alice/admin.pem
ca:               /home/op/pvefleet-admin-alice/ca.pem
configuration:    /home/op/pvefleet-admin-alice/pvefleet.toml

The key was made on this machine and never left it (only a certificate signing request was sent).
Hand /home/op/pvefleet-admin-alice to alice privately: it holds that key.
They run `pvefleet --config /home/op/pvefleet-admin-alice/pvefleet.toml` (or set PVEFLEET_CONFIG to it).
The certificate renews itself while valid, at most until 2026-02-19T12:00:00Z; after that, add a new admin.
Revoke it with `pvefleet admin revoke 7`.
"
    );
    assert_eq!(
        json_of(&added),
        json!({
            "record": {"id": 7, "name": "alice", "issued_at": NOW - 10 * DAY,
                       "expires_at": NOW + 20 * DAY, "renew_until": NOW + 355 * DAY,
                       "revoked_at": null},
            "dir": "/home/op/pvefleet-admin-alice",
            "key": "/home/op/pvefleet-admin-alice/admin.key",
            "cert": "/home/op/pvefleet-admin-alice/admin.pem",
            "ca": "/home/op/pvefleet-admin-alice/ca.pem",
            "config": "/home/op/pvefleet-admin-alice/pvefleet.toml",
        })
    );
    // A name cannot add a line to the instructions.
    let mut forged = added.clone();
    forged.record.name = "eve\nRevoke nothing".into();
    let text = table(&forged);
    assert!(text.contains("to eve\\nRevoke nothing privately"), "{text}");

    let revoked = AdminRevoked { revoked: 3 };
    assert_eq!(
        table(&revoked),
        "admin 3 revoked: its certificates are refused by every member from now on\n"
    );
    assert_eq!(json_of(&revoked), json!({"revoked": 3}));
}

#[test]
fn the_default_directory_is_one_plain_path_component_named_for_the_admin() {
    for (name, dir) in [
        ("alice", "pvefleet-admin-alice"),
        ("ci deploy (prod)", "pvefleet-admin-ci-deploy-prod"),
        ("../../etc", "pvefleet-admin-etc"),
        ("Grüße", "pvefleet-admin-Grüße"),
        ("a/b\\c", "pvefleet-admin-a-b-c"),
        ("!!!", "pvefleet-admin-admin"),
    ] {
        assert_eq!(default_out_dir(name), PathBuf::from(dir), "{name}");
    }
}

#[tokio::test]
async fn admin_ls_reads_linearizable_unless_stale_is_asked_for() {
    let pki = Pki::new();
    let modes: Log<ReadMode> = log();
    let seen = modes.clone();
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, req: AdminList| {
        seen.lock().unwrap().push(req.read);
        async move { Ok(admins()) }
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(&config, &["admin", "ls"]).await;
    result.unwrap();
    assert!(out.starts_with("ID   NAME"), "{out}");
    let (result, out) = pvefleet(&config, &["admin", "ls", "--stale", "-o", "json"]).await;
    result.unwrap();
    assert_eq!(
        serde_json::from_str::<AdminListReply>(&out).unwrap(),
        admins()
    );
    assert_eq!(
        *modes.lock().unwrap(),
        [ReadMode::Linearizable, ReadMode::Stale]
    );
}

/// A member that answers `AdminAdd` as the cluster does: a certificate issued by the test CA
/// for the CSR received, naming admin 7; and `AdminList` with whoever called.
fn admin_add_router(pki: &Pki, requests: Log<AdminAdd>, callers: Log<Caller>) -> Router {
    let dir = pki.dir().to_path_buf();
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, req: AdminAdd| {
        requests.lock().unwrap().push(req.clone());
        let ca = NodeDir::new(&dir).load_ca().unwrap();
        let validity = Duration::from_secs(req.ttl_secs.unwrap_or(30 * 86_400));
        let issued = ca.issue(&req.csr_pem, Role::Admin, 7, validity, now_secs());
        let reply = issued
            .map(|cert_pem| AdminAddReply {
                record: AdminRecord {
                    name: req.name.clone(),
                    ..record(7, "")
                },
                cert_pem,
            })
            .map_err(|e| RemoteError::bad_request(e.to_string()));
        async move { reply }
    });
    router.handle(Service::Admin, move |caller, _req: AdminList| {
        callers.lock().unwrap().push(caller);
        async move { Ok(AdminListReply { admins: Vec::new() }) }
    });
    router
}

#[tokio::test]
async fn admin_add_sends_only_a_csr_and_writes_a_working_admin_directory() {
    let pki = Pki::new();
    let requests: Log<AdminAdd> = log();
    let callers: Log<Caller> = log();
    let member = FakeMember::start(
        &pki,
        1,
        admin_add_router(&pki, requests.clone(), callers.clone()),
    );
    let config = pki.write_config(&[&member]);
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("for-alice");

    let (result, out) = pvefleet(
        &config,
        &[
            "-o",
            "json",
            "admin",
            "add",
            "alice",
            "--ttl",
            "7d",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    )
    .await;
    result.unwrap();

    // The request: the name, the lifetime asked for, and a CSR (never a key).
    let sent = requests.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].name, "alice");
    assert_eq!(sent[0].ttl_secs, Some(7 * 86_400));
    assert!(
        sent[0]
            .csr_pem
            .starts_with("-----BEGIN CERTIFICATE REQUEST-----"),
        "{}",
        sent[0].csr_pem
    );
    assert!(!sent[0].csr_pem.contains("PRIVATE KEY"));

    // The files: a private key (0600) for the certificate, which names admin 7, and the CA.
    let dir = NodeDir::new(&out_dir);
    let mode = std::fs::metadata(dir.admin_key())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let key_pem = read_secret(&dir.admin_key()).unwrap();
    let cert_pem = read_public(&dir.admin_cert()).unwrap();
    let key = NodeKey::from_pem(&key_pem).unwrap();
    assert!(key.matches_certificate(&cert_pem).unwrap());
    let identity = cert_identity(&cert_pem).unwrap();
    assert_eq!((identity.role, identity.node_id), (Role::Admin, 7));
    assert_eq!(
        read_public(&dir.ca_cert()).unwrap(),
        read_public(&NodeDir::new(pki.dir()).ca_cert()).unwrap()
    );
    // The configuration: the same members, this directory's files (written relative, so the
    // directory can be moved as a whole).
    let written = CliConfig::load(&out_dir.join("pvefleet.toml")).unwrap();
    assert_eq!(written.coordinators, vec![member.coordinator()]);
    assert_eq!(
        (
            written.ca.clone(),
            written.cert.clone(),
            written.key.clone()
        ),
        (dir.ca_cert(), dir.admin_cert(), dir.admin_key())
    );
    let text = std::fs::read_to_string(out_dir.join("pvefleet.toml")).unwrap();
    assert!(text.contains("key = \"admin.key\""), "{text}");

    // The output: the record and the paths; the key is nowhere in it.
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["record"]["id"], json!(7));
    assert_eq!(doc["record"]["name"], json!("alice"));
    assert_eq!(doc["dir"], json!(out_dir.to_str().unwrap()));
    assert_eq!(doc["key"], json!(dir.admin_key().to_str().unwrap()));
    assert_eq!(
        doc["config"],
        json!(out_dir.join("pvefleet.toml").to_str().unwrap())
    );
    let key_body = key_pem.lines().nth(1).unwrap();
    assert!(!out.contains(key_body) && !out.contains("PRIVATE KEY"));

    // And the new configuration works: the member sees admin 7 calling.
    let (result, _) = pvefleet(&out_dir.join("pvefleet.toml"), &["admin", "ls"]).await;
    result.unwrap();
    let peer = callers.lock().unwrap()[0].peer.unwrap();
    assert_eq!((peer.role, peer.node_id), (Role::Admin, 7));
}

#[tokio::test]
async fn admin_add_prints_the_handover_and_never_the_key() {
    let pki = Pki::new();
    let member = FakeMember::start(&pki, 1, admin_add_router(&pki, log(), log()));
    let config = pki.write_config(&[&member]);
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("bob");
    // An existing empty directory is fine.
    std::fs::create_dir(&out_dir).unwrap();

    let (result, out) = pvefleet(
        &config,
        &["admin", "add", "bob", "--out", out_dir.to_str().unwrap()],
    )
    .await;
    result.unwrap();
    assert!(
        out.starts_with("Added admin 7 and wrote its credentials to "),
        "{out}"
    );
    assert!(
        out.contains("\nexpires:          2025-03-21T12:00:00Z (in 20d)\n"),
        "{out}"
    );
    assert!(
        out.contains("\nrenewable until:  2026-02-19T12:00:00Z (in 355d)\n"),
        "{out}"
    );
    assert!(out.contains("never left it"), "{out}");
    assert!(out.contains(" to bob privately"), "{out}");
    let key_pem = read_secret(&NodeDir::new(&out_dir).admin_key()).unwrap();
    assert!(!out.contains(key_pem.lines().nth(1).unwrap()));
    assert!(!out.contains("PRIVATE KEY"));
}

#[tokio::test]
async fn admin_add_refuses_a_bad_name_or_a_non_empty_directory_before_sending_anything() {
    let pki = Pki::new();
    let requests: Log<AdminAdd> = log();
    let member = FakeMember::start(&pki, 1, admin_add_router(&pki, requests.clone(), log()));
    let config = pki.write_config(&[&member]);
    let work = tempfile::tempdir().unwrap();

    let used = work.path().join("used");
    std::fs::create_dir(&used).unwrap();
    std::fs::write(used.join("notes.txt"), "keep me").unwrap();
    let (result, out) = pvefleet(
        &config,
        &["admin", "add", "carol", "--out", used.to_str().unwrap()],
    )
    .await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Usage);
    assert!(e.to_string().contains("exists and is not empty"), "{e}");
    assert_eq!(out, "");
    assert_eq!(
        std::fs::read_dir(&used).unwrap().count(),
        1,
        "nothing written"
    );

    let fresh = work.path().join("fresh");
    for bad in ["", "tab\there", &"x".repeat(65)] {
        let (result, _) = pvefleet(
            &config,
            &["admin", "add", bad, "--out", fresh.to_str().unwrap()],
        )
        .await;
        let e = result.unwrap_err();
        assert_eq!(e.status(), ExitStatus::Usage, "{bad:?}");
        assert!(e.to_string().contains("1 to 64 printable"), "{e}");
    }
    assert!(!fresh.exists());
    assert!(requests.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_certificate_for_another_key_is_refused_and_nothing_is_written_but_the_directory() {
    let pki = Pki::new();
    let ca_dir = pki.dir().to_path_buf();
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, _req: AdminAdd| {
        let ca = NodeDir::new(&ca_dir).load_ca().unwrap();
        let other = NodeKey::generate().unwrap();
        let cert_pem = ca
            .issue(
                &other.csr_pem().unwrap(),
                Role::Admin,
                8,
                Duration::from_secs(3600),
                now_secs(),
            )
            .unwrap();
        async move {
            Ok(AdminAddReply {
                record: record(8, "dave"),
                cert_pem,
            })
        }
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("dave");

    let (result, out) = pvefleet(
        &config,
        &["admin", "add", "dave", "--out", out_dir.to_str().unwrap()],
    )
    .await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Failed);
    let message = e.to_string();
    assert!(message.starts_with("admin 8 was added, but"), "{message}");
    assert!(message.contains("another key"), "{message}");
    assert!(message.contains("`pvefleet admin revoke 8`"), "{message}");
    assert_eq!(out, "");
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 0);
}

fn revoke_router(revoked: Log<u64>) -> Router {
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, req: AdminRevoke| {
        revoked.lock().unwrap().push(req.id);
        let reply = match req.id {
            9 => Err(RemoteError::not_found("no admin with id 9")),
            _ => Ok(Done {}),
        };
        async move { reply }
    });
    router
}

#[tokio::test]
async fn admin_revoke_revokes_another_admin_but_not_the_one_in_use_unless_told() {
    let pki = Pki::new();
    let revoked: Log<u64> = log();
    let member = FakeMember::start(&pki, 1, revoke_router(revoked.clone()));
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(&config, &["admin", "revoke", "2"]).await;
    result.unwrap();
    assert_eq!(
        out,
        "admin 2 revoked: its certificates are refused by every member from now on\n"
    );
    let (result, out) = pvefleet(&config, &["-o", "json", "admin", "revoke", "3"]).await;
    result.unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap(),
        json!({"revoked": 3})
    );

    // The test configuration is admin 1 (as `init` makes it).
    let (result, out) = pvefleet(&config, &["admin", "revoke", "1"]).await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Refused);
    let message = e.to_string();
    assert!(
        message.starts_with("admin 1 is the identity of the configuration in use"),
        "{message}"
    );
    assert!(message.contains(config.to_str().unwrap()), "{message}");
    assert!(message.contains("--yes-revoke-myself"), "{message}");
    assert_eq!(out, "");
    assert_eq!(*revoked.lock().unwrap(), [2, 3], "nothing sent for 1");

    let (result, out) = pvefleet(&config, &["admin", "revoke", "1", "--yes-revoke-myself"]).await;
    result.unwrap();
    assert!(out.starts_with("admin 1 revoked"), "{out}");
    assert_eq!(*revoked.lock().unwrap(), [2, 3, 1]);
}

#[tokio::test]
async fn the_clusters_refusals_reach_the_user_unchanged() {
    let pki = Pki::new();
    let mut router = Router::new();
    router.handle(Service::Admin, |_caller, _req: AdminList| async move {
        Err::<AdminListReply, _>(RemoteError::unauthorized(
            "admin 1 may not list admins: its certificate was revoked",
        ))
    });
    router.handle(Service::Admin, |_caller, _req: AdminAdd| async move {
        Err::<AdminAddReply, _>(RemoteError::unavailable(
            "admin requests need cluster version v2; the cluster runs v1 until every member is \
             upgraded",
        ))
    });
    router.handle(Service::Admin, |_caller, _req: AdminRevoke| async move {
        Err::<Done, _>(RemoteError::not_found("no admin with id 9"))
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);

    let (result, _) = pvefleet(&config, &["admin", "revoke", "9"]).await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::NotFound);
    assert_eq!(e.to_string(), "no admin with id 9");

    let (result, _) = pvefleet(&config, &["admin", "ls"]).await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Refused);
    assert_eq!(
        e.to_string(),
        "refused: admin 1 may not list admins: its certificate was revoked"
    );

    // Unavailable is retried until the timeout, then reported with each member's answer.
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("erin");
    let argv = [
        "pvefleet",
        "--config",
        config.to_str().unwrap(),
        "--timeout",
        "1",
        "admin",
        "add",
        "erin",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    let cli = Cli::try_parse_from(argv).unwrap();
    let mut out = Vec::new();
    let e = bounded(run(&cli, &mut out, NOW)).await.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Unavailable);
    assert!(
        e.to_string().contains(
            "unavailable: admin requests need cluster version v2; the cluster runs v1 until \
             every member is upgraded"
        ),
        "{e}"
    );
    // The directory made for the call is gone again: a retry starts clean.
    assert!(!out_dir.exists());
}
