//! `pvefleet host maintenance enable|disable|status HOST [--wait]`: the leader changes the
//! host's state and answers what is left; the drain and the way back are the fleet's. With
//! `--wait` the CLI asks again every second until nothing is left to move (enable), or every
//! guest drained off the host is back (disable), printing what is left when it changes.

use std::time::{Duration, Instant};

use protocol::admin::{HostMaintenance, HostMaintenanceReply, MaintenanceAction};

use super::Session;
use crate::args::{HostMaintenanceArgs, MaintenanceArg};
use crate::exit::CliError;
use crate::output::human::span;
use client::ClientError;

/// How often `--wait` asks.
const POLL: Duration = Duration::from_secs(1);

pub(crate) async fn run(
    session: &mut Session<'_>,
    args: &HostMaintenanceArgs,
) -> Result<(), CliError> {
    let action = match args.action {
        MaintenanceArg::Enable => MaintenanceAction::Enable,
        MaintenanceArg::Disable => MaintenanceAction::Disable,
        MaintenanceArg::Status => MaintenanceAction::Status,
    };
    let client = session.client()?;
    let mut reply = client
        .call(&HostMaintenance {
            host: args.host.clone(),
            action,
        })
        .await?;
    if args.wait {
        let started = Instant::now();
        let mut last = String::new();
        while !done(&reply, args.action) {
            let line = progress(&reply);
            if line != last {
                eprintln!("{line}");
                last = line;
            }
            if started.elapsed() >= args.wait_timeout {
                session.print(&reply)?;
                return Err(CliError::Client(ClientError::Conflict(format!(
                    "{} after {}: the fleet keeps at it; see `pvefleet host maintenance status {}`",
                    progress(&reply),
                    span(u64::try_from(args.wait_timeout.as_millis()).unwrap_or(u64::MAX)),
                    args.host
                ))));
            }
            tokio::time::sleep(POLL).await;
            reply = client
                .call(&HostMaintenance {
                    host: args.host.clone(),
                    action: MaintenanceAction::Status,
                })
                .await?;
        }
    }
    session.print(&reply)
}

/// Whether there is nothing more to wait for. A drain is over when no guest is left, or when
/// every guest left has no node to go to (nothing more will move; the table says why).
fn done(reply: &HostMaintenanceReply, action: MaintenanceArg) -> bool {
    match action {
        MaintenanceArg::Enable => reply.left.iter().all(|g| stuck(&g.why)),
        MaintenanceArg::Disable => reply.away.is_empty(),
        MaintenanceArg::Status => true,
    }
}

/// A guest that will not move on its own: no target (not moving, not about to, not retried).
fn stuck(why: &str) -> bool {
    !(why.starts_with("moving to")
        || why.starts_with("about to move")
        || why.starts_with("its last move failed"))
}

fn progress(reply: &HostMaintenanceReply) -> String {
    if reply.left.is_empty() {
        format!(
            "{}: {} guest{} to come back: {}",
            reply.host,
            reply.away.len(),
            if reply.away.len() == 1 { "" } else { "s" },
            reply.away.join(", ")
        )
    } else {
        let names: Vec<&str> = reply.left.iter().map(|g| g.vm.as_str()).collect();
        format!(
            "draining {}: {} guest{} left: {}",
            reply.host,
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        )
    }
}
