//! `pvefleet vm migrate NAME [--to HOST] [--wait]`: the leader records the move and answers
//! at once (`--dry-run`: it only says where the VM would go and how each node was judged); with `--wait` the CLI follows it (`vm ls` shows it under way) until it is over,
//! then reads the event that closed it: `migrated ...` exits 0, a failure exits like a
//! conflict with PVE's reason.
//!
//! ```text
//!  VmMigrate ─▶ reply (from, to, event seq) ─▶ print
//!     --wait: VmList every second ─ still migrating ─▶ progress on stderr (when it changes)
//!                                 └ over ─▶ Events after the seq ─▶ this VM's migration event
//! ```

use std::time::{Duration, Instant};

use protocol::admin::{Events, VmList, VmMigrate, VmMigratePlan, VmMigrateReply};
use protocol::fleet::EventKind;

use super::Session;
use crate::args::VmMigrateArgs;
use crate::exit::CliError;
use crate::output::human::span;
use client::ClientError;

/// How often `--wait` reads the VMs.
const POLL: Duration = Duration::from_secs(1);

pub(crate) async fn run(session: &mut Session<'_>, args: &VmMigrateArgs) -> Result<(), CliError> {
    if args.dry_run {
        let plan = session
            .client()?
            .call(&VmMigratePlan {
                name: args.name.clone(),
                to: args.to.clone(),
            })
            .await?;
        return session.print(&plan);
    }
    let reply = session
        .client()?
        .call(&VmMigrate {
            name: args.name.clone(),
            to: args.to.clone(),
        })
        .await?;
    session.print(&reply)?;
    if args.wait {
        wait(session, &args.name, &reply, args.wait_timeout).await?;
    }
    Ok(())
}

async fn wait(
    session: &mut Session<'_>,
    name: &str,
    reply: &VmMigrateReply,
    timeout: Duration,
) -> Result<(), CliError> {
    let read = session.read();
    let client = session.client()?;
    let started = Instant::now();
    let mut last_line = String::new();
    let mut seen = reply.since_event_seq;
    loop {
        let list = client.call(&VmList { read }).await?;
        // The move's steps as they happen (a remote migration's target getting ready).
        let steps = client
            .call(&Events {
                since: seen,
                limit: None,
                read,
            })
            .await?
            .events;
        for e in &steps {
            seen = seen.max(e.seq);
            // The start and the end (`migrating`, `migrated`, `migration ... failed`) are
            // printed apart.
            if e.kind == EventKind::Vm && e.subject == name && !e.message.starts_with("migrat") {
                eprintln!("vm {name}: {}", e.message);
            }
        }
        if !list.migrations.contains_key(name) {
            break;
        }
        let waited = started.elapsed();
        let line = format!(
            "vm {name}: migrating from {} to {} ({})",
            reply.from,
            reply.to,
            span(u64::try_from(waited.as_millis() / 5000 * 5000).unwrap_or(u64::MAX))
        );
        if line != last_line {
            eprintln!("{line}");
            last_line = line;
        }
        if waited >= timeout {
            return Err(CliError::Client(ClientError::Conflict(format!(
                "vm {name} is still migrating after {}: the move goes on; watch it with \
                 `pvefleet vm ls` and `pvefleet events --follow`",
                span(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX))
            ))));
        }
        tokio::time::sleep(POLL).await;
    }
    let events = client
        .call(&Events {
            since: reply.since_event_seq,
            limit: None,
            read,
        })
        .await?
        .events;
    let outcome = events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::Vm && e.subject == name && e.message.starts_with("migrat"));
    match outcome {
        Some(e) if e.message.starts_with("migrated ") => {
            eprintln!("vm {name}: {}", e.message);
            Ok(())
        }
        Some(e) => Err(CliError::Client(ClientError::Conflict(format!(
            "vm {name}: {}",
            e.message
        )))),
        None => Err(CliError::Client(ClientError::Conflict(format!(
            "vm {name}: the migration is over but its outcome was not found in the events; see \
             `pvefleet events` and `pvefleet vm show {name}`"
        )))),
    }
}
