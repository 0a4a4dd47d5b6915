#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! The leader's control plane end to end, in process: a real member and a fake agent that
//! speaks `Heartbeat` over QUIC with an agent certificate of the cluster CA. The agent's host
//! registers and goes online with its facts replicated; a VM applied is placed, gets its VMID
//! (skipping the host's foreign VM) and address, and an Ensure reaches the agent; the agent's
//! result makes the VM Running and Ready; a deleted VM gets a Delete and is released. A follower
//! answers a beat with the leader's address.

use crate::daemon_support;

use std::net::IpAddr;
use std::time::Duration;

use daemon_support::{Cluster, bounded, eventually};
use protocol::admin::{
    Events, FleetGet, PoolApply, ReadMode, VmApply, VmDelete, VmGet, VmidRangeApply,
};
use protocol::agent::{
    AgentCommand, CommandOutput, CommandResult, Heartbeat, HeartbeatAck, Inventory, ObservedVm, Op,
    PveNodeInfo, StorageInfo, TemplateInfo, VmObservation,
};
use protocol::fleet::{ConditionKind, FleetView, HostState, VmPhase, VmRecord};
use protocol::spec::{
    CloudInitSpec, IpPoolSpec, NicIp, NicSpec, TemplateSpec, VmSpec, VmidRangeSpec,
};
use transport::{Connection, PeerIdentity, RemoteCode, Service, TransportError};

const GIB: u64 = 1024 * 1024 * 1024;
/// The agent's node id (not a coordinator's).
const HOST_ID: u64 = 40;
const FOREIGN_VMID: u32 = 100;

/// A node agent reduced to its beats.
struct FakeAgent {
    conn: Connection,
    boot_id: u64,
    seq: u64,
    /// Ids it reports as running.
    running: Vec<String>,
}

impl FakeAgent {
    /// Dials member `i` of `cluster` with an agent certificate for `HOST_ID`.
    async fn connect(cluster: &Cluster, i: usize) -> FakeAgent {
        let endpoint = cluster.agent_endpoint(HOST_ID);
        let m = &cluster.members[i];
        let conn = bounded(
            "agent connect",
            endpoint.connect(m.listen, PeerIdentity::coordinator(m.id), Service::Agent),
        )
        .await
        .unwrap();
        FakeAgent {
            conn,
            boot_id: 0x5eed,
            seq: 0,
            running: vec![],
        }
    }

    async fn beat(
        &mut self,
        inventory: Option<Inventory>,
        results: Vec<CommandResult>,
    ) -> Result<HeartbeatAck, TransportError> {
        self.seq += 1;
        let beat = Heartbeat {
            host_name: "pve-a".into(),
            labels: [("zone".to_string(), "a".to_string())].into(),
            boot_id: self.boot_id,
            seq: self.seq,
            inventory,
            results,
            running: self.running.clone(),
            leaving: None,
        };
        self.conn.call(&beat).await
    }

    /// Beats (without inventory or results) until an ack carries a command.
    async fn next_command(&mut self) -> AgentCommand {
        bounded("a command for the host", async {
            loop {
                let ack = self.beat(None, vec![]).await.unwrap();
                if let Some(cmd) = ack.commands.into_iter().next() {
                    return cmd;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
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
        storages: vec![StorageInfo {
            id: "local-lvm".into(),
            kind: "lvmthin".into(),
            content: ["images".to_string()].into(),
            shared: false,
            active: true,
            total_bytes: 500 * GIB,
            available_bytes: 400 * GIB,
        }],
        bridges: ["vmbr0".to_string()].into(),
        templates: vec![TemplateInfo {
            vmid: 9000,
            name: "debian-12".into(),
        }],
        vms: vec![ObservedVm {
            vmid: FOREIGN_VMID,
            name: "someone-elses".into(),
            owned: false,
            status: "running".into(),
            ..ObservedVm::default()
        }],
        ..Inventory::default()
    }
}

fn web() -> VmSpec {
    let mut spec = VmSpec::new("web", 2048);
    spec.cores = 2;
    spec.template = Some(TemplateSpec {
        name: Some("debian-12".into()),
        vmid: None,
        clone: Default::default(),
        storage: None,
    });
    spec.cloud_init = Some(CloudInitSpec::default());
    spec.nics = vec![NicSpec {
        model: Default::default(),
        bridge: "vmbr0".into(),
        vlan: None,
        mac: None,
        firewall: false,
        mtu: None,
        ip: Some(NicIp::Pool("lan".into())),
    }];
    spec
}

async fn fleet(cluster: &Cluster) -> FleetView {
    cluster
        .call(
            0,
            &FleetGet {
                read: ReadMode::Linearizable,
            },
        )
        .await
        .unwrap()
}

async fn vm(cluster: &Cluster) -> Option<VmRecord> {
    cluster
        .call(
            0,
            &VmGet {
                name: "web".into(),
                read: ReadMode::Linearizable,
            },
        )
        .await
        .ok()
}

async fn resources(cluster: &Cluster) {
    cluster
        .call(
            0,
            &VmidRangeApply {
                spec: VmidRangeSpec {
                    name: "main".into(),
                    start: 100,
                    end: 199,
                },
            },
        )
        .await
        .unwrap();
    cluster
        .call(
            0,
            &PoolApply {
                spec: IpPoolSpec {
                    name: "lan".into(),
                    cidr: "10.0.0.0/24".into(),
                    gateway: Some("10.0.0.1".into()),
                    range_start: "10.0.0.10".into(),
                    range_end: "10.0.0.20".into(),
                    dns: vec!["10.0.0.53".into()],
                },
            },
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agents_beats_register_its_host_and_drive_a_vm_from_apply_to_running_to_gone() {
    let mut cluster = Cluster::found(None).await;
    resources(&cluster).await;
    let mut agent = FakeAgent::connect(&cluster, 0).await;

    // The first beat of an unknown host carries no inventory: the leader asks for it.
    let ack = agent.beat(None, vec![]).await.unwrap();
    assert!(ack.need_inventory);
    assert_eq!(ack.lease_ms, 10_000);
    assert_eq!(ack.leader, cluster.members[0].id);
    assert!(ack.commands.is_empty());
    assert!(fleet(&cluster).await.hosts.is_empty());

    // With it, the host registers, goes online, and its facts are replicated.
    let ack = agent.beat(Some(inventory()), vec![]).await.unwrap();
    assert!(!ack.need_inventory);
    let view = fleet(&cluster).await;
    let host = view.hosts.iter().find(|h| h.id == HOST_ID).unwrap();
    assert_eq!(host.name, "pve-a");
    assert_eq!(host.state, HostState::Online);
    assert_eq!(
        (host.capacity.cpus, host.capacity.memory_mib),
        (16, 64 * 1024)
    );
    assert_eq!(host.labels.get("zone").map(String::as_str), Some("a"));
    let facts = host.facts.as_ref().unwrap();
    assert_eq!(facts.foreign_vmids, [FOREIGN_VMID]);
    assert_eq!(facts.templates[0].name, "debian-12");

    // A VM applied is placed on the host, gets VMID 101 (100 is the foreign VM's) and an
    // address, and its Ensure reaches the agent.
    cluster.call(0, &VmApply { spec: web() }).await.unwrap();
    let cmd = agent.next_command().await;
    let Op::Ensure(ensure) = &cmd.op else {
        panic!("expected an Ensure, got {cmd:?}");
    };
    assert!(cmd.id.starts_with("web/ensure/g1/t"), "{}", cmd.id);
    assert_eq!(ensure.vmid, 101);
    assert_eq!(ensure.generation, 1);
    assert_eq!(ensure.spec, web());
    assert_eq!(ensure.ips.len(), 1);
    assert_eq!(
        ensure.ips[0].address,
        "10.0.0.10".parse::<IpAddr>().unwrap()
    );
    assert_eq!(ensure.pool_dns, ["10.0.0.53"]);
    assert_eq!(ensure.ip_wait_secs, 60);
    let rec = vm(&cluster).await.unwrap();
    assert_eq!(rec.assignment.host, Some(HOST_ID));
    assert_eq!(rec.assignment.vmid, Some(101));
    assert_eq!(rec.status.phase, VmPhase::Provisioning);

    // Not handed out again while the agent runs it.
    agent.running = vec![cmd.id.clone()];
    let ack = agent.beat(None, vec![]).await.unwrap();
    assert!(ack.commands.is_empty(), "{:?}", ack.commands);
    agent.running.clear();

    // The agent's result: Running and Ready, acknowledged.
    let result = CommandResult {
        id: cmd.id.clone(),
        outcome: Ok(CommandOutput::Vm(VmObservation {
            vmid: 101,
            generation: 1,
            running: true,
            ips: vec!["10.0.0.10".parse().unwrap()],
            pending_restart: vec![],
            digest: "abc".into(),
        })),
    };
    let ack = agent.beat(None, vec![result]).await.unwrap();
    assert_eq!(ack.acked_results, std::slice::from_ref(&cmd.id));
    let rec = eventually("the VM running", || async {
        vm(&cluster)
            .await
            .filter(|r| r.status.phase == VmPhase::Running)
    })
    .await;
    let ready = rec
        .status
        .conditions
        .iter()
        .find(|c| c.kind == ConditionKind::Ready)
        .unwrap();
    assert!(ready.status);
    assert_eq!(rec.status.current_host, Some(HOST_ID));
    assert_eq!(rec.status.observed_generation, 1);

    // Deleted: a Delete reaches the agent; its result releases the VM and its VMID.
    cluster
        .call(0, &VmDelete { name: "web".into() })
        .await
        .unwrap();
    let cmd = agent.next_command().await;
    assert_eq!(
        cmd.op,
        Op::Delete(protocol::agent::DeleteVm {
            name: "web".into(),
            vmid: 101
        })
    );
    let result = CommandResult {
        id: cmd.id.clone(),
        outcome: Ok(CommandOutput::Deleted { existed: true }),
    };
    let ack = agent.beat(None, vec![result]).await.unwrap();
    assert_eq!(ack.acked_results, [cmd.id]);
    let view = eventually("the VM released", || async {
        let view = fleet(&cluster).await;
        view.vms.is_empty().then_some(view)
    })
    .await;
    let range = view
        .vmid_ranges
        .iter()
        .find(|r| r.spec.name == "main")
        .unwrap();
    assert!(range.allocations.is_empty(), "{:?}", range.allocations);
    let pool = view.ip_pools.iter().find(|p| p.spec.name == "lan").unwrap();
    assert!(pool.allocations.is_empty(), "{:?}", pool.allocations);

    let events = cluster
        .call(
            0,
            &Events {
                since: 0,
                limit: None,
                read: ReadMode::Linearizable,
            },
        )
        .await
        .unwrap()
        .events;
    let said = |text: &str| {
        events
            .iter()
            .any(|e| e.subject == "web" && e.message == text)
    };
    assert!(said("created on host pve-a with VMID 101"), "{events:#?}");
    assert!(said("started on host pve-a"), "{events:#?}");
    cluster.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_follower_answers_a_beat_with_the_leaders_address() {
    let mut cluster = Cluster::found(None).await;
    cluster.add_member(0).await;
    cluster.add_member(0).await;
    let leader = cluster.leader().await;
    let follower = (0..3).find(|&i| i != leader).unwrap();
    let mut agent = FakeAgent::connect(&cluster, follower).await;
    let err = bounded(
        "a beat to a follower",
        agent.beat(Some(inventory()), vec![]),
    )
    .await
    .unwrap_err();
    let TransportError::Remote(e) = err else {
        panic!("expected a refusal, got {err:?}");
    };
    let l = &cluster.members[leader];
    assert_eq!(
        e.code,
        RemoteCode::NotLeader {
            leader: Some((l.id, l.listen.to_string()))
        }
    );
    // Nothing was registered by the refused beat.
    assert!(fleet(&cluster).await.hosts.is_empty());
    cluster.stop_all().await;
}
