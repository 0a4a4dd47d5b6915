//! The agent's configuration file (TOML, default [`DEFAULT_CONFIG_PATH`]): where its data
//! lives, the host's name and labels, how often it beats, and which PVE backend it drives.
//! Unknown fields are refused so a typo fails loudly; every error names the field. Secrets are
//! never written here, only the paths of the files holding them.
//!
//! ```toml
//! data_dir = "/var/lib/pvefleet/agent"   # node.key, node.pem, ca.pem, cluster.toml, journal/
//! host_name = "pve1"                     # default: this machine's short host name
//! heartbeat_ms = 1000
//! inventory_ms = 5000
//! log = "info"                           # RUST_LOG wins
//! platform = "host"                      # or "lab": a pve-sim process is this host's PVE
//! vip_holding = "auto"                   # or "host" or "simulated" (auto: simulated in a lab)
//! bind_address = "127.0.1.3"             # source address of its QUIC connections (default: any)
//! [fence]                                # docs/design/fencing-agent.md
//! lead_ms = 2000                         # fence this long before the lease ends
//! reset = "auto"                         # or "host" or "simulated" (auto: follows platform)
//! guard = "auto"                         # or "unit" or "child" (auto: child in a lab)
//! [labels]
//! zone = "a"
//! [pve]
//! backend = "https"                      # or "pvesh"
//! url = "https://127.0.0.1:8006"
//! token_file = "/etc/pvefleet/pve-token" # one line USER@REALM!TOKENID=SECRET, mode 0600
//! fingerprint = "AA:BB:..."              # or ca_file = "/etc/pve/pve-root-ca.pem", or insecure = true
//! migration_address = "10.0.0.11:8006"   # how other PVE clusters reach this node (remote migrations)
//! ```
//!
//! The packaged, documented file is `packaging/etc/agent.toml` (installed as
//! [`DEFAULT_CONFIG_PATH`]); `tests/agent_config_and_docs.rs` keeps it parsing to the defaults.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use protocol::spec::Labels;
use serde::{Deserialize, Deserializer, Serialize};

pub use crate::fence::settings::{FenceConfig, GuardMode, ResetMode};
use crate::migration_address::MigrationAddress;

/// Where `pvefleet-agent` looks for its configuration unless told otherwise.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/pvefleet/agent.toml";
/// The default data directory.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/pvefleet/agent";
/// The default heartbeat interval, in milliseconds.
pub const DEFAULT_HEARTBEAT_MS: u64 = protocol::timing::HEARTBEAT_MS;
/// The default inventory collection interval, in milliseconds.
pub const DEFAULT_INVENTORY_MS: u64 = 5000;
/// The default HTTPS URL of the local PVE API.
pub const DEFAULT_PVE_URL: &str = "https://127.0.0.1:8006";
/// The default log filter (`RUST_LOG` syntax).
pub const DEFAULT_LOG: &str = "info";

/// Accepted heartbeat intervals: well inside the lease (10 s by default).
const HEARTBEAT_MS_RANGE: std::ops::RangeInclusive<u64> = 100..=5_000;
/// Accepted inventory intervals: `pvesh` costs a process per call, so not too often.
const INVENTORY_MS_RANGE: std::ops::RangeInclusive<u64> = 500..=300_000;

/// The whole configuration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's directory: its certificate and key, `cluster.toml`, the command journal.
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// The PVE node name of this host; the machine's short host name when absent.
    #[serde(default)]
    pub host_name: Option<String>,
    /// Labels placement constraints match (`zone = "a"`).
    #[serde(default)]
    pub labels: Labels,
    /// Milliseconds between heartbeats (100 to 5000).
    #[serde(default = "default_heartbeat_ms")]
    pub heartbeat_ms: u64,
    /// Milliseconds between inventory collections (500 to 300000); a finished command also
    /// triggers one.
    #[serde(default = "default_inventory_ms")]
    pub inventory_ms: u64,
    /// What is logged to stderr (the journal), `RUST_LOG` syntax; the `RUST_LOG` environment
    /// variable wins over it.
    #[serde(default = "default_log")]
    pub log: String,
    /// Where the agent runs: `host` (the default), a PVE host; `lab`, beside a `pve-sim`
    /// process standing in for PVE, whose control API resets the node, edits its cluster
    /// filesystem and takes snippets, with no systemd to ask why the agent stops.
    #[serde(default)]
    pub platform: PlatformKind,
    /// How VIPs granted to this host are held: `auto` (the default) holds them on the host's
    /// interfaces, or only simulates holding on the `lab` platform; `host` always holds them
    /// for real (the namespace testbed: simulated PVE, real addresses); `simulated` never
    /// touches an interface.
    #[serde(default)]
    pub vip_holding: VipHolding,
    /// The local address the agent's QUIC connections to the coordinators leave from (an IP
    /// address of this host, any port); `None` (the default): any address, the kernel picks
    /// by route. Testbeds give each host its own loopback address and cut its links by it.
    #[serde(
        default,
        deserialize_with = "ip_address",
        skip_serializing_if = "Option::is_none"
    )]
    pub bind_address: Option<IpAddr>,
    /// What the agent does when its lease runs out, and the guard that backs it up.
    #[serde(default)]
    pub fence: FenceConfig,
    /// The PVE backend.
    pub pve: PveConfig,
}

/// Where the agent runs (`platform = ...`); [`crate::platform::Platform`] is what it implies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlatformKind {
    /// A PVE host: reboot(2) for a reset, pmxcfs at `/etc/pve`, systemd.
    #[default]
    Host,
    /// A lab: the `pve-sim` process behind the `[pve]` backend stands in for the host.
    Lab,
}

/// How VIPs are held (`vip_holding = ...`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VipHolding {
    /// On the host's interfaces, simulated on the `lab` platform.
    #[default]
    Auto,
    /// Always on the host's interfaces.
    Host,
    /// Never on an interface: recorded and reported as simulated.
    Simulated,
}

/// How the agent reaches PVE on this host (`[pve] backend = ...`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "backend", rename_all = "lowercase")]
pub enum PveConfig {
    /// The local HTTPS API with an API token.
    Https(HttpsSettings),
    /// `pvesh` as root on the host.
    Pvesh(PveshSettings),
}

/// `backend = "https"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpsSettings {
    /// `https://HOST[:PORT]` of pveproxy (default `https://127.0.0.1:8006`).
    #[serde(default = "default_url")]
    pub url: String,
    /// The API token file: one line `USER@REALM!TOKENID=SECRET`, mode 0600.
    pub token_file: PathBuf,
    /// Trust the certificates of this PEM file (e.g. `/etc/pve/pve-root-ca.pem`).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Trust exactly the certificate with this SHA-256 fingerprint (`AA:BB:...`, as PVE shows).
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// Trust any certificate (throw-away labs only).
    #[serde(default)]
    pub insecure: bool,
    /// `ADDRESS[:PORT]` (port default 8006) at which the PVE nodes of other clusters reach
    /// this node's API, handed to them for remote migrations to this host; unset: the host
    /// of `url` unless it is a loopback address, else the host takes no remote migrations.
    #[serde(default)]
    pub migration_address: Option<String>,
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl HttpsSettings {
    /// Where sources of remote migrations reach this node ([`Self::migration_address`]);
    /// `Ok(None)` when it takes none; an error says what is wrong with the value.
    pub fn migration_address(&self) -> Result<Option<MigrationAddress>, String> {
        let Some(text) = &self.migration_address else {
            // The url's own host (a bad url is `pve.url`'s error), unless it is loopback.
            return Ok(self
                .host_port()
                .ok()
                .filter(|(host, _)| !is_loopback(host))
                .map(|(host, port)| MigrationAddress { host, port }));
        };
        let bad = || format!("{text:?} is not ADDRESS[:PORT] (port 1-65535)");
        let (host, port) = match text.rsplit_once(':') {
            // A bare IPv6 address: its colons are not a port.
            Some((h, _)) if !h.ends_with(']') && h.contains(':') => (text.as_str(), "8006"),
            Some((h, p)) => (h, p),
            None => (text.as_str(), "8006"),
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port: u16 = port.parse().map_err(|_| bad())?;
        if host.is_empty() || port == 0 || host.contains('/') {
            return Err(bad());
        }
        Ok(Some(MigrationAddress { host, port }))
    }
}

/// `backend = "pvesh"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PveshSettings {
    /// The program (default `pvesh`, found on `PATH`).
    #[serde(default = "default_pvesh")]
    pub program: PathBuf,
    /// Deadline of one call in seconds; tasks run in the foreground, so it bounds a clone too.
    #[serde(default = "default_pvesh_timeout")]
    pub timeout_secs: u64,
}

impl PveConfig {
    /// The backend's name as configured (`https`, `pvesh`).
    pub fn kind(&self) -> &'static str {
        match self {
            PveConfig::Https(_) => "https",
            PveConfig::Pvesh(_) => "pvesh",
        }
    }
}

/// Why the configuration cannot be used. Every message names the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error(
        "cannot read the agent configuration {path}: {source}; write one (see `pvefleet-agent \
         run --help`) or pass --config FILE"
    )]
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
        /// The field (`pve.url`, `heartbeat_ms`, ...).
        field: String,
        /// What is wrong and what is accepted.
        reason: String,
    },
}

impl AgentConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<AgentConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        AgentConfig::from_toml(&text, path)
    }

    /// Parses and checks `text`; `path` is only used in messages.
    pub fn from_toml(text: &str, path: &Path) -> Result<AgentConfig, ConfigError> {
        let config: AgentConfig = toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
        config.validate(path)?;
        Ok(config)
    }

    /// Checks every field on its own and against the others.
    pub fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |field: &str, reason: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            field: field.to_string(),
            reason,
        };
        if !HEARTBEAT_MS_RANGE.contains(&self.heartbeat_ms) {
            return Err(invalid(
                "heartbeat_ms",
                format!(
                    "{} is outside {}..={} milliseconds",
                    self.heartbeat_ms,
                    HEARTBEAT_MS_RANGE.start(),
                    HEARTBEAT_MS_RANGE.end()
                ),
            ));
        }
        if !INVENTORY_MS_RANGE.contains(&self.inventory_ms) {
            return Err(invalid(
                "inventory_ms",
                format!(
                    "{} is outside {}..={} milliseconds",
                    self.inventory_ms,
                    INVENTORY_MS_RANGE.start(),
                    INVENTORY_MS_RANGE.end()
                ),
            ));
        }
        if self.data_dir.as_os_str().is_empty() {
            return Err(invalid("data_dir", "must not be empty".to_string()));
        }
        if let PveConfig::Https(https) = &self.pve {
            https
                .migration_address()
                .map_err(|reason| invalid("pve.migration_address", reason))?;
        }
        if let Err(e) = ::daemon::logging::check_filter(&self.log) {
            return Err(invalid(
                "log",
                format!("'{}' is not a log filter: {e}", self.log),
            ));
        }
        self.fence
            .validate()
            .map_err(|(field, reason)| invalid(&field, reason))?;
        match (self.platform, self.fence.reset) {
            (PlatformKind::Host, ResetMode::Simulated) => {
                return Err(invalid(
                    "fence.reset",
                    "\"simulated\" resets a pve-sim node: only with platform = \"lab\" (on a PVE \
                     host leave it \"auto\" or set \"host\")"
                        .into(),
                ));
            }
            (PlatformKind::Lab, ResetMode::Host) => {
                return Err(invalid(
                    "fence.reset",
                    "\"host\" reboots this machine: not with platform = \"lab\" (leave it \
                     \"auto\")"
                        .into(),
                ));
            }
            _ => {}
        }
        // The labels are checked with any valid name; the name itself is checked on its own.
        check_host(self.host_name.as_deref().unwrap_or("host"), &self.labels)
            .map_err(|(field, reason)| invalid(&field, reason))?;
        match &self.pve {
            PveConfig::Https(https) => https.validate().map_err(|(f, r)| invalid(&f, r)),
            PveConfig::Pvesh(pvesh) => {
                if pvesh.timeout_secs == 0 {
                    return Err(invalid("pve.timeout_secs", "must be at least 1".into()));
                }
                if pvesh.program.as_os_str().is_empty() {
                    return Err(invalid("pve.program", "must not be empty".into()));
                }
                Ok(())
            }
        }
    }

    /// The host's PVE node name: `host_name`, or the machine's host name without its domain
    /// (as PVE names its node). Checked against PVE's node name rule.
    pub fn resolved_host_name(&self, path: &Path) -> Result<String, ConfigError> {
        let name = match &self.host_name {
            Some(name) => name.clone(),
            None => sysinfo::System::host_name()
                .map(|h| short_host_name(&h).to_string())
                .map_err(|e| ConfigError::Invalid {
                    path: path.to_path_buf(),
                    field: "host_name".into(),
                    reason: format!("not set, and this machine's host name is unreadable: {e}"),
                })?,
        };
        check_host(&name, &self.labels).map_err(|(field, reason)| ConfigError::Invalid {
            path: path.to_path_buf(),
            field,
            reason,
        })?;
        Ok(name)
    }
}

impl HttpsSettings {
    /// The host and port of [`HttpsSettings::url`].
    pub fn host_port(&self) -> Result<(String, u16), String> {
        parse_https_url(&self.url)
    }

    fn validate(&self) -> Result<(), (String, String)> {
        self.host_port().map_err(|r| ("pve.url".to_string(), r))?;
        let chosen = [
            self.ca_file.is_some(),
            self.fingerprint.is_some(),
            self.insecure,
        ]
        .into_iter()
        .filter(|c| *c)
        .count();
        if chosen != 1 {
            return Err((
                "pve.ca_file".to_string(),
                format!(
                    "set exactly one of `ca_file`, `fingerprint` or `insecure = true` to say how \
                     the PVE certificate is checked ({chosen} set)"
                ),
            ));
        }
        if self.token_file.as_os_str().is_empty() {
            return Err(("pve.token_file".into(), "must not be empty".into()));
        }
        Ok(())
    }
}

/// The name and labels must follow the fleet's rules; the error names the config field.
fn check_host(name: &str, labels: &Labels) -> Result<(), (String, String)> {
    protocol::fleet::validate_host(name, labels).map_err(|e| {
        let field = if e.field == "name" {
            "host_name".to_string()
        } else {
            e.field.clone()
        };
        (field, format!("{} is not {}", e.value, e.allowed))
    })
}

/// `bind_address`: an IP address, refused with a message naming the key otherwise (the
/// parser's own text for `IpAddr` says neither).
fn ip_address<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IpAddr>, D::Error> {
    struct Ip;
    impl serde::de::Visitor<'_> for Ip {
        type Value = IpAddr;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("bind_address: an IP address as a string (e.g. \"127.0.1.3\" or \"::1\")")
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<IpAddr, E> {
            text.parse().map_err(|_| {
                E::custom(format!(
                    "bind_address: '{text}' is not an IP address (e.g. 127.0.1.3 or ::1)"
                ))
            })
        }
    }
    d.deserialize_str(Ip).map(Some)
}

/// `pve1.example.com` → `pve1`: PVE names its node after the host name without the domain.
pub fn short_host_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// `https://HOST[:PORT][/]` → (HOST, PORT); IPv6 hosts in brackets.
fn parse_https_url(url: &str) -> Result<(String, u16), String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("'{url}' must start with https://"))?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
        return Err(format!(
            "'{url}' must be https://HOST[:PORT] without a path (e.g. {DEFAULT_PVE_URL})"
        ));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("'{url}': unclosed '[' in the host"))?;
        match after {
            "" => (host, None),
            p => (
                host,
                Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| format!("'{url}': expected ':PORT' after ']'"))?,
                ),
            ),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(format!("'{url}' has no host"));
    }
    let port = match port {
        None => pve::https::HttpsConfig::DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("'{url}': the port must be 1-65535"))?,
    };
    Ok((host.to_string(), port))
}

fn default_data_dir() -> PathBuf {
    PathBuf::from(DEFAULT_DATA_DIR)
}
fn default_log() -> String {
    DEFAULT_LOG.to_string()
}
fn default_heartbeat_ms() -> u64 {
    DEFAULT_HEARTBEAT_MS
}
fn default_inventory_ms() -> u64 {
    DEFAULT_INVENTORY_MS
}
fn default_url() -> String {
    DEFAULT_PVE_URL.to_string()
}
fn default_pvesh() -> PathBuf {
    PathBuf::from("pvesh")
}
fn default_pvesh_timeout() -> u64 {
    pve::pvesh::PveshConfig::DEFAULT_TIMEOUT.as_secs()
}
#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AgentConfig, String> {
        AgentConfig::from_toml(text, Path::new("agent.toml")).map_err(|e| e.to_string())
    }

    const SIM: &str =
        "host_name = \"hosta\"\n[pve]\nbackend = \"https\"\ntoken_file = \"/t\"\ninsecure = true\n";

    #[test]
    fn a_minimal_config_takes_the_defaults() {
        let c = parse(SIM).unwrap();
        assert_eq!(c.data_dir, PathBuf::from(DEFAULT_DATA_DIR));
        assert_eq!(c.heartbeat_ms, DEFAULT_HEARTBEAT_MS);
        assert_eq!(c.platform, PlatformKind::Host);
        assert_eq!(c.pve.kind(), "https");
        assert_eq!(c.resolved_host_name(Path::new("x")).unwrap(), "hosta");
    }

    #[test]
    fn the_platform_and_the_reset_must_agree() {
        assert_eq!(
            parse(&format!("platform = \"lab\"\n{SIM}"))
                .unwrap()
                .platform,
            PlatformKind::Lab
        );
        let host_sim = parse(&format!("{SIM}[fence]\nreset = \"simulated\"\n")).unwrap_err();
        assert!(
            host_sim.contains("fence.reset") && host_sim.contains("platform = \"lab\""),
            "{host_sim}"
        );
        let lab_host = parse(&format!(
            "platform = \"lab\"\n{SIM}[fence]\nreset = \"host\"\n"
        ))
        .unwrap_err();
        assert!(lab_host.contains("fence.reset"), "{lab_host}");
        let unknown = parse(&format!("platform = \"sim\"\n{SIM}")).unwrap_err();
        assert!(
            unknown.contains("platform") && unknown.contains("lab"),
            "{unknown}"
        );
        let gone = parse("host_name = \"h\"\n[pve]\nbackend = \"sim\"\n").unwrap_err();
        assert!(gone.contains("sim") && gone.contains("https"), "{gone}");
    }

    #[test]
    fn each_backend_reads_its_own_fields() {
        let https = "[pve]\nbackend = \"https\"\ntoken_file = \"/t\"\nfingerprint = \"AA:BB\"\n";
        let PveConfig::Https(h) = parse(https).unwrap().pve else {
            panic!("not https");
        };
        assert_eq!(h.host_port().unwrap(), ("127.0.0.1".to_string(), 8006));
        let pvesh = "[pve]\nbackend = \"pvesh\"\ntimeout_secs = 60\n";
        assert_eq!(
            parse(pvesh).unwrap().pve,
            PveConfig::Pvesh(PveshSettings {
                program: PathBuf::from("pvesh"),
                timeout_secs: 60
            })
        );
    }

    #[test]
    fn errors_name_the_field_at_fault() {
        let https = "[pve]\nbackend = \"https\"\ntoken_file = \"/t\"\n";
        let table: &[(String, &str)] = &[
            (format!("heartbeat_msec = 5\n{SIM}"), "heartbeat_msec"),
            (format!("heartbeat_ms = 0\n{SIM}"), "heartbeat_ms"),
            (format!("inventory_ms = 1\n{SIM}"), "inventory_ms"),
            (format!("{SIM}cpu = 4\n"), "cpu"),
            (format!("{SIM}[fence]\nlead_ms = 50\n"), "fence.lead_ms"),
            (format!("{SIM}[fence]\nreset = \"reboot\"\n"), "reset"),
            (format!("{SIM}[fence]\nguard = \"systemd\"\n"), "guard"),
            (format!("{SIM}[fence]\nlead = 5\n"), "lead"),
            (format!("host_name = \"a_b\"\n{SIM}"), "host_name"),
            (format!("[labels]\nZone = \"a\"\n{SIM}"), "labels"),
            ("[pve]\nbackend = \"esx\"\n".to_string(), "esx"),
            ("host_name = \"h\"\n".to_string(), "pve"),
            (https.to_string(), "pve.ca_file"),
            (
                format!("{https}insecure = true\nca_file = \"/c\"\n"),
                "pve.ca_file",
            ),
            (
                format!("{https}insecure = true\nurl = \"http://h\"\n"),
                "pve.url",
            ),
            (
                format!("{https}insecure = true\nurl = \"https://h:0\"\n"),
                "pve.url",
            ),
            (
                format!("{https}insecure = true\ntokenfile = \"/t\"\n"),
                "tokenfile",
            ),
        ];
        for (text, field) in table {
            let err = parse(text).unwrap_err();
            assert!(err.contains(field), "{text:?}: {err}");
            assert!(err.contains("agent.toml"), "{err}");
        }
    }

    #[test]
    fn the_bind_address_is_an_optional_ip_address() {
        assert_eq!(parse(SIM).unwrap().bind_address, None);
        for (text, want) in [("127.0.1.3", "127.0.1.3"), ("::1", "::1")] {
            let c = parse(&format!("bind_address = \"{text}\"\n{SIM}")).unwrap();
            assert_eq!(c.bind_address, Some(want.parse().unwrap()));
        }
        for bad in ["\"127.0.1\"", "\"127.0.1.3:7400\"", "\"pve1\"", "3"] {
            let err = parse(&format!("bind_address = {bad}\n{SIM}")).unwrap_err();
            assert!(err.contains("bind_address"), "{bad}: {err}");
            assert!(err.contains("an IP address"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_fence_section_defaults_and_names_its_allowed_values() {
        assert_eq!(parse(SIM).unwrap().fence, FenceConfig::default());
        let c = parse(&format!(
            "platform = \"lab\"\n{SIM}[fence]\nlead_ms = 1500\nreset = \"simulated\"\nguard = \"child\"\n"
        ))
        .unwrap();
        assert_eq!(
            c.fence,
            FenceConfig {
                lead_ms: 1500,
                reset: ResetMode::Simulated,
                guard: GuardMode::Child
            }
        );
        let err = parse(&format!("{SIM}[fence]\nreset = \"reboot\"\n")).unwrap_err();
        for allowed in ["auto", "host", "simulated"] {
            assert!(err.contains(allowed), "{err}");
        }
        let err = parse(&format!("{SIM}[fence]\nguard = \"systemd\"\n")).unwrap_err();
        for allowed in ["auto", "unit", "child"] {
            assert!(err.contains(allowed), "{err}");
        }
    }

    #[test]
    fn https_urls_give_host_and_port() {
        let table = [
            ("https://pve1", Ok(("pve1", 8006))),
            ("https://pve1:443/", Ok(("pve1", 443))),
            ("https://[::1]:8006", Ok(("::1", 8006))),
            ("https://[fd00::1]", Ok(("fd00::1", 8006))),
            ("https://10.0.0.1:8006", Ok(("10.0.0.1", 8006))),
            ("http://pve1", Err("https://")),
            ("https://pve1/api2/json", Err("without a path")),
            ("https://:8006", Err("no host")),
            ("https://pve1:x", Err("port")),
        ];
        for (url, want) in table {
            match (parse_https_url(url), want) {
                (Ok((h, p)), Ok((wh, wp))) => assert_eq!((h.as_str(), p), (wh, wp), "{url}"),
                (Err(e), Err(part)) => assert!(e.contains(part), "{url}: {e}"),
                (got, want) => panic!("{url}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_node_name_is_the_host_name_without_its_domain() {
        assert_eq!(short_host_name("pve1.example.com"), "pve1");
        assert_eq!(short_host_name("pve1"), "pve1");
    }
}
