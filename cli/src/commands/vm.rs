//! `pvefleet vm ...`: VMs by name. `apply` reads a file of VM specs, checks every one locally (the
//! first bad field is named with its value and what is allowed) and only then sends them, one
//! `VmApply` each; with `--wait` it then follows them to their desired state. `explain` shows
//! the scheduler's view, `start|stop` change the desired power state, `restart` and
//! `snapshot ...` run on the VM's agent, `migrate` moves it ([`super::migrate`]) and `scale`
//! sets the members of a VM group ([`super::scale`]).
//!
//! A restart or a snapshot can take minutes on its host: those calls get a timeout of at least
//! the leader's own wait, after a quick check with the usual `--timeout` that the cluster
//! answers and knows the VM.

use std::time::Duration;

use protocol::admin::{
    VmApply, VmDelete, VmExplain, VmGet, VmList, VmPower, VmPowerAction, VmSnapshot,
};
use protocol::agent::SnapshotAction;

use super::Session;
use super::apply::{WaitLimits, apply_after, read_input, refused, wait_for_vms};
use crate::args::{SnapshotCommand, VmApplyArgs, VmCommand};
use crate::exit::CliError;
use crate::output::printable::terminal_text;
use crate::output::progress::WaitGoal;
use crate::output::{ApplyReport, Deleted, SnapshotChanged};
use client::AdminClient;
use protocol::admin::{RESTART_WAIT, SNAPSHOT_CHANGE_WAIT, SNAPSHOT_LIST_WAIT};
use protocol::spec::read_vm_file;

/// Added to the leader's wait for the CLI's own deadline: routing, retries, the reply.
const LONG_CALL_MARGIN: Duration = Duration::from_secs(30);

pub(crate) async fn run(session: &mut Session<'_>, command: &VmCommand) -> Result<(), CliError> {
    match command {
        VmCommand::Apply(args) => apply(session, args).await,
        VmCommand::Ls => {
            let reply = session
                .client()?
                .call(&VmList {
                    read: session.read(),
                })
                .await?;
            session.learn_host_names().await?;
            session.print(&reply)
        }
        VmCommand::Show { name } => {
            let request = VmGet {
                name: name.clone(),
                read: session.read(),
            };
            let reply = session.client()?.call(&request).await?;
            session.learn_host_names().await?;
            if reply.spec.ha.state.is_some() {
                session.learn_ha_defaults().await?;
            }
            session.print(&reply)
        }
        VmCommand::Explain { name } => {
            let reply = session
                .client()?
                .call(&VmExplain { name: name.clone() })
                .await?;
            session.print(&reply)
        }
        VmCommand::Start { name } => power(session, name, VmPowerAction::Start).await,
        VmCommand::Stop { name } => power(session, name, VmPowerAction::Stop).await,
        VmCommand::Restart { name } => power(session, name, VmPowerAction::Restart).await,
        VmCommand::Migrate(args) => super::migrate::run(session, args).await,
        VmCommand::Scale { group, replicas } => super::scale::run(session, group, *replicas).await,
        VmCommand::Snapshot(c) => snapshot(session, c).await,
        VmCommand::Delete { name } => {
            let reply = session
                .client()?
                .call(&VmDelete { name: name.clone() })
                .await?;
            session.print(&Deleted {
                kind: "vm",
                name: name.clone(),
                removed: reply.removed,
            })
        }
    }
}

async fn apply(session: &mut Session<'_>, args: &VmApplyArgs) -> Result<(), CliError> {
    let text = read_input(&args.file)?;
    let (specs, groups) = read_vm_file(&text).map_err(|e| refused(&args.file, e))?;
    // A group's members past its replicas go first; one report says all.
    let deleted = super::scale::prune(session, &groups).await?;
    let report = apply_after(
        session,
        ApplyReport {
            deleted,
            ..ApplyReport::default()
        },
        "vm",
        specs,
        |s| s.name.clone(),
        |spec| VmApply { spec },
        |r| (r.outcome, Some(r.generation)),
    )
    .await?;
    if !args.wait {
        return Ok(());
    }
    let goals: Vec<WaitGoal> = report
        .applied
        .iter()
        .map(|a| WaitGoal {
            name: a.name.clone(),
            generation: a.generation.unwrap_or(0),
        })
        .collect();
    let limits = WaitLimits {
        timeout: args.wait_timeout,
        fail_after: args.fail_after,
    };
    let client = session.client()?;
    wait_for_vms(&client, session.read(), &goals, limits, |line| {
        eprintln!("{}", terminal_text(line));
    })
    .await
}

/// A client for a call the leader may work on for `wait`: first checks, with the usual
/// timeout, that the cluster answers and knows `vm`, so neither costs the long wait.
async fn long_call_client(
    session: &mut Session<'_>,
    vm: &str,
    wait: Duration,
) -> Result<AdminClient, CliError> {
    let client = session.client()?;
    client
        .call(&VmGet {
            name: vm.to_string(),
            read: session.read(),
        })
        .await?;
    let timeout = session.cli.timeout.max(wait + LONG_CALL_MARGIN);
    Ok(client.with_timeout(timeout))
}

async fn power(
    session: &mut Session<'_>,
    name: &str,
    action: VmPowerAction,
) -> Result<(), CliError> {
    let client = match action {
        VmPowerAction::Restart => long_call_client(session, name, RESTART_WAIT).await?,
        VmPowerAction::Start | VmPowerAction::Stop => session.client()?,
    };
    let reply = client
        .call(&VmPower {
            name: name.to_string(),
            request_id: request_id(),
            action,
        })
        .await?;
    session.print(&reply)
}

async fn snapshot(session: &mut Session<'_>, command: &SnapshotCommand) -> Result<(), CliError> {
    let (vm, action, done) = match command {
        SnapshotCommand::Create {
            name,
            snapshot,
            vmstate,
            description,
        } => (
            name,
            SnapshotAction::Create {
                snapshot: snapshot.clone(),
                description: description.clone(),
                vmstate: *vmstate,
            },
            Some(format!(
                "snapshot {snapshot} of vm {name} taken{}",
                if *vmstate { " with its RAM" } else { "" }
            )),
        ),
        SnapshotCommand::Ls { name } => (name, SnapshotAction::List, None),
        SnapshotCommand::Rollback {
            name,
            snapshot,
            start,
        } => (
            name,
            SnapshotAction::Rollback {
                snapshot: snapshot.clone(),
                start: *start,
            },
            Some(format!("vm {name} rolled back to snapshot {snapshot}")),
        ),
        SnapshotCommand::Delete { name, snapshot } => (
            name,
            SnapshotAction::Delete {
                snapshot: snapshot.clone(),
            },
            Some(format!("snapshot {snapshot} of vm {name} deleted")),
        ),
    };
    let wait = match action {
        SnapshotAction::List => SNAPSHOT_LIST_WAIT,
        _ => SNAPSHOT_CHANGE_WAIT,
    };
    let client = long_call_client(session, vm, wait).await?;
    let reply = client
        .call(&VmSnapshot {
            name: vm.clone(),
            request_id: request_id(),
            action,
        })
        .await?;
    match done {
        Some(done) => session.print(&SnapshotChanged { done, reply }),
        None => session.print(&reply),
    }
}

/// A fresh id for one operator command; the client's retries of that command reuse the
/// request, and with it the id.
fn request_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}
