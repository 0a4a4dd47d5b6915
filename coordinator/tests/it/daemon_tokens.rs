//! Join tokens against a running founder: a one-use token admits one node and refuses the
//! second; expired, revoked, tampered, unknown and other-cluster tokens are refused with
//! bootstrap's messages, by the Join service itself and through `join` (which reports them as
//! refusals, exit code 3); a refused join writes nothing, and the token's role decides what an
//! admitted one writes. A token created without terms (an older CLI) allows one join within
//! an hour; a coordinator token cannot be widened; the binary refuses a token in its argv.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::daemon_support;

use std::os::unix::fs::PermissionsExt;

use bootstrap::{NodeDir, prepare_join};
use coordinator::config::{MembershipStage, NodeSettings, RunConfig};
use coordinator::error::CoordinatorError;
use coordinator::node::CoordinatorNode;
use daemon_support::{Cluster, bounded, eventually};
use protocol::Role;
use protocol::admin::{ReadMode, TokenCreate, TokenList, TokenRevoke, UNLIMITED_USES};
use protocol::join::JoinResponse;
use protocol::time::Now;
use transport::{Endpoint, RemoteCode, TransportConfig, TransportError};

/// Sends a join request with `token` straight to the founder's Join service, pinning the
/// cluster's real CA (so the server's own check of the token's CA hash is reached).
async fn ask_join(cluster: &Cluster, token: &str) -> Result<JoinResponse, TransportError> {
    let ca_pem = std::fs::read_to_string(NodeDir::new(cluster.founder_dir()).ca_cert()).unwrap();
    let pin = transport::ca_fingerprint(&ca_pem).unwrap();
    let pending = prepare_join(token, Some("127.0.0.1:7999".into())).unwrap();
    let joiner = Endpoint::join_client_on(
        "127.0.0.1:0".parse().unwrap(),
        pin,
        TransportConfig::default(),
    )
    .unwrap();
    let conn = bounded(
        "connect join",
        joiner.connect_join(cluster.members[0].listen),
    )
    .await
    .unwrap();
    let out = conn.call(pending.request()).await;
    conn.close().await;
    out
}

fn refusal(out: Result<JoinResponse, TransportError>) -> String {
    match out {
        Err(TransportError::Remote(e)) => {
            assert_eq!(e.code, RemoteCode::Unauthorized, "{e}");
            e.message
        }
        other => panic!("join not refused: {other:?}"),
    }
}

/// A token text with one of its dot-separated parts replaced.
fn with_part(token: &str, part: usize, value: &str) -> String {
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    parts[part] = value.to_string();
    parts.join(".")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_one_use_token_admits_one_node_and_refuses_the_second() {
    let cluster = Cluster::found(None).await;
    let token = cluster.token(0, Role::Agent, Some(1), None).await;
    let first = ask_join(&cluster, &token).await.unwrap();
    assert!(first.node_id >= 2, "the founder keeps id 1: {first:?}");
    assert!(
        first.ca_key_pem.is_none(),
        "an agent never receives the CA key"
    );
    let second = refusal(ask_join(&cluster, &token).await);
    assert!(
        second.contains("has been used as many times as it allowed"),
        "{second}"
    );
    // The listing shows the use, never the secret.
    let tokens = cluster
        .call(
            0,
            &TokenList {
                read: ReadMode::Linearizable,
            },
        )
        .await
        .unwrap()
        .tokens;
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0].uses_left, Some(0));

    // Through `join`: the same refusal, reported as one (exit code 3), and nothing written.
    let (dir, _, joined) = cluster.join_dir(&token, 0).await;
    let err = joined.unwrap_err();
    assert!(err.is_refusal(), "{err}");
    assert!(err.to_string().contains("has been used"), "{err}");
    assert!(!dir.exists(), "a refused join wrote {}", dir.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expired_revoked_tampered_unknown_and_foreign_tokens_are_refused() {
    let cluster = Cluster::found(None).await;

    let short = cluster
        .call(
            0,
            &TokenCreate {
                role: Role::Agent,
                ttl_secs: Some(1),
                uses: None,
            },
        )
        .await
        .unwrap();
    // Wait (bounded) until the clock the cluster reads is past the token's expiry.
    eventually("the token to expire", || async {
        (Now::read().millis > short.record.expires_at).then_some(())
    })
    .await;
    let expired = refusal(ask_join(&cluster, &short.token).await);
    assert!(expired.contains("expired at"), "{expired}");
    assert!(expired.contains("token create"), "{expired}");

    let revoked = cluster.token(0, Role::Agent, None, None).await;
    let id = revoked.split('.').nth(2).unwrap().to_string();
    cluster.call(0, &TokenRevoke { id }).await.unwrap();
    let message = refusal(ask_join(&cluster, &revoked).await);
    assert!(message.contains("was revoked"), "{message}");

    let good = cluster.token(0, Role::Agent, None, None).await;
    let tampered = with_part(&good, 3, &"x".repeat(32));
    let message = refusal(ask_join(&cluster, &tampered).await);
    assert!(message.contains("has a wrong secret"), "{message}");

    let unknown = with_part(&good, 2, "zzzzzz");
    let message = refusal(ask_join(&cluster, &unknown).await);
    assert!(message.contains("is unknown to this cluster"), "{message}");

    // A token pinning another CA, presented to this cluster: refused by the server's check...
    let foreign = with_part(&good, 1, &"ab".repeat(32));
    let message = refusal(ask_join(&cluster, &foreign).await);
    assert!(message.contains("made for another cluster"), "{message}");
    // ... and `join` never even sends it: the server's CA is not the one the token pins.
    let err = cluster.join_dir(&foreign, 0).await.2.unwrap_err();
    assert!(matches!(err, CoordinatorError::JoinRefused { .. }), "{err}");
    assert!(err.to_string().contains("CA"), "{err}");

    // A malformed token is refused before anything is sent.
    let err = cluster.join_dir("pvf1.nope", 0).await.2.unwrap_err();
    assert!(err.is_refusal(), "{err}");
    assert!(err.to_string().contains("malformed join token"), "{err}");

    // The good token still works after all this.
    let admitted = bounded("join", ask_join(&cluster, &good)).await.unwrap();
    assert_eq!(admitted.cluster_id, "daemon-test");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_token_role_decides_what_join_writes() {
    let cluster = Cluster::found(None).await;

    let agent = cluster.token(0, Role::Agent, Some(1), None).await;
    let (dir, _, joined) = cluster.join_dir(&agent, 0).await;
    assert_eq!(joined.unwrap().role, Role::Agent);
    let files = NodeDir::new(&dir);
    assert!(files.node_key().exists() && !files.ca_key().exists());
    // `run` is for coordinators only.
    let err = CoordinatorNode::start(RunConfig::new(&dir))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CoordinatorError::NotCoordinator {
                role: Role::Agent,
                ..
            }
        ),
        "{err}"
    );

    let member = cluster.token(0, Role::Coordinator, Some(1), None).await;
    let (dir, listen, joined) = cluster.join_dir(&member, 0).await;
    let report = joined.unwrap();
    assert_eq!(report.role, Role::Coordinator);
    let files = NodeDir::new(&dir);
    // A coordinator holds the CA key, private like every key.
    let mode = std::fs::metadata(files.ca_key())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert!(files.load_ca().is_ok());
    let settings = NodeSettings::load(&dir).unwrap();
    assert_eq!(settings.membership, MembershipStage::Pending);
    assert_eq!(settings.listen, listen);
    // Its cluster.toml lists the founder and itself, where they listen.
    let config = files.read_cluster_config().unwrap();
    let addrs: Vec<(u64, String)> = config
        .members
        .iter()
        .map(|m| (m.node_id, m.addr.clone()))
        .collect();
    assert!(
        addrs.contains(&(1, cluster.members[0].listen.to_string())),
        "{addrs:?}"
    );
    assert!(
        addrs.contains(&(report.node_id, listen.to_string())),
        "{addrs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_created_without_terms_allows_one_join_within_an_hour() {
    let cluster = Cluster::found(None).await;
    // What a CLI from before the safe defaults sends: no lifetime, no uses.
    let reply = cluster
        .call(
            0,
            &TokenCreate {
                role: Role::Agent,
                ttl_secs: None,
                uses: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(reply.record.uses_left, Some(1));
    assert_eq!(reply.record.expires_at - reply.record.created_at, 3_600_000);
    ask_join(&cluster, &reply.token).await.unwrap();
    let second = refusal(ask_join(&cluster, &reply.token).await);
    assert!(
        second.contains("has been used as many times as it allowed"),
        "{second}"
    );

    // Widening is explicit, and unlimited is a request of its own.
    let wide = cluster
        .call(
            0,
            &TokenCreate {
                role: Role::Agent,
                ttl_secs: Some(7 * 86_400),
                uses: Some(UNLIMITED_USES),
            },
        )
        .await
        .unwrap();
    assert_eq!(wide.record.uses_left, None);
    ask_join(&cluster, &wide.token).await.unwrap();
    ask_join(&cluster, &wide.token).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_coordinator_token_is_one_use_and_short_lived_whatever_is_asked() {
    let cluster = Cluster::found(None).await;
    for (ttl_secs, uses, expected) in [
        (None, Some(2), "exactly one join"),
        (None, Some(UNLIMITED_USES), "exactly one join"),
        (Some(2 * 86_400), Some(1), "1 to 86400 seconds"),
    ] {
        let err = cluster
            .call(
                0,
                &TokenCreate {
                    role: Role::Coordinator,
                    ttl_secs,
                    uses,
                },
            )
            .await
            .unwrap_err();
        match err {
            TransportError::Remote(e) => {
                assert_eq!(e.code, RemoteCode::BadRequest, "{e}");
                assert!(e.message.contains(expected), "{e}");
            }
            other => panic!("not refused by the cluster: {other}"),
        }
    }
}

#[test]
fn join_refuses_a_token_in_its_arguments_without_showing_it() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = "s3cretsecretsecretsecret";
    let token = format!("pvf1.{}.abc123.{secret}", "ab".repeat(32));
    let dir = tmp.path().join("m2");
    for args in [vec!["join", &token, "127.0.0.1:7401"], vec!["join", &token]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_pvefleet-coordinator"))
            .args(&args)
            .arg("--data-dir")
            .arg(&dir)
            .args(["--listen", "127.0.0.1:7402"])
            .env_remove(bootstrap::JOIN_TOKEN_ENV)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(!err.contains(secret) && !err.contains("abc123"), "{err}");
        assert!(
            err.contains("--token-file -") && err.contains(bootstrap::JOIN_TOKEN_ENV),
            "{err}"
        );
        assert!(!dir.exists());
    }
}
