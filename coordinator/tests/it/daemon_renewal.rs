//! Certificate renewal on real members (in-process, loopback): a member renews its own node
//! certificate when it is due, at start and while it runs, presents the renewed certificate on
//! new connections and keeps forming a cluster with it; `renew` issues a certificate for the
//! caller's own identity whatever the CSR asks for; the CLI renews a due admin certificate;
//! and `pvefleet-coordinator admin-cert` is the way back from an expired one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::daemon_support;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bootstrap::cli_config::CliConfig;
use bootstrap::paths::{read_public, read_secret, write_public};
use bootstrap::{CertIdentity, NodeDir, NodeKey, cert_identity};
use client::{AdminClient, ClientError};
use daemon_support::{Cluster, bounded, eventually};
use protocol::Role;
use protocol::admin::{ApplyOutcome, ClusterStatus, ReadMode, VmidRangeApply, VmidRangeList};
use protocol::join::RenewRequest;
use protocol::spec::VmidRangeSpec;
use rcgen::{CertificateParams, DnType, KeyPair, SanType};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use transport::{
    Connection, Endpoint, PeerIdentity, RemoteCode, Service, TlsMaterial, TransportConfig,
    TransportError,
};

/// A fresh leaf lives 30 days; a renewed one has at least 29 left.
const RENEWED_LIFE_LEFT: u64 = 29 * 86_400;

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Rewrites `cert` with a certificate for the key in `key` from the CA of `ca_dir`, issued
/// `ago` seconds ago for `validity` seconds.
fn reissue(
    ca_dir: &Path,
    (cert, key): (&Path, &Path),
    role: Role,
    id: u64,
    (ago, validity): (u64, u64),
) -> CertIdentity {
    let ca = NodeDir::new(ca_dir).load_ca().unwrap();
    let key = NodeKey::from_pem(&read_secret(key).unwrap()).unwrap();
    let pem = ca
        .issue(
            &key.csr_pem().unwrap(),
            role,
            id,
            Duration::from_secs(validity),
            now_secs() - ago,
        )
        .unwrap();
    write_public(cert, &pem).unwrap();
    cert_identity(&pem).unwrap()
}

/// Past two thirds of its life, still valid for about 1000 s.
const DUE: (u64, u64) = (2000, 3000);

/// Waits until the certificate in `path` is a renewal of `old`: later expiry, not due.
async fn renewed(path: &Path, old: &CertIdentity) -> CertIdentity {
    let renewed = eventually("the certificate renewed", || async {
        let id = cert_identity(&read_public(path).ok()?).ok()?;
        (id.not_after > old.not_after).then_some(id)
    })
    .await;
    assert_eq!((renewed.role, renewed.node_id), (old.role, old.node_id));
    assert!(
        renewed.not_after >= now_secs() + RENEWED_LIFE_LEFT,
        "{renewed:?}"
    );
    renewed
}

/// The DER of the certificate the server presented on `conn`.
fn presented(conn: &Connection) -> Vec<u8> {
    let any = conn.quic().peer_identity().unwrap();
    let chain = any.downcast::<Vec<CertificateDer<'static>>>().unwrap();
    chain[0].to_vec()
}

fn der_of(pem: &str) -> Vec<u8> {
    CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

/// The node key in `dir` certifies the certificate in `cert`.
fn same_key(key: &Path, cert: &Path) -> bool {
    NodeKey::from_pem(&read_secret(key).unwrap())
        .unwrap()
        .matches_certificate(&read_public(cert).unwrap())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_member_renews_its_due_certificate_at_start_and_the_cluster_grows_with_it() {
    let mut cluster = Cluster::init(None);
    let dir = cluster.founder_dir().to_path_buf();
    let node = NodeDir::new(&dir);
    let files = (node.node_cert(), node.node_key());
    let old = reissue(&dir, (&files.0, &files.1), Role::Coordinator, 1, DUE);
    assert!(old.needs_renewal(now_secs()));

    cluster.members[0].start(None).await;
    renewed(&node.node_cert(), &old).await;
    assert!(same_key(&node.node_key(), &node.node_cert()));

    // A new connection is served with the renewed certificate.
    let conn = cluster.connect(0).await;
    assert_eq!(
        presented(&conn),
        der_of(&read_public(&node.node_cert()).unwrap())
    );
    conn.close().await;

    // A new member joins, replicates and forwards over connections made since.
    let joined = cluster.add_member(0).await;
    cluster.wait_voters(joined, 2).await;
    let range = VmidRangeApply {
        spec: VmidRangeSpec {
            name: "main".into(),
            start: 1000,
            end: 1999,
        },
    };
    let applied = cluster.call(joined, &range).await.unwrap();
    assert_eq!(applied.outcome, ApplyOutcome::Created);
    let ranges = cluster
        .call(
            0,
            &VmidRangeList {
                read: ReadMode::Linearizable,
            },
        )
        .await
        .unwrap();
    assert_eq!(ranges.ranges.len(), 1, "{ranges:?}");
    cluster.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_running_member_renews_its_certificate_once_it_becomes_due() {
    let mut cluster = Cluster::init(None);
    cluster.members[0].renew_check = Duration::from_secs(1);
    cluster.members[0].start(None).await;
    let dir = cluster.founder_dir().to_path_buf();
    let node = NodeDir::new(&dir);
    // Made due behind the member's back, as time passing would.
    let old = reissue(
        &dir,
        (&node.node_cert(), &node.node_key()),
        Role::Coordinator,
        1,
        DUE,
    );
    renewed(&node.node_cert(), &old).await;
    let conn = cluster.connect(0).await;
    assert_eq!(
        presented(&conn),
        der_of(&read_public(&node.node_cert()).unwrap())
    );
    let status = conn.call(&ClusterStatus {}).await.unwrap();
    assert_eq!(status.leader, Some(1));
    conn.close().await;
    cluster.stop_all().await;
}

/// A CSR for `key` that asks for every name of coordinator 1.
fn csr_claiming_coordinator_1(key: &KeyPair) -> String {
    let mut params = CertificateParams::new(vec!["coordinator-1.pvefleet".to_string()]).unwrap();
    params.subject_alt_names.push(SanType::URI(
        "urn:pvefleet:coordinator:1".try_into().unwrap(),
    ));
    params
        .distinguished_name
        .push(DnType::CommonName, "coordinator-1.pvefleet");
    params.serialize_request(key).unwrap().pem().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn renew_issues_the_callers_own_identity_whatever_the_csr_asks_for() {
    // Admins may be renewed a month past their first expiry here (by default not at all).
    let mut cluster = Cluster::found_with_admin_renewal(None, 30).await;
    let now = now_secs();

    // The operator, on Admin.
    let key = KeyPair::generate().unwrap();
    let reply = cluster
        .call(
            0,
            &RenewRequest {
                csr_pem: csr_claiming_coordinator_1(&key),
            },
        )
        .await
        .unwrap();
    let id = cert_identity(&reply.cert_pem).unwrap();
    assert_eq!((id.role, id.node_id), (Role::Admin, 1));
    assert!(id.not_after >= now + RENEWED_LIFE_LEFT, "{id:?}");
    let holder = NodeKey::from_pem(&key.serialize_pem()).unwrap();
    assert!(holder.matches_certificate(&reply.cert_pem).unwrap());

    // An agent, on Agent.
    let founder = NodeDir::new(cluster.founder_dir());
    let ca = founder.load_ca().unwrap();
    let agent_key = NodeKey::generate().unwrap();
    let agent_cert = ca
        .issue(
            &agent_key.csr_pem().unwrap(),
            Role::Agent,
            9,
            Duration::from_secs(3600),
            now,
        )
        .unwrap();
    let agent = Endpoint::client_on(
        "127.0.0.1:0".parse().unwrap(),
        &TlsMaterial::new(ca.cert_pem(), agent_cert, agent_key.private_key_pem()),
        TransportConfig::default(),
    )
    .unwrap();
    let m = &cluster.members[0];
    let conn = bounded(
        "agent connect",
        agent.connect(m.listen, PeerIdentity::coordinator(m.id), Service::Agent),
    )
    .await
    .unwrap();
    let new_key = KeyPair::generate().unwrap();
    let reply = conn
        .call(&RenewRequest {
            csr_pem: csr_claiming_coordinator_1(&new_key),
        })
        .await
        .unwrap();
    let id = cert_identity(&reply.cert_pem).unwrap();
    assert_eq!((id.role, id.node_id), (Role::Agent, 9));

    // Something that is not a CSR is the caller's mistake.
    let err = conn
        .call(&RenewRequest {
            csr_pem:
                "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
                    .into(),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, TransportError::Remote(e) if e.code == RemoteCode::BadRequest),
        "{err:?}"
    );
    conn.close().await;
    agent.close(Duration::from_millis(200)).await;
    cluster.stop_all().await;
}

/// `cluster status` through a client made from `config`, as `pvefleet` makes it: a client
/// from a configuration renews a due admin certificate before its first call. The cluster id.
async fn status_with(config: &Path) -> String {
    let config = CliConfig::load(config).unwrap();
    let client = AdminClient::from_config(&config)
        .unwrap()
        .with_timeout(Duration::from_secs(30));
    let status = bounded("status", client.call(&ClusterStatus {}))
        .await
        .unwrap();
    client.close().await;
    status.cluster_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_cli_renews_a_due_admin_certificate_with_a_member() {
    let mut cluster = Cluster::found(None).await;
    let dir = cluster.founder_dir().to_path_buf();
    let node = NodeDir::new(&dir);
    let old = reissue(
        &dir,
        (&node.admin_cert(), &node.admin_key()),
        Role::Admin,
        1,
        DUE,
    );
    assert_eq!(status_with(&dir.join("pvefleet.toml")).await, "daemon-test");
    renewed(&node.admin_cert(), &old).await;
    assert!(same_key(&node.admin_key(), &node.admin_cert()));
    // And the renewed certificate is accepted on its own.
    assert_eq!(status_with(&dir.join("pvefleet.toml")).await, "daemon-test");
    cluster.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admin_cert_replaces_an_expired_admin_certificate_with_one_the_cluster_accepts() {
    let mut cluster = Cluster::found(None).await;
    let dir = cluster.founder_dir().to_path_buf();
    let node = NodeDir::new(&dir);
    reissue(
        &dir,
        (&node.admin_cert(), &node.admin_key()),
        Role::Admin,
        1,
        (10_000, 100),
    );
    let config = CliConfig::load(&dir.join("pvefleet.toml")).unwrap();
    let err = AdminClient::from_config(&config).unwrap_err();
    assert!(
        matches!(err, ClientError::CertificateExpired { .. }),
        "{err:?}"
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pvefleet-coordinator"))
        .args(["admin-cert", "--data-dir"])
        .arg(&dir)
        .args(["--id", "2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("admin.pem"), "{stdout}");
    assert!(stdout.contains("PVEFLEET_CONFIG="), "{stdout}");
    let issued = cert_identity(&read_public(&node.admin_cert()).unwrap()).unwrap();
    assert_eq!((issued.role, issued.node_id), (Role::Admin, 2));
    assert!(same_key(&node.admin_key(), &node.admin_cert()));

    let client = AdminClient::from_config(&config).unwrap();
    let status = bounded("status", client.call(&ClusterStatus {}))
        .await
        .unwrap();
    assert_eq!(status.cluster_id, "daemon-test");
    client.close().await;
    cluster.stop_all().await;
}
