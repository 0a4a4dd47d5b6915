//! One module per resource; each turns its subcommand into admin calls and prints the result.
//! [`Session`] holds what they share: the global flags, the output, and the client, which is
//! only made once a command needs the cluster (so a bad spec file is reported without
//! touching the configuration or the network).

mod admin;
mod alloc;
mod apply;
mod cluster;
mod dashboard;
mod doctor;
mod events;
mod fleet_apply;
mod host;
mod maintenance;
mod member;
mod migrate;
mod pool;
mod range;
mod rebalance;
mod scale;
mod session;
mod settings;
mod token;
mod vip;
mod vm;

pub use admin::default_out_dir;
pub use apply::read_fleet_file;
pub use dashboard::login_url;
pub use member::join_command;
pub(crate) use session::Session;

use crate::args::Command;
use crate::exit::CliError;

/// Runs the parsed command.
pub(crate) async fn dispatch(session: &mut Session<'_>, command: &Command) -> Result<(), CliError> {
    match command {
        Command::Cluster(c) => cluster::run(session, c).await,
        Command::Member(c) => member::run(session, c).await,
        Command::Token(c) => token::run(session, c).await,
        Command::Dashboard(c) => dashboard::run(session, c).await,
        Command::Admin(c) => admin::run(session, c).await,
        Command::Vm(c) => vm::run(session, c).await,
        Command::Pool(c) => pool::run(session, c).await,
        Command::Range(c) => range::run(session, c).await,
        Command::Vip(c) => vip::run(session, c).await,
        Command::Host(c) => host::run(session, c).await,
        Command::Settings(c) => settings::run(session, c).await,
        Command::Rebalance(c) => rebalance::run(session, c).await,
        Command::Events(a) => events::run(session, a).await,
        Command::Alloc(c) => alloc::run(session, c).await,
        Command::Apply(a) => fleet_apply::run(session, a).await,
        Command::Doctor(a) => doctor::run(session, a).await,
    }
}
