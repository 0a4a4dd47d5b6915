//! `pvefleet-coordinator`: a coordinator member of a pvefleet cluster. `init` creates a cluster,
//! `join` admits this node with a token (from a file, standard input or the environment, never
//! the command line), `run` serves until SIGTERM/SIGINT, `admin-cert` makes
//! a new operator certificate. Every subcommand reads the configuration file (`--config`,
//! default /etc/pvefleet/coordinator.toml if it exists); flags win over it. The hidden
//! `--generate man|complete-bash|complete-zsh` prints the man page or a completion script.
//! Thin: the command line, its settings and the commands are `coordinator::command_line`. Exit codes: 0 ok, 2 usage or
//! configuration, 3 refused by the cluster (join token), 1 anything else.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use coordinator::command_line::args::{Args, BIN, MAN};
use coordinator::command_line::commands::{Configured, dispatch};
use coordinator::config::CoordinatorConfig;
use daemon::generate;

fn main() -> ExitCode {
    if let Some(kind) = generate::requested::<Args>("generate") {
        return generate::print(kind, Args::command(), BIN, &MAN);
    }
    let args = Args::parse();
    let file = match CoordinatorConfig::load_or_default(args.config.as_deref()) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // Before anything builds a TLS configuration: ring only, never a second provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    daemon::logging::init(&file.log);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let configured = Configured {
        file,
        explicit: args.config,
    };
    match runtime.block_on(dispatch(args.command, &configured)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Every error's own text already names its cause.
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
