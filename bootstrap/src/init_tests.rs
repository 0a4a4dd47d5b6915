//! `init` tests: the files it writes, their modes, what they contain, and refusing a second init.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::cert::{cert_identity, certificate_sha256};

const NOW: u64 = 1_800_000_000;

fn mode_of(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn init_writes_a_working_cluster_with_private_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("etc/pvefleet");
    let out = init(&path, Some("lab-1".into()), 1, NOW).unwrap();
    assert_eq!(out.cluster_id, "lab-1");
    assert_eq!((out.node_id, out.admin_id), (1, FIRST_ADMIN_ID));

    let dir = NodeDir::new(&path);
    for key in [dir.ca_key(), dir.node_key(), dir.admin_key()] {
        assert_eq!(mode_of(&key), 0o600, "{}", key.display());
    }
    assert_eq!(mode_of(&path), 0o700);

    let node = dir.load_node_material().unwrap();
    assert_eq!(
        node.identity().unwrap(),
        transport::PeerIdentity::coordinator(1)
    );
    assert_eq!(certificate_sha256(&node.ca_pem).unwrap(), out.ca_sha256);
    let id = cert_identity(&node.cert_chain_pem).unwrap();
    assert_eq!((id.role, id.node_id), (Role::Coordinator, 1));
    let key = NodeKey::from_pem(&node.key_pem).unwrap();
    assert!(key.matches_certificate(&node.cert_chain_pem).unwrap());

    let admin = dir.load_admin_material().unwrap();
    let id = cert_identity(&admin.cert_chain_pem).unwrap();
    assert_eq!((id.role, id.node_id), (Role::Admin, FIRST_ADMIN_ID));
    assert!(
        NodeKey::from_pem(&admin.key_pem)
            .unwrap()
            .matches_certificate(&admin.cert_chain_pem)
            .unwrap()
    );

    // The CA on disk can sign more certificates (coordinators issue on join).
    let ca = dir.load_ca().unwrap();
    assert_eq!(ca.sha256(), out.ca_sha256);

    let config = dir.read_cluster_config().unwrap();
    assert_eq!(config.cluster_id, "lab-1");
    assert_eq!((config.node_id, config.role), (1, Role::Coordinator));
}

#[test]
fn init_refuses_a_second_init_and_keeps_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let first = init(tmp.path(), None, 1, NOW).unwrap();
    let before = fs::read_to_string(tmp.path().join("ca.key")).unwrap();
    let err = init(tmp.path(), None, 2, NOW).unwrap_err();
    assert!(
        matches!(err, BootstrapError::AlreadyInitialized { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("refusing to overwrite"), "{err}");
    assert_eq!(
        fs::read_to_string(tmp.path().join("ca.key")).unwrap(),
        before
    );
    let dir = NodeDir::new(tmp.path());
    assert_eq!(
        dir.read_cluster_config().unwrap().cluster_id,
        first.cluster_id
    );
}

#[test]
fn init_refuses_a_directory_with_any_node_file() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("node.key"), "left over").unwrap();
    let err = init(tmp.path(), None, 1, NOW).unwrap_err().to_string();
    assert!(err.contains("node.key"), "{err}");
    assert!(!tmp.path().join("ca.pem").exists());
}

#[test]
fn generated_cluster_ids_are_valid_and_differ() {
    let a = generate_cluster_id(&mut rand::rng());
    let b = generate_cluster_id(&mut rand::rng());
    validate_cluster_id(&a).unwrap();
    assert_ne!(a, b);
}

#[test]
fn bad_cluster_ids_are_refused_before_anything_is_written() {
    for id in ["", "Lab", "lab_1", "-lab", "lab-", &"a".repeat(33), "lab 1"] {
        let tmp = tempfile::tempdir().unwrap();
        let err = init(tmp.path(), Some(id.to_string()), 1, NOW).unwrap_err();
        assert!(
            matches!(err, BootstrapError::InvalidClusterId { .. }),
            "{id:?}: {err}"
        );
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
    for id in ["a", "lab-1", "0", &"z".repeat(32)] {
        validate_cluster_id(id).unwrap();
    }
}

#[test]
fn init_refuses_an_existing_directory_others_may_write_and_keeps_a_readable_one() {
    for mode in [0o777, 0o1777, 0o770, 0o702] {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data");
        fs::create_dir(&path).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        let err = init(&path, None, 1, NOW).unwrap_err();
        assert!(
            matches!(err, BootstrapError::SharedDirectory { .. }),
            "{mode:o}: {err}"
        );
        let text = err.to_string();
        assert!(text.contains("writable by group or others"), "{text}");
        assert!(text.contains("chmod 700"), "{text}");
        assert_eq!(fs::read_dir(&path).unwrap().count(), 0, "nothing written");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
            mode,
            "the directory's mode is left to its owner"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data");
    fs::create_dir(&path).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    init(&path, None, 1, NOW).unwrap();
    let dir = NodeDir::new(&path);
    assert_eq!(mode_of(&dir.ca_key()), 0o600);
}
