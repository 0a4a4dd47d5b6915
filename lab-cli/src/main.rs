//! `pvefleet-lab`: the pvefleet lab (demo, HA scenarios, chaos campaigns on simulated PVE).
//! Parses arguments (usage errors exit 2), sets up logging on stderr and TLS, and runs the
//! command (logic in the `lab_cli` library). The hidden `--generate man|complete-bash|complete-zsh`
//! prints its man page or a completion script (for packaging).

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use daemon::generate::{self, ManExtras};
use lab_cli::{ExitStatus, LabCli};

/// The man page's ENVIRONMENT and SEE ALSO.
const MAN: ManExtras = ManExtras {
    files: &[],
    environment: &[(
        "RUST_LOG",
        "Log filter for the messages on stderr (default: warn); the fleet's processes log to \
         the lab's directory.",
    )],
    see_also: &[
        "pvefleet(1)",
        "pvefleet-coordinator(1)",
        "pvefleet-agent(1)",
        "pve-sim(1)",
    ],
};

fn main() -> ExitCode {
    if let Some(kind) = generate::requested::<LabCli>("generate") {
        return generate::print(kind, LabCli::command(), "pvefleet-lab", &MAN);
    }
    let cli = LabCli::parse();
    // Every rustls user in this binary gets ring explicitly; installing it as the default too
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
    runtime.block_on(lab_cli::execute(&cli)).into()
}
