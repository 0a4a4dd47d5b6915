#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! The agent's session against fake coordinators on loopback: real QUIC with mutual TLS under
//! a cluster CA made by `bootstrap`, a follower answering `NotLeader` with the leader's
//! address, and a scripted leader that grants leases, delivers commands and acknowledges
//! results. Commands run in a fake runner that counts runs and holds each one until released.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use bootstrap::{ClusterCa, NodeKey};
use node_agent::inventory::{self, InventorySender};
use node_agent::session::{
    CommandRunner, MAX_CONCURRENT, Session, SessionConfig, SessionStatus, Target,
};
use protocol::agent::{
    AgentCommand, CommandOutput, CommandResult, DeleteVm, Heartbeat, HeartbeatAck, Inventory, Op,
    PveNodeInfo,
};
use protocol::{NodeId, Role};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use transport::{
    Caller, Endpoint, PeerIdentity, RemoteError, Router, Server, Service, TlsMaterial,
    TransportConfig,
};

const BOUND: Duration = Duration::from_secs(20);
const AGENT_ID: NodeId = 10;
const LEADER_ID: NodeId = 2;
const TERM: u64 = 5;

fn loopback() -> SocketAddr {
    (Ipv4Addr::LOCALHOST, 0).into()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn material(ca: &ClusterCa, role: Role, id: NodeId) -> TlsMaterial {
    let key = NodeKey::generate().unwrap();
    let cert = ca
        .issue(
            &key.csr_pem().unwrap(),
            role,
            id,
            DEFAULT_LEAF_VALIDITY,
            now_secs(),
        )
        .unwrap();
    TlsMaterial::new(ca.cert_pem(), cert, key.private_key_pem())
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = tokio::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < BOUND, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What the scripted leader does and what it saw.
#[derive(Debug, Default)]
struct Script {
    lease_ms: u64,
    /// Delivered with every ack while `redeliver`, else once.
    deliver: Vec<AgentCommand>,
    redeliver: bool,
    /// A result is acknowledged once it was seen more than this many times.
    ack_after: usize,
    /// Answer `Unavailable` (no lease, nothing recorded but the beat).
    refuse: bool,
    /// Ask for the inventory in the next ack.
    ask_inventory: bool,
    beats: Vec<Heartbeat>,
    /// Command id → seq of the beat whose ack delivered it first.
    delivered_at: HashMap<String, u64>,
    /// Result id → how many beats carried it.
    sightings: HashMap<String, usize>,
}

impl Script {
    fn answer(&mut self, hb: Heartbeat) -> Result<HeartbeatAck, RemoteError> {
        self.beats.push(hb.clone());
        if self.refuse {
            return Err(RemoteError::unavailable("scripted refusal"));
        }
        let mut acked = Vec::new();
        for r in &hb.results {
            let seen = self.sightings.entry(r.id.clone()).or_default();
            *seen += 1;
            if *seen > self.ack_after {
                acked.push(r.id.clone());
            }
        }
        let commands = if self.redeliver {
            self.deliver.clone()
        } else {
            std::mem::take(&mut self.deliver)
        };
        for c in &commands {
            self.delivered_at.entry(c.id.clone()).or_insert(hb.seq);
        }
        Ok(HeartbeatAck {
            leader: LEADER_ID,
            term: TERM,
            lease_ms: self.lease_ms,
            need_inventory: std::mem::take(&mut self.ask_inventory),
            acked_results: acked,
            commands,
            leave: None,
            leader_clock_ms: None,
        })
    }
}

/// A fake coordinator member serving the Agent service.
struct Member {
    addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Member {
    /// Answers every beat with `NotLeader` naming `leader`, counting the beats.
    fn follower(
        ca: &ClusterCa,
        id: NodeId,
        leader: (NodeId, String),
        beats: Arc<AtomicUsize>,
    ) -> Member {
        let mut router = Router::new();
        router.handle::<Heartbeat, _, _>(Service::Agent, move |_caller, _hb| {
            beats.fetch_add(1, Ordering::SeqCst);
            let leader = leader.clone();
            async move { Err(RemoteError::not_leader(Some(leader))) }
        });
        Member::serve(ca, id, router)
    }

    /// The scripted leader.
    fn leader(ca: &ClusterCa, script: Arc<Mutex<Script>>) -> Member {
        let mut router = Router::new();
        router.handle::<Heartbeat, _, _>(Service::Agent, move |caller: Caller, hb| {
            assert_eq!(caller.peer, Some(PeerIdentity::new(Role::Agent, AGENT_ID)));
            let answer = script.lock().unwrap().answer(hb);
            async move { answer }
        });
        Member::serve(ca, LEADER_ID, router)
    }

    fn serve(ca: &ClusterCa, id: NodeId, router: Router) -> Member {
        let tls = material(ca, Role::Coordinator, id);
        let endpoint = Endpoint::server(
            loopback(),
            &tls,
            &[Service::Agent],
            TransportConfig::default(),
        )
        .unwrap();
        let addr = endpoint.local_addr().unwrap();
        let stop = CancellationToken::new();
        let server = Server::new(endpoint, router);
        let token = stop.clone();
        let task = tokio::spawn(async move {
            server.run(token).await.unwrap();
        });
        Member { addr, stop, task }
    }

    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(BOUND, self.task)
            .await
            .unwrap()
            .unwrap();
    }
}

/// Runs commands one at a time per gate: each run waits until its id is released.
#[derive(Default)]
struct FakeRunner {
    started: Mutex<Vec<String>>,
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Release every command without waiting.
    open: bool,
    now_total: AtomicUsize,
    max_total: AtomicUsize,
    now_per_vm: Mutex<HashMap<String, usize>>,
    max_per_vm: AtomicUsize,
}

impl FakeRunner {
    fn gate(&self, id: &str) -> Arc<Semaphore> {
        Arc::clone(
            self.gates
                .lock()
                .unwrap()
                .entry(id.to_string())
                .or_insert_with(|| Arc::new(Semaphore::new(0))),
        )
    }

    fn release(&self, id: &str) {
        self.gate(id).add_permits(1);
    }

    fn started(&self) -> Vec<String> {
        self.started.lock().unwrap().clone()
    }

    fn runs_of(&self, id: &str) -> usize {
        self.started().iter().filter(|s| *s == id).count()
    }
}

impl CommandRunner for FakeRunner {
    async fn run(&self, cmd: AgentCommand) -> CommandResult {
        let vm = cmd.op.vm_name().to_string();
        self.started.lock().unwrap().push(cmd.id.clone());
        let total = self.now_total.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_total.fetch_max(total, Ordering::SeqCst);
        let per_vm = {
            let mut now = self.now_per_vm.lock().unwrap();
            let n = now.entry(vm.clone()).or_default();
            *n += 1;
            *n
        };
        self.max_per_vm.fetch_max(per_vm, Ordering::SeqCst);
        if !self.open {
            self.gate(&cmd.id).acquire().await.unwrap().forget();
        }
        *self.now_per_vm.lock().unwrap().get_mut(&vm).unwrap() -= 1;
        self.now_total.fetch_sub(1, Ordering::SeqCst);
        CommandResult {
            id: cmd.id,
            outcome: Ok(CommandOutput::Deleted { existed: true }),
        }
    }
}

fn delete(vm: &str, n: u32) -> AgentCommand {
    AgentCommand {
        id: format!("{vm}/delete/g1/t{TERM}/{n}"),
        op: Op::Delete(DeleteVm {
            name: vm.to_string(),
            vmid: 100 + n,
        }),
    }
}

fn host_inventory() -> Inventory {
    Inventory {
        pve: PveNodeInfo {
            node: "hosta".into(),
            cpus: 16,
            memory_total_bytes: 64 << 30,
            ..PveNodeInfo::default()
        },
        ..Inventory::default()
    }
}

/// A running agent session.
struct Agent {
    status: watch::Receiver<SessionStatus>,
    stop: CancellationToken,
    task: JoinHandle<()>,
    inventory: InventorySender,
}

impl Agent {
    fn start(ca: &ClusterCa, members: Vec<Target>, runner: Arc<FakeRunner>) -> Agent {
        let agent = Agent::start_without_inventory(ca, members, runner);
        agent.inventory.publish(host_inventory());
        agent
    }

    fn start_without_inventory(
        ca: &ClusterCa,
        members: Vec<Target>,
        runner: Arc<FakeRunner>,
    ) -> Agent {
        let tls = material(ca, Role::Agent, AGENT_ID);
        let cfg = TransportConfig {
            connect_timeout: Duration::from_millis(500),
            ..TransportConfig::default()
        };
        let endpoint = Endpoint::client_on(loopback(), &tls, cfg).unwrap();
        let (sender, feed) = inventory::feed();
        let session = Session::new(
            SessionConfig {
                host_name: "hosta".into(),
                labels: BTreeMap::from([("zone".to_string(), "a".to_string())]),
                heartbeat: Duration::from_millis(50),
                members,
                max_concurrent: MAX_CONCURRENT,
                leave_probe: None,
                shutdown_grace: Duration::from_secs(1),
            },
            endpoint,
            runner,
            feed,
        );
        let status = session.status();
        let stop = CancellationToken::new();
        let task = tokio::spawn(session.run(stop.clone()));
        Agent {
            status,
            stop,
            task,
            inventory: sender,
        }
    }

    fn status(&self) -> SessionStatus {
        self.status.borrow().clone()
    }

    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(BOUND, self.task)
            .await
            .unwrap()
            .unwrap();
    }
}

fn target(id: NodeId, addr: SocketAddr) -> Target {
    Target {
        id,
        addr: addr.to_string(),
    }
}

struct Fleet {
    ca: ClusterCa,
    leader: Member,
    script: Arc<Mutex<Script>>,
}

fn fleet(lease_ms: u64) -> Fleet {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = ClusterCa::create("lab", now_secs()).unwrap();
    let script = Arc::new(Mutex::new(Script {
        lease_ms,
        ..Script::default()
    }));
    let leader = Member::leader(&ca, Arc::clone(&script));
    Fleet { ca, leader, script }
}

impl Fleet {
    fn beats(&self) -> Vec<Heartbeat> {
        self.script.lock().unwrap().beats.clone()
    }

    fn beat_count(&self) -> usize {
        self.script.lock().unwrap().beats.len()
    }

    fn edit(&self, f: impl FnOnce(&mut Script)) {
        f(&mut self.script.lock().unwrap());
    }
}

#[tokio::test]
async fn the_agent_follows_a_followers_hint_to_the_leader_and_gets_a_lease() {
    let f = fleet(10_000);
    let follower_beats = Arc::new(AtomicUsize::new(0));
    let follower = Member::follower(
        &f.ca,
        1,
        (LEADER_ID, f.leader.addr.to_string()),
        Arc::clone(&follower_beats),
    );
    // Only the follower is known: the leader is learned from its hint.
    let agent = Agent::start(&f.ca, vec![target(1, follower.addr)], Arc::default());
    eventually("the leader acks beats", || agent.status().acks >= 3).await;
    let status = agent.status();
    assert_eq!(status.leader, Some((LEADER_ID, TERM)));
    let lease = status.lease.unwrap();
    assert!(lease.is_valid(lease.sent_at()));
    assert!(lease.remaining(lease.sent_at()) <= Duration::from_millis(10_000));
    assert!(follower_beats.load(Ordering::SeqCst) >= 1);
    let beats = f.beats();
    let first = &beats[0];
    assert_eq!(first.host_name, "hosta");
    assert_eq!(first.labels.get("zone").map(String::as_str), Some("a"));
    assert_eq!(
        first.inventory,
        Some(host_inventory()),
        "first beat to a leader"
    );
    // One process, one boot id; seq grows by one per beat sent (the follower got some).
    assert!(beats.iter().all(|b| b.boot_id == first.boot_id));
    assert!(beats.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    agent.stop().await;
    follower.stop().await;
    f.leader.stop().await;
}

#[tokio::test]
async fn a_dead_member_is_skipped_for_the_next_one() {
    let f = fleet(10_000);
    // A bound UDP socket that never answers a handshake.
    let silent = std::net::UdpSocket::bind(loopback()).unwrap();
    let members = vec![
        target(7, silent.local_addr().unwrap()),
        target(LEADER_ID, f.leader.addr),
    ];
    let agent = Agent::start(&f.ca, members, Arc::default());
    eventually("the leader acks a beat", || agent.status().acks >= 1).await;
    agent.stop().await;
    f.leader.stop().await;
}

#[tokio::test]
async fn the_inventory_goes_on_the_first_beat_and_again_when_the_leader_asks() {
    let f = fleet(10_000);
    let agent = Agent::start(
        &f.ca,
        vec![target(LEADER_ID, f.leader.addr)],
        Arc::default(),
    );
    eventually("five beats", || f.beat_count() >= 5).await;
    let beats = f.beats();
    assert!(beats[0].inventory.is_some());
    assert!(
        beats[1..].iter().all(|b| b.inventory.is_none()),
        "an unchanged inventory is not resent"
    );
    f.edit(|s| s.ask_inventory = true);
    eventually("a beat after the request carries the inventory", || {
        f.beats().iter().skip(5).any(|b| b.inventory.is_some())
    })
    .await;
    agent.stop().await;
    f.leader.stop().await;
}

#[tokio::test]
async fn an_inventory_collected_after_the_first_beats_is_sent_when_ready() {
    let f = fleet(10_000);
    let agent = Agent::start_without_inventory(
        &f.ca,
        vec![target(LEADER_ID, f.leader.addr)],
        Arc::default(),
    );
    eventually("three beats", || f.beat_count() >= 3).await;
    assert!(f.beats().iter().all(|b| b.inventory.is_none()));
    agent.inventory.publish(host_inventory());
    eventually("the inventory arrives", || {
        f.beats()
            .iter()
            .any(|b| b.inventory == Some(host_inventory()))
    })
    .await;
    agent.stop().await;
    f.leader.stop().await;
}

#[tokio::test]
async fn a_result_comes_back_on_a_later_beat_and_is_resent_until_acked() {
    let f = fleet(10_000);
    let cmd = delete("vm-a", 1);
    f.edit(|s| {
        s.deliver = vec![cmd.clone()];
        s.ack_after = 2;
    });
    let runner = Arc::new(FakeRunner {
        open: true,
        ..FakeRunner::default()
    });
    let agent = Agent::start(
        &f.ca,
        vec![target(LEADER_ID, f.leader.addr)],
        Arc::clone(&runner),
    );
    eventually("the result is acked and the agent stops sending it", || {
        let st = agent.status();
        st.unacked == 0 && f.script.lock().unwrap().sightings.get(&cmd.id) == Some(&3)
    })
    .await;
    let after_ack = f.beat_count();
    eventually("two more beats", || f.beat_count() >= after_ack + 2).await;
    {
        let script = f.script.lock().unwrap();
        let delivered = script.delivered_at[&cmd.id];
        let carrying: Vec<u64> = script
            .beats
            .iter()
            .filter(|b| b.results.iter().any(|r| r.id == cmd.id))
            .map(|b| b.seq)
            .collect();
        assert_eq!(carrying.len(), 3, "sent until acked, then never again");
        assert!(carrying[0] > delivered, "on a later beat than the delivery");
        assert!(
            carrying.windows(2).all(|w| w[1] == w[0] + 1),
            "on every beat"
        );
        let result = script
            .beats
            .iter()
            .flat_map(|b| &b.results)
            .find(|r| r.id == cmd.id)
            .unwrap();
        assert_eq!(result.outcome, Ok(CommandOutput::Deleted { existed: true }));
    }
    assert_eq!(runner.runs_of(&cmd.id), 1);
    agent.stop().await;
    f.leader.stop().await;
}

#[tokio::test]
async fn a_repeated_command_id_is_not_run_twice() {
    let f = fleet(10_000);
    let cmd = delete("vm-a", 1);
    f.edit(|s| {
        s.deliver = vec![cmd.clone()];
        s.redeliver = true;
        s.ack_after = usize::MAX;
    });
    let runner = Arc::new(FakeRunner::default());
    let agent = Agent::start(
        &f.ca,
        vec![target(LEADER_ID, f.leader.addr)],
        Arc::clone(&runner),
    );
    // Delivered on every beat while it runs: reported running, run once.
    eventually("three beats report it running", || {
        f.beats()
            .iter()
            .filter(|b| b.running.contains(&cmd.id))
            .count()
            >= 3
    })
    .await;
    assert_eq!(runner.runs_of(&cmd.id), 1);
    // Delivered again while its result waits for the ack: still once.
    runner.release(&cmd.id);
    eventually("three beats carry the unacked result", || {
        f.script.lock().unwrap().sightings.get(&cmd.id).copied() >= Some(3)
    })
    .await;
    assert_eq!(runner.runs_of(&cmd.id), 1);
    f.edit(|s| {
        s.ack_after = 0;
        s.deliver.clear();
    });
    eventually("the ack clears it", || agent.status().unacked == 0).await;
    assert_eq!(runner.runs_of(&cmd.id), 1);
    agent.stop().await;
    f.leader.stop().await;
}

#[tokio::test]
async fn commands_run_in_order_per_vm_and_concurrently_across_vms() {
    let f = fleet(10_000);
    let (a1, a2, b1) = (delete("vm-a", 1), delete("vm-a", 2), delete("vm-b", 3));
    f.edit(|s| s.deliver = vec![a1.clone(), a2.clone(), b1.clone()]);
    let runner = Arc::new(FakeRunner::default());
    let agent = Agent::start(
        &f.ca,
        vec![target(LEADER_ID, f.leader.addr)],
        Arc::clone(&runner),
    );
    eventually("vm-a and vm-b run at once", || {
        let started: HashSet<String> = runner.started().into_iter().collect();
        started.contains(&a1.id) && started.contains(&b1.id)
    })
    .await;
    assert!(!runner.started().contains(&a2.id), "a2 waits for a1");
    assert_eq!(runner.max_total.load(Ordering::SeqCst), 2);
    runner.release(&a1.id);
    eventually("a2 runs after a1", || runner.started().contains(&a2.id)).await;
    runner.release(&a2.id);
    runner.release(&b1.id);
    eventually("all three reported", || {
        f.script.lock().unwrap().sightings.len() == 3
    })
    .await;
    let started = runner.started();
    let pos = |id: &str| started.iter().position(|s| s == id).unwrap();
    assert!(pos(&a1.id) < pos(&a2.id));
    assert_eq!(runner.max_per_vm.load(Ordering::SeqCst), 1);
    agent.stop().await;
    f.leader.stop().await;
}

#[tokio::test]
async fn at_most_eight_commands_run_at_once() {
    let f = fleet(10_000);
    let cmds: Vec<AgentCommand> = (0..10).map(|i| delete(&format!("vm-{i}"), i)).collect();
    f.edit(|s| s.deliver = cmds.clone());
    let runner = Arc::new(FakeRunner::default());
    let agent = Agent::start(
        &f.ca,
        vec![target(LEADER_ID, f.leader.addr)],
        Arc::clone(&runner),
    );
    eventually("eight running", || runner.started().len() == MAX_CONCURRENT).await;
    for c in &cmds {
        runner.release(&c.id);
    }
    eventually("all ten reported", || {
        f.script.lock().unwrap().sightings.len() == cmds.len()
    })
    .await;
    assert_eq!(runner.started().len(), cmds.len());
    assert_eq!(runner.max_total.load(Ordering::SeqCst), MAX_CONCURRENT);
    agent.stop().await;
    f.leader.stop().await;
}

#[tokio::test]
async fn acks_extend_the_lease_and_without_them_it_lapses() {
    let f = fleet(1_500);
    let agent = Agent::start(
        &f.ca,
        vec![target(LEADER_ID, f.leader.addr)],
        Arc::default(),
    );
    eventually("a lease", || agent.status().lease.is_some()).await;
    let first = agent.status().lease.unwrap().expires_at();
    eventually("a later ack extends it", || {
        agent.status().lease.unwrap().expires_at() > first
    })
    .await;
    f.edit(|s| s.refuse = true);
    eventually("the lease lapses without acks", || {
        !agent
            .status()
            .lease
            .unwrap()
            .is_valid(std::time::Instant::now())
    })
    .await;
    let lapsed = agent.status().lease.unwrap();
    f.edit(|s| s.refuse = false);
    eventually("a new ack grants a new lease", || {
        agent.status().lease.unwrap().expires_at() > lapsed.expires_at()
    })
    .await;
    agent.stop().await;
    f.leader.stop().await;
}
