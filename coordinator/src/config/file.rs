//! The coordinator's configuration file on its host (default [`DEFAULT_CONFIG_PATH`], shipped
//! documented as `packaging/etc/coordinator.toml`): where its data lives, the addresses `init`
//! and `join` record, the local HTTP address, the leader's control-plane knobs and the log
//! filter. Every `pvefleet-coordinator` subcommand reads it; explicit flags win over it. Not to
//! be confused with `<data_dir>/coordinator.toml` ([`super::NodeSettings`]), which `init` and
//! `join` write and only the program edits.
//!
//! ```toml
//! data_dir = "/var/lib/pvefleet/coordinator"
//! listen = "10.0.0.1:7400"        # no default: init and join need it (or --listen)
//! http = "127.0.0.1:7490"         # default: the address recorded at init, else a free port
//! lease_secs = 10
//! resync_secs = 30
//! ip_wait_secs = 60
//! log = "info,openraft=warn"      # RUST_LOG wins
//!
//! [dashboard]                      # absent: no dashboard (the default)
//! listen = "10.0.0.1:7443"         # HTTPS; `run --dashboard` wins
//! cert = "/etc/pvefleet/dashboard.crt"  # with key: the operator's certificate (default: the member's)
//! key = "/etc/pvefleet/dashboard.key"
//! session_hours = 8
//! scenario_dir = "/var/lib/pvefleet/scenarios"
//! ```

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{DEFAULT_IP_WAIT_SECS, DEFAULT_LEASE, DEFAULT_RESYNC, check_dialable};
use crate::error::CoordinatorError;

/// Where `pvefleet-coordinator` looks for its configuration unless `--config` names one.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/pvefleet/coordinator.toml";
/// The default data directory.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/pvefleet/coordinator";
/// The local HTTP address the packaged configuration sets (not Ceph RGW's 7480).
pub const PACKAGED_HTTP: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 7490);
/// The default log filter (`RUST_LOG` syntax).
pub const DEFAULT_LOG: &str = "info,openraft=warn";

/// Accepted lease lengths in seconds (as `run --lease-secs`).
pub const LEASE_SECS_RANGE: std::ops::RangeInclusive<u64> =
    1..=protocol::timing::MAX_HOST_LEASE_MS / 1000;
/// Accepted resync periods in seconds (as `run --resync-secs`).
pub const RESYNC_SECS_RANGE: std::ops::RangeInclusive<u64> = 1..=86_400;
/// Accepted address waits in seconds (as `run --ip-wait-secs`).
pub const IP_WAIT_SECS_RANGE: std::ops::RangeInclusive<u32> = 0..=3600;

/// The whole configuration file. Every field has a default, so an absent file is the defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordinatorConfig {
    /// The member's data directory (`--data-dir`).
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// The QUIC address `init` and `join` record, as the other members and the CLI dial it
    /// (`--listen`). `run` always uses the address recorded then.
    #[serde(default)]
    pub listen: Option<SocketAddr>,
    /// The local HTTP address of `/metrics`, `/healthz`, `/readyz` (`run --http`); absent: the
    /// one recorded at `init --http`, else 127.0.0.1 on a free port.
    #[serde(default)]
    pub http: Option<SocketAddr>,
    /// The lease granted to agents with each heartbeat, in seconds (`run --lease-secs`).
    #[serde(default = "default_lease_secs")]
    pub lease_secs: u64,
    /// Re-send an Ensure to a VM that looks in order after this many seconds
    /// (`run --resync-secs`; at least the lease).
    #[serde(default = "default_resync_secs")]
    pub resync_secs: u64,
    /// How long agents wait for a started VM's guest-agent addresses, in seconds
    /// (`run --ip-wait-secs`; 0 = do not wait).
    #[serde(default = "default_ip_wait_secs")]
    pub ip_wait_secs: u32,
    /// The log filter of the messages on stderr (journald), `RUST_LOG` syntax; the `RUST_LOG`
    /// environment variable wins over it.
    #[serde(default = "default_log")]
    pub log: String,
    /// The web dashboard (`[dashboard]`); absent = none.
    #[serde(default)]
    pub dashboard: Option<DashboardFile>,
}

/// The `[dashboard]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DashboardFile {
    /// The HTTPS address (`run --dashboard` wins).
    pub listen: SocketAddr,
    /// A PEM certificate chain the operator supplies (with `key`); absent = the member's own
    /// certificate of the cluster CA.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// The PEM private key of `cert`.
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// How long a dashboard session lasts, in hours (1 to 168).
    #[serde(default = "default_session_hours")]
    pub session_hours: u64,
    /// Where `pvefleet-lab sim run --report` reports are listed from.
    #[serde(default = "default_scenario_dir")]
    pub scenario_dir: PathBuf,
}

fn default_session_hours() -> u64 {
    crate::dashboard::settings::DEFAULT_SESSION.as_secs() / 3600
}

fn default_scenario_dir() -> PathBuf {
    PathBuf::from(crate::dashboard::settings::DEFAULT_SCENARIO_DIR)
}

impl DashboardFile {
    /// The dashboard these settings describe, listening on `listen` if given.
    pub fn config(
        &self,
        listen: Option<SocketAddr>,
    ) -> crate::dashboard::settings::DashboardConfig {
        use crate::dashboard::settings::{DashboardCert, DashboardConfig};
        DashboardConfig {
            listen: listen.unwrap_or(self.listen),
            cert: match (&self.cert, &self.key) {
                (Some(cert), Some(key)) => DashboardCert::Files {
                    cert: cert.clone(),
                    key: key.clone(),
                },
                _ => DashboardCert::Member,
            },
            session: Duration::from_secs(self.session_hours.saturating_mul(3600)),
            scenario_dir: self.scenario_dir.clone(),
        }
    }
}

impl Default for CoordinatorConfig {
    fn default() -> CoordinatorConfig {
        CoordinatorConfig {
            data_dir: default_data_dir(),
            listen: None,
            http: None,
            lease_secs: default_lease_secs(),
            resync_secs: default_resync_secs(),
            ip_wait_secs: default_ip_wait_secs(),
            log: default_log(),
            dashboard: None,
        }
    }
}

/// Why the configuration file cannot be used. Every message names the file (and the field).
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The file could not be read.
    #[error("cannot read the coordinator configuration {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The TOML does not parse or has unknown or mistyped fields (the text names the field).
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's error, with the field and line.
        source: toml::de::Error,
    },
    /// A field holds a value that cannot be used.
    #[error("{path}: field `{field}`: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// What is wrong and what is accepted.
        reason: String,
    },
}

impl CoordinatorConfig {
    /// Reads the file `explicit` names (it must exist), or [`DEFAULT_CONFIG_PATH`] if it
    /// exists, else the defaults.
    pub fn load_or_default(explicit: Option<&Path>) -> Result<CoordinatorConfig, ConfigFileError> {
        match explicit {
            Some(path) => CoordinatorConfig::load(path),
            None => match CoordinatorConfig::load(Path::new(DEFAULT_CONFIG_PATH)) {
                Err(ConfigFileError::Read { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    Ok(CoordinatorConfig::default())
                }
                other => other,
            },
        }
    }

    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<CoordinatorConfig, ConfigFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        CoordinatorConfig::from_toml(&text, path)
    }

    /// Parses and checks `text`; `path` is only used in messages.
    pub fn from_toml(text: &str, path: &Path) -> Result<CoordinatorConfig, ConfigFileError> {
        let config: CoordinatorConfig =
            toml::from_str(text).map_err(|source| ConfigFileError::Parse {
                path: path.to_path_buf(),
                source,
            })?;
        config
            .check()
            .map_err(|(field, reason)| ConfigFileError::Invalid {
                path: path.to_path_buf(),
                field,
                reason,
            })?;
        Ok(config)
    }

    /// The lease as a duration.
    pub fn lease(&self) -> Duration {
        Duration::from_secs(self.lease_secs)
    }

    /// The resync period as a duration.
    pub fn resync(&self) -> Duration {
        Duration::from_secs(self.resync_secs)
    }

    fn check(&self) -> Result<(), (&'static str, String)> {
        let outside = |value: String, range: String| format!("{value} is outside {range}");
        if self.data_dir.as_os_str().is_empty() {
            return Err(("data_dir", "must not be empty".into()));
        }
        if let Some(listen) = self.listen
            && let Err(CoordinatorError::BadAddress { reason, .. }) =
                check_dialable("listen", listen)
        {
            return Err(("listen", format!("{listen}: {reason}")));
        }
        if !LEASE_SECS_RANGE.contains(&self.lease_secs) {
            let range = format!("{LEASE_SECS_RANGE:?} seconds");
            return Err(("lease_secs", outside(self.lease_secs.to_string(), range)));
        }
        if !RESYNC_SECS_RANGE.contains(&self.resync_secs) {
            let range = format!("{RESYNC_SECS_RANGE:?} seconds");
            return Err(("resync_secs", outside(self.resync_secs.to_string(), range)));
        }
        if self.resync_secs < self.lease_secs {
            return Err((
                "resync_secs",
                format!(
                    "{} is shorter than lease_secs ({}): resyncing faster than hosts report is \
                     pointless load",
                    self.resync_secs, self.lease_secs
                ),
            ));
        }
        if !IP_WAIT_SECS_RANGE.contains(&self.ip_wait_secs) {
            let range = format!("{IP_WAIT_SECS_RANGE:?} seconds");
            return Err((
                "ip_wait_secs",
                outside(self.ip_wait_secs.to_string(), range),
            ));
        }
        if let Some(d) = &self.dashboard {
            if d.cert.is_some() != d.key.is_some() {
                return Err((
                    "dashboard.cert",
                    "cert and key go together: give both (the operator's certificate) or \
                     neither (the member's own)"
                        .into(),
                ));
            }
            if !(1..=168).contains(&d.session_hours) {
                return Err((
                    "dashboard.session_hours",
                    outside(d.session_hours.to_string(), "1..=168 hours".into()),
                ));
            }
        }
        if let Err(e) = daemon::logging::check_filter(&self.log) {
            return Err(("log", format!("'{}' is not a log filter: {e}", self.log)));
        }
        Ok(())
    }
}

/// The local HTTP address of `run`: the `--http` flag, else the file's `http`, else the one
/// recorded at `init`, else 127.0.0.1 on a free port.
pub fn http_address(
    flag: Option<SocketAddr>,
    file: Option<SocketAddr>,
    recorded: Option<SocketAddr>,
) -> SocketAddr {
    flag.or(file)
        .or(recorded)
        .unwrap_or((Ipv4Addr::LOCALHOST, 0).into())
}

fn default_data_dir() -> PathBuf {
    PathBuf::from(DEFAULT_DATA_DIR)
}
fn default_lease_secs() -> u64 {
    DEFAULT_LEASE.as_secs()
}
fn default_resync_secs() -> u64 {
    DEFAULT_RESYNC.as_secs()
}
fn default_ip_wait_secs() -> u32 {
    DEFAULT_IP_WAIT_SECS
}
fn default_log() -> String {
    DEFAULT_LOG.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHIPPED: &str = include_str!("../../../packaging/etc/coordinator.toml");

    fn parse(text: &str) -> Result<CoordinatorConfig, String> {
        CoordinatorConfig::from_toml(text, Path::new("coordinator.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn the_shipped_file_parses_to_the_defaults_with_the_packaged_http_port() {
        let shipped = parse(SHIPPED).unwrap();
        let want = CoordinatorConfig {
            http: Some(PACKAGED_HTTP),
            ..CoordinatorConfig::default()
        };
        assert_eq!(shipped, want);
    }

    #[test]
    fn the_shipped_file_documents_every_field_with_its_default() {
        // `# key = value` shows a default: uncommenting all of them changes nothing.
        let uncommented = uncomment_defaults(SHIPPED);
        assert_ne!(uncommented, SHIPPED, "the shipped file shows no default");
        assert_eq!(parse(&uncommented).unwrap(), parse(SHIPPED).unwrap());
        let fields = toml::Value::try_from(CoordinatorConfig {
            listen: Some("10.0.0.1:7400".parse().unwrap()),
            http: Some(PACKAGED_HTTP),
            ..CoordinatorConfig::default()
        })
        .unwrap();
        for field in fields.as_table().unwrap().keys() {
            let documented = SHIPPED.lines().any(|l| {
                let l = l.trim_start_matches(['#', ' ']);
                l.starts_with(&format!("{field} = "))
            });
            assert!(documented, "{field} is not in the shipped file");
        }
    }

    /// `text` with its `# key = value` lines uncommented (not the indented examples).
    fn uncomment_defaults(text: &str) -> String {
        text.lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest) if is_assignment(rest) => rest,
                _ => l,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `key = value` with a plain key at the start of the line.
    fn is_assignment(line: &str) -> bool {
        line.split_once(" = ").is_some_and(|(key, _)| {
            !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        })
    }

    #[test]
    fn the_shipped_dashboard_example_is_a_valid_table() {
        // The indented example lines of the shipped file, uncommented.
        let example: String = SHIPPED
            .lines()
            .skip_while(|l| !l.starts_with("#   [dashboard]"))
            .take_while(|l| l.starts_with("#   "))
            .map(|l| format!("{}\n", &l[4..]))
            .collect();
        let config = parse(&example).unwrap();
        let table = config.dashboard.expect("a dashboard table");
        let d = table.config(None);
        assert_eq!(d.listen, "192.0.2.10:7443".parse().unwrap());
        assert_eq!(d.session, Duration::from_secs(8 * 3600));
        assert!(matches!(
            d.cert,
            crate::dashboard::settings::DashboardCert::Files { .. }
        ));
        // `run --dashboard` wins over the file's address; no cert: the member's own.
        let minimal = parse("[dashboard]\nlisten = \"127.0.0.1:7443\"\n").unwrap();
        let d = minimal
            .dashboard
            .expect("a table")
            .config(Some("127.0.0.1:0".parse().unwrap()));
        assert_eq!(d.listen, "127.0.0.1:0".parse().unwrap());
        assert_eq!(d.cert, crate::dashboard::settings::DashboardCert::Member);
    }

    #[test]
    fn an_empty_file_is_the_defaults() {
        assert_eq!(parse("").unwrap(), CoordinatorConfig::default());
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let table = [
            ("lease = 5\n", "lease"),
            ("lease_secs = 0\n", "lease_secs"),
            ("resync_secs = 100000\n", "resync_secs"),
            ("lease_secs = 60\nresync_secs = 30\n", "resync_secs"),
            ("ip_wait_secs = 4000\n", "ip_wait_secs"),
            ("listen = \"0.0.0.0:7400\"\n", "listen"),
            ("listen = \"10.0.0.1:0\"\n", "listen"),
            ("listen = \"pve1:7400\"\n", "listen"),
            ("http = 7490\n", "http"),
            ("data_dir = \"\"\n", "data_dir"),
            ("log = \"info,=[\"\n", "log"),
            (
                "[dashboard]\nlisten = \"127.0.0.1:7443\"\ncert = \"/x.crt\"\n",
                "dashboard.cert",
            ),
            (
                "[dashboard]\nlisten = \"127.0.0.1:7443\"\nsession_hours = 0\n",
                "dashboard.session_hours",
            ),
            (
                "[dashboard]\nlisten = \"127.0.0.1:7443\"\nport = 1\n",
                "port",
            ),
            ("[dashboard]\ncert = \"/x.crt\"\n", "listen"),
        ];
        for (text, field) in table {
            let err = parse(text).unwrap_err();
            assert!(err.contains(field), "{text:?}: {err}");
            assert!(err.contains("coordinator.toml"), "{text:?}: {err}");
        }
    }

    #[test]
    fn a_missing_file_is_an_error_only_when_named() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope.toml");
        let err = CoordinatorConfig::load_or_default(Some(&missing))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope.toml"), "{err}");
    }

    #[test]
    fn the_http_flag_wins_then_the_file_then_init() {
        let a: SocketAddr = "127.0.0.1:1001".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:1002".parse().unwrap();
        let c: SocketAddr = "127.0.0.1:1003".parse().unwrap();
        assert_eq!(http_address(Some(a), Some(b), Some(c)), a);
        assert_eq!(http_address(None, Some(b), Some(c)), b);
        assert_eq!(http_address(None, None, Some(c)), c);
        assert_eq!(
            http_address(None, None, None),
            "127.0.0.1:0".parse().unwrap()
        );
    }
}
