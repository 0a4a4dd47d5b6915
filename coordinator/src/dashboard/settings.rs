//! How a member's dashboard is set up: its address, its certificate, how long sessions last
//! and where scenario reports are read from (`[dashboard]` in the configuration file, or
//! `run --dashboard`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Where the dashboard's certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DashboardCert {
    /// The member's own certificate of the cluster CA.
    Member,
    /// PEM files the operator supplies.
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// Its private key.
        key: PathBuf,
    },
}

/// The dashboard of a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardConfig {
    /// The HTTPS address it listens on (port 0 picks one).
    pub listen: SocketAddr,
    /// Its certificate.
    pub cert: DashboardCert,
    /// How long a session lasts after its login.
    pub session: Duration,
    /// Where `pvefleet-lab sim run --report` reports are read from.
    pub scenario_dir: PathBuf,
}

/// The default session length.
pub const DEFAULT_SESSION: Duration = Duration::from_secs(8 * 3600);
/// The default directory of scenario reports.
pub const DEFAULT_SCENARIO_DIR: &str = "/var/lib/pvefleet/scenarios";
