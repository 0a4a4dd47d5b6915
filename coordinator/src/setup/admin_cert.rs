//! `pvefleet-coordinator admin-cert`: a fresh operator (admin) certificate made with the CA key
//! of a coordinator's data directory. The way back for an operator whose admin certificate
//! expired (the CLI renews it automatically only while it is still valid) or was lost.
//!
//! A new key is generated; `admin.key` (0600) and `admin.pem` are written in the data
//! directory, where the `pvefleet.toml` that `init` wrote already points.

use std::path::PathBuf;

use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use bootstrap::init::FIRST_ADMIN_ID;
use bootstrap::paths::{write_public, write_secret};
use bootstrap::{NodeDir, NodeKey, cert_identity};
use protocol::{NodeId, Role};
use serde::Serialize;

use crate::error::CoordinatorError;
use bootstrap::cli_config::CONFIG_FILE_NAME;

/// The admin id `admin-cert` uses unless told otherwise: the one `init` made.
pub const DEFAULT_ADMIN_ID: NodeId = FIRST_ADMIN_ID;

/// What `admin-cert` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminCertOptions {
    /// A coordinator's data directory (it holds the CA key).
    pub data_dir: PathBuf,
    /// The admin id the certificate names.
    pub id: NodeId,
}

/// What `admin-cert` wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdminCertReport {
    /// The admin id in the certificate.
    pub id: NodeId,
    /// The certificate file.
    pub cert: PathBuf,
    /// The key file (mode 0600).
    pub key: PathBuf,
    /// When the certificate expires (unix seconds).
    pub not_after: u64,
    /// The CLI configuration of the data directory, if `init` wrote one there.
    pub cli_config: Option<PathBuf>,
}

/// Issues an admin certificate for `opts.id` with the CA of `opts.data_dir`, valid from `now`
/// (unix seconds), and writes it with its new key over `admin.pem` and `admin.key`.
pub fn issue_admin_cert(
    opts: &AdminCertOptions,
    now: u64,
) -> Result<AdminCertReport, CoordinatorError> {
    let dir = NodeDir::new(&opts.data_dir);
    let load = |e| CoordinatorError::load(&opts.data_dir, e);
    let ca = dir.load_ca().map_err(load)?;
    let key = NodeKey::generate().map_err(load)?;
    let csr = key.csr_pem().map_err(load)?;
    let cert = ca
        .issue(&csr, Role::Admin, opts.id, DEFAULT_LEAF_VALIDITY, now)
        .map_err(load)?;
    let issued = cert_identity(&cert).map_err(load)?;
    // The key first: a certificate is useless without it, and a crash in between leaves a
    // pair that does not match, which running the command again repairs.
    write_secret(&dir.admin_key(), key.private_key_pem()).map_err(CoordinatorError::write)?;
    write_public(&dir.admin_cert(), &cert).map_err(CoordinatorError::write)?;
    let cli_config = dir.root().join(CONFIG_FILE_NAME);
    Ok(AdminCertReport {
        id: opts.id,
        cert: dir.admin_cert(),
        key: dir.admin_key(),
        not_after: issued.not_after,
        cli_config: cli_config.is_file().then_some(cli_config),
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::setup::{InitOptions, init_cluster};
    use bootstrap::cli_config::CliConfig;
    use protocol::time::Now;

    #[test]
    fn admin_cert_replaces_the_admin_files_with_a_new_key_for_the_id_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let data_dir = tmp.path().join("m1");
        let report = init_cluster(&InitOptions {
            data_dir: data_dir.clone(),
            listen: "127.0.0.1:7400".parse().unwrap(),
            cluster_id: Some("lab".into()),
            http: None,
            admin_renewal_days: 0,
        })
        .unwrap();
        let dir = NodeDir::new(&report.data_dir);
        let old_key = std::fs::read_to_string(dir.admin_key()).unwrap();
        let now = Now::read().secs();

        let written = issue_admin_cert(&AdminCertOptions { data_dir, id: 7 }, now).unwrap();
        assert_eq!(written.cert, dir.admin_cert());
        assert_eq!(written.cli_config, Some(report.cli_config.clone()));
        let mode = std::fs::metadata(&written.key)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let new_key = std::fs::read_to_string(&written.key).unwrap();
        assert_ne!(new_key, old_key);
        let cert = std::fs::read_to_string(&written.cert).unwrap();
        let id = cert_identity(&cert).unwrap();
        assert_eq!((id.role, id.node_id), (Role::Admin, 7));
        assert!(!id.needs_renewal(now));
        assert!(
            NodeKey::from_pem(&new_key)
                .unwrap()
                .matches_certificate(&cert)
                .unwrap()
        );
        // The CLI configuration init wrote reads the new pair.
        let material = CliConfig::load(&report.cli_config)
            .unwrap()
            .load_material()
            .unwrap();
        assert_eq!(material.cert_chain_pem, cert);
    }

    #[test]
    fn admin_cert_needs_the_ca_key_and_says_which_file_is_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = AdminCertOptions {
            data_dir: tmp.path().to_path_buf(),
            id: DEFAULT_ADMIN_ID,
        };
        let err = issue_admin_cert(&opts, Now::read().secs())
            .unwrap_err()
            .to_string();
        assert!(err.contains("ca.pem") || err.contains("ca.key"), "{err}");
    }
}
