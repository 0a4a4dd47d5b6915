//! The control plane's shared state: commands of callers and of the reconciler through the
//! outbox, results routed to their origin, and leadership changes dropping everything soft.

use std::sync::Arc;
use std::time::Duration;

use protocol::agent::{
    CommandOutput, CommandResult, DeleteVm, EnsureVm, Heartbeat, Op, PowerAction, PowerOp,
    VmObservation,
};
use protocol::spec::VmSpec;
use transport::RemoteCode;

use super::Control;
use crate::config::ControlConfig;

const HOST: u64 = 7;

fn beat(boot_id: u64) -> Heartbeat {
    Heartbeat {
        host_name: "pve-a".into(),
        labels: Default::default(),
        boot_id,
        seq: 1,
        inventory: None,
        results: vec![],
        running: vec![],
        leaving: None,
    }
}

fn power() -> Op {
    Op::Power(PowerOp {
        name: "web".into(),
        vmid: 101,
        action: PowerAction::Restart { timeout_secs: 30 },
    })
}

fn ensure() -> Op {
    Op::Ensure(Box::new(EnsureVm {
        spec: VmSpec::new("web", 512),
        generation: 4,
        vmid: 101,
        ips: vec![],
        pool_dns: vec![],
        ip_wait_secs: 0,
        take_over: None,
    }))
}

fn vm_output() -> CommandOutput {
    CommandOutput::Vm(VmObservation {
        vmid: 101,
        generation: 4,
        running: true,
        ..VmObservation::default()
    })
}

/// A control plane leading in term 3 that heard from `HOST`.
fn leading() -> Arc<Control> {
    let control = Arc::new(Control::new(ControlConfig::default()));
    assert!(control.sync_leadership(Some(3)));
    control.record_beat(HOST, &beat(1));
    control
}

/// Beats until the outbox hands out a command (the caller's task enqueues it).
async fn delivered(control: &Control) -> protocol::agent::AgentCommand {
    for _ in 0..1000 {
        if let Some(cmd) = control.deliver(HOST, 1, &[]).into_iter().next() {
            return cmd;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no command delivered");
}

#[tokio::test]
async fn a_callers_command_reaches_its_host_and_the_result_its_caller() {
    let control = leading();
    let task = tokio::spawn({
        let control = Arc::clone(&control);
        async move {
            control
                .run_command(HOST, power(), Duration::from_secs(60))
                .await
        }
    });
    let cmd = delivered(&control).await;
    assert!(cmd.id.starts_with("web/power/g0/t3/"), "{}", cmd.id);
    // Another host cannot answer it.
    let (acked, _) = control.record_results(
        HOST + 1,
        vec![CommandResult {
            id: cmd.id.clone(),
            outcome: Ok(vm_output()),
        }],
    );
    assert_eq!(acked, std::slice::from_ref(&cmd.id));
    let (acked, for_reconciler) = control.record_results(
        HOST,
        vec![CommandResult {
            id: cmd.id.clone(),
            outcome: Ok(vm_output()),
        }],
    );
    assert_eq!(acked, [cmd.id]);
    assert!(!for_reconciler);
    assert_eq!(task.await.unwrap().unwrap(), Ok(vm_output()));
    assert!(control.take_results().is_empty());
}

#[tokio::test]
async fn a_command_nobody_picked_up_is_withdrawn_when_its_caller_gives_up() {
    let control = leading();
    let err = control
        .run_command(HOST, power(), Duration::from_millis(20))
        .await
        .unwrap_err();
    assert_eq!(err.code, RemoteCode::Unavailable);
    assert!(err.message.contains("withdrawn"), "{}", err.message);
    assert!(control.deliver(HOST, 1, &[]).is_empty());
}

#[tokio::test]
async fn commands_are_refused_at_once_without_leadership_or_from_a_silent_host() {
    let follower = Control::new(ControlConfig::default());
    let err = follower
        .run_command(HOST, power(), Duration::from_secs(60))
        .await
        .unwrap_err();
    assert_eq!(err.code, RemoteCode::Unavailable);
    assert!(err.message.contains("not the leader"), "{}", err.message);

    let config = ControlConfig {
        lease: Duration::ZERO,
        ..ControlConfig::default()
    };
    let control = Control::new(config);
    control.sync_leadership(Some(3));
    tokio::time::sleep(Duration::from_millis(5)).await;
    let err = control
        .run_command(HOST, power(), Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(err.message.contains("has not reported"), "{}", err.message);
}

#[tokio::test]
async fn losing_the_leadership_drops_the_soft_state_and_fails_waiting_callers() {
    let control = leading();
    assert!(control.host_live(HOST).is_some());
    let task = tokio::spawn({
        let control = Arc::clone(&control);
        async move {
            control
                .run_command(HOST, power(), Duration::from_secs(60))
                .await
        }
    });
    delivered(&control).await;
    assert!(!control.sync_leadership(None));
    let err = task.await.unwrap().unwrap_err();
    assert!(err.message.contains("stopped leading"), "{}", err.message);
    assert!(control.host_live(HOST).is_none());
    // Leading again (a new term) starts from nothing.
    assert!(control.sync_leadership(Some(5)));
    assert!(control.deliver(HOST, 1, &[]).is_empty());
}

#[test]
fn a_reconciler_result_counts_as_in_flight_until_the_loop_takes_it() {
    let control = leading();
    let now = control.now();
    control.enqueue(HOST, 4, ensure(), 3, now);
    // A plan of an older term never reaches the outbox.
    control.enqueue(
        HOST,
        4,
        Op::Delete(DeleteVm {
            name: "db".into(),
            vmid: 102,
        }),
        2,
        now,
    );
    let (_, inflight) = control.plan_inputs();
    assert_eq!(inflight.commands.keys().collect::<Vec<_>>(), ["web"]);
    assert_eq!(
        inflight.memory["web"].last_ensure_ms,
        Some(now.mono_ms),
        "sending an Ensure is remembered"
    );
    let cmd = control.deliver(HOST, 1, &[]).pop().unwrap();
    assert_eq!(cmd.id, "web/ensure/g4/t3/1");
    let (_, for_reconciler) = control.record_results(
        HOST,
        vec![CommandResult {
            id: cmd.id.clone(),
            outcome: Ok(vm_output()),
        }],
    );
    assert!(for_reconciler);
    let (_, inflight) = control.plan_inputs();
    assert_eq!(inflight.commands["web"].id, cmd.id);
    let arrived = control.take_results();
    assert_eq!(arrived.len(), 1);
    assert_eq!(
        (
            arrived[0].meta.kind,
            arrived[0].meta.generation,
            arrived[0].meta.host
        ),
        (protocol::agent::OpKind::Ensure, 4, HOST)
    );
    let (_, inflight) = control.plan_inputs();
    assert!(inflight.commands.is_empty());
}
