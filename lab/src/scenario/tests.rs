//! The scenario format end to end (text in, checked scenario or a named error out), and every
//! shipped scenario (`examples/scenarios/`, `tests/scenarios/`) parsing.

use std::path::Path;
use std::time::Duration;

use protocol::fleet::{HostState, VmPhase};

use super::model::{Action, Check, HostRef, Target};
use super::{ScenarioError, parse};

const BASE: &str = r#"
name = "host-power-off"
description = "A host is powered off"
timeout = "90s"
[fleet]
coordinators = ["pve-a", "pve-b", "pve-c"]
[[pve_cluster]]
name = "alpha"
nodes = ["pve-a", "pve-b", "pve-c"]
[[host]]
name = "pve-a"
pve_cluster = "alpha"
labels = { zone = "a" }
[[host]]
name = "pve-b"
[[host]]
name = "pve-c"
cpus = 8
memory_gib = 32
[[vm]]
name = "web-1"
memory_mib = 512
ha = true
disks = [{ slot = "scsi0", storage = "shared", size_gib = 4 }]
"#;

fn with(extra: &str) -> Result<super::Scenario, ScenarioError> {
    parse(&format!("{BASE}\n{extra}"))
}

fn error(extra: &str) -> String {
    match with(extra) {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_whole_scenario_reads_into_hosts_events_in_time_order_and_expectations() {
    let s = with(
        r#"
[[event]]
at = "20s"
action = "power-on"
host = "@event[1]"
[[event]]
at = "5s"
action = "power-off"
host = "@vm:web-1"
[[event]]
at = "6s"
action = "fail-start"
vm = "web-1"
count = 3
[[expect]]
vm = "web-1"
phase = "running"
on_host_not = ["@event[1]"]
[[expect]]
at = "15s"
host = "pve-c"
state = "online"
[[expect]]
event_contains = "recovering"
"#,
    )
    .unwrap();
    assert_eq!(s.timeout, Duration::from_secs(90));
    assert_eq!(s.hosts.len(), 3);
    // Cluster membership comes from the cluster's node list.
    assert!(
        s.hosts
            .iter()
            .all(|h| h.pve_cluster.as_deref() == Some("alpha"))
    );
    assert_eq!(s.hosts[2].memory_gib, 32);
    assert_eq!(s.host_number("pve-c"), Some(3));
    let order: Vec<usize> = s.events.iter().map(|e| e.index).collect();
    assert_eq!(order, [1, 2, 0]);
    assert_eq!(
        s.events[0].action,
        Action::PowerOff(Target::HostOf("web-1".into()))
    );
    assert_eq!(
        s.events[1].action,
        Action::FailStart {
            vm: "web-1".into(),
            count: 3
        }
    );
    assert_eq!(s.events[2].action, Action::PowerOn(Target::Event(1)));
    assert_eq!(
        s.expects[0].check,
        Check::Vm {
            vm: "web-1".into(),
            phase: Some(VmPhase::Running),
            pve: None,
            on_host: None,
            on_host_not: vec![HostRef::Event(1)],
            pve_node: None,
            recovering: None,
            moved: None,
        }
    );
    assert_eq!(s.expects[1].at, Some(Duration::from_secs(15)));
    assert_eq!(
        s.expects[1].check,
        Check::Host {
            host: HostRef::Name("pve-c".into()),
            state: Some(HostState::Online),
            min_vms: None,
            max_vms: None,
        }
    );
}

#[test]
fn errors_name_the_entry_and_the_key() {
    let cases = [
        (
            "[[event]]\nat = \"5s\"\naction = \"power-off\"\nhost = \"pve-x\"",
            "event[0].host: no host \"pve-x\" in the scenario (its hosts: pve-a, pve-b, pve-c)",
        ),
        (
            "[[event]]\nat = \"5s\"\naction = \"power-of\"\nhost = \"pve-a\"",
            "event[0].action: unknown action \"power-of\"",
        ),
        (
            "[[event]]\nat = \"5\"\naction = \"power-off\"\nhost = \"pve-a\"",
            "event[0].at: \"5\" has no unit",
        ),
        (
            "[[event]]\nat = \"5s\"\naction = \"power-off\"\nhots = \"pve-a\"",
            "event[0]: unknown field `hots`",
        ),
        (
            "[[event]]\nat = \"5s\"\naction = \"power-off\"\nhost = \"pve-a\"\nvm = \"web-1\"",
            "event[0].vm: action power-off does not take vm (it takes host)",
        ),
        (
            "[[event]]\nat = \"5s\"\naction = \"fail-start\"\nvm = \"web-1\"",
            "event[0].count: fail-start needs count",
        ),
        (
            "[[event]]\nat = \"5s\"\naction = \"vm-ha\"\nvm = \"web-9\"\nstate = \"started\"",
            "event[0].vm: no VM \"web-9\"",
        ),
        (
            "[[event]]\nat = \"5s\"\naction = \"power-on\"\nhost = \"@event[0]\"",
            "event[0].host: @event[0]: event[0] is not played before this one",
        ),
        (
            "[[expect]]\nvm = \"web-1\"\nstate = \"fenced\"",
            "expect[0].state: not a key of a vm expectation",
        ),
        (
            "[[expect]]\nvm = \"web-1\"\nhost = \"pve-a\"\nphase = \"running\"",
            "expect[0]: names exactly one of vm, host, event_contains, leader (or leader_not) or vip",
        ),
        (
            "[[expect]]\nvip = \"nope\"\nheld = true",
            "expect[0].vip: no [[vip]] named \"nope\"",
        ),
        (
            "[[expect]]\nvm = \"web-1\"\npve = \"running\"\nduring = \"always\"",
            "expect[0].during: \"always\": expected \"once\", \"throughout\" or \"never\"",
        ),
        (
            "[[expect]]\nevent_contains = \"x\"\ncount_min = 3\ncount_max = 2",
            "expect[0].count_max: 2 is below count_min",
        ),
        (
            "[[event]]\nat = \"5s\"\naction = \"power-off\"\nhost = \"pve-a\"\nrefusal = \"allowed\"",
            "event[0].refusal: action power-off is not an operator's call",
        ),
        (
            "[[event]]\nat = \"5s\"\naction = \"cut-link\"\nhost = \"pve-a\"",
            "event[0].peer: cut-link needs peer",
        ),
        (
            "[[event]]\nat = \"5s\"\naction = \"lossy\"\nhost = \"pve-a\"\nloss = 0",
            "event[0].loss: 0: a percentage, 1 to 100",
        ),
        (
            "[[expect]]\nvm = \"web-1\"\nphase = \"runing\"",
            "expect[0]: unknown variant `runing`",
        ),
        (
            "[[expect]]\nhost = \"@event[4]\"\nstate = \"fenced\"",
            "expect[0].host: @event[4]: the scenario has no event[4]",
        ),
        (
            "[[vm]]\nname = \"web-1\"\nmemory_mib = 512",
            "vm[1].name: vm \"web-1\" is defined twice",
        ),
        (
            "[[vm]]\nname = \"w\"\nmemory_mib = 512\ncpus = 2",
            "vm[1]: unknown field `cpus`",
        ),
    ];
    for (extra, says) in cases {
        let e = error(extra);
        assert!(e.contains(says), "{extra}\n=> {e}\nwanted: {says}");
    }
}

#[test]
fn coordinators_are_one_three_or_five_known_hosts_and_kill_coordinator_needs_one() {
    let two = BASE.replace(
        "coordinators = [\"pve-a\", \"pve-b\", \"pve-c\"]",
        "coordinators = [\"pve-a\", \"pve-b\"]",
    );
    let e = parse(&two).unwrap_err().to_string();
    assert!(
        e.starts_with("fleet.coordinators: 2 coordinators: expected 1, 3 or 5"),
        "{e}"
    );
    let one = BASE.replace(
        "coordinators = [\"pve-a\", \"pve-b\", \"pve-c\"]",
        "coordinators = [\"pve-a\"]",
    );
    let e = parse(&format!(
        "{one}\n[[event]]\nat = \"1s\"\naction = \"kill-coordinator\"\nhost = \"pve-b\""
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("event[0].host: pve-b runs no coordinator"),
        "{e}"
    );
}

#[test]
fn a_host_naming_a_cluster_that_does_not_list_it_is_refused() {
    let text = BASE.replace(
        "name = \"pve-c\"\ncpus = 8",
        "name = \"pve-c\"\npve_cluster = \"beta\"\ncpus = 8",
    );
    let e = parse(&text).unwrap_err().to_string();
    assert!(
        e.contains("host[2].pve_cluster: \"beta\", but cluster \"alpha\" lists pve-c"),
        "{e}"
    );
}

#[test]
fn unknown_top_level_keys_and_a_missing_fleet_are_refused() {
    let e = parse(&format!("{BASE}\nretries = 3"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `retries`"), "{e}");
    let e = parse(&BASE.replace(
        "[fleet]\ncoordinators = [\"pve-a\", \"pve-b\", \"pve-c\"]",
        "",
    ))
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("fleet: missing"), "{e}");
}

/// Every shipped scenario parses and validates.
#[test]
fn every_shipped_scenario_is_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut count = 0;
    for dir in ["examples/scenarios", "tests/scenarios"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                if let Err(e) = super::load(&path) {
                    panic!("{}: {e}", path.display());
                }
                count += 1;
            }
        }
    }
    assert!(count > 0, "no scenario found");
}
