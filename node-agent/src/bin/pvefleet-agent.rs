//! `pvefleet-agent`: the node agent of a PVE host. `join` admits this host to a cluster with a
//! token read from a file, standard input or the environment (never the command line); `run`
//! keeps its session to the coordinators until SIGTERM/SIGINT; `fence-guard` resets the host
//! when the agent's lease ended with HA guests still armed (its own systemd unit, or the
//! agent's child). The hidden `--generate man|complete-bash|complete-zsh` prints the man page or
//! a completion script. Thin: the command line, what a command works with and the commands are
//! `node_agent::command_line`. Exit
//! codes: 0 ok, 2 bad command line or configuration, 3 refused by the cluster (join token,
//! role), 1 anything else.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use daemon::generate;
use node_agent::command_line::args::{AGENT_WORKERS, Args, BIN, MAN};
use node_agent::command_line::commands::dispatch;
use node_agent::command_line::job::Job;

fn main() -> ExitCode {
    if let Some(kind) = generate::requested::<Args>("generate") {
        return generate::print(kind, Args::command(), BIN, &MAN);
    }
    let args = Args::parse();
    // Read first: its `log` sets up logging.
    let job = match Job::prepare(args.command) {
        Ok(job) => job,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // Before anything builds a TLS configuration: ring only, never a second provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    daemon::logging::init(job.log());
    // The guard is one small loop: one thread is all it needs. The agent idles almost always:
    // two workers, whatever the host's core count (tokio's default is one per core), so one
    // keeps the heartbeats going while the other waits on a disk write.
    let mut builder = if matches!(job, Job::FenceGuard(_)) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(AGENT_WORKERS);
        builder
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(job)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Every error's own text already names its cause.
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
