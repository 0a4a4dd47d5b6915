//! Carrying out a parsed command line: `init`, `join`, `admin-cert` print what they did and
//! what comes next; `run` serves until a signal. Each error says what went wrong and maps to
//! the exit code the man page documents.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use bootstrap::token_input::{check_join_arguments, read_join_token_of_process};
use daemon::signal::cancel_on_signal;
use protocol::time::{Now, secs_to_millis, timestamp};
use tokio_util::sync::CancellationToken;

use super::args::Cmd;
use super::settings::{FileInForce, RunSettings, SettingsError};
use crate::config::file::DEFAULT_CONFIG_PATH;
use crate::config::{ControlConfig, CoordinatorConfig, NodeSettings, RunConfig};
use crate::error::CoordinatorError;
use crate::node::CoordinatorNode;
use crate::setup::{
    AdminCertOptions, InitOptions, JoinOptions, init_cluster, issue_admin_cert, join_cluster,
    start_command,
};

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// A command line that parsed but cannot be carried out as given (exit 2).
    #[error("{0}")]
    Usage(String),
    /// A setting `run` cannot serve with (exit 2).
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// What the member or the cluster answered (exit 3 when the cluster refused, else 1).
    #[error(transparent)]
    Coordinator(#[from] CoordinatorError),
}

impl CommandError {
    /// The process's exit code: 2 usage or configuration, 3 refused by the cluster (a join
    /// token), 1 anything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Usage(_) | CommandError::Settings(_) => 2,
            CommandError::Coordinator(e) if e.is_refusal() => 3,
            CommandError::Coordinator(_) => 1,
        }
    }
}

/// The configuration file in force and where it came from.
pub struct Configured {
    /// Its values (the defaults when there is none).
    pub file: CoordinatorConfig,
    /// The `--config` given, if any.
    pub explicit: Option<PathBuf>,
}

impl Configured {
    /// The file to name in messages.
    pub fn shown(&self) -> String {
        self.explicit
            .as_deref()
            .unwrap_or(Path::new(DEFAULT_CONFIG_PATH))
            .display()
            .to_string()
    }

    /// The `listen` of `init` or `join`: the flag, else the file's.
    fn listen(&self, flag: Option<SocketAddr>, command: &str) -> Result<SocketAddr, CommandError> {
        flag.or(self.file.listen).ok_or_else(|| {
            CommandError::Usage(format!(
                "{command} needs the QUIC address this member listens on, as the others dial \
                 it: pass --listen ADDR:PORT or set `listen` in {}",
                self.shown()
            ))
        })
    }

    /// The command that starts the member in `data_dir`.
    fn start_command(&self, data_dir: &Path) -> String {
        // The unit runs with the default file: its data_dir is the one it serves.
        let unit_dir = match &self.explicit {
            None => self.file.data_dir.clone(),
            Some(_) => CoordinatorConfig::load_or_default(None)
                .map_or_else(|_| CoordinatorConfig::default().data_dir, |c| c.data_dir),
        };
        start_command(data_dir, &unit_dir, self.explicit.as_deref())
    }
}

/// Carries out `cmd` with the configuration in force; what it prints goes to stdout.
///
/// # Errors
/// [`CommandError`], whose [`CommandError::exit_code`] is the process's.
pub async fn dispatch(cmd: Cmd, configured: &Configured) -> Result<(), CommandError> {
    let file = &configured.file;
    match cmd {
        Cmd::Init {
            data_dir,
            listen,
            cluster_id,
            http,
            admin_renewal_days,
        } => {
            let listen = configured.listen(listen, "init")?;
            let report = init_cluster(&InitOptions {
                data_dir: data_dir.unwrap_or_else(|| file.data_dir.clone()),
                listen,
                cluster_id,
                http,
                admin_renewal_days,
            })?;
            println!(
                "created cluster {} with this member as node {} (CA sha256:{})",
                report.cluster_id, report.node_id, report.ca_sha256
            );
            println!(
                "point the CLI at it: export PVEFLEET_CONFIG={}",
                report.cli_config.display()
            );
            println!("add members:         pvefleet member add");
            println!(
                "start it:            {}",
                configured.start_command(&report.data_dir)
            );
            Ok(())
        }
        Cmd::Join {
            addr,
            legacy,
            token_file,
            data_dir,
            listen,
        } => {
            // Checked before the address is parsed: a parse error would echo a token given as
            // the old form's first argument.
            check_join_arguments("pvefleet-coordinator join", &addr, legacy.as_deref())
                .map_err(|e| CommandError::Usage(e.to_string()))?;
            let addr: SocketAddr = addr.parse().map_err(|e| {
                CommandError::Usage(format!(
                    "invalid member address '{addr}': {e} (expected ADDR:PORT, e.g. \
                     10.0.0.11:7400)"
                ))
            })?;
            let listen = configured.listen(listen, "join")?;
            let token = read_join_token_of_process(token_file.as_deref())
                .map_err(|e| CommandError::Usage(e.to_string()))?;
            let report = join_cluster(&JoinOptions {
                token,
                via: addr,
                data_dir: data_dir.unwrap_or_else(|| file.data_dir.clone()),
                listen,
            })
            .await?;
            println!(
                "joined cluster {} as {} {}",
                report.cluster_id, report.role, report.node_id
            );
            if report.role == protocol::Role::Coordinator {
                println!(
                    "start it: {} (it becomes a voter once it has caught up)",
                    configured.start_command(&report.data_dir)
                );
            }
            Ok(())
        }
        Cmd::AdminCert { data_dir, id } => {
            let data_dir = data_dir.unwrap_or_else(|| file.data_dir.clone());
            let report = issue_admin_cert(&AdminCertOptions { data_dir, id }, Now::read().secs())?;
            println!(
                "wrote the certificate of admin {} to {} and its key to {} (mode 0600); valid \
                 until {}; the CLI renews it automatically from two thirds of its life on",
                report.id,
                report.cert.display(),
                report.key.display(),
                timestamp(secs_to_millis(report.not_after))
            );
            match report.cli_config {
                Some(config) => println!(
                    "the CLI uses them with: export PVEFLEET_CONFIG={}",
                    config.display()
                ),
                None => println!("point `cert` and `key` in the CLI configuration at them"),
            }
            Ok(())
        }
        Cmd::Run(flags) => {
            #[cfg(feature = "fault-points")]
            if let Some(point) = flags.abort_after_commit.clone() {
                crate::fault_point::arm(point);
            }
            let data_dir = flags
                .data_dir
                .clone()
                .unwrap_or_else(|| file.data_dir.clone());
            // What init recorded; an unreadable directory is reported when the member starts.
            let recorded = NodeSettings::load(&data_dir).ok().and_then(|s| s.http);
            let shown = configured.shown();
            let at = FileInForce {
                file,
                shown: &shown,
            };
            let settings = RunSettings::resolve(&flags, at, recorded)?;
            run(settings.config, settings.control).await?;
            Ok(())
        }
    }
}

/// Serves a member until SIGTERM or SIGINT, its ready line on stdout.
async fn run(config: RunConfig, control: ControlConfig) -> Result<(), CoordinatorError> {
    let node = CoordinatorNode::start_with(config, control).await?;
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    let ready = node.ready();
    tokio::spawn(async move {
        if let Some(line) = ready.await {
            match serde_json::to_string(&line) {
                Ok(json) => println!("{json}"),
                Err(e) => tracing::error!(error = %e, "cannot print the ready line"),
            }
        }
    });
    node.run(shutdown).await
}
