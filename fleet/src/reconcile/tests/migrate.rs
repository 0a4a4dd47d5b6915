//! A VM being moved gets the move and nothing else, once nothing else is in flight and its
//! source host reports; the move's result closes the migration either way.

use protocol::agent::OpKind;
use protocol::agent::{CommandFailure, CommandOutput, FailureKind, Op};
use protocol::fleet::{Capacity, PVE_CLUSTER_LABEL};

use super::*;
use crate::reconcile::status::{ResultMeta, on_result};
use crate::reconcile::{Action, InflightCommand, plan};

/// `web` on host A, being moved to B (both nodes of PVE cluster alpha); host A's inventory
/// still shows it.
fn moving() -> (Fleet, LiveView) {
    let mut f = Fleet::new();
    for (id, name) in [(A, "pve-a"), (B, "pve-b")] {
        f.run(Command::RegisterHost {
            id,
            name: name.into(),
            labels: [(PVE_CLUSTER_LABEL.to_string(), "alpha".to_string())].into(),
            capacity: Capacity {
                cpus: 8,
                memory_mib: 34_816,
            },
            now: 1,
        });
    }
    f.placed(spec("web"), A);
    f.run(Command::StartMigration {
        name: "web".into(),
        to: B,
        purpose: protocol::fleet::MigrationPurpose::Operator,
        now: 5,
    });
    let vmid = f.vm("web").assignment.vmid.unwrap();
    // Its generation never observed, its inventory says stopped: an ensure would be due.
    let live = live(&[observed(vmid, "web", false)]);
    (f, live)
}

#[test]
fn a_vm_being_moved_gets_the_move_and_nothing_else() {
    let (f, live) = moving();
    let actions = plan(&f.state, &live, &Inflight::default(), &POLICY, NOW);
    let web: Vec<&Action> = actions.iter().filter(|a| a.vm() == "web").collect();
    assert!(
        matches!(web.as_slice(), [Action::Send { host: A, op: Op::Migrate(m), .. }] if m.target == "pve-b"),
        "{web:?}"
    );
    // Something else in flight for it: wait for it, send nothing.
    let busy = Inflight {
        commands: [(
            "web".to_string(),
            InflightCommand {
                id: "web/ensure/g1/t1/1".into(),
                kind: OpKind::Ensure,
                host: A,
                generation: 1,
            },
        )]
        .into(),
        memory: Default::default(),
    };
    let actions = plan(&f.state, &live, &busy, &POLICY, NOW);
    assert!(actions.iter().all(|a| a.vm() != "web"), "{actions:?}");
}

#[test]
fn the_moves_result_closes_the_migration_either_way() {
    let (f, _) = moving();
    let rec = f.vm("web");
    let meta = ResultMeta {
        vm: "web".into(),
        host: A,
        kind: OpKind::Migrate,
        generation: rec.generation,
    };
    let moved = Ok(CommandOutput::Migrated {
        node: "pve-b".into(),
        running: true,
    });
    let r = on_result(
        Some(&rec),
        None,
        "pve-a",
        &meta,
        &moved,
        &VmMemory::default(),
        NOW,
    );
    assert_eq!(
        r.actions,
        vec![Action::EndMigration {
            vm: "web".into(),
            node: Some("pve-b".into()),
            message: "running on pve-b".into(),
        }]
    );
    let failed = Err(CommandFailure {
        kind: FailureKind::Permanent,
        step: "migrate".into(),
        message: "task failed: migration aborted".into(),
    });
    let r = on_result(
        Some(&rec),
        None,
        "pve-a",
        &meta,
        &failed,
        &VmMemory::default(),
        NOW,
    );
    assert_eq!(
        r.actions,
        vec![Action::EndMigration {
            vm: "web".into(),
            node: None,
            message: "at step migrate: task failed: migration aborted".into(),
        }]
    );
}
