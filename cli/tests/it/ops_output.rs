//! What the VM operations print, as golden text from hand-built replies: `vm explain`, `host
//! ls` (with the leader's live view, and `--stale` without it), `vm start|stop|restart`, the
//! snapshot commands, the lines of `events --follow`, and `vm apply --wait`'s progress line.

use crate::support::fixtures::*;
use cli::output::follow::{dropped_note, event_line};
use cli::output::progress::{Progress, VmProgress, WaitGoal, judge};
use cli::output::{HostShown, OutputFormat, SnapshotChanged};
use protocol::admin::{
    HostListReply, HostStatusEntry, HostStatusReply, PlacementScores, PlacementVerdict,
    VmExplainReply, VmPowerReply, VmSnapshotReply,
};
use protocol::agent::{HostResources, SnapshotInfo};
use protocol::fleet::{
    Capacity, Condition, ConditionKind, Event, EventKind, EventLevel, Host, HostState, VmPhase,
    VmRecord,
};
use protocol::spec::{DesiredState, NicIp, NicModel, NicSpec};
use serde_json::json;

fn scored(id: u64, name: &str, avg_cpu: f64, closeness: f64) -> PlacementVerdict {
    PlacementVerdict {
        host_id: id,
        host_name: name.into(),
        filter: None,
        detail: String::new(),
        scores: Some(PlacementScores {
            avg_cpu,
            max_cpu: 0.5,
            avg_mem: 0.125,
            max_mem: 0.25,
            closeness,
        }),
    }
}

fn excluded(id: u64, name: &str, filter: &str, detail: &str) -> PlacementVerdict {
    PlacementVerdict {
        host_id: id,
        host_name: name.into(),
        filter: Some(filter.into()),
        detail: detail.into(),
        scores: None,
    }
}

#[test]
fn explain_lists_every_host_best_first_with_scores_or_the_excluding_filter() {
    let reply = VmExplainReply {
        vm: "web-1".into(),
        placed_on: Some("pve1".into()),
        verdicts: vec![
            scored(3, "pve1", 0.25, 0.9132),
            scored(4, "pve2", 0.3125, 0.41),
            excluded(5, "pve3", "memory", "needs 4 GiB, 1 GiB schedulable left"),
        ],
    };
    assert_eq!(
        table(&reply),
        "\
vm web-1 is placed on pve1; each host as the scheduler would judge it now (the VM's own share taken off pve1):

HOST   VERDICT    FILTER/DETAIL                                 RMS-CPU   MAX-CPU   RMS-MEM   MAX-MEM   CLOSENESS
pve1   best       -                                             25.0%     50.0%     12.5%     25.0%     0.9132
pve2   eligible   -                                             31.2%     50.0%     12.5%     25.0%     0.4100
pve3   excluded   memory: needs 4 GiB, 1 GiB schedulable left   -         -         -         -         -
"
    );
    assert_eq!(
        json_of(&reply),
        json!({
            "vm": "web-1",
            "placed_on": "pve1",
            "verdicts": [
                {"host_id": 3, "host_name": "pve1", "filter": null, "detail": "",
                 "scores": {"avg_cpu": 0.25, "max_cpu": 0.5, "avg_mem": 0.125, "max_mem": 0.25,
                            "closeness": 0.9132}},
                {"host_id": 4, "host_name": "pve2", "filter": null, "detail": "",
                 "scores": {"avg_cpu": 0.3125, "max_cpu": 0.5, "avg_mem": 0.125, "max_mem": 0.25,
                            "closeness": 0.41}},
                {"host_id": 5, "host_name": "pve3", "filter": "memory",
                 "detail": "needs 4 GiB, 1 GiB schedulable left", "scores": null},
            ]
        })
    );
}

#[test]
fn explain_without_an_eligible_host_says_what_to_fix() {
    let reply = VmExplainReply {
        vm: "db-1".into(),
        placed_on: None,
        verdicts: vec![excluded(
            3,
            "pve1",
            "template",
            "template debian-12 is not on this host",
        )],
    };
    let text = table(&reply);
    assert!(
        text.starts_with("vm db-1 is not placed yet; each host as the scheduler judges it now:\n"),
        "{text}"
    );
    assert!(
        text.contains("pve1   excluded   template: template debian-12 is not on this host"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "\nno host can take vm db-1: fix what the filters name (capacity, labels, storages, \
             bridges, templates, host state) or change its placement\n"
        ),
        "{text}"
    );
    let none = VmExplainReply {
        vm: "db-1".into(),
        placed_on: None,
        verdicts: Vec::new(),
    };
    assert!(
        table(&none).contains("no hosts are registered: join one with `pvefleet token create"),
        "{}",
        table(&none)
    );
}

fn host(id: u64, name: &str, state: HostState) -> Host {
    Host {
        id,
        name: name.into(),
        labels: [("zone".to_string(), "a".to_string())].into(),
        capacity: Capacity {
            cpus: 16,
            memory_mib: 65536,
        },
        state,
        registered_at: NOW - DAY,
        state_since: NOW - DAY,
        state_reason: String::new(),
        facts: None,
        operator_labels: Default::default(),
    }
}

fn host_status() -> HostStatusReply {
    HostStatusReply {
        hosts: vec![
            HostStatusEntry {
                host: host(3, "pve1", HostState::Online),
                vm_count: 3,
                vcpus: 10,
                memory_mib: 12288,
                last_seen_ms: Some(800),
                resources: Some(HostResources {
                    cpus: 16,
                    memory_total_bytes: 68_719_476_736,
                    memory_used_bytes: 8_589_934_592,
                    load_milli: [1500, 1200, 900],
                    disks: Vec::new(),
                }),
            },
            HostStatusEntry {
                host: host(4, "pve2", HostState::Unreachable),
                vm_count: 0,
                vcpus: 0,
                memory_mib: 0,
                last_seen_ms: None,
                resources: None,
            },
        ],
    }
}

#[test]
fn host_ls_shows_capacity_commitments_and_the_leaders_live_view() {
    assert_eq!(
        table(&host_status()),
        "\
NAME   ID   STATE         SINCE   CPUS   MEMORY   VMS   VCPUS-COMMITTED   MEM-COMMITTED   LOAD   LAST-SEEN
pve1   3    online        24h     16     64 GiB   3     10                12 GiB          1.50   0s ago
pve2   4    unreachable   24h     16     64 GiB   0     0                 0 MiB           -      -
"
    );
    let doc = json_of(&host_status());
    assert_eq!(doc["hosts"][0]["vm_count"], json!(3));
    assert_eq!(doc["hosts"][0]["memory_mib"], json!(12288));
    assert_eq!(doc["hosts"][0]["host"]["name"], json!("pve1"));
    assert_eq!(
        doc["hosts"][0]["resources"]["load_milli"],
        json!([1500, 1200, 900])
    );
    assert_eq!(doc["hosts"][1]["last_seen_ms"], json!(null));
    let back: HostStatusReply = serde_json::from_value(doc).unwrap();
    assert_eq!(back, host_status());
    assert!(
        table(&HostStatusReply { hosts: Vec::new() }).starts_with("no hosts: create an agent"),
        "empty lists say how to add the first host"
    );
}

#[test]
fn host_show_gives_the_state_with_its_reason_and_since_when() {
    let mut entry = host_status().hosts.remove(1);
    entry.host.state = HostState::Fenced;
    entry.host.state_since = NOW - 12_000;
    entry.host.state_reason = "lease expired: the last lease was granted 11.0 s ago".into();
    assert_eq!(
        table(&HostShown(entry.clone())),
        "\
name        pve2
id          4
state       fenced since 12s ago
reason      lease expired: the last lease was granted 11.0 s ago
last seen   - (not since this leader was elected)
capacity    16 CPUs, 64 GiB
committed   0 VMs, 0 vCPUs, 0 MiB
load        -
labels      zone=a
pve         -
registered  24h ago
"
    );
    let doc = json_of(&HostShown(entry));
    assert_eq!(doc["host"]["state"], json!("fenced"));
    assert_eq!(
        doc["host"]["state_reason"],
        json!("lease expired: the last lease was granted 11.0 s ago")
    );
}

#[test]
fn a_stale_host_list_shows_the_records_and_says_what_is_missing() {
    let reply = HostListReply {
        hosts: vec![host(3, "pve1", HostState::Maintenance)],
    };
    assert_eq!(
        table(&reply),
        "\
NAME   ID   STATE         CPUS   MEMORY   LABELS
pve1   3    maintenance   16     64 GiB   zone=a
(read without the leader: usage, load and heartbeats are known to the leader only; drop --stale to see them)
"
    );
}

fn snapshots() -> VmSnapshotReply {
    VmSnapshotReply {
        vm: "web-1".into(),
        snapshots: vec![
            SnapshotInfo {
                name: "base".into(),
                description: "fresh install\nsecond line".into(),
                parent: None,
                taken_at: Some((NOW - 2 * DAY) / 1000),
                vmstate: false,
            },
            SnapshotInfo {
                name: "pre-upgrade".into(),
                description: String::new(),
                parent: Some("base".into()),
                taken_at: Some((NOW - 3 * HOUR) / 1000),
                vmstate: true,
            },
        ],
    }
}

#[test]
fn snapshot_lists_show_parent_age_ram_and_the_first_description_line() {
    assert_eq!(
        table(&snapshots()),
        "\
NAME          PARENT   TAKEN    RAM   DESCRIPTION
base          -        2d ago   no    fresh install
pre-upgrade   base     3h ago   yes
"
    );
    let changed = SnapshotChanged {
        done: "snapshot pre-upgrade of vm web-1 taken with its RAM".into(),
        reply: snapshots(),
    };
    assert!(
        table(&changed).starts_with("snapshot pre-upgrade of vm web-1 taken with its RAM\n\nNAME"),
        "{}",
        table(&changed)
    );
    assert_eq!(
        json_of(&changed),
        json_of(&snapshots()),
        "the JSON is the reply's"
    );
    assert_eq!(
        json_of(&snapshots())["snapshots"][1]["parent"],
        json!("base")
    );
    let none = VmSnapshotReply {
        vm: "web-1".into(),
        snapshots: Vec::new(),
    };
    assert_eq!(
        table(&none),
        "vm web-1 has no snapshots: take one with `pvefleet vm snapshot create web-1 NAME`\n"
    );
}

#[test]
fn power_replies_print_their_message() {
    let reply = VmPowerReply {
        generation: 4,
        message: "vm web-1 is now kept stopped (generation 4)".into(),
    };
    assert_eq!(
        table(&reply),
        "vm web-1 is now kept stopped (generation 4)\n"
    );
    assert_eq!(
        json_of(&reply),
        json!({"generation": 4, "message": "vm web-1 is now kept stopped (generation 4)"})
    );
}

#[test]
fn followed_events_are_one_line_each_with_absolute_times() {
    let event = Event {
        seq: 42,
        at: NOW - 30_000,
        level: EventLevel::Warning,
        kind: EventKind::Vm,
        subject: "web-3".into(),
        message: "ensure failed at step clone".into(),
    };
    assert_eq!(
        event_line(&event, OutputFormat::Table).unwrap(),
        "    42  2025-03-01T11:59:30Z  warning  vm web-3: ensure failed at step clone\n"
    );
    let line = event_line(&event, OutputFormat::Json).unwrap();
    assert_eq!(line.matches('\n').count(), 1, "{line}");
    assert!(line.ends_with("}\n"), "{line}");
    assert_eq!(serde_json::from_str::<Event>(&line).unwrap(), event);
    assert_eq!(
        dropped_note(3, 10).as_deref(),
        Some("(events 4-9 are no longer kept: the event log keeps only the newest)")
    );
    assert_eq!(dropped_note(9, 10), None);
    assert_eq!(dropped_note(0, 0), None);
}

/// A VM at generation 2 in `phase`, seen at generation `observed`, with a pool NIC.
fn vm(name: &str, phase: VmPhase, observed: u64, ips: &[&str]) -> VmRecord {
    let mut vm = web_1();
    vm.spec.name = name.into();
    vm.generation = 2;
    vm.status.phase = phase;
    vm.status.observed_generation = observed;
    vm.status.ips = ips.iter().map(|i| ip(i)).collect();
    vm.status.conditions = vec![Condition {
        kind: ConditionKind::Ready,
        status: phase == VmPhase::Running && !ips.is_empty(),
        reason: String::new(),
        message: String::new(),
        since: NOW,
    }];
    vm
}

#[test]
fn a_vm_is_done_at_the_applied_generation_in_its_desired_state_with_its_addresses() {
    let running = vm("a", VmPhase::Running, 2, &["10.0.0.10"]);
    assert_eq!(judge(2, Some(&running)), VmProgress::Done);
    assert_eq!(
        judge(3, Some(&running)),
        VmProgress::Waiting("updating"),
        "not yet seen at the applied generation"
    );
    assert_eq!(
        judge(2, Some(&vm("a", VmPhase::Running, 2, &[]))),
        VmProgress::Waiting("waiting for IPs")
    );
    let mut no_nics = vm("a", VmPhase::Running, 2, &[]);
    no_nics.spec.nics.clear();
    assert_eq!(
        judge(2, Some(&no_nics)),
        VmProgress::Done,
        "no address expected"
    );
    let mut dhcp = no_nics.clone();
    dhcp.spec.nics = vec![NicSpec {
        model: NicModel::Virtio,
        bridge: "vmbr0".into(),
        vlan: None,
        mac: None,
        firewall: false,
        mtu: None,
        ip: Some(NicIp::Dhcp),
    }];
    assert_eq!(
        judge(2, Some(&dhcp)),
        VmProgress::Done,
        "DHCP without agent"
    );
    dhcp.spec.agent = true;
    assert_eq!(
        judge(2, Some(&dhcp)),
        VmProgress::Waiting("waiting for IPs"),
        "DHCP with the guest agent reports its address"
    );

    let mut stopped = vm("a", VmPhase::Stopped, 2, &[]);
    assert_eq!(judge(2, Some(&stopped)), VmProgress::Waiting("starting"));
    stopped.spec.state = DesiredState::Stopped;
    assert_eq!(judge(2, Some(&stopped)), VmProgress::Done);
    let mut failed = vm("a", VmPhase::Failed, 1, &[]);
    failed.status.message = "ensure failed at step clone:\n  template missing".into();
    assert_eq!(
        judge(2, Some(&failed)),
        VmProgress::Failed("ensure failed at step clone: template missing".into())
    );
    let mut deleting = running.clone();
    deleting.deleting = true;
    assert_eq!(
        judge(2, Some(&deleting)),
        VmProgress::Gone("is being deleted")
    );
    assert_eq!(judge(2, None), VmProgress::Gone("no longer exists"));
}

#[test]
fn the_progress_line_counts_done_waiting_and_failed_vms() {
    let mut failed = vm("web-3", VmPhase::Failed, 1, &[]);
    failed.status.message = "ensure failed at step clone: template missing".into();
    let vms = vec![
        vm("web-1", VmPhase::Running, 2, &["10.0.0.10"]),
        vm("web-2", VmPhase::Provisioning, 1, &[]),
        failed,
        vm("web-4", VmPhase::Pending, 0, &[]),
        vm("web-5", VmPhase::Provisioning, 1, &[]),
    ];
    let goals: Vec<WaitGoal> = (1..=6)
        .map(|i| WaitGoal {
            name: format!("web-{i}"),
            generation: 2,
        })
        .collect();
    let progress = Progress::of(&goals, &vms);
    assert_eq!(
        progress.line(),
        "1/6 running, 1 pending, 2 provisioning, 1 gone: web-6 no longer exists, \
         1 failed: web-3: ensure failed at step clone: template missing"
    );
    assert!(!progress.is_complete());
    assert_eq!(
        progress.not_done(),
        "  web-2: provisioning\n  web-3: failed: ensure failed at step clone: template \
         missing\n  web-4: pending\n  web-5: provisioning\n  web-6: no longer exists\n"
    );
    let done = Progress::of(&goals[..1], &vms);
    assert!(done.is_complete());
    assert_eq!(done.line(), "1/1 running");
}

#[test]
fn the_stage_line_counts_placed_created_and_running_vms() {
    let mut pending = vm("web-1", VmPhase::Pending, 0, &[]);
    pending.assignment.host = None;
    let scheduled = vm("web-2", VmPhase::Scheduled, 0, &[]);
    let mut created = vm("web-3", VmPhase::Provisioning, 1, &[]);
    created.status.conditions.push(Condition {
        kind: ConditionKind::Created,
        status: true,
        reason: String::new(),
        message: String::new(),
        since: NOW,
    });
    let running = vm("web-4", VmPhase::Running, 2, &["10.0.0.10"]);
    let mut failed = vm("web-5", VmPhase::Failed, 1, &[]);
    failed.status.message = "ensure failed at step clone: template missing".into();
    let vms = vec![pending, scheduled, created, running, failed];
    let goals: Vec<WaitGoal> = (1..=5)
        .map(|i| WaitGoal {
            name: format!("web-{i}"),
            generation: 2,
        })
        .collect();
    let progress = Progress::of(&goals, &vms);
    assert_eq!(
        progress.stage_line(),
        "placed 4/5, created 2/5, running 1/5, \
         1 failed: web-5: ensure failed at step clone: template missing"
    );
    let done = Progress::of(&goals[3..4], &vms);
    assert_eq!(done.stage_line(), "placed 1/1, created 1/1, running 1/1");
}
