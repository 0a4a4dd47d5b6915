//! `pvefleet host label|unlabel|remove` end to end: an operator's label steers placement (a
//! VM that asks for `rack=r1` lands on the labelled host), an agent's own label cannot be
//! removed by hand, a host holding a VM cannot be removed (the refusal names the VM and the
//! drain), and once it is empty it is removed: listed as removed, its agent's certificate
//! refused (its heartbeats stop counting), its name free for a new host.

use std::time::{Duration, Instant};

use protocol::admin::HostStatusReply;
use protocol::fleet::{HostState, VmPhase};
use protocol::spec::VmSpec;
use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, test_range};

fn hosts(fleet: &Fleet) -> HostStatusReply {
    serde_json::from_value(fleet.cluster.cli_json(&["host", "ls"])).expect("host ls")
}

#[test]
fn operator_labels_steer_placement_and_an_empty_host_is_decommissioned() {
    let mut fleet = Fleet::start(1);
    fleet.add_hosts(&[
        HostOptions::new("pve1", PveAccess::Https).label("zone", "a"),
        HostOptions::new("pve2", PveAccess::Https).label("zone", "a"),
    ]);

    let labelled = fleet
        .cluster
        .cli_json(&["host", "label", "pve1", "rack=r1", "tier=gold"]);
    assert_eq!(labelled["host"]["operator_labels"]["rack"], "r1");
    assert_eq!(labelled["host"]["labels"]["zone"], "a", "the agent's stay");

    fleet.apply_resources();
    let mut spec = VmSpec::new("db-1", 256);
    spec.vmid_range = Some(test_range().name);
    spec.placement.labels = [("rack".to_string(), "r1".to_string())].into();
    fleet.apply_vms(&[spec]);
    fleet.wait_vms("db-1 running", Duration::from_secs(60), |vms| {
        vms.iter()
            .any(|v| v.spec.name == "db-1" && v.status.phase == VmPhase::Running)
    });
    assert_eq!(fleet.host_name_of("db-1"), "pve1");

    // The agent's own label is the agent's: refused, exit 3, saying where to change it.
    let refused = fleet.cluster.cli(&["host", "unlabel", "pve1", "zone"]);
    assert_eq!(refused.status.code(), Some(3), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("agent.toml"),
        "{refused:?}"
    );
    let unlabelled = fleet.cluster.cli_json(&["host", "unlabel", "pve1", "tier"]);
    assert!(unlabelled["host"]["operator_labels"]["tier"].is_null());

    // A host with a VM on it is not removed.
    let refused = fleet.cluster.cli(&["host", "remove", "pve1"]);
    assert_eq!(refused.status.code(), Some(3), "{refused:?}");
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains("db-1") && why.contains("host maintenance enable pve1"),
        "{why}"
    );

    fleet.delete_vm("db-1");
    fleet.wait_vms("db-1 gone", Duration::from_secs(60), |vms| {
        vms.iter().all(|v| v.spec.name != "db-1")
    });
    let removed = fleet.cluster.cli_json(&["host", "remove", "pve1"]);
    assert_eq!(removed["host"]["state"], "removed");

    // Its agent still runs and beats, but its certificate is refused: it is never seen again.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = hosts(&fleet);
        let pve1 = reply
            .hosts
            .iter()
            .find(|h| h.host.name == "pve1")
            .expect("a removed host stays listed");
        assert_eq!(pve1.host.state, HostState::Removed);
        if pve1.last_seen_ms.is_none_or(|ms| ms > 3_000) {
            break;
        }
        assert!(Instant::now() < deadline, "pve1 still beats: {pve1:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
    let again = fleet.cluster.cli(&["host", "label", "pve1", "rack=r2"]);
    assert_eq!(
        again.status.code(),
        Some(4),
        "a removed host is not found: {again:?}"
    );
    let pve2 = hosts(&fleet)
        .hosts
        .into_iter()
        .find(|h| h.host.name == "pve2")
        .expect("pve2");
    assert_eq!(pve2.host.state, HostState::Online);
}
