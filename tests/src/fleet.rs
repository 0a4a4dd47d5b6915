//! A whole fleet as real processes for end-to-end tests, launched by `lab`: a coordinator
//! cluster ([`crate::coord_cluster`]), node agents joined with tokens (each its own process,
//! SIGKILLed and restarted at will), VM specs applied and read back through the `pvefleet` CLI
//! as JSON, and, for hosts whose PVE is a `pve-sim serve` process, a look at the host through
//! the PVE API, behind the fleet's back.
//!
//! ```text
//!  test ──pvefleet CLI (json)──▶ coordinators (3 processes)
//!                                    ▲ heartbeats, commands
//!        pvefleet-agent (sim) ───────┤
//!        pvefleet-agent (https) ─────┤───▶ pve-sim serve ◀── test (pve::Client: stop a VM, list)
//!        pvefleet-agent (pvesh) ─────┘───▶ pvesh-sim ──▶ pve-sim serve
//! ```

mod pve_node;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use protocol::admin::{HostStatusReply, VmListReply};
use protocol::fleet::{HostState, VmPhase, VmRecord};
use protocol::spec::{
    CloneMode, CloudInitSpec, FleetSpecFile, IpPoolSpec, NicIp, NicModel, NicSpec, TemplateSpec,
    VmSpec, VmSpecFile, VmidRangeSpec,
};

pub use lab::pve_node::{PveNode, node_config};
pub use lab::{
    Agent, HostOptions, PveAccess, PveClusterOptions, PveNodeOptions, SimControl, SimVm,
};
pub use pve_node::PveClient;

use crate::coord_cluster::Cluster;

/// `n` simulated hosts `sim001`... with the agent's default periods (a beat every second, an
/// inventory every 5 s), not the tests' faster ones: what a production host pays, and what
/// many agents sharing this machine with the coordinators can afford.
pub fn sim_hosts(n: usize) -> Vec<HostOptions> {
    (1..=n)
        .map(|i| {
            let mut host = HostOptions::new(format!("sim{i:03}"), PveAccess::Https);
            host.heartbeat_ms = 1000;
            host.inventory_ms = None;
            host
        })
        .collect()
}

/// A coordinator cluster and its agents. Dropping it kills every process, the agents first.
pub struct Fleet {
    /// The coordinators and, in its lab, the agents.
    pub cluster: Cluster,
    dir: tempfile::TempDir,
}

/// A VM as a PVE host lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostVm {
    /// The host.
    pub host: String,
    /// Its VMID.
    pub vmid: u32,
    /// Its name.
    pub name: String,
    /// `running` or `stopped`.
    pub status: String,
}

impl Fleet {
    /// `coordinators` members (1, 3 or 5), all voters, and no agent yet.
    pub fn start(coordinators: usize) -> Fleet {
        Fleet::start_with(coordinators, &[])
    }

    /// As [`Fleet::start`], every member run with `extra` arguments (`--dashboard ADDR`...).
    pub fn start_with(coordinators: usize, extra: &[&str]) -> Fleet {
        let mut cluster = Cluster::found(extra);
        for _ in 1..coordinators {
            let token = cluster.coordinator_token();
            let via = cluster.member(0).listen;
            cluster.join(&token, via);
        }
        cluster.wait_status("every member a voter", Duration::from_secs(120), |v| {
            v["members"]
                .as_array()
                .is_some_and(|m| m.iter().filter(|m| m["role"] == "voter").count() == coordinators)
        });
        Fleet {
            cluster,
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// The agents, in the order they were added.
    pub fn agents(&self) -> &[Agent] {
        self.cluster.lab.agents()
    }

    /// Joins and starts an agent for `opts`; its index in [`Fleet::agents`].
    pub fn add_host(&mut self, opts: HostOptions) -> usize {
        let v = self
            .cluster
            .cli_json(&["token", "create", "--role", "agent", "--uses", "1"]);
        let token = v["token"].as_str().expect("token").to_string();
        let i = self
            .cluster
            .rt
            .block_on(self.cluster.lab.add_agent(&opts, &token))
            .unwrap_or_else(|e| panic!("adding host {}: {e}", opts.name));
        self.wait_host_online(self.agents()[i].node_id);
        i
    }

    /// Joins and starts the agents of `hosts` all at once (one token for all of them), then
    /// waits until every host of the fleet is online with its PVE facts; their indices in
    /// [`Fleet::agents`].
    pub fn add_hosts(&mut self, hosts: &[HostOptions]) -> Vec<usize> {
        let uses = hosts.len().to_string();
        let v = self
            .cluster
            .cli_json(&["token", "create", "--role", "agent", "--uses", &uses]);
        let token = v["token"].as_str().expect("token").to_string();
        let added = self
            .cluster
            .rt
            .block_on(self.cluster.lab.add_agents(hosts, &token))
            .unwrap_or_else(|e| panic!("adding {} hosts: {e}", hosts.len()));
        self.cluster
            .rt
            .block_on(self.cluster.lab.wait_hosts_online(Duration::from_secs(120)))
            .unwrap_or_else(|e| panic!("hosts online: {e}"));
        added
    }

    /// Waits until host `id` is online with its PVE facts recorded (what the scheduler needs
    /// to place VMs on it).
    pub fn wait_host_online(&self, id: u64) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let out = self.cluster.cli(&["host", "ls"]);
            if out.status.success()
                && let Ok(reply) = serde_json::from_slice::<HostStatusReply>(&out.stdout)
                && reply.hosts.iter().any(|h| {
                    h.host.id == id && h.host.state == HostState::Online && h.host.facts.is_some()
                })
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "host {id} not online with its facts within 120 s: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Starts one `pve-sim serve` serving the nodes of `opts` (agents then join it with
    /// [`HostOptions::in_pve_cluster`]).
    pub fn add_pve_cluster(&mut self, opts: &PveClusterOptions) {
        self.cluster
            .rt
            .block_on(self.cluster.lab.add_pve_cluster(opts))
            .unwrap_or_else(|e| panic!("starting PVE cluster {}: {e}", opts.name));
    }

    /// Powers host `name` off: its agent and fence guard die, its simulated node goes off;
    /// the VMIDs that were running.
    pub fn power_off(&mut self, name: &str) -> Vec<u32> {
        let i = self.agent_index(name);
        self.cluster
            .rt
            .block_on(self.cluster.lab.power_off_host(i))
            .unwrap_or_else(|e| panic!("powering {name} off: {e}"))
    }

    /// Powers host `name` on (a new boot) and starts its agent.
    pub fn power_on(&mut self, name: &str) {
        let i = self.agent_index(name);
        self.cluster
            .rt
            .block_on(self.cluster.lab.power_on_host(i))
            .unwrap_or_else(|e| panic!("powering {name} on: {e}"));
        self.start_agent(name);
    }

    /// The control API of PVE cluster `name`'s simulator.
    pub fn pve_control(&self, name: &str) -> SimControl {
        self.cluster
            .lab
            .pve_cluster(name)
            .unwrap_or_else(|| panic!("no PVE cluster {name}"))
            .control()
            .unwrap_or_else(|e| panic!("control of PVE cluster {name}: {e}"))
    }

    /// The agent of host `name`.
    pub fn agent(&self, name: &str) -> &Agent {
        let i = self.agent_index(name);
        &self.agents()[i]
    }

    fn agent_index(&self, name: &str) -> usize {
        self.cluster
            .lab
            .agent_index(name)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The process id of agent `i` while it runs (for resource measurements).
    pub fn agent_pid(&mut self, i: usize) -> Option<u32> {
        self.cluster.lab.pid(lab::Part::Agent(i))
    }

    /// SIGKILL the agent of host `name` (its PVE host keeps running).
    pub fn kill9_agent(&mut self, name: &str) {
        let i = self.agent_index(name);
        self.cluster
            .rt
            .block_on(self.cluster.lab.kill(lab::Part::Agent(i)));
    }

    /// Whether the agent of host `name` runs (its process has not exited).
    pub fn agent_runs(&mut self, name: &str) -> bool {
        let i = self.agent_index(name);
        self.cluster.lab.runs(lab::Part::Agent(i))
    }

    /// SIGSTOP the agent of host `name` (a hung agent: its PVE host and its child fence guard
    /// keep running).
    pub fn pause_agent(&mut self, name: &str) {
        let i = self.agent_index(name);
        self.cluster
            .rt
            .block_on(self.cluster.lab.pause(lab::Part::Agent(i)))
            .unwrap_or_else(|e| panic!("freezing agent {name}: {e}"));
    }

    /// Runs the agent of host `name` again and waits for its ready line.
    pub fn start_agent(&mut self, name: &str) {
        let i = self.agent_index(name);
        self.cluster
            .rt
            .block_on(self.cluster.lab.start_agent(i))
            .unwrap_or_else(|e| panic!("restarting agent {name}: {e}"));
    }

    /// Where each guest runs according to `control`'s simulator (the ground truth): its name
    /// and the nodes running it (more than one is a violation the tests look for).
    pub fn running_in_pve(&self, control: &SimControl) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let vms = self
            .block_on(control.vms())
            .unwrap_or_else(|e| panic!("listing the simulator's guests: {e}"));
        for vm in vms {
            if vm.running && !vm.template {
                out.entry(vm.name.unwrap_or_default())
                    .or_default()
                    .push(vm.node);
            }
        }
        out
    }

    /// `pvefleet ARGS` (JSON output) run to its end while `control`'s simulator is sampled
    /// every 50 ms: at most one running copy of every guest at any time, and the command ends
    /// within `limit`.
    pub fn cli_sampled(
        &self,
        args: &[&str],
        control: &SimControl,
        limit: Duration,
    ) -> std::process::Output {
        self.cli_sampled_across(args, std::slice::from_ref(control), limit)
    }

    /// [`Fleet::cli_sampled`] over several simulators (PVE clusters) at once: a guest runs in
    /// at most one of them, on at most one node (an incoming live migration aside: two copies
    /// both locked `migrate`).
    pub fn cli_sampled_across(
        &self,
        args: &[&str],
        controls: &[SimControl],
        limit: Duration,
    ) -> std::process::Output {
        let program = self.cluster.cli_program();
        let mut full: Vec<String> = vec![
            "--config".into(),
            self.cluster.cli_config.display().to_string(),
            "--output".into(),
            "json".into(),
        ];
        full.extend(args.iter().map(|a| a.to_string()));
        let child = std::thread::spawn(move || {
            std::process::Command::new(program)
                .args(&full)
                .output()
                .unwrap_or_else(|e| panic!("running pvefleet: {e}"))
        });
        let started = Instant::now();
        while !child.is_finished() {
            assert!(started.elapsed() < limit, "pvefleet {args:?} hangs");
            // name -> (node, lock) of each running copy, over every simulator.
            let mut running: BTreeMap<String, Vec<(String, Option<String>)>> = BTreeMap::new();
            for control in controls {
                let vms = self
                    .block_on(control.vms())
                    .unwrap_or_else(|e| panic!("listing the simulator's guests: {e}"));
                for vm in vms.into_iter().filter(|v| v.running && !v.template) {
                    running
                        .entry(vm.name.unwrap_or_default())
                        .or_default()
                        .push((vm.node, vm.lock));
                }
            }
            for (name, copies) in running {
                // A live migration shows two QEMU processes, both locked `migrate`: the
                // source runs the guest, the target waits paused for its state. Two copies
                // otherwise, or any third, is the guest running twice.
                let in_move = copies.len() == 2
                    && copies
                        .iter()
                        .all(|(_, lock)| lock.as_deref() == Some("migrate"));
                assert!(
                    copies.len() <= 1 || in_move,
                    "{name} runs on {copies:?} at {:?} (pvefleet {args:?})",
                    started.elapsed()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        child
            .join()
            .unwrap_or_else(|_| panic!("pvefleet {args:?}: the thread panicked"))
    }

    /// The name of the host VM `vm` is placed on (panics if it is not placed).
    pub fn host_name_of(&self, vm: &str) -> String {
        let vms = self.vms().unwrap_or_else(|| panic!("no VM list"));
        let id = vms
            .iter()
            .find(|v| v.spec.name == vm)
            .and_then(|v| v.assignment.host)
            .unwrap_or_else(|| panic!("VM {vm} is not placed"));
        let hosts = self.cluster.cli_json(&["host", "ls"]);
        hosts["hosts"]
            .as_array()
            .and_then(|list| list.iter().find(|h| h["host"]["id"] == id))
            .and_then(|h| h["host"]["name"].as_str())
            .unwrap_or_else(|| panic!("host {id} of VM {vm} is not listed"))
            .to_string()
    }

    /// Runs a future on the fleet's runtime (for PVE API calls of a test).
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.cluster.block_on(f)
    }

    /// `pvefleet <kind> apply -f FILE` with `file` written as TOML.
    fn apply(&self, kind: &str, file: &impl serde::Serialize) {
        let path = self
            .dir
            .path()
            .join(format!("apply-{kind}-{}.toml", next_file_number()));
        std::fs::write(&path, toml::to_string(file).expect("spec serializes")).expect("write spec");
        self.cluster
            .cli_json(&[kind, "apply", "-f", path.to_str().expect("utf-8 path")]);
    }

    /// Applies the pool and range every test VM draws from ([`test_pool`], [`test_range`]).
    pub fn apply_resources(&self) {
        self.apply(
            "pool",
            &FleetSpecFile {
                pool: vec![test_pool()],
                ..FleetSpecFile::default()
            },
        );
        self.apply(
            "range",
            &FleetSpecFile {
                vmid_range: vec![test_range()],
                ..FleetSpecFile::default()
            },
        );
    }

    /// `pvefleet vm apply -f FILE` for `specs`.
    pub fn apply_vms(&self, specs: &[VmSpec]) {
        self.apply("vm", &VmSpecFile { vm: specs.to_vec() });
    }

    /// `pvefleet apply -f FILE` of `file`: the whole file as one write.
    pub fn apply_fleet(&self, file: &FleetSpecFile) {
        let path = self
            .dir
            .path()
            .join(format!("apply-fleet-{}.toml", next_file_number()));
        std::fs::write(&path, toml::to_string(file).expect("spec serializes")).expect("write spec");
        self.cluster
            .cli_json(&["apply", "-f", path.to_str().expect("utf-8 path")]);
    }

    /// `pvefleet vm delete NAME`.
    pub fn delete_vm(&self, name: &str) {
        self.cluster.cli_json(&["vm", "delete", name]);
    }

    /// `pvefleet vm ls --output json`; `None` while the cluster cannot answer (an election).
    pub fn vms(&self) -> Option<Vec<VmRecord>> {
        let out = self.cluster.cli(&["vm", "ls"]);
        if !out.status.success() {
            return None;
        }
        let reply: VmListReply = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "vm ls: not a VM list ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        Some(reply.vms)
    }

    /// Polls `vm ls` until `cond` holds (bounded); the VMs then. On timeout the failure shows
    /// every VM's phase and message.
    pub fn wait_vms(
        &self,
        what: &str,
        timeout: Duration,
        cond: impl Fn(&[VmRecord]) -> bool,
    ) -> Vec<VmRecord> {
        let deadline = Instant::now() + timeout;
        let mut last = Vec::new();
        loop {
            if let Some(vms) = self.vms() {
                if cond(&vms) {
                    return vms;
                }
                last = vms;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not reached within {timeout:?}; VMs now:\n{}",
                describe(&last)
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Every VM (templates left out) on the hosts whose PVE is a separate process, read
    /// through the PVE API.
    pub fn host_vms(&self) -> Vec<HostVm> {
        let mut all = Vec::new();
        for agent in self.agents() {
            let Some(node) = &agent.pve else { continue };
            let list = self
                .block_on(node.client().vm_list(&node.name, None))
                .unwrap_or_else(|e| panic!("list VMs of {}: {e}", node.name));
            all.extend(list.into_iter().filter(|v| !v.template).map(|v| HostVm {
                host: node.name.clone(),
                vmid: v.vmid,
                name: v.name.unwrap_or_default(),
                status: v.status,
            }));
        }
        all
    }

    /// The PVE host process of host `name`.
    pub fn pve(&self, name: &str) -> &PveNode {
        self.agents()
            .iter()
            .find(|a| a.host == name)
            .and_then(|a| a.pve.as_ref())
            .unwrap_or_else(|| panic!("host {name} has no PVE process"))
    }
}

/// A number for file names, new on each call.
fn next_file_number() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed).to_string()
}

/// One line per VM: name, phase, host, VMID, IPs, message.
pub fn describe(vms: &[VmRecord]) -> String {
    vms.iter()
        .map(|v| {
            format!(
                "  {} {} host={:?} vmid={:?} ips={:?} deleting={} msg={:?}",
                v.spec.name,
                v.status.phase,
                v.assignment.host,
                v.assignment.vmid,
                v.status.ips,
                v.deleting,
                v.status.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The pool test VMs draw addresses from.
pub fn test_pool() -> IpPoolSpec {
    IpPoolSpec {
        name: "lan".into(),
        cidr: "10.30.0.0/16".into(),
        gateway: Some("10.30.0.1".into()),
        range_start: "10.30.0.10".into(),
        range_end: "10.30.250.250".into(),
        dns: vec!["10.30.0.2".into()],
    }
}

/// The range test VMs draw VMIDs from.
pub fn test_range() -> VmidRangeSpec {
    VmidRangeSpec {
        name: "fleet".into(),
        start: 1000,
        end: 99_999,
    }
}

/// A small VM: a linked clone of `debian-12-cloud`, guest agent on, one NIC with an address
/// from [`test_pool`].
pub fn test_vm(name: &str) -> VmSpec {
    let mut spec = VmSpec::new(name, 512);
    spec.agent = true;
    spec.template = Some(TemplateSpec {
        name: Some("debian-12-cloud".into()),
        vmid: None,
        clone: CloneMode::Linked,
        storage: None,
    });
    spec.nics = vec![NicSpec {
        model: NicModel::Virtio,
        bridge: "vmbr0".into(),
        vlan: None,
        mac: None,
        firewall: false,
        mtu: None,
        ip: Some(NicIp::Pool("lan".into())),
    }];
    spec.cloud_init = Some(CloudInitSpec {
        user: Some("ops".into()),
        ..CloudInitSpec::default()
    });
    spec
}

/// Running, and the guest reported addresses.
pub fn running_with_ips(vm: &VmRecord) -> bool {
    !vm.deleting && vm.status.phase == VmPhase::Running && !vm.status.ips.is_empty()
}

/// Every VM named in `names` is running with addresses.
pub fn all_running_with_ips(vms: &[VmRecord], names: &[String]) -> bool {
    let by_name: BTreeMap<&str, &VmRecord> =
        vms.iter().map(|v| (v.spec.name.as_str(), v)).collect();
    names
        .iter()
        .all(|n| by_name.get(n.as_str()).is_some_and(|v| running_with_ips(v)))
}

/// How many VMs of each name the hosts hold.
pub fn count_by_name(vms: &[HostVm]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for v in vms {
        *counts.entry(v.name.clone()).or_insert(0) += 1;
    }
    counts
}
