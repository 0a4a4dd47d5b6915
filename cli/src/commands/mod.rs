//! One module per resource; each turns its subcommand into admin calls and prints the result.
//! [`Session`] holds what they share: the global flags, the output, and the client, which is
//! only made once a command needs the cluster (so a bad spec file is reported without
//! touching the configuration or the network).

mod alloc;
mod apply;
mod cluster;
mod demo;
mod events;
mod host;
mod member;
mod pool;
mod range;
mod token;
mod vip;
mod vm;

pub use member::join_command;

use std::io::Write;

use protocol::admin::{HostList, ReadMode};
use protocol::fleet::UnixMillis;

use crate::args::{Cli, Command};
use crate::exit::CliError;
use crate::output::{Context, OutputFormat, Render, render};
use bootstrap::cli_config::CliConfig;
use client::AdminClient;

/// What a running command shares with the dispatcher.
pub(crate) struct Session<'a> {
    cli: &'a Cli,
    out: &'a mut (dyn Write + Send),
    ctx: Context,
    client: Option<AdminClient>,
}

impl<'a> Session<'a> {
    pub(crate) fn new(cli: &'a Cli, out: &'a mut (dyn Write + Send), now: UnixMillis) -> Self {
        Session {
            cli,
            out,
            ctx: Context::at(now),
            client: None,
        }
    }

    /// The client, made from the configuration on first use.
    pub(crate) fn client(&mut self) -> Result<AdminClient, CliError> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let path = CliConfig::locate(self.cli.config.as_deref())?;
        let config = CliConfig::load(&path)?;
        let client = AdminClient::from_config(&config)?
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

    /// Closes the client's connections gracefully.
    pub(crate) async fn finish(self) {
        if let Some(client) = self.client {
            client.close().await;
        }
    }
}

/// Prints a warning of the client on standard error, where the CLI's errors go too.
fn print_warning(message: &str) {
    eprintln!("warning: {message}");
}

/// Runs the parsed command.
pub(crate) async fn dispatch(session: &mut Session<'_>, command: &Command) -> Result<(), CliError> {
    match command {
        Command::Cluster(c) => cluster::run(session, c).await,
        Command::Member(c) => member::run(session, c).await,
        Command::Token(c) => token::run(session, c).await,
        Command::Vm(c) => vm::run(session, c).await,
        Command::Pool(c) => pool::run(session, c).await,
        Command::Range(c) => range::run(session, c).await,
        Command::Vip(c) => vip::run(session, c).await,
        Command::Host(c) => host::run(session, c).await,
        Command::Events(a) => events::run(session, a).await,
        Command::Alloc(c) => alloc::run(session, c).await,
        Command::Demo(a) => demo::run(session, a).await,
    }
}
