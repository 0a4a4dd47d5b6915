//! Moves out of a PVE cluster, step by step: a remote migration mints a token on the target,
//! hands it to the source, and closes the target after the move, whatever its outcome; a
//! rebuild vacates the source and then lands on the target; a move whose source host was
//! fenced halfway is ended by the target's answer, never by a recovery that could run the VM
//! a second time.

use protocol::Secret;
use protocol::agent::OpKind;
use protocol::agent::{CommandFailure, CommandOutput, FailureKind, Op, RemoteEndpoint};
use protocol::fleet::{Capacity, HostState, MigrationPurpose, MoveKind, PVE_CLUSTER_LABEL};
use protocol::spec::{HaSpec, RecoveryMode};

use super::*;
use crate::reconcile::status::{ResultMeta, on_result};
use crate::reconcile::{Action, plan};

/// `web` on host A (PVE cluster alpha) moving to host B (cluster beta); `recreate`: its HA
/// recovery mode rebuilds it.
fn moving_out(recreate: bool) -> Fleet {
    let mut f = Fleet::new();
    for (id, name, cluster) in [(A, "pve-a", "alpha"), (B, "pve-b", "beta")] {
        f.run(Command::RegisterHost {
            id,
            name: name.into(),
            labels: [(PVE_CLUSTER_LABEL.to_string(), cluster.to_string())].into(),
            capacity: Capacity {
                cpus: 8,
                memory_mib: 34_816,
            },
            now: 1,
        });
    }
    let mut web = spec("web");
    web.nics = vec![nic("vmbr0", None)];
    if recreate {
        web.ha = HaSpec {
            recovery: Some(RecoveryMode::Recreate),
            ..HaSpec::started()
        };
    }
    f.placed(web, A);
    f.run(Command::StartMigration {
        name: "web".into(),
        to: B,
        purpose: MigrationPurpose::Operator,
        now: 5,
    });
    f
}

fn endpoint(expires_unix: u64) -> RemoteEndpoint {
    RemoteEndpoint {
        host: "127.0.0.1".into(),
        port: 8443,
        fingerprint: "AA:BB".into(),
        node: "pve-b".into(),
        token_id: "pvefleet-migrate@pve!vm1".into(),
        secret: Secret::new("s3cr3t"),
        expires_unix,
    }
}

fn meta(f: &Fleet, host: NodeId, kind: OpKind) -> ResultMeta {
    ResultMeta {
        vm: "web".into(),
        host,
        kind,
        generation: f.vm("web").generation,
    }
}

fn react(
    f: &Fleet,
    host: NodeId,
    kind: OpKind,
    outcome: Result<CommandOutput, CommandFailure>,
    memory: &VmMemory,
) -> crate::reconcile::status::Reaction {
    let rec = f.vm("web");
    on_result(
        Some(&rec),
        f.state.migration("web"),
        "pve-a",
        &meta(f, host, kind),
        &outcome,
        memory,
        NOW,
    )
}

fn web_actions(f: &Fleet, inflight: &Inflight) -> Vec<Action> {
    plan(&f.state, &live(&[]), inflight, &POLICY, NOW)
        .into_iter()
        .filter(|a| a.vm() == "web")
        .collect()
}

#[test]
fn a_remote_migration_mints_a_token_on_the_target_then_moves_and_closes_it() {
    let mut f = moving_out(false);
    assert_eq!(f.state.migration("web").unwrap().kind, MoveKind::Remote);
    // 1. The target mints a token for the storage and bridges the VM maps onto.
    let open = web_actions(&f, &Inflight::default());
    assert!(
        matches!(open.as_slice(), [Action::Send { host: B, op: Op::OpenMigrationTarget(o), .. }]
            if o.storages == ["local-lvm"] && o.bridges == ["vmbr0"]),
        "{open:?}"
    );
    let now_secs = NOW.unix_ms / 1000;
    let got = react(
        &f,
        B,
        OpKind::OpenTarget,
        Ok(CommandOutput::MigrationTarget(endpoint(now_secs + 3600))),
        &VmMemory::default(),
    );
    assert!(
        matches!(got.actions.as_slice(), [Action::Event { message, .. }]
            if message.contains("pve-b is ready") && !message.contains("s3cr3t")),
        "{:?}",
        got.actions
    );
    let memory = got.memory;
    assert!(memory.remote_endpoint.is_some());
    // 2. The source gets the endpoint and the map.
    let go = web_actions(&f, &remember("web", memory.clone()));
    assert!(
        matches!(go.as_slice(), [Action::Send { host: A, op: Op::RemoteMigrate(m), .. }]
            if m.endpoint.node == "pve-b" && m.target_storage == "local-lvm"
                && m.target_bridge == "vmbr0:vmbr0"),
        "{go:?}"
    );
    // Its secret never shows in what the leader logs about the action.
    assert!(!format!("{go:?}").contains("s3cr3t"));
    // A token about to expire is not handed out: a new one is minted.
    let stale = VmMemory {
        remote_endpoint: Some(endpoint(now_secs + 60)),
        ..VmMemory::default()
    };
    assert!(matches!(
        web_actions(&f, &remember("web", stale)).as_slice(),
        [Action::Send {
            host: B,
            op: Op::OpenMigrationTarget(_),
            ..
        }]
    ));
    // 3. The move's result ends the migration and closes the target, moved or not.
    for (outcome, node) in [
        (
            Ok(CommandOutput::Migrated {
                node: "pve-b".into(),
                running: true,
            }),
            Some("pve-b".to_string()),
        ),
        (
            Err(CommandFailure {
                kind: FailureKind::Permanent,
                step: "remote-migrate".into(),
                message: "task failed: migration aborted (log: ERROR: online migrate failure)"
                    .into(),
            }),
            None,
        ),
    ] {
        let r = react(&f, A, OpKind::RemoteMigrate, outcome, &memory);
        assert!(r.memory.remote_endpoint.is_none());
        assert!(
            matches!(r.actions.as_slice(), [
                Action::EndMigration { node: n, .. },
                Action::Send { host: B, op: Op::CloseMigrationTarget(_), .. },
            ] if *n == node),
            "{:?}",
            r.actions
        );
    }
    // A target that cannot open ends the move where it is.
    let r = react(
        &f,
        B,
        OpKind::OpenTarget,
        Err(CommandFailure {
            kind: FailureKind::Permanent,
            step: "open-target".into(),
            message: "this host takes no remote migrations".into(),
        }),
        &VmMemory::default(),
    );
    assert!(
        matches!(r.actions.as_slice(), [Action::EndMigration { node: None, message, .. }] if message.contains("pve-b")),
        "{:?}",
        r.actions
    );
    // Applied: the VM is on B now.
    f.run(Command::EndMigration {
        name: "web".into(),
        node: Some("pve-b".into()),
        message: "running on pve-b".into(),
        now: 9,
    });
    assert_eq!(f.vm("web").assignment.host, Some(B));
}

#[test]
fn a_rebuild_vacates_the_source_then_lands_on_the_target_unbuilt() {
    let mut f = moving_out(true);
    assert_eq!(f.state.migration("web").unwrap().kind, MoveKind::Recreate);
    let vacate = web_actions(&f, &Inflight::default());
    assert!(
        matches!(
            vacate.as_slice(),
            [Action::Send {
                host: A,
                op: Op::Vacate(_),
                ..
            }]
        ),
        "{vacate:?}"
    );
    let r = react(
        &f,
        A,
        OpKind::Vacate,
        Ok(CommandOutput::Deleted { existed: true }),
        &VmMemory::default(),
    );
    let [Action::EndMigration { node, message, .. }] = r.actions.as_slice() else {
        panic!("{:?}", r.actions);
    };
    assert_eq!(node.as_deref(), Some("pve-b"));
    f.run(Command::EndMigration {
        name: "web".into(),
        node: node.clone(),
        message: message.clone(),
        now: 9,
    });
    let rec = f.vm("web");
    assert_eq!(rec.assignment.host, Some(B));
    assert_eq!(rec.status.current_host, None, "not built on B yet");
    // Now the ordinary ensure builds it on B.
    let build = web_actions(&f, &Inflight::default());
    assert!(
        build.iter().any(|a| matches!(
            a,
            Action::Send {
                host: B,
                op: Op::Ensure(_),
                ..
            }
        )),
        "{build:?}"
    );
}

#[test]
fn a_move_whose_source_is_fenced_halfway_waits_for_the_target_and_is_never_recovered_meanwhile() {
    for arrived in [true, false] {
        let mut f = moving_out(false);
        for (expected, state) in [
            (HostState::Online, HostState::Unreachable),
            (HostState::Unreachable, HostState::Fenced),
        ] {
            f.run(Command::SetHostLiveness {
                id: A,
                expected,
                state,
                reason: "test".into(),
                now: 7,
            });
        }
        let m = f.state.migration("web").expect("kept: the VM may be on B");
        assert_eq!(m.source_lost_at, Some(7));
        // Not recovered: the planner skips it and the state machine refuses it.
        assert!(
            crate::recovery::plan(&f.state, 8)
                .iter()
                .all(|a| !format!("{a:?}").contains("\"web\"")),
        );
        let refused = f.state.clone().apply(
            u64::MAX,
            Command::RecoverVm {
                name: "web".into(),
                from: A,
                to: Some(B),
                message: "x".into(),
                now: 8,
            },
        );
        assert!(
            matches!(&refused, crate::state::CommandReply::Refused(e) if e.to_string().contains("says whether it arrived")),
            "{refused:?}"
        );
        // The target is asked.
        let ask = web_actions(&f, &Inflight::default());
        assert!(
            matches!(
                ask.as_slice(),
                [Action::Send {
                    host: B,
                    op: Op::CloseMigrationTarget(_),
                    ..
                }]
            ),
            "{ask:?}"
        );
        let r = react(
            &f,
            B,
            OpKind::CloseTarget,
            Ok(CommandOutput::TargetClosed {
                arrived,
                running: arrived,
            }),
            &VmMemory::default(),
        );
        let [Action::EndMigration { node, message, .. }] = r.actions.as_slice() else {
            panic!("{:?}", r.actions);
        };
        assert_eq!(node.is_some(), arrived, "{message}");
        f.run(Command::EndMigration {
            name: "web".into(),
            node: node.clone(),
            message: message.clone(),
            now: 9,
        });
        assert!(f.state.migration("web").is_none());
        let host = f.vm("web").assignment.host;
        assert_eq!(host, Some(if arrived { B } else { A }));
    }
}
