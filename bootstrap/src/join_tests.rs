//! The node's side of joining, end to end without the network: a coordinator's pure steps
//! (parse, verify, issue) answer a prepared request, and the node checks and writes it.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use protocol::Role;
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::*;
use crate::ca::{ClusterCa, DEFAULT_LEAF_VALIDITY};
use crate::token_policy::DEFAULT_TOKEN_TTL;
use crate::token_record::{TokenRecord, verify};

const NOW: u64 = 1_800_000_000;

/// What a coordinator does with a join request, minus Raft: verify the token, issue.
fn coordinator_answers(
    ca: &ClusterCa,
    record: &TokenRecord,
    request: &JoinRequest,
    node_id: u64,
) -> JoinResponse {
    let token = JoinToken::parse(&request.token).unwrap();
    let role = verify(Some(record), &token, &ca.sha256(), NOW).unwrap();
    JoinResponse {
        node_id,
        cert_pem: ca
            .issue(&request.csr_pem, role, node_id, DEFAULT_LEAF_VALIDITY, NOW)
            .unwrap(),
        ca_pem: ca.cert_pem().to_string(),
        cluster_id: "lab".into(),
        members: vec![(1, "10.0.0.1:7400".into())],
        ca_key_pem: None,
    }
}

fn token_for(ca: &ClusterCa, role: Role) -> (TokenRecord, JoinToken) {
    TokenRecord::new(
        role,
        DEFAULT_TOKEN_TTL,
        Some(1),
        ca.sha256(),
        NOW,
        &mut StdRng::seed_from_u64(3),
    )
}

#[test]
fn a_node_joins_and_writes_its_directory() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let (record, token) = token_for(&ca, Role::Agent);
    let pending = prepare_join(&token.to_string(), Some("10.0.0.7:7400".into())).unwrap();
    assert_eq!(pending.ca_sha256(), ca.sha256());
    assert_eq!(pending.request().addr.as_deref(), Some("10.0.0.7:7400"));
    let response = coordinator_answers(&ca, &record, pending.request(), 7);
    let joined = pending.accept(response).unwrap();
    assert_eq!(
        (joined.identity.role, joined.identity.node_id),
        (Role::Agent, 7)
    );

    let tmp = tempfile::tempdir().unwrap();
    let dir = NodeDir::new(tmp.path().join("node"));
    joined.write(&dir).unwrap();
    let mode = std::fs::metadata(dir.node_key())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let files = dir.load_node_material().unwrap();
    assert_eq!(files.cert_chain_pem, joined.cert_pem);
    let config = dir.read_cluster_config().unwrap();
    assert_eq!((config.node_id, config.role), (7, Role::Agent));
    assert_eq!(
        config.members,
        [MemberAddr {
            node_id: 1,
            addr: "10.0.0.1:7400".into()
        }]
    );
    // A second join into the same directory is refused.
    assert!(matches!(
        joined.write(&dir),
        Err(BootstrapError::AlreadyInitialized { .. })
    ));
}

#[test]
fn a_ca_other_than_the_pinned_one_is_refused() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let impostor = ClusterCa::create("lab", NOW).unwrap();
    let (record, token) = token_for(&ca, Role::Agent);
    let pending = prepare_join(&token.to_string(), None).unwrap();
    let mut response = coordinator_answers(&ca, &record, pending.request(), 7);
    response.ca_pem = impostor.cert_pem().to_string();
    assert!(matches!(
        pending.accept(response),
        Err(JoinError::CaMismatch { .. })
    ));
}

#[test]
fn a_certificate_for_another_key_or_id_is_refused() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let (record, token) = token_for(&ca, Role::Agent);

    let pending = prepare_join(&token.to_string(), None).unwrap();
    let other = prepare_join(&token.to_string(), None).unwrap();
    let response = coordinator_answers(&ca, &record, other.request(), 7);
    assert!(matches!(pending.accept(response), Err(JoinError::WrongKey)));

    let pending = prepare_join(&token.to_string(), None).unwrap();
    let mut response = coordinator_answers(&ca, &record, pending.request(), 7);
    response.node_id = 8;
    assert!(matches!(
        pending.accept(response),
        Err(JoinError::WrongIdentity { .. })
    ));
}

#[test]
fn a_malformed_token_fails_before_any_key_is_made() {
    let err = prepare_join("pvf1.nope", None).unwrap_err();
    assert!(
        matches!(err, JoinError::Token(TokenError::Malformed(_))),
        "{err}"
    );
}

#[test]
fn pending_join_debug_hides_token_secret_and_key() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let (_, token) = token_for(&ca, Role::Agent);
    let pending = prepare_join(&token.to_string(), None).unwrap();
    let secret = token.to_string().rsplit('.').next().unwrap().to_string();
    let shown = format!("{pending:?}");
    assert!(!shown.contains(&secret), "{shown}");
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
}

#[test]
fn renewed_certificate_must_keep_the_identity_and_match_the_key() {
    let ca = ClusterCa::create("lab", NOW).unwrap();
    let key = NodeKey::generate().unwrap();
    let csr = key.csr_pem().unwrap();
    let old = ca
        .issue(&csr, Role::Agent, 7, DEFAULT_LEAF_VALIDITY, NOW)
        .unwrap();
    let current = cert_identity(&old).unwrap();
    let later = NOW + 21 * 86_400;
    let renewed = ca
        .issue(&csr, Role::Agent, 7, DEFAULT_LEAF_VALIDITY, later)
        .unwrap();
    let new = check_renewed(&key, &current, &renewed).unwrap();
    assert!(new.not_after > current.not_after);

    let other_id = ca
        .issue(&csr, Role::Agent, 8, Duration::from_secs(60), later)
        .unwrap();
    assert!(matches!(
        check_renewed(&key, &current, &other_id),
        Err(JoinError::WrongIdentity { .. })
    ));
    let other_key = NodeKey::generate().unwrap();
    assert!(matches!(
        check_renewed(&other_key, &current, &renewed),
        Err(JoinError::WrongKey)
    ));
}
