//! [`Session`]: what a running command shares with the dispatcher — the global flags, the
//! output, the configuration and the client, which are only read and made once a command
//! needs them (so a bad spec file is reported without touching the configuration or the
//! network).

use std::io::Write;
use std::path::PathBuf;

use bootstrap::cli_config::CliConfig;
use client::AdminClient;
use protocol::admin::{HostList, ReadMode, SettingsGet};
use protocol::fleet::UnixMillis;

use crate::args::Cli;
use crate::exit::CliError;
use crate::output::printable::terminal_text;
use crate::output::{Context, OutputFormat, Render, render};

/// What a running command shares with the dispatcher.
pub(crate) struct Session<'a> {
    pub(crate) cli: &'a Cli,
    pub(crate) out: &'a mut (dyn Write + Send),
    pub(crate) ctx: Context,
    pub(crate) client: Option<AdminClient>,
    config: Option<LoadedConfig>,
}

/// The configuration file and what it says.
#[derive(Debug, Clone)]
pub(crate) struct LoadedConfig {
    /// Where it was read from.
    pub(crate) path: PathBuf,
    /// Its contents (relative paths in the file already joined to its directory).
    pub(crate) config: CliConfig,
}

impl<'a> Session<'a> {
    pub(crate) fn new(cli: &'a Cli, out: &'a mut (dyn Write + Send), now: UnixMillis) -> Self {
        Session {
            cli,
            out,
            ctx: Context::at(now),
            client: None,
            config: None,
        }
    }

    /// The configuration, read on first use (commands that write credentials or check their
    /// own identity need it besides the client).
    pub(crate) fn config(&mut self) -> Result<&LoadedConfig, CliError> {
        let loaded = match self.config.take() {
            Some(loaded) => loaded,
            None => {
                let path = CliConfig::locate(self.cli.config.as_deref())?;
                let config = CliConfig::load(&path)?;
                LoadedConfig { path, config }
            }
        };
        Ok(self.config.insert(loaded))
    }

    /// The client, made from the configuration on first use.
    pub(crate) fn client(&mut self) -> Result<AdminClient, CliError> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let client = AdminClient::from_config(&self.config()?.config)?
            .with_timeout(self.cli.timeout)
            .with_warnings(print_warning);
        self.client = Some(client.clone());
        Ok(client)
    }

    /// The read mode asked for with `--stale`.
    pub(crate) fn read(&self) -> ReadMode {
        if self.cli.stale {
            ReadMode::Stale
        } else {
            ReadMode::Linearizable
        }
    }

    /// Prints `value` in the chosen format.
    pub(crate) fn print<T: Render + ?Sized>(&mut self, value: &T) -> Result<(), CliError> {
        let text = render(value, self.cli.output, &self.ctx)
            .map_err(|e| CliError::Output(e.to_string()))?;
        self.out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush())
            .map_err(|e| CliError::Output(e.to_string()))
    }

    /// Learns host names for tables that show hosts. Only tables need them, and only to show
    /// names instead of ids, so a failure leaves the ids in place rather than failing the
    /// command.
    pub(crate) async fn learn_host_names(&mut self) -> Result<(), CliError> {
        if self.cli.output != OutputFormat::Table {
            return Ok(());
        }
        let client = self.client()?;
        if let Ok(reply) = client.call(&HostList { read: self.read() }).await {
            self.ctx.hosts = reply.hosts.into_iter().map(|h| (h.id, h.name)).collect();
        }
        Ok(())
    }

    /// Learns the fleet's HA defaults for tables that show a VM's HA settings, like
    /// [`Session::learn_host_names`]: a failure leaves them shown as `default`.
    pub(crate) async fn learn_ha_defaults(&mut self) -> Result<(), CliError> {
        if self.cli.output != OutputFormat::Table {
            return Ok(());
        }
        let client = self.client()?;
        if let Ok(reply) = client.call(&SettingsGet { read: self.read() }).await {
            self.ctx.ha_defaults = Some(reply.settings.ha);
        }
        Ok(())
    }

    /// Closes the client's connections gracefully.
    pub(crate) async fn finish(self) {
        if let Some(client) = self.client {
            client.close().await;
        }
    }
}

/// Prints a warning of the client on standard error, where the CLI's errors go too.
fn print_warning(message: &str) {
    eprintln!("warning: {}", terminal_text(message));
}
