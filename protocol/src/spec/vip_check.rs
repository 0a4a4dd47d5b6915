//! A VIP's health check (`[[vip.check]]`), keepalived's `track_script` semantics: each host
//! that may hold the VIP runs it every `interval_ms`; the verdict follows `rise` passes and
//! `fall` failures in a row; a host whose checks are not up is not eligible.
//!
//! ```toml
//! [[vip.check]]
//! type = "https"            # tcp | http | https | command
//! port = 8006               # tcp, http, https: on this host (127.0.0.1 unless `address`)
//! path = "/api2/json/version"
//! expect_status = 401       # http(s): the status that means up (default 200)
//! interval_ms = 1000
//! timeout_ms = 500
//! rise = 2
//! fall = 2
//! # type = "command", command = ["/usr/local/bin/check-api", "--quick"]  (argv, no shell)
//! ```
//!
//! A plain struct with optional fields rather than a tagged enum: bincode (Raft, the wire)
//! cannot read serde's internally tagged enums. [`validate_check`] says which fields each
//! type takes.

use serde::{Deserialize, Serialize};

use super::SpecError;
use super::validate::within;

/// What a check does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckType {
    /// A TCP connection to `port` opens.
    Tcp,
    /// An HTTP GET of `path` answers `expect_status`.
    Http,
    /// An HTTPS GET of `path` answers `expect_status`; the certificate is not verified (PVE's
    /// own is self-signed): the check says the service answers, not who it is.
    Https,
    /// `command` (argv, no shell) exits 0 within the timeout.
    Command,
}

/// One health check of a VIP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VipCheck {
    /// What it does.
    #[serde(rename = "type")]
    pub kind: CheckType,
    /// `tcp`, `http`, `https`: the port.
    #[serde(default)]
    pub port: Option<u16>,
    /// `tcp`, `http`, `https`: the address on this host (default `127.0.0.1`).
    #[serde(default)]
    pub address: Option<String>,
    /// `http`, `https`: the path (default `/`).
    #[serde(default)]
    pub path: Option<String>,
    /// `http`, `https`: the status that means up (default 200).
    #[serde(default)]
    pub expect_status: Option<u16>,
    /// `command`: the program and its arguments (no shell).
    #[serde(default)]
    pub command: Vec<String>,
    /// Milliseconds between two runs (100 to 3600000).
    #[serde(default = "default_interval_ms")]
    pub interval_ms: u64,
    /// Milliseconds a run may take before it counts as failed (10 to the interval).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Passes in a row that make a down host up (1 to 100).
    #[serde(default = "default_rise")]
    pub rise: u32,
    /// Failures in a row that make an up host down (1 to 100).
    #[serde(default = "default_fall")]
    pub fall: u32,
}

fn default_interval_ms() -> u64 {
    1000
}

fn default_timeout_ms() -> u64 {
    500
}

fn default_rise() -> u32 {
    2
}

fn default_fall() -> u32 {
    2
}

impl VipCheck {
    /// The address a network check connects to.
    pub fn target(&self) -> Result<std::net::IpAddr, SpecError> {
        match &self.address {
            None => Ok(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
            Some(a) => a
                .parse()
                .map_err(|_| SpecError::text("address", a, "an IPv4 or IPv6 address on this host")),
        }
    }
}

/// Checks one health check's fields for its type.
pub fn validate_check(c: &VipCheck) -> Result<(), SpecError> {
    within("interval_ms", c.interval_ms, 100, 3_600_000)?;
    within("timeout_ms", c.timeout_ms, 10, c.interval_ms)?;
    within("rise", c.rise, 1, 100)?;
    within("fall", c.fall, 1, 100)?;
    let network = matches!(c.kind, CheckType::Tcp | CheckType::Http | CheckType::Https);
    let web = matches!(c.kind, CheckType::Http | CheckType::Https);
    match (network, c.port) {
        (true, None) => {
            return Err(SpecError::new(
                "port",
                "none",
                "a port 1-65535 (tcp, http and https checks connect to one)",
            ));
        }
        (true, Some(0)) => return Err(SpecError::new("port", 0, "a port 1-65535")),
        (false, Some(p)) => {
            return Err(SpecError::new(
                "port",
                p,
                "no port: a command check runs `command`",
            ));
        }
        _ => {}
    }
    if network {
        c.target()?;
    } else if c.address.is_some() {
        return Err(SpecError::new(
            "address",
            "set",
            "no address: a command check runs `command`",
        ));
    }
    if !web && (c.path.is_some() || c.expect_status.is_some()) {
        return Err(SpecError::new(
            if c.path.is_some() {
                "path"
            } else {
                "expect_status"
            },
            "set",
            "only http and https checks take a path and an expected status",
        ));
    }
    if let Some(path) = &c.path
        && (!path.starts_with('/') || path.chars().any(|ch| ch.is_control() || ch == ' '))
    {
        return Err(SpecError::text(
            "path",
            path,
            "an absolute URL path without spaces, e.g. /api2/json/version",
        ));
    }
    if let Some(status) = c.expect_status {
        within("expect_status", status, 100, 599)?;
    }
    match (c.kind, c.command.first()) {
        (CheckType::Command, None) => Err(SpecError::new(
            "command",
            "[]",
            "the program and its arguments, e.g. [\"/usr/local/bin/check-api\"]",
        )),
        (CheckType::Command, Some(program)) if !program.starts_with('/') => Err(SpecError::text(
            "command[0]",
            program,
            "an absolute path (the agent runs it without a shell or PATH)",
        )),
        (CheckType::Command, _) if c.command.iter().any(|a| a.contains('\0')) => {
            Err(SpecError::new(
                "command",
                "an argument with NUL",
                "arguments without NUL bytes",
            ))
        }
        (CheckType::Command, _) => Ok(()),
        (_, Some(_)) => Err(SpecError::new(
            "command",
            "set",
            "only command checks take a command",
        )),
        (_, None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(port: u16) -> VipCheck {
        VipCheck {
            kind: CheckType::Tcp,
            port: Some(port),
            address: None,
            path: None,
            expect_status: None,
            command: vec![],
            interval_ms: 1000,
            timeout_ms: 500,
            rise: 2,
            fall: 2,
        }
    }

    #[test]
    fn each_type_takes_its_own_fields_and_the_error_names_the_field() {
        assert_eq!(validate_check(&tcp(8006)), Ok(()));
        assert_eq!(validate_check(&tcp(0)).unwrap_err().field, "port");
        let mut http = tcp(8006);
        http.kind = CheckType::Https;
        http.path = Some("/api2/json/version".into());
        http.expect_status = Some(401);
        assert_eq!(validate_check(&http), Ok(()));
        http.path = Some("api2".into());
        assert_eq!(validate_check(&http).unwrap_err().field, "path");
        let mut cmd = tcp(1);
        cmd.kind = CheckType::Command;
        assert_eq!(validate_check(&cmd).unwrap_err().field, "port");
        cmd.port = None;
        assert_eq!(validate_check(&cmd).unwrap_err().field, "command");
        cmd.command = vec!["check".into()];
        assert_eq!(validate_check(&cmd).unwrap_err().field, "command[0]");
        cmd.command = vec!["/bin/true".into()];
        assert_eq!(validate_check(&cmd), Ok(()));
        let mut t = tcp(22);
        t.command = vec!["/bin/true".into()];
        assert_eq!(validate_check(&t).unwrap_err().field, "command");
        t.command.clear();
        t.timeout_ms = 2_000;
        assert_eq!(validate_check(&t).unwrap_err().field, "timeout_ms");
        t.timeout_ms = 500;
        t.address = Some("localhost".into());
        assert_eq!(validate_check(&t).unwrap_err().field, "address");
        t.address = Some("::1".into());
        assert_eq!(validate_check(&t), Ok(()));
    }

    #[test]
    fn the_toml_form_reads_with_its_defaults() {
        let c: VipCheck = toml::from_str("type = \"tcp\"\nport = 8006\n").unwrap();
        assert_eq!(c, tcp(8006));
        let bad = toml::from_str::<VipCheck>("type = \"icmp\"\n").unwrap_err();
        assert!(bad.to_string().contains("tcp"), "{bad}");
    }
}
