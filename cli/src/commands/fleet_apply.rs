//! `pvefleet apply -f FILE`: a whole fleet file (pools, VMID ranges, VIPs, settings, VM groups
//! and VMs) as one write. Every entry is checked here first (the first bad field named with
//! its entry, value and allowed values, and nothing sent), then the file goes as one
//! `admin.fleet_apply`, which the cluster commits as one log entry: every entry is applied, or
//! none is (an entry naming an unknown pool refuses the file, naming the VM and the field).
//! With `--wait` it then follows the file's VMs stage by stage on stderr.
//!
//! ```text
//!  FILE ─▶ parse + validate ─▶ admin.fleet_apply ─▶ stderr: "committed …" ─▶ stdout: report
//!       ─▶ --wait: VmList every 250 ms ─▶ stderr: placed/created/running counts when they change
//! ```

use std::time::{Duration, Instant};

use client::ClientError;
use protocol::admin::{ApplyOutcome, FleetApply, FleetApplyReply};

use super::Session;
use super::apply::{WaitLimits, read_fleet_file, wait_for_vms_with};
use crate::args::VmApplyArgs;
use crate::exit::CliError;
use crate::output::printable::terminal_text;
use crate::output::progress::{Progress, WaitGoal};
use crate::output::{Applied, ApplyReport, Deleted};

/// How often `--wait` reads the VMs (a whole fleet moves fast; the line changes only when the
/// counts do).
const POLL: Duration = Duration::from_millis(250);

/// `pvefleet apply -f FILE [--wait]`.
pub(crate) async fn run(session: &mut Session<'_>, args: &VmApplyArgs) -> Result<(), CliError> {
    let file = read_fleet_file(&args.file)?;
    let request = FleetApply {
        pools: file.pool,
        vmid_ranges: file.vmid_range,
        vips: file.vip,
        settings: file.settings,
        groups: file.groups,
        vms: file.vm,
    };
    if request.is_empty() {
        return Err(CliError::EmptyFleetFile {
            path: args.file.clone(),
        });
    }
    let started = Instant::now();
    let client = session.client()?;
    let whole = |source| CliError::ApplyWhole {
        path: args.file.clone(),
        source: Box::new(source),
    };
    let reply = client.call(&request).await.map_err(whole)?;
    let report = report(&request, &reply).map_err(whole)?;
    eprintln!("{}", committed(&report, started.elapsed()));
    session.print(&report)?;
    if !args.wait || request.vms.is_empty() {
        return Ok(());
    }
    let goals: Vec<WaitGoal> = request
        .vms
        .iter()
        .zip(&reply.vms)
        .map(|(spec, applied)| WaitGoal {
            name: spec.name.clone(),
            generation: applied.generation,
        })
        .collect();
    let limits = WaitLimits {
        timeout: args.wait_timeout,
        fail_after: args.fail_after,
    };
    let style = (POLL, Progress::stage_line as fn(&Progress) -> String);
    wait_for_vms_with(&client, session.read(), &goals, limits, style, |line| {
        eprintln!(
            "{} ({:.1} s)",
            terminal_text(line),
            started.elapsed().as_secs_f64()
        );
    })
    .await
}

/// What the reply says of each entry of `request`, in the file's order: the settings, pools,
/// ranges, VIPs, then VMs, and the group members deleted. A reply that does not answer every
/// entry is the cluster's bug, reported.
fn report(request: &FleetApply, reply: &FleetApplyReply) -> Result<ApplyReport, ClientError> {
    let answered = reply.pools.len() == request.pools.len()
        && reply.vmid_ranges.len() == request.vmid_ranges.len()
        && reply.vips.len() == request.vips.len()
        && reply.vms.len() == request.vms.len()
        && reply.settings.is_some() == request.settings.is_some();
    if !answered {
        return Err(ClientError::Internal(
            "admin.fleet_apply: the reply does not answer every entry of the file".into(),
        ));
    }
    let plain = |kind: &'static str, name: &str, outcome: ApplyOutcome| Applied {
        kind,
        name: name.to_string(),
        outcome,
        generation: None,
    };
    let mut applied = Vec::with_capacity(request.len());
    if let Some(outcome) = reply.settings {
        applied.push(plain("settings", "settings", outcome));
    }
    let pools = request.pools.iter().map(|p| &p.name).zip(&reply.pools);
    applied.extend(pools.map(|(n, o)| plain("pool", n, *o)));
    let ranges = request.vmid_ranges.iter().map(|r| &r.name);
    applied.extend(
        ranges
            .zip(&reply.vmid_ranges)
            .map(|(n, o)| plain("vmid_range", n, *o)),
    );
    let vips = request.vips.iter().map(|v| &v.name).zip(&reply.vips);
    applied.extend(vips.map(|(n, o)| plain("vip", n, *o)));
    applied.extend(request.vms.iter().zip(&reply.vms).map(|(spec, r)| Applied {
        kind: "vm",
        name: spec.name.clone(),
        outcome: r.outcome,
        generation: Some(r.generation),
    }));
    let deleted = reply
        .deleted
        .iter()
        .map(|d| Deleted {
            kind: "vm",
            name: d.name.clone(),
            removed: d.removed,
        })
        .collect();
    Ok(ApplyReport { applied, deleted })
}

/// The line that says the file is in: `committed as one write in 0.2 s: 1 pool (created),
/// 1000 VMs (1000 created)`.
fn committed(report: &ApplyReport, took: Duration) -> String {
    let mut kinds: Vec<(&str, Vec<ApplyOutcome>)> = Vec::new();
    for a in &report.applied {
        match kinds.iter_mut().find(|(k, _)| *k == a.kind) {
            Some((_, outcomes)) => outcomes.push(a.outcome),
            None => kinds.push((a.kind, vec![a.outcome])),
        }
    }
    let mut parts: Vec<String> = kinds
        .iter()
        .map(|(kind, outcomes)| {
            let counts: Vec<String> = [
                ApplyOutcome::Created,
                ApplyOutcome::Updated,
                ApplyOutcome::Unchanged,
            ]
            .iter()
            .filter_map(|o| {
                let n = outcomes.iter().filter(|x| *x == o).count();
                (n > 0).then(|| format!("{n} {o}"))
            })
            .collect();
            format!("{} ({})", counted(outcomes.len(), kind), counts.join(", "))
        })
        .collect();
    if !report.deleted.is_empty() {
        parts.push(format!(
            "{} past their group's replicas deleted",
            counted(report.deleted.len(), "vm")
        ));
    }
    format!(
        "committed as one write in {:.1} s: {}",
        took.as_secs_f64(),
        parts.join(", ")
    )
}

/// `1 pool`, `3 VMs`, `2 VMID ranges`, `settings`.
fn counted(n: usize, kind: &str) -> String {
    let (one, many) = match kind {
        "vm" => ("VM", "VMs"),
        "vip" => ("VIP", "VIPs"),
        "pool" => ("pool", "pools"),
        "vmid_range" => ("VMID range", "VMID ranges"),
        _ => return kind.to_string(),
    };
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use protocol::admin::{MemberDeleted, VmApplyReply};
    use protocol::spec::{VmSpec, VmidRangeSpec};

    use super::*;

    #[test]
    fn the_report_names_every_entry_and_the_committed_line_counts_them() {
        let request = FleetApply {
            vmid_ranges: vec![VmidRangeSpec {
                name: "fleet".into(),
                start: 1000,
                end: 1999,
            }],
            vms: vec![VmSpec::new("a", 512), VmSpec::new("b", 512)],
            groups: vec![("web".into(), 1)],
            ..FleetApply::default()
        };
        let reply = FleetApplyReply {
            vmid_ranges: vec![ApplyOutcome::Unchanged],
            vms: vec![
                VmApplyReply {
                    outcome: ApplyOutcome::Created,
                    generation: 1,
                },
                VmApplyReply {
                    outcome: ApplyOutcome::Updated,
                    generation: 4,
                },
            ],
            deleted: vec![MemberDeleted {
                name: "web-2".into(),
                removed: true,
            }],
            ..FleetApplyReply::default()
        };
        let report = report(&request, &reply).unwrap();
        let names: Vec<(&str, &str)> = report
            .applied
            .iter()
            .map(|a| (a.kind, a.name.as_str()))
            .collect();
        assert_eq!(names, [("vmid_range", "fleet"), ("vm", "a"), ("vm", "b")]);
        assert_eq!(report.applied[2].generation, Some(4));
        assert_eq!(report.deleted[0].name, "web-2");
        assert_eq!(
            committed(&report, Duration::from_millis(240)),
            "committed as one write in 0.2 s: 1 VMID range (1 unchanged), 2 VMs (1 created, \
             1 updated), 1 VM past their group's replicas deleted"
        );

        let short = FleetApplyReply {
            vms: Vec::new(),
            ..reply
        };
        assert!(matches!(
            super::report(&request, &short),
            Err(ClientError::Internal(_))
        ));
    }
}
