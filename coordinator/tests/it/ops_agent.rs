//! The VM operations through a real leader to a fake agent speaking `Heartbeat` over QUIC: a
//! restart reaches the VM's host as one `Power` command with its VMID even when asked twice at
//! once (a retried request joins the run), snapshots come back as the agent lists them, an
//! agent's failure reaches the operator naming the VM, the host and PVE's text, and `host ls`
//! and `vm explain` show the host with the VM on it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use crate::daemon_support;

use std::time::Duration;

use daemon_support::{Cluster, bounded};
use protocol::admin::{
    HostStatus, ReadMode, VmApply, VmExplain, VmGet, VmPower, VmPowerAction, VmSnapshot,
    VmidRangeApply,
};
use protocol::agent::{
    AgentCommand, CommandFailure, CommandOutput, CommandResult, FailureKind, Heartbeat,
    HeartbeatAck, Inventory, Op, PowerAction, PveNodeInfo, SnapshotAction, SnapshotInfo,
    VmObservation,
};
use protocol::fleet::VmPhase;
use protocol::spec::{VmSpec, VmidRangeSpec};
use transport::{Connection, PeerIdentity, RemoteCode, Service, TransportError};

const GIB: u64 = 1024 * 1024 * 1024;
const HOST_ID: u64 = 40;

/// A node agent reduced to its beats: it answers every Ensure with a running VM and hands the
/// test the commands it waits for.
struct FakeAgent {
    conn: Connection,
    seq: u64,
    /// Results not yet acknowledged by the leader.
    unacked: Vec<CommandResult>,
}

impl FakeAgent {
    async fn connect(cluster: &Cluster) -> FakeAgent {
        let endpoint = cluster.agent_endpoint(HOST_ID);
        let m = &cluster.members[0];
        let conn = endpoint
            .connect(m.listen, PeerIdentity::coordinator(m.id), Service::Agent)
            .await
            .unwrap();
        FakeAgent {
            conn,
            seq: 0,
            unacked: Vec::new(),
        }
    }

    async fn beat(&mut self, inventory: Option<Inventory>) -> Result<HeartbeatAck, TransportError> {
        self.seq += 1;
        let beat = Heartbeat {
            host_name: "pve-a".into(),
            labels: Default::default(),
            boot_id: 7,
            seq: self.seq,
            inventory,
            results: self.unacked.clone(),
            running: Vec::new(),
            leaving: None,
        };
        let ack = self.conn.call(&beat).await?;
        self.unacked.retain(|r| !ack.acked_results.contains(&r.id));
        Ok(ack)
    }

    fn answer(&mut self, id: &str, outcome: Result<CommandOutput, CommandFailure>) {
        self.unacked.push(CommandResult {
            id: id.to_string(),
            outcome,
        });
    }

    /// One beat: the reconciler's Ensures are answered with a running VM (on the next beat);
    /// the other commands delivered are returned.
    async fn serve(&mut self) -> Vec<AgentCommand> {
        let ack = self.beat(None).await.unwrap();
        let mut others = Vec::new();
        for cmd in ack.commands {
            match &cmd.op {
                Op::Ensure(e) => {
                    let seen = running(e.vmid, e.generation);
                    self.answer(&cmd.id, Ok(CommandOutput::Vm(seen)));
                }
                _ => others.push(cmd),
            }
        }
        others
    }

    /// Beats until a command `wanted` arrives.
    async fn until(&mut self, wanted: fn(&Op) -> bool) -> AgentCommand {
        bounded("the command for the host", async {
            loop {
                if let Some(cmd) = self.serve().await.into_iter().find(|c| wanted(&c.op)) {
                    return cmd;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
    }

    /// Beats until the leader records `vm` running.
    async fn until_running(&mut self, cluster: &Cluster, vm: &str) {
        let get = VmGet {
            name: vm.to_string(),
            read: ReadMode::Linearizable,
        };
        bounded("the VM running", async {
            loop {
                self.serve().await;
                let rec = cluster.call(0, &get).await.unwrap();
                if rec.status.phase == VmPhase::Running {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
    }

    /// Beats until every result is acknowledged; returns the other commands delivered.
    async fn flush(&mut self) -> Vec<AgentCommand> {
        let mut delivered = Vec::new();
        bounded("results acknowledged", async {
            while !self.unacked.is_empty() {
                delivered.extend(self.serve().await);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        delivered
    }
}

fn running(vmid: u32, generation: u64) -> VmObservation {
    VmObservation {
        vmid,
        generation,
        running: true,
        ips: Vec::new(),
        pending_restart: Vec::new(),
        digest: "d1".into(),
    }
}

fn inventory() -> Inventory {
    Inventory {
        pve: PveNodeInfo {
            node: "pve-a".into(),
            version: "9.1.1".into(),
            cpus: 16,
            memory_total_bytes: 64 * GIB,
            ..PveNodeInfo::default()
        },
        ..Inventory::default()
    }
}

fn refusal(e: TransportError) -> transport::RemoteError {
    match e {
        TransportError::Remote(r) => r,
        other => panic!("expected a refusal, got {other}"),
    }
}

/// A snapshot request as one operator command (its own request id).
fn snapshot(action: SnapshotAction) -> VmSnapshot {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    VmSnapshot {
        name: "web".into(),
        request_id: format!("snapshot-{n}"),
        action,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restarts_and_snapshots_reach_the_vms_agent_once_and_come_back() {
    let mut cluster = Cluster::found(None).await;
    let range = VmidRangeApply {
        spec: VmidRangeSpec {
            name: "main".into(),
            start: 100,
            end: 199,
        },
    };
    cluster.call(0, &range).await.unwrap();
    let mut agent = FakeAgent::connect(&cluster).await;
    agent.beat(None).await.unwrap();
    agent.beat(Some(inventory())).await.unwrap();
    let spec = VmSpec::new("web", 1024);
    cluster.call(0, &VmApply { spec }).await.unwrap();
    agent.until_running(&cluster, "web").await;

    // Two restarts at once (a client's retry): one Power command, one answer for both.
    let restart = VmPower {
        name: "web".into(),
        request_id: "restart-1".into(),
        action: VmPowerAction::Restart,
    };
    let (first, second, delivered) = tokio::join!(
        cluster.call(0, &restart),
        cluster.call(0, &restart),
        async {
            let cmd = agent.until(|op| matches!(op, Op::Power(_))).await;
            let Op::Power(power) = &cmd.op else {
                unreachable!()
            };
            assert_eq!(power.vmid, 100);
            assert_eq!(power.action, PowerAction::Restart { timeout_secs: 60 });
            agent.answer(&cmd.id, Ok(CommandOutput::Vm(running(100, 1))));
            agent.flush().await
        }
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(first, second);
    assert_eq!(first.message, "vm web restarted on pve-a (vmid 100)");
    let again: Vec<_> = delivered
        .iter()
        .filter(|c| matches!(c.op, Op::Power(_)))
        .collect();
    assert!(again.is_empty(), "a second restart was sent: {again:?}");

    // A new operator command (a new request id) restarts again, even right after the first.
    let restart_again = VmPower {
        request_id: "restart-2".into(),
        ..restart.clone()
    };
    let (reply, ()) = tokio::join!(cluster.call(0, &restart_again), async {
        let cmd = agent.until(|op| matches!(op, Op::Power(_))).await;
        agent.answer(&cmd.id, Ok(CommandOutput::Vm(running(100, 1))));
        let _ = agent.flush().await;
    });
    assert_eq!(
        reply.unwrap().message,
        "vm web restarted on pve-a (vmid 100)"
    );

    // A snapshot: the agent's list comes back.
    let taken = SnapshotInfo {
        name: "s1".into(),
        description: "before".into(),
        parent: None,
        taken_at: Some(1_740_000_000),
        vmstate: false,
    };
    let create = snapshot(SnapshotAction::Create {
        snapshot: "s1".into(),
        description: "before".into(),
        vmstate: false,
    });
    let (reply, ()) = tokio::join!(cluster.call(0, &create), async {
        let cmd = agent.until(|op| matches!(op, Op::Snapshot(_))).await;
        let Op::Snapshot(s) = &cmd.op else {
            unreachable!()
        };
        assert_eq!((s.name.as_str(), s.vmid), ("web", 100));
        assert_eq!(s.action, create.action);
        agent.answer(&cmd.id, Ok(CommandOutput::Snapshots(vec![taken.clone()])));
        agent.flush().await;
    });
    let reply = reply.unwrap();
    assert_eq!((reply.vm.as_str(), reply.snapshots), ("web", vec![taken]));

    // The agent's failure names the VM, the host and PVE's words.
    let delete = snapshot(SnapshotAction::Delete {
        snapshot: "zz".into(),
    });
    let (refused, ()) = tokio::join!(cluster.call(0, &delete), async {
        let cmd = agent.until(|op| matches!(op, Op::Snapshot(_))).await;
        let failure = CommandFailure {
            kind: FailureKind::Permanent,
            step: "delete".into(),
            message: "snapshot 'zz' does not exist".into(),
        };
        agent.answer(&cmd.id, Err(failure));
        agent.flush().await;
    });
    let refused = refusal(refused.unwrap_err());
    assert_eq!(refused.code, RemoteCode::Conflict);
    assert!(
        refused.message.starts_with(
            "snapshot delete zz of vm web (vmid 100) on host pve-a failed at step delete: \
             snapshot 'zz' does not exist"
        ),
        "{}",
        refused.message
    );

    // The host with its VM, as `host ls` and `vm explain` show it.
    agent.beat(None).await.unwrap();
    let hosts = cluster.call(0, &HostStatus {}).await.unwrap();
    let pve_a = &hosts.hosts[0];
    assert_eq!(pve_a.host.name, "pve-a");
    assert_eq!(
        (pve_a.vm_count, pve_a.vcpus, pve_a.memory_mib),
        (1, 1, 1024)
    );
    assert!(pve_a.last_seen_ms.is_some(), "the leader heard the agent");
    let explained = cluster
        .call(0, &VmExplain { name: "web".into() })
        .await
        .unwrap();
    assert_eq!(explained.placed_on.as_deref(), Some("pve-a"));
    assert_eq!(explained.verdicts.len(), 1);
    assert!(explained.verdicts[0].scores.is_some(), "{explained:?}");
    cluster.stop_all().await;
}
