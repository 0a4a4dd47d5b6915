//! `pvefleet`: the operator CLI of a pvefleet cluster. Parses arguments (usage errors exit 2),
//! sets up logging on stderr and TLS, and runs the command (logic in the `cli` library).
//! The hidden `--generate man|complete-bash|complete-zsh` prints its man page or a completion
//! script (for packaging).

use std::process::ExitCode;

use bootstrap::cli_config::CONFIG_ENV;
use clap::{CommandFactory, Parser};
use cli::{Cli, ExitStatus};
use daemon::generate::{self, ManExtras};

/// The man page's FILES, ENVIRONMENT and SEE ALSO.
const MAN: ManExtras = ManExtras {
    files: &[(
        "/var/lib/pvefleet/coordinator/pvefleet.toml",
        "The configuration `pvefleet-coordinator init` writes for the operator (CA, admin \
         certificate and key, coordinator members); point PVEFLEET_CONFIG or --config at it.",
    )],
    environment: &[
        (
            CONFIG_ENV,
            "The configuration file, unless --config is given.",
        ),
        (
            "RUST_LOG",
            "Log filter for the messages on stderr (default: warn).",
        ),
    ],
    see_also: &["pvefleet-coordinator(1)", "pvefleet-agent(1)"],
};

fn main() -> ExitCode {
    if let Some(kind) = generate::requested::<Cli>("generate") {
        return generate::print(kind, Cli::command(), "pvefleet", &MAN);
    }
    let cli = Cli::parse();
    // Both rustls users in this binary get ring explicitly; installing it as the default too
    // keeps any other builder from picking a second provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    daemon::logging::init("warn");
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitStatus::Failed.into();
        }
    };
    runtime.block_on(cli::execute(&cli)).into()
}
