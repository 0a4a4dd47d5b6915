//! `pvefleet-coordinator init`: a new cluster with this member as its founder (node 1). Writes
//! bootstrap's files, the member's own address into `cluster.toml`, its settings (stage
//! `founder`: Raft is initialized on the first `run`), and the operator's CLI configuration.

use std::net::SocketAddr;
use std::path::PathBuf;

use bootstrap::{MemberAddr, NodeDir};
use serde::Serialize;

use crate::config::{MembershipStage, NodeSettings, check_dialable};
use crate::error::CoordinatorError;
use bootstrap::cli_config::{CONFIG_FILE_NAME, CliConfig, CoordinatorAddr};
use protocol::time::Now;

/// The founder's node id.
pub const FOUNDER_ID: u64 = 1;

/// What `init` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitOptions {
    /// The new member's data directory (must not hold a node).
    pub data_dir: PathBuf,
    /// Its QUIC address, recorded for the other members and the CLI.
    pub listen: SocketAddr,
    /// The cluster id (generated if absent).
    pub cluster_id: Option<String>,
    /// Its local HTTP address, recorded for `run`.
    pub http: Option<SocketAddr>,
    /// How many days past its first expiry an admin certificate may be renewed (0: renewals
    /// keep the expiry; an operator re-issues with `pvefleet admin add`).
    pub admin_renewal_days: u32,
}

/// The longest renewal allowance `init` accepts (ten years).
pub const MAX_ADMIN_RENEWAL_DAYS: u32 = 3650;

/// What `init` made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InitReport {
    /// The cluster's id.
    pub cluster_id: String,
    /// The founder's node id.
    pub node_id: u64,
    /// The data directory (absolute).
    pub data_dir: PathBuf,
    /// The member's QUIC address.
    pub listen: SocketAddr,
    /// The CLI configuration written (absolute).
    pub cli_config: PathBuf,
    /// SHA-256 of the cluster CA (hex): what join tokens pin.
    pub ca_sha256: String,
}

/// Creates the cluster in `opts.data_dir`.
pub fn init_cluster(opts: &InitOptions) -> Result<InitReport, CoordinatorError> {
    check_dialable("--listen", opts.listen)?;
    if opts.admin_renewal_days > MAX_ADMIN_RENEWAL_DAYS {
        return Err(CoordinatorError::InvalidOption(format!(
            "--admin-renewal-days {} is not allowed: expected 0 (renewals keep the expiry) to \
             {MAX_ADMIN_RENEWAL_DAYS}",
            opts.admin_renewal_days
        )));
    }
    let outcome = bootstrap::init(
        &opts.data_dir,
        opts.cluster_id.clone(),
        FOUNDER_ID,
        Now::read().secs(),
    )
    .map_err(|e| CoordinatorError::Init(Box::new(e)))?;
    // Absolute from here on: the CLI configuration is read from anywhere.
    let dir = std::fs::canonicalize(&opts.data_dir).map_err(|source| {
        CoordinatorError::Init(Box::new(bootstrap::BootstrapError::Io {
            op: "resolve",
            path: opts.data_dir.clone(),
            source,
        }))
    })?;
    let node_dir = NodeDir::new(&dir);
    let load = |e| CoordinatorError::load(&dir, e);
    let mut cluster = node_dir.read_cluster_config().map_err(load)?;
    cluster.members = vec![MemberAddr {
        node_id: outcome.node_id,
        addr: opts.listen.to_string(),
    }];
    node_dir
        .write_cluster_config(&cluster)
        .map_err(CoordinatorError::write)?;
    NodeSettings {
        listen: opts.listen,
        http: opts.http,
        membership: MembershipStage::Founder,
        admin_renewal_days: opts.admin_renewal_days,
    }
    .store(&dir)?;
    let cli_config = dir.join(CONFIG_FILE_NAME);
    let founder = CoordinatorAddr {
        addr: opts.listen.to_string(),
        id: outcome.node_id,
    };
    CliConfig::for_node_dir(&dir, vec![founder])
        .write(&cli_config)
        .map_err(|e| CoordinatorError::Settings {
            path: cli_config.clone(),
            reason: e.to_string(),
        })?;
    Ok(InitReport {
        cluster_id: outcome.cluster_id,
        node_id: outcome.node_id,
        data_dir: dir,
        listen: opts.listen,
        cli_config,
        ca_sha256: outcome
            .ca_sha256
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_records_the_founder_and_the_cli_configuration() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("m1");
        let opts = InitOptions {
            data_dir: dir.clone(),
            listen: "127.0.0.1:7400".parse().unwrap(),
            cluster_id: Some("lab".into()),
            http: None,
            admin_renewal_days: 0,
        };
        let report = init_cluster(&opts).unwrap();
        assert_eq!((report.cluster_id.as_str(), report.node_id), ("lab", 1));
        let settings = NodeSettings::load(&dir).unwrap();
        assert_eq!(settings.membership, MembershipStage::Founder);
        let cluster = NodeDir::new(&dir).read_cluster_config().unwrap();
        assert_eq!(cluster.members[0].addr, "127.0.0.1:7400");
        let cli = CliConfig::load(&report.cli_config).unwrap();
        assert_eq!(cli.ca, report.data_dir.join("ca.pem"));
        assert_eq!(
            cli.coordinators,
            [CoordinatorAddr {
                addr: "127.0.0.1:7400".into(),
                id: 1
            }]
        );
        assert!(cli.load_material().is_ok());
        // A second init refuses the directory and leaves it as it was.
        let again = init_cluster(&opts).unwrap_err().to_string();
        assert!(again.contains("already holds a pvefleet node"), "{again}");
        assert_eq!(NodeSettings::load(&dir).unwrap(), settings);
    }

    #[test]
    fn init_refuses_an_address_nobody_can_dial_before_writing_anything() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = InitOptions {
            data_dir: tmp.path().join("m1"),
            listen: "0.0.0.0:7400".parse().unwrap(),
            cluster_id: None,
            http: None,
            admin_renewal_days: 0,
        };
        assert!(init_cluster(&opts).is_err());
        assert!(!opts.data_dir.exists());
    }
}
