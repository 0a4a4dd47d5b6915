//! The whole mutable cluster state behind one lock: nodes, storages with their volumes, VMs,
//! tasks and the seeded RNG. Operations take the lock, decide, mutate and release it; nothing
//! awaits while holding it.

use std::collections::BTreeMap;

use rand::rngs::StdRng;

use super::clock::now_unix_f64;
use super::config::text::VmConfig;
use super::mtunnel::tunnel::Tunnel;
use super::tasks::task::TaskRegistry;
use super::vm::{RunState, Vm, conf_missing};
use super::volumes::Storages;
use crate::ApiError;
use crate::certificate::CertificateInfo;
use crate::ha::HaResource;

/// One node.
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) name: String,
    pub(super) cpus: u32,
    pub(super) memory: u64,
    pub(super) bridges: Vec<String>,
    pub(super) ip: String,
    /// 1-based corosync node id.
    pub(super) nodeid: u32,
    /// Unix time the host booted (uptime, process start ticks).
    pub(super) boot_unix: f64,
    /// SHA-256 fingerprint of the certificate the node's API listener serves, once known.
    pub(super) ssl_fingerprint: Option<String>,
    /// The certificate itself, for `certificates/info`.
    pub(super) certificate: Option<CertificateInfo>,
    next_pid: u32,
}

impl Node {
    /// A node as configured.
    pub(super) fn new(cfg: &crate::config::NodeConfig, index: usize, now: f64) -> Self {
        let i = u32::try_from(index).unwrap_or(0);
        Self {
            name: cfg.name.clone(),
            cpus: cfg.cpus,
            memory: cfg.memory,
            bridges: cfg.bridges.clone(),
            ip: cfg
                .ip
                .clone()
                .unwrap_or_else(|| format!("192.0.2.{}", 10 + i + 1)),
            nodeid: i + 1,
            // Hosts have been up a few days, each a little differently.
            boot_unix: now - 3.0 * 86_400.0 - f64::from(i) * 7_919.0,
            ssl_fingerprint: None,
            certificate: None,
            next_pid: 4_000 + 1_000 * i,
        }
    }

    /// A fresh process id (workers and QEMU processes share the counter, as on a host).
    pub(super) fn alloc_pid(&mut self) -> u32 {
        self.next_pid += 1;
        self.next_pid
    }

    /// Clock ticks (100 Hz) since boot: a process's `pstart`.
    pub(super) fn ticks_now(&self) -> u64 {
        let t = (now_unix_f64() - self.boot_unix) * 100.0;
        if t <= 0.0 { 0 } else { t as u64 }
    }

    /// Seconds since boot.
    pub(super) fn uptime(&self) -> u64 {
        let t = now_unix_f64() - self.boot_unix;
        if t <= 0.0 { 0 } else { t as u64 }
    }
}

/// Everything that changes.
pub(super) struct State {
    pub(super) nodes: Vec<Node>,
    pub(super) storages: Storages,
    pub(super) vms: BTreeMap<u32, Vm>,
    pub(super) tasks: TaskRegistry,
    pub(super) rng: StdRng,
    /// PVE's HA resources (`/etc/pve/ha/resources.cfg`) by sid (`vm:100`).
    pub(super) ha: BTreeMap<String, HaResource>,
    /// Incoming remote migrations: the open `mtunnel` endpoints by VMID.
    pub(super) tunnels: BTreeMap<u32, Tunnel>,
}

impl State {
    /// A node by name.
    pub(super) fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// A node by name, mutable.
    pub(super) fn node_mut(&mut self, name: &str) -> Option<&mut Node> {
        self.nodes.iter_mut().find(|n| n.name == name)
    }

    /// A fresh pid on `node` (0 when the node is unknown).
    pub(super) fn alloc_pid(&mut self, node: &str) -> u32 {
        self.node_mut(node).map_or(0, Node::alloc_pid)
    }

    /// The VM if its config lives on `node`.
    pub(super) fn vm_on(&self, node: &str, vmid: u32) -> Option<&Vm> {
        self.vms.get(&vmid).filter(|v| v.node == node)
    }

    /// The VM if its config lives on `node`, mutable.
    pub(super) fn vm_on_mut(&mut self, node: &str, vmid: u32) -> Option<&mut Vm> {
        self.vms.get_mut(&vmid).filter(|v| v.node == node)
    }

    /// `load_config` on `node`: the VM or 500 `Configuration file ... does not exist`.
    pub(super) fn load(&self, node: &str, vmid: u32) -> Result<&Vm, ApiError> {
        self.vm_on(node, vmid)
            .ok_or_else(|| ApiError::internal(conf_missing(node, vmid)))
    }

    /// PVE's `create_and_lock_config`: an empty config of `vmid` on `node`, locked `create`
    /// (the caller checked that the VMID is free).
    pub(super) fn create_locked_config(&mut self, node: &str, vmid: u32) {
        let mut conf = VmConfig::default();
        conf.set("lock", "create");
        self.vms.insert(
            vmid,
            Vm {
                vmid,
                node: node.to_string(),
                conf,
                run: RunState::default(),
            },
        );
    }

    /// As [`State::load`] for task code, with a plain message.
    pub(super) fn load_mut(&mut self, node: &str, vmid: u32) -> Result<&mut Vm, String> {
        self.vm_on_mut(node, vmid)
            .ok_or_else(|| conf_missing(node, vmid))
    }
}
