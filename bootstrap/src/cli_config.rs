//! The `pvefleet` CLI's configuration file: where the cluster CA, the admin certificate and its
//! key are, and which coordinator members to call. TOML with unknown keys refused, so a typo
//! fails loudly instead of being ignored:
//!
//! ```toml
//! ca = "ca.pem"
//! cert = "admin.pem"
//! key = "admin.key"            # must be mode 0600
//! coordinators = [
//!   { addr = "10.0.0.1:7400", id = 1 },
//!   { addr = "10.0.0.2:7400", id = 2 },
//! ]
//! ```
//!
//! Each member is listed with its node id because TLS proves *who* answered by the name
//! `coordinator-<id>.pvefleet` in its certificate: the client must know the id it dials. Relative
//! paths are relative to the configuration file's directory, so a node directory with its
//! `pvefleet.toml` can be moved or copied as a whole.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::paths::{read_public, read_secret, write_public};
use crate::{BootstrapError, NodeDir};
use protocol::NodeId;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use transport::TlsMaterial;

/// The environment variable naming the configuration file when `--config` is not given.
pub const CONFIG_ENV: &str = "PVEFLEET_CONFIG";

/// The file name `pvefleet-coordinator init` gives the CLI configuration in its data directory.
pub const CONFIG_FILE_NAME: &str = "pvefleet.toml";

/// The contents of a `pvefleet` configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CliConfig {
    /// The cluster CA certificate (PEM): the only root the CLI trusts.
    pub ca: PathBuf,
    /// The admin client certificate (PEM).
    pub cert: PathBuf,
    /// The admin client's private key (PEM); refused unless only its owner can read it.
    pub key: PathBuf,
    /// Coordinator members to call, tried in order (the leader, once known, first).
    pub coordinators: Vec<CoordinatorAddr>,
}

/// One coordinator member: where it listens and the node id its certificate carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct CoordinatorAddr {
    /// `host:port` of the member's QUIC endpoint (a host name or an IP; IPv6 as `[addr]:port`).
    pub addr: String,
    /// The member's node id.
    pub id: NodeId,
}

impl fmt::Display for CoordinatorAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "coordinator {} at {}", self.id, self.addr)
    }
}

/// Why the configuration could not be used. Each message names the file and what to change.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Neither `--config` nor the environment variable names a file.
    #[error(
        "no configuration file: pass --config FILE or set {CONFIG_ENV} \
         (`pvefleet-coordinator init` writes one as <data-dir>/{CONFIG_FILE_NAME})"
    )]
    Missing,
    /// The file could not be read.
    #[error(
        "cannot read the configuration {}: {source}; pass --config FILE or set {CONFIG_ENV} to \
         the {CONFIG_FILE_NAME} that `pvefleet-coordinator init` wrote",
        path.display()
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML for this schema (the parser names the line and the key).
    #[error("configuration {}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's reason.
        #[source]
        source: toml::de::Error,
    },
    /// The file parsed but a value cannot work.
    #[error("configuration {}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to write instead.
        reason: String,
    },
    /// A certificate or the key could not be read (missing, or a key others can read).
    #[error("{0}")]
    Material(#[from] BootstrapError),
    /// The configuration could not be encoded or written.
    #[error("cannot write the configuration {}: {reason}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl CliConfig {
    /// The configuration for the admin certificate in a node directory written by `init`
    /// (`ca.pem`, `admin.pem`, `admin.key`), calling the given members.
    pub fn for_node_dir(dir: &Path, coordinators: Vec<CoordinatorAddr>) -> CliConfig {
        let dir = NodeDir::new(dir);
        CliConfig {
            ca: dir.ca_cert(),
            cert: dir.admin_cert(),
            key: dir.admin_key(),
            coordinators,
        }
    }

    /// The file to read: `--config FILE`, which clap also fills from the environment variable
    /// [`CONFIG_ENV`].
    pub fn locate(flag: Option<&Path>) -> Result<PathBuf, ConfigError> {
        match flag {
            Some(path) if !path.as_os_str().is_empty() => Ok(path.to_path_buf()),
            _ => Err(ConfigError::Missing),
        }
    }

    /// Reads and checks a configuration file; relative paths in it are made relative to the
    /// file's directory.
    pub fn load(path: &Path) -> Result<CliConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new(""));
        CliConfig::parse(&text, path, base)
    }

    /// Parses configuration text (`path` only names it in errors); relative paths are joined
    /// to `base`.
    pub fn parse(text: &str, path: &Path, base: &Path) -> Result<CliConfig, ConfigError> {
        let mut config: CliConfig = toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
        config.check().map_err(|reason| ConfigError::Invalid {
            path: path.to_path_buf(),
            reason,
        })?;
        for p in [&mut config.ca, &mut config.cert, &mut config.key] {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        Ok(config)
    }

    /// Checks what TOML parsing cannot: at least one member, each address `host:port`, no
    /// address listed twice.
    fn check(&self) -> Result<(), String> {
        if self.coordinators.is_empty() {
            return Err("coordinators is empty: list at least one member as \
                 { addr = \"HOST:PORT\", id = N }"
                .to_string());
        }
        for (i, c) in self.coordinators.iter().enumerate() {
            if let Err(e) = protocol::fleet::validate_member_addr(&c.addr) {
                return Err(format!(
                    "coordinators[{i}].addr = {} is not allowed: expected {}",
                    e.value, e.allowed
                ));
            }
            if self.coordinators[..i].iter().any(|o| o.addr == c.addr) {
                return Err(format!(
                    "coordinators[{i}].addr = {:?} is listed twice: list each member once",
                    c.addr
                ));
            }
        }
        Ok(())
    }

    /// The CA, certificate and key as transport takes them. The key must be private (mode
    /// 0600 or narrower): a key others can read is refused with the `chmod` that fixes it.
    pub fn load_material(&self) -> Result<TlsMaterial, ConfigError> {
        Ok(TlsMaterial::new(
            read_public(&self.ca)?,
            read_public(&self.cert)?,
            read_secret(&self.key)?,
        ))
    }

    /// The TOML text, with paths written relative to `base` where they lie under it.
    pub fn to_toml(&self, base: &Path) -> Result<String, toml::ser::Error> {
        let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
        let relative = |p: &Path| -> PathBuf {
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
            match abs.strip_prefix(&base) {
                Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
                _ => p.to_path_buf(),
            }
        };
        let written = CliConfig {
            ca: relative(&self.ca),
            cert: relative(&self.cert),
            key: relative(&self.key),
            coordinators: self.coordinators.clone(),
        };
        toml::to_string(&written)
    }

    /// Writes the configuration to `path` atomically (mode 0644: it holds no secret), paths
    /// relative to the file's directory where possible.
    pub fn write(&self, path: &Path) -> Result<(), ConfigError> {
        let base = path.parent().unwrap_or(Path::new(""));
        let text = self.to_toml(base).map_err(|e| ConfigError::Write {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        write_public(path, &text).map_err(ConfigError::Material)
    }
}

/// The table form of [`CoordinatorAddr`], whose unknown keys are refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CoordinatorTable {
    addr: String,
    id: NodeId,
}

impl<'de> Deserialize<'de> for CoordinatorAddr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CoordinatorVisitor)
    }
}

/// Accepts the `{ addr, id }` table; a bare `"HOST:PORT"` string gets an error that shows the
/// form to write, since it is the obvious first guess.
struct CoordinatorVisitor;

impl<'de> Visitor<'de> for CoordinatorVisitor {
    type Value = CoordinatorAddr;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table { addr = \"HOST:PORT\", id = N }")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<CoordinatorAddr, E> {
        Err(E::custom(format!(
            "coordinator {value:?} needs its node id too: write {{ addr = {value:?}, id = N }} \
             (the id is in `pvefleet member ls`; the first member is 1)"
        )))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CoordinatorAddr, A::Error> {
        let table = CoordinatorTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(CoordinatorAddr {
            addr: table.addr,
            id: table.id,
        })
    }
}
