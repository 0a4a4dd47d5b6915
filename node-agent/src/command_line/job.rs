//! What a command works with, read once before logging starts (ripgrep's
//! `HiArgs::from_low_args`): `run` its configuration file; `join` the file named, else the
//! default one if it exists, and its token; `fence-guard` the data directory from its flag,
//! else the file, else the default. An unreadable file or a bad argument is refused here,
//! naming it.

use std::path::{Path, PathBuf};

use bootstrap::token_input::{check_join_arguments, read_join_token_of_process};

use super::args::Cmd;
use super::error::CommandError;
use crate::config::{AgentConfig, DEFAULT_CONFIG_PATH, DEFAULT_DATA_DIR, DEFAULT_LOG};
use crate::fence::GuardOptions;

/// A command with the configuration it works with: `run` needs one; `join` reads the one
/// named, or the default one if it exists, and its token.
pub enum Job {
    /// `run`: the configuration file and its values.
    Run {
        /// The file.
        path: PathBuf,
        /// Its values.
        config: AgentConfig,
    },
    /// `join`: the token, the member to ask, where the node goes and the configuration read.
    Join {
        /// The join token (never logged).
        token: String,
        /// A member's address.
        addr: String,
        /// `--data-dir`.
        data_dir: Option<PathBuf>,
        /// `--config`.
        config_path: Option<PathBuf>,
        /// The configuration read (`--config`, or the default file if it exists).
        config: Option<AgentConfig>,
    },
    /// `fence-guard`: what the guard watches and how it resets.
    FenceGuard(GuardOptions),
}

impl Job {
    /// Reads the configuration `cmd` works with and, for `join`, the token (before logging
    /// starts: nothing here logs it).
    ///
    /// # Errors
    /// [`CommandError`] naming the file or the argument (exit 2).
    pub fn prepare(cmd: Cmd) -> Result<Job, CommandError> {
        match cmd {
            Cmd::Run { config: path } => Ok(Job::Run {
                config: AgentConfig::load(&path)?,
                path,
            }),
            Cmd::FenceGuard {
                data_dir,
                config: config_path,
                exit_with_agent,
            } => {
                let default = Path::new(DEFAULT_CONFIG_PATH);
                let config_path =
                    config_path.or_else(|| default.exists().then(|| default.to_path_buf()));
                let config = config_path.as_deref().map(AgentConfig::load).transpose()?;
                let data_dir = data_dir.unwrap_or_else(|| {
                    config
                        .as_ref()
                        .map_or_else(|| PathBuf::from(DEFAULT_DATA_DIR), |c| c.data_dir.clone())
                });
                Ok(Job::FenceGuard(GuardOptions {
                    data_dir,
                    config,
                    config_path,
                    exit_with_agent,
                }))
            }
            Cmd::Join {
                addr,
                legacy,
                token_file,
                data_dir,
                config: config_path,
            } => {
                check_join_arguments("pvefleet-agent join", &addr, legacy.as_deref())
                    .map_err(|e| CommandError::Usage(e.to_string()))?;
                let token = read_join_token_of_process(token_file.as_deref())
                    .map_err(|e| CommandError::Usage(e.to_string()))?;
                let default = Path::new(DEFAULT_CONFIG_PATH);
                let config = match &config_path {
                    Some(path) => Some(AgentConfig::load(path)?),
                    None if default.exists() => Some(AgentConfig::load(default)?),
                    None => None,
                };
                Ok(Job::Join {
                    token,
                    addr,
                    data_dir,
                    config_path,
                    config,
                })
            }
        }
    }

    /// The log filter of the configuration.
    pub fn log(&self) -> &str {
        match self {
            Job::Run { config, .. } => &config.log,
            Job::Join { config, .. } => config.as_ref().map_or(DEFAULT_LOG, |c| c.log.as_str()),
            Job::FenceGuard(opts) => opts.config.as_ref().map_or(DEFAULT_LOG, |c| c.log.as_str()),
        }
    }
}

#[cfg(test)]
#[path = "job_tests.rs"]
mod tests;
