#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! The executor against a simulated PVE node: a command id runs once and a repeat answers the
//! stored result; after a crash (the journal reopened with a command still started) ensure and
//! delete run again without duplicating anything, a snapshot create looks before it acts, and
//! restarts and rollbacks answer "in doubt" with what to check.

use crate::ops_support;

use node_agent::{Executor, Journal, Journaled, MAX_COMMAND_ID_LEN, TypedJournal};
use ops_support::{Harness, ensure_cmd, harness, web_spec};
use protocol::agent::{
    AgentCommand, CommandFailure, CommandOutput, DeleteVm, FailureKind, Op, PowerAction, PowerOp,
    SnapshotAction, SnapshotOp,
};
use pve::Method;

/// The executor's journal, as it fingerprints commands.
type Stored = TypedJournal<Journaled, Result<CommandOutput, CommandFailure>>;

fn ensure(id: &str) -> AgentCommand {
    AgentCommand {
        id: id.into(),
        op: Op::Ensure(Box::new(ensure_cmd(web_spec("web-1"), 101))),
    }
}

fn snapshot(id: &str, action: SnapshotAction) -> AgentCommand {
    AgentCommand {
        id: id.into(),
        op: Op::Snapshot(SnapshotOp {
            name: "web-1".into(),
            vmid: 101,
            action,
        }),
    }
}

fn create_snapshot(id: &str) -> AgentCommand {
    snapshot(
        id,
        SnapshotAction::Create {
            snapshot: "before".into(),
            description: String::new(),
            vmstate: false,
        },
    )
}

/// Records `cmd` as started in the journal in `dir` and drops it: an agent that died while
/// running the command.
async fn crashed_while_running(dir: &std::path::Path, cmd: &AgentCommand) {
    let journal = reopen(dir);
    let begin = Stored::new(journal)
        .begin(&cmd.id, &Journaled::of(cmd))
        .await
        .unwrap();
    assert_eq!(begin, node_agent::Begin::Run);
}

fn executor(h: &Harness, dir: &std::path::Path) -> Executor {
    Executor::new(reopen(dir), h.ops.clone())
}

/// Opens the journal in `dir` that a dropped executor held. sled lets go of its file lock
/// when its background flusher, a thread of its own, has dropped its handle too: a reopen
/// right after the drop may find the lock still held for a moment (a restarted agent is a
/// new process and never sees this).
fn reopen(dir: &std::path::Path) -> Journal {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match Journal::open(dir) {
            Ok(journal) => return journal,
            Err(e) if std::time::Instant::now() < deadline && e.to_string().contains("lock") => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("opening the journal in {}: {e}", dir.display()),
        }
    }
}

fn failure(result: &protocol::agent::CommandResult) -> &CommandFailure {
    result.outcome.as_ref().unwrap_err()
}

#[tokio::test]
async fn a_repeated_id_answers_the_stored_result_without_running_again() {
    let h = harness();
    let dir = tempfile::tempdir().unwrap();
    let exec = executor(&h, dir.path());
    let first = exec.execute(ensure("web-1/ensure/g1/t1/1")).await;
    assert!(
        matches!(first.outcome, Ok(CommandOutput::Vm(ref vm)) if vm.running),
        "{first:?}"
    );
    h.reset_calls();
    let again = exec.execute(ensure("web-1/ensure/g1/t1/1")).await;
    assert_eq!(again, first);
    assert_eq!(
        h.count(Method::Get, ""),
        0,
        "answered from the journal alone"
    );

    // Also after a restart of the agent.
    drop(exec);
    let exec = executor(&h, dir.path());
    assert_eq!(exec.execute(ensure("web-1/ensure/g1/t1/1")).await, first);
    assert_eq!(h.count(Method::Post, "/clone"), 0);
}

#[tokio::test]
async fn failures_are_stored_too() {
    let h = harness();
    let dir = tempfile::tempdir().unwrap();
    let exec = executor(&h, dir.path());
    let cmd = AgentCommand {
        id: "web-1/power/g1/t1/1".into(),
        op: Op::Power(PowerOp {
            name: "web-1".into(),
            vmid: 101,
            action: PowerAction::Start,
        }),
    };
    let first = exec.execute(cmd.clone()).await;
    assert_eq!(failure(&first).kind, FailureKind::NotFound);
    // The VM appears; the same id still answers what happened then.
    h.ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    assert_eq!(exec.execute(cmd).await, first);
}

#[tokio::test]
async fn an_ensure_in_doubt_after_a_crash_runs_again_without_a_duplicate_vm() {
    let h = harness();
    let dir = tempfile::tempdir().unwrap();
    let cmd = ensure("web-1/ensure/g1/t1/7");
    crashed_while_running(dir.path(), &cmd).await;
    // The crashed run had cloned and configured the VM already.
    h.ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    h.reset_calls();

    let exec = executor(&h, dir.path());
    let result = exec.execute(cmd.clone()).await;
    assert!(
        matches!(result.outcome, Ok(CommandOutput::Vm(_))),
        "{result:?}"
    );
    assert_eq!(h.count(Method::Post, "/clone"), 0, "no second clone");
    assert_eq!(h.vms_named("web-1").await, vec![101]);
    // Settled: the next delivery answers the same result from the journal.
    assert_eq!(exec.execute(cmd).await, result);
}

#[tokio::test]
async fn an_ensure_that_crashed_before_cloning_creates_the_vm_once() {
    let h = harness();
    let dir = tempfile::tempdir().unwrap();
    let cmd = ensure("web-1/ensure/g1/t1/8");
    crashed_while_running(dir.path(), &cmd).await;
    let exec = executor(&h, dir.path());
    let result = exec.execute(cmd).await;
    assert!(
        matches!(result.outcome, Ok(CommandOutput::Vm(_))),
        "{result:?}"
    );
    assert_eq!(h.count(Method::Post, "/clone"), 1);
    assert_eq!(h.vms_named("web-1").await, vec![101]);
}

#[tokio::test]
async fn a_delete_in_doubt_finishes_the_job() {
    let h = harness();
    h.ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cmd = AgentCommand {
        id: "web-1/delete/g2/t1/1".into(),
        op: Op::Delete(DeleteVm {
            name: "web-1".into(),
            vmid: 101,
        }),
    };
    crashed_while_running(dir.path(), &cmd).await;
    let result = executor(&h, dir.path()).execute(cmd).await;
    assert_eq!(result.outcome, Ok(CommandOutput::Deleted { existed: true }));
    assert!(h.sim.vm_node(101).is_none());
}

#[tokio::test]
async fn a_restart_or_rollback_in_doubt_is_reported_not_repeated() {
    let h = harness();
    h.ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let restart = AgentCommand {
        id: "web-1/power/g1/t1/2".into(),
        op: Op::Power(PowerOp {
            name: "web-1".into(),
            vmid: 101,
            action: PowerAction::Restart { timeout_secs: 60 },
        }),
    };
    let rollback = snapshot(
        "web-1/snapshot/g1/t1/3",
        SnapshotAction::Rollback {
            snapshot: "before".into(),
            start: true,
        },
    );
    crashed_while_running(dir.path(), &restart).await;
    crashed_while_running(dir.path(), &rollback).await;
    h.reset_calls();

    let exec = executor(&h, dir.path());
    for cmd in [restart, rollback] {
        let result = exec.execute(cmd.clone()).await;
        let f = failure(&result);
        assert_eq!(f.kind, FailureKind::InDoubt, "{f:?}");
        assert!(
            f.message.contains("check"),
            "tells what to check: {}",
            f.message
        );
        assert_eq!(exec.execute(cmd).await, result, "settled once");
    }
    for method in [Method::Post, Method::Put, Method::Delete] {
        assert_eq!(h.count(method, ""), 0, "{method}: nothing repeated");
    }
}

#[tokio::test]
async fn a_snapshot_create_in_doubt_looks_before_it_acts() {
    let h = harness();
    h.ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();

    // The crashed run took the snapshot: answer the list, take nothing.
    let taken = create_snapshot("web-1/snapshot/g1/t1/4");
    crashed_while_running(dir.path(), &taken).await;
    let exec = executor(&h, dir.path());
    exec.execute(create_snapshot("web-1/snapshot/g1/t1/5"))
        .await;
    drop(exec);
    h.reset_calls();
    let exec = executor(&h, dir.path());
    let result = exec.execute(taken).await;
    match &result.outcome {
        Ok(CommandOutput::Snapshots(list)) => assert_eq!(list.len(), 1, "{list:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.count(Method::Post, "/snapshot"), 0);
    drop(exec);

    // The crashed run never got to it: take it now.
    let missing = snapshot(
        "web-1/snapshot/g1/t1/6",
        SnapshotAction::Create {
            snapshot: "after".into(),
            description: String::new(),
            vmstate: false,
        },
    );
    crashed_while_running(dir.path(), &missing).await;
    let result = executor(&h, dir.path()).execute(missing).await;
    match &result.outcome {
        Ok(CommandOutput::Snapshots(list)) => {
            assert!(list.iter().any(|s| s.name == "after"), "{list:?}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.count(Method::Post, "/snapshot"), 1);
}

#[tokio::test]
async fn bad_ids_reused_ids_and_running_ids_are_refused_without_running() {
    let h = harness();
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(dir.path()).unwrap();
    let exec = Executor::new(journal.clone(), h.ops.clone());

    let long = ensure(&"x".repeat(MAX_COMMAND_ID_LEN + 1));
    let f = exec.execute(long).await;
    assert_eq!(failure(&f).kind, FailureKind::Permanent);

    let list = snapshot("web-1/snapshot/g1/t1/9", SnapshotAction::List);
    exec.execute(list).await;
    let reused = ensure("web-1/snapshot/g1/t1/9");
    let f = exec.execute(reused).await;
    assert_eq!(failure(&f).kind, FailureKind::Permanent);
    assert!(failure(&f).message.contains("already used"), "{f:?}");

    // Another task of this agent holds the id right now.
    let busy = ensure("web-1/ensure/g1/t1/10");
    Stored::new(journal)
        .begin(&busy.id, &Journaled::of(&busy))
        .await
        .unwrap();
    let f = exec.execute(busy).await;
    assert_eq!(failure(&f).kind, FailureKind::Transient);
    assert!(failure(&f).message.contains("already running"), "{f:?}");

    assert_eq!(h.count(Method::Post, ""), 0, "nothing ran");
}

/// A PVE backend whose every call panics: a bug in the middle of a command's run.
#[derive(Debug)]
struct Panicking;

impl pve::Backend for Panicking {
    fn call<'a>(
        &'a self,
        _req: &'a pve::ApiRequest,
    ) -> pve::backend::BoxFuture<'a, Result<pve::ApiReply, pve::PveError>> {
        Box::pin(async { panic!("bug in a command worker (test)") })
    }

    fn endpoint(&self) -> String {
        "panicking".into()
    }
}

#[tokio::test]
async fn a_worker_that_panics_gives_its_id_back_and_the_next_delivery_settles_it() {
    let h = harness();
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(dir.path()).unwrap();
    let broken_ops = node_agent::ops::VmOps::new(pve::Client::new(Panicking), "pve1");
    let broken = Executor::new(journal.clone(), broken_ops);
    let cmd = ensure("web-1/ensure/g1/t1/11");
    let worker = tokio::spawn({
        let cmd = cmd.clone();
        async move { broken.execute(cmd).await }
    });
    assert!(worker.await.unwrap_err().is_panic());

    // Same agent process, same journal: the id is in doubt now, not "already running".
    let exec = Executor::new(journal, h.ops.clone());
    let settled = exec.execute(cmd.clone()).await;
    assert!(
        matches!(settled.outcome, Ok(CommandOutput::Vm(ref vm)) if vm.running),
        "{settled:?}"
    );
    assert_eq!(
        exec.execute(cmd).await,
        settled,
        "and then answered as stored"
    );
    assert_eq!(h.vms_named("web-1").await, vec![101]);
}
