//! The CLI's admin certificate, against stand-in members: one due for renewal is renewed once
//! over the same key and written over the configured file; a renewal that fails (a member
//! without `renew`, an answer for another identity) leaves the file alone and the command
//! succeeds with the old certificate; an expired one is refused before anything is sent, with
//! the command that makes a new one.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::{FakeMember, Pki, bounded};
use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use bootstrap::paths::{read_public, read_secret, write_public};
use bootstrap::{CertIdentity, NodeDir, NodeKey, cert_identity};
use clap::Parser;
use cli::exit::{CliError, ExitStatus};
use cli::{Cli, run};
use client::ClientError;
use protocol::Role;
use protocol::admin::ClusterStatus;
use protocol::join::{RenewRequest, RenewResponse};
use transport::{Caller, RemoteError, Router, Service};

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Rewrites the admin certificate of `pki` for the same key, issued `ago` seconds ago for
/// `validity` seconds.
fn reissue_admin(pki: &Pki, ago: u64, validity: u64) -> CertIdentity {
    let dir = NodeDir::new(pki.dir());
    let ca = dir.load_ca().unwrap();
    let key = NodeKey::from_pem(&read_secret(&dir.admin_key()).unwrap()).unwrap();
    let cert = ca
        .issue(
            &key.csr_pem().unwrap(),
            Role::Admin,
            1,
            Duration::from_secs(validity),
            now_secs() - ago,
        )
        .unwrap();
    write_public(&dir.admin_cert(), &cert).unwrap();
    cert_identity(&cert).unwrap()
}

/// An admin certificate past two thirds of its life, valid for about 1000 s more.
fn make_due(pki: &Pki) -> CertIdentity {
    let due = reissue_admin(pki, 2000, 3000);
    let now = now_secs();
    assert!(due.needs_renewal(now) && !due.is_expired(now), "{due:?}");
    due
}

fn admin_cert(pki: &Pki) -> String {
    read_public(&NodeDir::new(pki.dir()).admin_cert()).unwrap()
}

/// A member answering `cluster status`, and `renew` with `renew` if given; counts both.
fn member(pki: &Pki, renew: Option<RenewFn>) -> (FakeMember, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let statuses = Arc::new(AtomicUsize::new(0));
    let renewals = Arc::new(AtomicUsize::new(0));
    let mut router = Router::new();
    let seen = Arc::clone(&statuses);
    router.handle(Service::Admin, move |_caller, _req: ClusterStatus| {
        seen.fetch_add(1, Ordering::SeqCst);
        async { Ok(crate::support::fixtures::status()) }
    });
    if let Some(renew) = renew {
        let seen = Arc::clone(&renewals);
        router.handle(Service::Admin, move |caller: Caller, req: RenewRequest| {
            seen.fetch_add(1, Ordering::SeqCst);
            let reply = renew(&caller, &req);
            async move { reply }
        });
    }
    (FakeMember::start(pki, 1, router), statuses, renewals)
}

type RenewFn =
    Arc<dyn Fn(&Caller, &RenewRequest) -> Result<RenewResponse, RemoteError> + Send + Sync>;

/// `renew` as the CA of `dir` answers it for `role`/`id` (the caller's identity if `None`).
fn issuing(dir: &Path, identity: Option<(Role, u64)>) -> RenewFn {
    let ca = Arc::new(NodeDir::new(dir).load_ca().unwrap());
    Arc::new(move |caller: &Caller, req: &RenewRequest| {
        let peer = caller.peer.unwrap();
        let (role, id) = identity.unwrap_or((peer.role, peer.node_id));
        let cert_pem = ca
            .issue(&req.csr_pem, role, id, DEFAULT_LEAF_VALIDITY, now_secs())
            .map_err(|e| RemoteError::bad_request(e.to_string()))?;
        Ok(RenewResponse { cert_pem })
    })
}

async fn status(config: &Path) -> Result<(), CliError> {
    let argv = [
        "pvefleet",
        "--config",
        config.to_str().unwrap(),
        "--timeout",
        "20",
        "cluster",
        "status",
    ];
    let cli = Cli::try_parse_from(argv).unwrap();
    let mut out = Vec::new();
    bounded(run(&cli, &mut out, 1_740_830_400_000)).await
}

#[tokio::test]
async fn a_due_admin_certificate_is_renewed_once_for_the_same_key_and_written_back() {
    let pki = Pki::new();
    let due = make_due(&pki);
    let (member, statuses, renewals) = member(&pki, Some(issuing(pki.dir(), None)));
    let config = pki.write_config(&[&member]);

    status(&config).await.unwrap();
    assert_eq!(renewals.load(Ordering::SeqCst), 1);
    assert_eq!(statuses.load(Ordering::SeqCst), 1);
    let renewed = admin_cert(&pki);
    let now = now_secs();
    let id = cert_identity(&renewed).unwrap();
    assert_eq!((id.role, id.node_id), (Role::Admin, 1));
    assert!(
        id.not_after > due.not_after && !id.needs_renewal(now),
        "{id:?}"
    );
    let key = read_secret(&NodeDir::new(pki.dir()).admin_key()).unwrap();
    assert!(
        NodeKey::from_pem(&key)
            .unwrap()
            .matches_certificate(&renewed)
            .unwrap()
    );

    // Renewed, it is not due any more: the next command only does its own call.
    status(&config).await.unwrap();
    assert_eq!(renewals.load(Ordering::SeqCst), 1);
    assert_eq!(statuses.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_failed_renewal_keeps_the_valid_certificate_and_the_command_succeeds() {
    let pki = Pki::new();
    make_due(&pki);
    let before = admin_cert(&pki);

    // A member that does not know `renew` (another version).
    let (old_version, statuses, _) = member(&pki, None);
    let config = pki.write_config(&[&old_version]);
    status(&config).await.unwrap();
    assert_eq!(statuses.load(Ordering::SeqCst), 1);
    assert_eq!(admin_cert(&pki), before);
    drop(old_version);

    // A member answering with a certificate for someone else: refused, not written.
    let (wrong, statuses, renewals) =
        member(&pki, Some(issuing(pki.dir(), Some((Role::Admin, 2)))));
    let config = pki.write_config(&[&wrong]);
    status(&config).await.unwrap();
    assert_eq!(renewals.load(Ordering::SeqCst), 1);
    assert_eq!(statuses.load(Ordering::SeqCst), 1);
    assert_eq!(admin_cert(&pki), before);
}

#[tokio::test]
async fn an_expired_admin_certificate_is_refused_with_how_to_get_a_new_one() {
    let pki = Pki::new();
    let expired = reissue_admin(&pki, 10_000, 100);
    assert!(expired.is_expired(now_secs()));
    let (member, statuses, renewals) = member(&pki, Some(issuing(pki.dir(), None)));
    let config = pki.write_config(&[&member]);

    let err = status(&config).await.unwrap_err();
    assert!(
        matches!(
            &err,
            CliError::Client(ClientError::CertificateExpired { .. })
        ),
        "{err:?}"
    );
    assert_eq!(err.status(), ExitStatus::Usage);
    let message = err.to_string();
    assert!(message.contains("admin.pem expired at"), "{message}");
    assert!(
        message.contains("pvefleet-coordinator admin-cert --data-dir DIR"),
        "{message}"
    );
    // Nothing was sent.
    assert_eq!(statuses.load(Ordering::SeqCst), 0);
    assert_eq!(renewals.load(Ordering::SeqCst), 0);
}
