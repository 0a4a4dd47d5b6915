//! `pvefleet`: the operator CLI of a pvefleet cluster. Parses arguments (usage errors exit 2),
//! sets up logging on stderr and TLS, and runs the command (logic in `coordinator::cli`).

use std::process::ExitCode;

use clap::Parser;
use coordinator::cli::{self, Cli, ExitStatus};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Both rustls users in this binary get ring explicitly; installing it as the default too
    // keeps any other builder from picking a second provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
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
