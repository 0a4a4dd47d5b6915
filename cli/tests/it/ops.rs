//! The VM operation commands end to end against a stand-in member: what `vm explain`, `vm
//! start|stop|restart`, `vm snapshot ...`, `host ls` and `events --follow` send, what they print
//! as tables and JSON, and their exit codes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::fixtures::{NOW, web_1};
use crate::support::{FakeMember, Pki, pvefleet, pvefleet_within};
use clap::Parser;
use cli::Cli;
use cli::exit::ExitStatus;
use protocol::admin::{
    Events, EventsReply, HostList, HostListReply, HostStatus, HostStatusEntry, HostStatusReply,
    ReadMode, VmExplain, VmExplainReply, VmGet, VmPower, VmPowerAction, VmPowerReply, VmSnapshot,
    VmSnapshotReply,
};
use protocol::agent::{SnapshotAction, SnapshotInfo};
use protocol::fleet::{Capacity, Event, EventKind, EventLevel, Host, HostState};
use serde_json::json;
use tokio::time::Instant;
use transport::{RemoteError, Router, Service};

type Log<T> = Arc<Mutex<Vec<T>>>;

fn log<T>() -> Log<T> {
    Arc::new(Mutex::new(Vec::new()))
}

/// Answers `VmGet` for `web-1` only (the check before long calls).
fn knows_web_1(router: &mut Router) {
    router.handle(Service::Admin, |_caller, req: VmGet| async move {
        if req.name == "web-1" {
            Ok(web_1())
        } else {
            Err(RemoteError::not_found(format!(
                "vm {:?} not found (`pvefleet vm ls` lists the VMs)",
                req.name
            )))
        }
    });
}

#[tokio::test]
async fn vm_explain_prints_the_leaders_verdicts_and_a_missing_vm_exits_4() {
    let pki = Pki::new();
    let mut router = Router::new();
    router.handle(Service::Admin, |_caller, req: VmExplain| async move {
        if req.name != "web-1" {
            return Err(RemoteError::not_found(format!(
                "vm {:?} not found",
                req.name
            )));
        }
        Ok(VmExplainReply {
            vm: req.name,
            placed_on: None,
            verdicts: vec![protocol::admin::PlacementVerdict {
                host_id: 3,
                host_name: "pve1".into(),
                filter: Some("bridge".into()),
                detail: "bridge vmbr9 is missing".into(),
                scores: None,
            }],
        })
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(&config, &["vm", "explain", "web-1"]).await;
    result.unwrap();
    assert!(
        out.contains("\npve1   excluded   bridge: bridge vmbr9 is missing   -"),
        "{out}"
    );
    let (result, out) = pvefleet(&config, &["-o", "json", "vm", "explain", "web-1"]).await;
    result.unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["verdicts"][0]["filter"], json!("bridge"));
    assert_eq!(doc["placed_on"], json!(null));

    let (result, out) = pvefleet(&config, &["vm", "explain", "web-9"]).await;
    assert_eq!(result.unwrap_err().status(), ExitStatus::NotFound);
    assert_eq!(out, "");
}

fn power_router(sent: &Log<VmPower>) -> Router {
    let mut router = Router::new();
    knows_web_1(&mut router);
    let seen = Arc::clone(sent);
    router.handle(Service::Admin, move |_caller, req: VmPower| {
        seen.lock().unwrap().push(req.clone());
        let message = format!("vm {} {:?}", req.name, req.action);
        async move {
            Ok(VmPowerReply {
                generation: 3,
                message,
            })
        }
    });
    router
}

#[tokio::test]
async fn start_stop_and_restart_send_their_action_and_print_the_leaders_message() {
    let pki = Pki::new();
    let sent = log();
    let member = FakeMember::start(&pki, 1, power_router(&sent));
    let config = pki.write_config(&[&member]);

    let mut request_ids = std::collections::BTreeSet::new();
    for (verb, action) in [
        ("start", VmPowerAction::Start),
        ("stop", VmPowerAction::Stop),
        ("restart", VmPowerAction::Restart),
    ] {
        let (result, out) = pvefleet(&config, &["vm", verb, "web-1"]).await;
        result.unwrap();
        assert_eq!(out, format!("vm web-1 {action:?}\n"));
        let request = sent.lock().unwrap().pop().expect("a power request");
        assert_eq!((request.name.as_str(), request.action), ("web-1", action));
        assert_eq!(request.request_id.len(), 16, "{request:?}");
        assert!(
            request_ids.insert(request.request_id),
            "every command gets its own request id"
        );
    }
    let (result, out) = pvefleet(&config, &["-o", "json", "vm", "stop", "web-1"]).await;
    result.unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap(),
        json!({"generation": 3, "message": "vm web-1 Stop"})
    );
}

#[tokio::test]
async fn a_restart_of_an_unknown_vm_exits_4_without_asking_for_a_restart() {
    let pki = Pki::new();
    let sent = log();
    let member = FakeMember::start(&pki, 1, power_router(&sent));
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(&config, &["vm", "restart", "web-9"]).await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::NotFound);
    assert!(e.to_string().contains("web-9"), "{e}");
    assert_eq!(out, "");
    assert!(sent.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_restart_longer_than_one_attempt_and_the_timeout_still_gets_its_answer() {
    let pki = Pki::new();
    let calls = log();
    let seen = Arc::clone(&calls);
    let done_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let mut router = Router::new();
    knows_web_1(&mut router);
    // Like the leader, every retry joins the one restart under way, which takes 3 s: longer
    // than a client attempt (at most 2.5 s) and than the --timeout given.
    router.handle(Service::Admin, move |_caller, req: VmPower| {
        seen.lock().unwrap().push(req.action);
        let at = *done_at
            .lock()
            .unwrap()
            .get_or_insert_with(|| Instant::now() + Duration::from_secs(3));
        async move {
            tokio::time::sleep_until(at).await;
            Ok(VmPowerReply {
                generation: 1,
                message: "vm web-1 restarted on pve1 (vmid 100)".into(),
            })
        }
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet_within(&config, "2", &["vm", "restart", "web-1"]).await;
    result.unwrap();
    assert_eq!(out, "vm web-1 restarted on pve1 (vmid 100)\n");
    let calls = calls.lock().unwrap();
    assert!(calls.len() >= 2, "the first attempt timed out: {calls:?}");
    assert!(calls.iter().all(|a| *a == VmPowerAction::Restart));
}

fn snapshot_list() -> Vec<SnapshotInfo> {
    vec![SnapshotInfo {
        name: "s1".into(),
        description: "before upgrade".into(),
        parent: None,
        taken_at: Some(NOW / 1000 - 60),
        vmstate: true,
    }]
}

#[tokio::test]
async fn snapshot_commands_send_their_action_and_print_the_vms_snapshots() {
    let pki = Pki::new();
    let sent: Log<VmSnapshot> = log();
    let seen = Arc::clone(&sent);
    let mut router = Router::new();
    knows_web_1(&mut router);
    router.handle(Service::Admin, move |_caller, req: VmSnapshot| {
        seen.lock().unwrap().push(req.clone());
        async move {
            Ok(VmSnapshotReply {
                vm: req.name,
                snapshots: snapshot_list(),
            })
        }
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);

    let cases: [(&[&str], SnapshotAction, &str); 4] = [
        (
            &[
                "create",
                "web-1",
                "s1",
                "--vmstate",
                "--description",
                "before upgrade",
            ],
            SnapshotAction::Create {
                snapshot: "s1".into(),
                description: "before upgrade".into(),
                vmstate: true,
            },
            "snapshot s1 of vm web-1 taken with its RAM\n\n",
        ),
        (
            &["rollback", "web-1", "s1", "--start"],
            SnapshotAction::Rollback {
                snapshot: "s1".into(),
                start: true,
            },
            "vm web-1 rolled back to snapshot s1\n\n",
        ),
        (
            &["rm", "web-1", "s1"],
            SnapshotAction::Delete {
                snapshot: "s1".into(),
            },
            "snapshot s1 of vm web-1 deleted\n\n",
        ),
        (&["ls", "web-1"], SnapshotAction::List, ""),
    ];
    let list = "\
NAME   PARENT   TAKEN     RAM   DESCRIPTION
s1     -        60s ago   yes   before upgrade
";
    for (args, action, done) in cases {
        let argv: Vec<&str> = ["vm", "snapshot"].iter().chain(args).copied().collect();
        let (result, out) = pvefleet(&config, &argv).await;
        result.unwrap();
        let request = sent.lock().unwrap().pop().expect("a snapshot request");
        assert_eq!(
            (request.name.as_str(), &request.action),
            ("web-1", &action),
            "{args:?}"
        );
        assert!(!request.request_id.is_empty(), "{request:?}");
        assert_eq!(out, format!("{done}{list}"));
    }
    let (result, out) = pvefleet(&config, &["-o", "json", "vm", "snapshot", "ls", "web-1"]).await;
    result.unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["vm"], json!("web-1"));
    assert_eq!(doc["snapshots"][0]["name"], json!("s1"));
    assert_eq!(doc["snapshots"][0]["vmstate"], json!(true));
}

#[tokio::test]
async fn a_snapshot_refused_by_the_cluster_exits_3_with_its_words() {
    let pki = Pki::new();
    let mut router = Router::new();
    knows_web_1(&mut router);
    router.handle(Service::Admin, |_caller, _req: VmSnapshot| async move {
        Err::<VmSnapshotReply, _>(RemoteError::bad_request(
            "snapshot = \"x\" is not allowed: expected a letter, then letters, digits, '-' or \
             '_' (2 to 40 characters), as PVE requires",
        ))
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);
    let (result, out) = pvefleet(&config, &["vm", "snapshot", "create", "web-1", "x"]).await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Refused);
    assert!(
        e.to_string()
            .starts_with("refused by the cluster: snapshot = \"x\" is not allowed"),
        "{e}"
    );
    assert_eq!(out, "");
}

fn pve1() -> Host {
    Host {
        id: 3,
        name: "pve1".into(),
        labels: Default::default(),
        capacity: Capacity {
            cpus: 8,
            memory_mib: 32768,
        },
        state: HostState::Online,
        registered_at: NOW - 60_000,
        state_since: NOW - 60_000,
        state_reason: String::new(),
        facts: None,
        operator_labels: Default::default(),
    }
}

#[tokio::test]
async fn host_ls_asks_the_leader_for_usage_and_a_stale_read_shows_the_records() {
    let pki = Pki::new();
    let stale_reads: Log<ReadMode> = log();
    let seen = Arc::clone(&stale_reads);
    let mut router = Router::new();
    router.handle(Service::Admin, |_caller, _req: HostStatus| async move {
        Ok(HostStatusReply {
            hosts: vec![HostStatusEntry {
                host: pve1(),
                vm_count: 2,
                vcpus: 4,
                memory_mib: 4096,
                last_seen_ms: Some(1200),
                resources: None,
            }],
        })
    });
    router.handle(Service::Admin, move |_caller, req: HostList| {
        seen.lock().unwrap().push(req.read);
        async move {
            Ok(HostListReply {
                hosts: vec![pve1()],
            })
        }
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(&config, &["host", "ls"]).await;
    result.unwrap();
    // SINCE (the fourth column) counts from the fixture's time to the real clock.
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        [&row[..3], &row[4..]].concat(),
        [
            "pve1", "3", "online", "8", "32", "GiB", "2", "4", "4", "GiB", "-", "1s", "ago"
        ],
        "{out}"
    );
    let (result, out) = pvefleet(&config, &["-o", "json", "host", "ls"]).await;
    result.unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["hosts"][0]["vcpus"], json!(4));
    assert_eq!(doc["hosts"][0]["last_seen_ms"], json!(1200));
    assert!(stale_reads.lock().unwrap().is_empty());

    let (result, out) = pvefleet(&config, &["host", "ls", "--stale"]).await;
    result.unwrap();
    assert!(out.contains("drop --stale"), "{out}");
    assert_eq!(*stale_reads.lock().unwrap(), [ReadMode::Stale]);
}

fn event(seq: u64) -> Event {
    Event {
        seq,
        at: NOW + seq * 1000,
        level: EventLevel::Info,
        kind: EventKind::Vm,
        subject: format!("web-{seq}"),
        message: format!("created on host pve1 with VMID {}", 99 + seq),
    }
}

/// A log holding events 1 and 2, then 3 from the third request on (as if it happened while
/// the CLI follows); records each request's `since`.
fn growing_log(sinces: &Log<u64>) -> Router {
    let seen = Arc::clone(sinces);
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, req: Events| {
        let mut sinces = seen.lock().unwrap();
        sinces.push(req.since);
        let newest = if sinces.len() >= 3 { 3 } else { 2 };
        let events: Vec<Event> = (req.since + 1..=newest).map(event).collect();
        async move {
            Ok(EventsReply {
                events,
                first_seq: 1,
                last_seq: newest,
            })
        }
    });
    router
}

#[tokio::test]
async fn events_follow_prints_each_new_event_once_as_it_happens() {
    let pki = Pki::new();
    let sinces = log();
    let member = FakeMember::start(&pki, 1, growing_log(&sinces));
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(&config, &["events", "--follow", "--max-events", "3"]).await;
    result.unwrap();
    assert_eq!(
        out,
        "     1  2025-03-01T12:00:01Z  info     vm web-1: created on host pve1 with VMID 100\n\
         \x20    2  2025-03-01T12:00:02Z  info     vm web-2: created on host pve1 with VMID 101\n\
         \x20    3  2025-03-01T12:00:03Z  info     vm web-3: created on host pve1 with VMID 102\n"
    );
    assert_eq!(
        *sinces.lock().unwrap(),
        [0, 2, 2],
        "each poll asks for what follows the last event printed"
    );
}

#[tokio::test]
async fn events_follow_in_json_prints_one_object_per_line() {
    let pki = Pki::new();
    let sinces = log();
    let member = FakeMember::start(&pki, 1, growing_log(&sinces));
    let config = pki.write_config(&[&member]);

    let (result, out) = pvefleet(
        &config,
        &[
            "events",
            "-f",
            "--since",
            "1",
            "--max-events",
            "2",
            "-o",
            "json",
        ],
    )
    .await;
    result.unwrap();
    let lines: Vec<Event> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, [event(2), event(3)]);
    assert_eq!(sinces.lock().unwrap()[0], 1);
}

#[test]
fn the_operation_commands_parse_their_arguments() {
    use cli::args::{Command, EventsArgs, HostCommand, SnapshotCommand, VmCommand};
    let parse = |args: &[&str]| {
        let argv = std::iter::once("pvefleet").chain(args.iter().copied());
        Cli::try_parse_from(argv)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .command
    };
    let name = || "web-1".to_string();
    let cases: Vec<(&[&str], Command)> = vec![
        (
            &["vm", "explain", "web-1"],
            Command::Vm(VmCommand::Explain { name: name() }),
        ),
        (
            &["vm", "start", "web-1"],
            Command::Vm(VmCommand::Start { name: name() }),
        ),
        (
            &["vm", "stop", "web-1"],
            Command::Vm(VmCommand::Stop { name: name() }),
        ),
        (
            &["vm", "restart", "web-1"],
            Command::Vm(VmCommand::Restart { name: name() }),
        ),
        (
            &["vm", "snapshot", "create", "web-1", "s1"],
            Command::Vm(VmCommand::Snapshot(SnapshotCommand::Create {
                name: name(),
                snapshot: "s1".into(),
                vmstate: false,
                description: String::new(),
            })),
        ),
        (
            &["vm", "snapshot", "list", "web-1"],
            Command::Vm(VmCommand::Snapshot(SnapshotCommand::Ls { name: name() })),
        ),
        (
            &["vm", "snapshot", "rollback", "web-1", "s1"],
            Command::Vm(VmCommand::Snapshot(SnapshotCommand::Rollback {
                name: name(),
                snapshot: "s1".into(),
                start: false,
            })),
        ),
        (
            &["vm", "snapshot", "delete", "web-1", "s1"],
            Command::Vm(VmCommand::Snapshot(SnapshotCommand::Delete {
                name: name(),
                snapshot: "s1".into(),
            })),
        ),
        (&["host", "ls"], Command::Host(HostCommand::Ls)),
        (&["host", "list"], Command::Host(HostCommand::Ls)),
        (
            &["events", "--follow", "--since", "7"],
            Command::Events(EventsArgs {
                since: 7,
                limit: None,
                follow: true,
                max_events: None,
            }),
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(parse(args), expected, "{args:?}");
    }
    let refused = Cli::try_parse_from(["pvefleet", "events", "--max-events", "3"]).unwrap_err();
    assert_eq!(refused.exit_code(), 2);
    assert!(refused.to_string().contains("--follow"), "{refused}");
    let refused =
        Cli::try_parse_from(["pvefleet", "vm", "snapshot", "create", "web-1"]).unwrap_err();
    assert_eq!(refused.exit_code(), 2, "the snapshot's name is required");
}
