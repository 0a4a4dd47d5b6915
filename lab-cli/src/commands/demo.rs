//! `pvefleet-lab demo`: a whole simulated fleet on this machine, as separate processes on
//! loopback.
//!
//! ```text
//!  pvefleet-lab demo ─┬─ pvefleet-coordinator init, run  (member 1)      logs/coordinator-N.log
//!                     ├─ token create + join, run         (members 2..N)
//!                     ├─ token create + pvefleet-agent join, run  (pve-a, pve-b, ... [pve] backend = "sim")
//!                     ├─ apply the fleet (pools, ranges, VIPs, VMs), wait: N/M ready
//!                     ├─ print `pvefleet vm ls`, `host ls`, `vip ls`, how to point the CLI at it
//!                     └─ Ctrl-C / SIGTERM (or --exit-when-ready): stop agents, then members; remove DIR
//! ```
//!
//! Narration goes to standard error; the listings and the instructions go to standard output
//! (with `--output json`, one document describing the running demo instead). The processes
//! are the `lab` launcher's; the demo adds the fleet, the narration and the report. The
//! listings are the operator CLI's own commands (`cli::run`), run against the demo's cluster.

mod error;
mod fleet;
mod report;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use clap::Parser;
use protocol::admin::{ReadMode, VipStatus, VmList};
use protocol::spec::FleetSpecFile;

use super::Session;
use super::shutdown_signal::shutdown_signal;
use crate::args::DemoArgs;
use crate::error::LabCliError;
use cli::output::json;
use cli::{Cli, CliError};
use client::AdminClient;
use error::DemoError;
use lab::{Binaries, HostOptions, Lab, LabOptions};
use protocol::Role;
use protocol::admin::DashboardLoginCreate;
use report::{DashboardInfo, DemoReady, HostInfo, MemberInfo};

/// How often the demo looks at the fleet while it converges.
const POLL: Duration = Duration::from_millis(500);
/// How long the members may take to all become voters.
const VOTERS_WAIT: Duration = Duration::from_secs(120);
/// How long the hosts may take to register and report their PVE facts.
const HOSTS_WAIT: Duration = Duration::from_secs(120);

/// Runs the demo until Ctrl-C (or until ready with `--exit-when-ready`).
pub(crate) async fn run(session: &mut Session<'_>, args: &DemoArgs) -> Result<(), LabCliError> {
    check_args(args)?;
    let fleet = fleet::load(args.file.as_deref())?;
    let bins = Binaries::beside_current_exe().map_err(DemoError::from)?;
    let mut options = LabOptions::new(bins.clone());
    options.dir.clone_from(&args.dir);
    options.prefix = "pvefleet-demo".to_string();
    options.cluster_id = "demo".to_string();
    options.dashboard = true;
    let mut demo = Lab::new(options).map_err(DemoError::from)?;
    eprintln!(
        "pvefleet-lab demo: {} and {} on 127.0.0.1\n  state: {}\n  logs:  {}",
        plural(args.coordinators, "coordinator"),
        plural(args.hosts, "simulated PVE host"),
        demo.layout().root.display(),
        demo.layout().logs().display()
    );

    let started = tokio::select! {
        r = bring_up(&mut demo, &fleet, args) => Some(r),
        () = shutdown_signal() => None,
    };
    let result = match started {
        None => {
            eprintln!("\ninterrupted: stopping");
            Ok(())
        }
        Some(Err(e)) => Err(e.into()),
        Some(Ok(())) => {
            let shown = show(session, &mut demo, &bins, &fleet, !args.exit_when_ready).await;
            if shown.is_ok() && !args.exit_when_ready {
                keep_running(&mut demo).await;
            }
            shown
        }
    };

    close(&mut demo, result.is_ok()).await;
    result
}

/// Stops every process and removes the directory if the demo made it and all went well (a
/// failed demo keeps its logs for a look).
async fn close(demo: &mut Lab, ok: bool) {
    let teardown = demo.stop().await;
    let killed = if teardown.killed > 0 {
        format!(
            " ({} did not stop on SIGTERM and were killed)",
            teardown.killed
        )
    } else {
        String::new()
    };
    eprintln!(
        "stopped {} processes{killed}",
        teardown.clean + teardown.killed
    );
    let layout = demo.layout();
    let root = layout.root.display();
    if layout.temporary && ok {
        if !layout.remove_if_temporary() {
            eprintln!("could not remove {root}: remove it by hand");
        }
    } else if layout.temporary {
        eprintln!("state and logs kept in {root} for a look at what failed; remove it when done");
    } else {
        eprintln!("state and logs kept in {root}");
    }
}

/// `1 host`, `5 hosts`.
fn plural(n: u32, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn check_args(args: &DemoArgs) -> Result<(), DemoError> {
    if !matches!(args.coordinators, 1 | 3 | 5) {
        return Err(DemoError::Usage(format!(
            "--coordinators {} is not allowed: expected 1, 3 or 5 (an odd number keeps a majority)",
            args.coordinators
        )));
    }
    if !(1..=100).contains(&args.hosts) {
        return Err(DemoError::Usage(format!(
            "--hosts {} is not allowed: expected 1-100",
            args.hosts
        )));
    }
    if args.file.is_none() && args.hosts < 2 {
        return Err(DemoError::Usage(
            "--hosts 1 is too few for the example fleet: its databases ask for zone a and zone b, \
             and the demo's hosts take the zones in turn; give --hosts 2 or more"
                .to_string(),
        ));
    }
    Ok(())
}

/// Starts every process, applies the fleet and waits until it is in its desired state.
async fn bring_up(demo: &mut Lab, fleet: &FleetSpecFile, args: &DemoArgs) -> Result<(), DemoError> {
    demo.found().await?;
    eprintln!("  coordinator 1 is up at {}", demo.member(0)?.listen);
    for n in 2..=args.coordinators {
        let i = demo.join_member().await?;
        eprintln!("  coordinator {n} joined at {}", demo.member(i)?.listen);
    }
    demo.wait_voters(VOTERS_WAIT).await?;
    if args.coordinators > 1 {
        eprintln!("  all {} coordinators are voters", demo.members().len());
    }
    let token = demo.token(Role::Agent, args.hosts).await?;
    for h in 0..args.hosts {
        let i = demo
            .add_agent(&HostOptions::demo(h, args.task_speed), &token)
            .await?;
        let agent = demo.agent(i)?;
        eprintln!(
            "  agent {} is connected (host id {})",
            agent.host, agent.node_id
        );
    }
    demo.wait_hosts_online(HOSTS_WAIT).await?;
    eprintln!("  all {} hosts are online", demo.agents().len());
    let client = demo.client()?;
    eprintln!(
        "applying the fleet: {} pool(s), {} VMID range(s), {} VIP(s), {} VMs",
        fleet.pool.len(),
        fleet.vmid_range.len(),
        fleet.vip.len(),
        fleet.vm.len()
    );
    fleet::apply(&client, fleet).await?;
    let converged = wait_converged(demo, &client, fleet, args.wait).await;
    client.close().await;
    converged
}

/// Polls the VMs until every one is in its desired state, showing progress.
async fn wait_converged(
    demo: &mut Lab,
    client: &AdminClient,
    fleet: &FleetSpecFile,
    wait: Duration,
) -> Result<(), DemoError> {
    let start = tokio::time::Instant::now();
    let tty = std::io::stderr().is_terminal();
    let mut shown = String::new();
    let mut last = fleet::progress(&fleet.vm, &[]);
    loop {
        demo.check_alive()?;
        if let Ok(reply) = client
            .call(&VmList {
                read: ReadMode::Linearizable,
            })
            .await
        {
            last = fleet::progress(&fleet.vm, &reply.vms);
        }
        let line = last.line();
        if line != shown {
            if tty {
                eprint!("\r\x1b[2K  {line}");
                let _ = std::io::stderr().flush();
            } else {
                eprintln!("  {line}");
            }
            shown = line;
        }
        if last.done() && vips_held(client, fleet).await {
            if tty {
                eprintln!();
            }
            eprintln!(
                "the fleet is ready after {:.1} s",
                start.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        if start.elapsed() > wait {
            if tty {
                eprintln!();
            }
            return Err(DemoError::NotConverged {
                pending: last.pending.len(),
                total: last.total,
                after: wait,
                details: last.pending_details(),
                logs: demo.layout().logs(),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether every VIP of the fleet file has an owner that holds it (the demo's agents simulate
/// holding).
async fn vips_held(client: &AdminClient, fleet: &FleetSpecFile) -> bool {
    if fleet.vip.is_empty() {
        return true;
    }
    let Ok(reply) = client.call(&VipStatus { name: None }).await else {
        return false;
    };
    fleet.vip.iter().all(|spec| {
        reply
            .vips
            .iter()
            .any(|e| e.vip.spec.name == spec.name && e.vip.owner.is_some() && e.held)
    })
}

/// Prints `vm ls`, `host ls` and how to use the fleet from another shell; with `--output
/// json`, one document describing the demo instead.
async fn show(
    session: &mut Session<'_>,
    demo: &mut Lab,
    bins: &Binaries,
    fleet: &FleetSpecFile,
    keeps_running: bool,
) -> Result<(), LabCliError> {
    let pids: Vec<Option<u32>> = (0..demo.members().len())
        .map(|i| demo.pid(lab::Part::Member(i)))
        .collect();
    let ready = DemoReady {
        dir: demo.layout().root.clone(),
        cli_config: demo.cli_config(),
        logs: demo.layout().logs(),
        bin_dir: bins.dir.clone(),
        coordinators: demo
            .members()
            .iter()
            .zip(pids)
            .map(|(m, pid)| MemberInfo {
                node_id: m.node_id,
                addr: m.listen.to_string(),
                pid,
            })
            .collect(),
        hosts: demo
            .agents()
            .iter()
            .map(|a| HostInfo {
                name: a.host.clone(),
                node_id: a.node_id,
            })
            .collect(),
        vms: fleet.vm.iter().map(|v| v.name.clone()).collect(),
        vips: fleet.vip.iter().map(|v| v.name.clone()).collect(),
        dashboard: dashboard(demo).await,
    };
    if session.json() {
        let text = json(&ready).map_err(|e| LabCliError::Output(e.to_string()))?;
        return session.write(&text);
    }
    let config = demo.cli_config();
    session.write("\n$ pvefleet vm ls\n")?;
    listing(session, &config, &["vm", "ls"]).await?;
    session.write("\n$ pvefleet host ls\n")?;
    listing(session, &config, &["host", "ls"]).await?;
    if !fleet.vip.is_empty() {
        session.write("\n$ pvefleet vip ls\n")?;
        listing(session, &config, &["vip", "ls"]).await?;
    }
    session.write(&format!("\n{}", ready.instructions(keeps_running)))
}

/// Coordinator 1's dashboard with a one-time login link (an hour to use it), and the last
/// host's agent to stop; `None` if it cannot be had (said on stderr: the demo goes on).
async fn dashboard(demo: &mut Lab) -> Option<DashboardInfo> {
    let addr = demo.members().first()?.dashboard.clone()?;
    let base = format!("https://{addr}");
    let request = DashboardLoginCreate {
        read_only: false,
        ttl_secs: Some(3600),
        issuer: None,
    };
    let minted = match demo.client() {
        Ok(client) => {
            let minted = client.call(&request).await;
            client.close().await;
            minted.map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    };
    let token = match minted {
        Ok(reply) => reply.token,
        Err(e) => {
            eprintln!("no dashboard login could be minted: {e}");
            return None;
        }
    };
    let last = demo.agents().len().checked_sub(1)?;
    let host = demo.agents().get(last)?.host.clone();
    Some(DashboardInfo {
        login: cli::login_url(&base, &token),
        base,
        host_pid: demo.pid(lab::Part::Agent(last)),
        host,
    })
}

/// Runs one `pvefleet` listing (`vm ls`, `host ls`, `vip ls`) against the demo's cluster, as
/// a table on the session's output: the operator CLI's own command, through its library.
async fn listing(
    session: &mut Session<'_>,
    config: &Path,
    words: &[&str],
) -> Result<(), LabCliError> {
    let mut argv: Vec<OsString> = vec!["pvefleet".into(), "--config".into(), config.into()];
    argv.extend(["--output", "table", "--timeout", "30"].map(OsString::from));
    argv.extend(words.iter().map(OsString::from));
    let cli = Cli::try_parse_from(argv).map_err(|e| CliError::Usage(e.to_string()))?;
    cli::run(&cli, &mut *session.out, protocol::time::Now::read().millis).await?;
    Ok(())
}

/// Waits for Ctrl-C or SIGTERM, warning once about each child that exits meanwhile.
async fn keep_running(demo: &mut Lab) {
    let signal = shutdown_signal();
    tokio::pin!(signal);
    loop {
        tokio::select! {
            () = &mut signal => {
                eprintln!("\nstopping the fleet");
                return;
            }
            () = tokio::time::sleep(Duration::from_secs(2)) => {
                if let Err(e) = demo.check_alive() {
                    eprintln!("warning: {e}\nthe demo keeps running; Ctrl-C stops it");
                    demo.forget_exited();
                }
            }
        }
    }
}
