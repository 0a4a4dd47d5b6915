//! The operators' host commands in the state machine: labels set by hand win over the agent's,
//! survive the agent's re-registration, cannot touch the PVE cluster label or remove an agent's
//! own label, and keep the host out of v1 snapshots; a host is removed only once no VM is
//! placed on it, after which its id is refused for good.

use protocol::fleet::{Capacity, HostState, PVE_CLUSTER_LABEL};
use protocol::spec::{Labels, VmSpec};
use protocol::version::Version;

use super::Fleet;
use crate::state::{Command, StateError, encode_snapshot};

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

fn register(f: &mut Fleet, agent_labels: Labels) {
    f.ok(Command::RegisterHost {
        id: 1,
        name: "pve-a".into(),
        labels: agent_labels,
        capacity: Capacity {
            cpus: 16,
            memory_mib: 65_536,
        },
        now: 1,
    });
}

fn fleet() -> Fleet {
    let mut f = Fleet::new();
    register(
        &mut f,
        labels(&[("zone", "a"), (PVE_CLUSTER_LABEL, "alpha")]),
    );
    f.ok(Command::SetHostState {
        id: 1,
        state: HostState::Online,
        now: 1,
    });
    f
}

fn set(pairs: &[(&str, &str)], unset: &[&str]) -> Command {
    Command::SetHostLabels {
        id: 1,
        set: labels(pairs),
        unset: unset.iter().map(|k| (*k).to_string()).collect(),
        now: 5,
    }
}

#[test]
fn operator_labels_win_survive_registration_and_come_off_again() {
    let mut f = fleet();
    f.ok(set(&[("rack", "r1"), ("zone", "b")], &[]));
    let host = &f.state.hosts()[&1];
    assert_eq!(
        host.effective_labels(),
        labels(&[("rack", "r1"), ("zone", "b"), (PVE_CLUSTER_LABEL, "alpha")])
    );
    // The agent's beat registers its own labels again: the operator's stay on top.
    register(
        &mut f,
        labels(&[("zone", "a"), ("disk", "ssd"), (PVE_CLUSTER_LABEL, "alpha")]),
    );
    let host = &f.state.hosts()[&1];
    assert_eq!(host.effective_labels()["zone"], "b");
    assert_eq!(host.effective_labels()["disk"], "ssd");
    // A v1 reader could not tell the two apart: such a state is never written at v1.
    assert!(encode_snapshot(&f.state, Version(1)).is_err());
    assert!(encode_snapshot(&f.state, Version(2)).is_ok());
    // Unsetting the operator's zone shows the agent's again.
    f.ok(set(&[], &["zone", "rack"]));
    let host = &f.state.hosts()[&1];
    assert!(host.operator_labels.is_empty());
    assert_eq!(host.effective_labels()["zone"], "a");
    assert!(!host.effective_labels().contains_key("rack"));
    assert!(encode_snapshot(&f.state, Version(1)).is_ok());
}

#[test]
fn the_agents_labels_and_the_pve_cluster_label_are_not_the_operators() {
    let mut f = fleet();
    let e = f.err(set(&[], &["zone"]));
    assert!(matches!(e, StateError::Conflict(_)), "{e:?}");
    assert!(e.to_string().contains("agent's configuration"), "{e}");
    let e = f.err(set(&[(PVE_CLUSTER_LABEL, "beta")], &[]));
    assert!(e.to_string().contains("PVE cluster"), "{e}");
    let e = f.err(set(&[("Bad Key", "x")], &[]));
    assert!(e.to_string().contains("labels"), "{e}");
    assert!(f.state.hosts()[&1].operator_labels.is_empty());
}

#[test]
fn a_host_is_removed_only_without_guests_and_never_comes_back() {
    let mut f = fleet();
    f.put_vm(VmSpec::new("web-1", 512));
    f.ok(Command::ScheduleVm {
        name: "web-1".into(),
        host: Some(1),
        expected: None,
        now: 2,
    });
    let e = f.err(Command::RemoveHost { id: 1, now: 3 });
    assert!(e.to_string().contains("web-1"), "{e}");
    assert!(
        e.to_string().contains("host maintenance enable pve-a"),
        "{e}"
    );
    assert_eq!(f.state.hosts()[&1].state, HostState::Online);

    f.delete_and_release("web-1");
    f.ok(Command::RemoveHost { id: 1, now: 4 });
    assert_eq!(f.state.hosts()[&1].state, HostState::Removed);
    assert!(f.state.is_node_revoked(1));
    // Removing it again is answered as done; registering it again is refused for good.
    f.ok(Command::RemoveHost { id: 1, now: 5 });
    let e = f.err(Command::RegisterHost {
        id: 1,
        name: "pve-a".into(),
        labels: Labels::new(),
        capacity: Capacity {
            cpus: 16,
            memory_mib: 65_536,
        },
        now: 6,
    });
    assert!(e.to_string().contains("refused for good"), "{e}");
    assert!(
        f.err(set(&[("rack", "r1")], &[]))
            .to_string()
            .contains("removed")
    );
}
