//! What the VM-operation and executor tests share: a one-node simulated PVE (`pve1`, a `dir`
//! storage with snippets, an LVM-thin storage, the `debian-12-cloud` template 9000, tasks that
//! finish at once), [`VmOps`] over it through a backend that records every call, and spec
//! builders.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};

use node_agent::ops::{SnippetError, SnippetWriter, VmOps};
use protocol::agent::EnsureVm;
use protocol::fleet::NicAddress;
use protocol::spec::{
    CloneMode, CloudInitSpec, DiskOptions, DiskSpec, NicIp, NicSpec, TemplateSpec, VmSpec,
};
use pve::backend::BoxFuture;
use pve::calls::ConfigView;
use pve::types::VmConfig;
use pve::{ApiReply, ApiRequest, Backend, Method, PveError};
use pve_sim::config::{NodeConfig, StorageConfig, TemplateConfig};
use pve_sim::{Caller, Sim, SimBackend, SimConfig};

/// Hands snippets to the in-process simulator (as the lab platform's writer hands them to a
/// `pve-sim` process).
#[derive(Debug, Clone)]
pub(crate) struct SimSnippetWriter(pub(crate) Sim);

impl SimSnippetWriter {
    /// Writes into `sim`'s storages.
    pub(crate) fn new(sim: Sim) -> Self {
        Self(sim)
    }
}

impl SnippetWriter for SimSnippetWriter {
    fn write<'a>(
        &'a self,
        node: &'a str,
        storage: &'a str,
        file: &'a str,
        content: &'a str,
    ) -> BoxFuture<'a, Result<String, SnippetError>> {
        Box::pin(async move {
            self.0
                .write_snippet(node, storage, file, content)
                .map_err(|e| SnippetError::Simulator(e.message))
        })
    }

    fn remove<'a>(
        &'a self,
        _node: &'a str,
        _storage: &'a str,
        _file: &'a str,
    ) -> BoxFuture<'a, Result<bool, SnippetError>> {
        Box::pin(async {
            Err(SnippetError::Unsupported(
                "the simulator offers no way to remove a snippet file",
            ))
        })
    }
}

/// The node every test runs on.
pub(crate) const NODE: &str = "pve1";
/// The template's VMID.
pub(crate) const TEMPLATE: u32 = 9000;

/// A backend that records each call (method and path) before passing it on.
#[derive(Debug, Clone)]
pub(crate) struct Recording {
    inner: SimBackend,
    calls: Arc<Mutex<Vec<(Method, String)>>>,
}

impl Backend for Recording {
    fn call<'a>(&'a self, req: &'a ApiRequest) -> BoxFuture<'a, Result<ApiReply, PveError>> {
        self.calls
            .lock()
            .unwrap()
            .push((req.method, req.path.clone()));
        self.inner.call(req)
    }

    fn endpoint(&self) -> String {
        self.inner.endpoint()
    }

    fn api_user(&self) -> Option<String> {
        self.inner.api_user()
    }

    fn is_root(&self) -> bool {
        self.inner.is_root()
    }
}

/// A simulated node with the agent's operations on it.
pub(crate) struct Harness {
    pub(crate) sim: Sim,
    pub(crate) ops: VmOps,
    pub(crate) client: pve::Client,
    calls: Arc<Mutex<Vec<(Method, String)>>>,
}

impl Harness {
    /// Calls made so far with `method` whose path ends with `suffix`.
    pub(crate) fn count(&self, method: Method, suffix: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, p)| *m == method && p.ends_with(suffix))
            .count()
    }

    /// Forgets the recorded calls.
    pub(crate) fn reset_calls(&self) {
        self.calls.lock().unwrap().clear();
    }

    /// The VM's config (pending values applied).
    pub(crate) async fn config(&self, vmid: u32) -> VmConfig {
        self.client
            .vm_config(NODE, vmid, &ConfigView::WithPending)
            .await
            .unwrap()
    }

    /// The VM's config as it is in effect now.
    pub(crate) async fn current_config(&self, vmid: u32) -> VmConfig {
        self.client
            .vm_config(NODE, vmid, &ConfigView::Current)
            .await
            .unwrap()
    }

    /// One config value as text.
    pub(crate) async fn value(&self, vmid: u32, key: &str) -> Option<String> {
        self.config(vmid).await.get_str(key)
    }

    /// The VMIDs of the node's VMs named `name` (templates excluded).
    pub(crate) async fn vms_named(&self, name: &str) -> Vec<u32> {
        self.client
            .vm_list(NODE, None)
            .await
            .unwrap()
            .into_iter()
            .filter(|v| !v.template && v.name.as_deref() == Some(name))
            .map(|v| v.vmid)
            .collect()
    }
}

fn storage(id: &str, kind: &str, content: &[&str]) -> StorageConfig {
    StorageConfig {
        id: id.into(),
        kind: kind.into(),
        content: content.iter().map(|c| c.to_string()).collect(),
        shared: false,
        total: 1 << 40,
        nodes: vec![],
    }
}

/// One node, `local` (dir: images, iso, snippets), `local-lvm` (lvmthin), template 9000.
pub(crate) fn sim_config() -> SimConfig {
    SimConfig {
        nodes: vec![NodeConfig {
            name: NODE.into(),
            cpus: 16,
            memory: 64 << 30,
            bridges: vec!["vmbr0".into(), "vmbr1".into()],
            ip: Some("192.0.2.11".into()),
        }],
        storages: vec![
            storage(
                "local",
                "dir",
                &["iso", "vztmpl", "backup", "snippets", "images"],
            ),
            storage("local-lvm", "lvmthin", &["images", "rootdir"]),
        ],
        templates: vec![TemplateConfig {
            vmid: TEMPLATE,
            name: "debian-12-cloud".into(),
            node: NODE.into(),
            storage: "local-lvm".into(),
            disk_gib: 8,
            memory_mib: 2048,
            agent: true,
        }],
        ..SimConfig::fast()
    }
}

/// [`sim_config`] without any storage holding snippets.
pub(crate) fn sim_config_without_snippets() -> SimConfig {
    let mut cfg = sim_config();
    cfg.storages[0] = storage("local", "dir", &["iso", "vztmpl", "backup", "images"]);
    cfg
}

/// The harness on `config`.
pub(crate) fn harness_with(config: SimConfig) -> Harness {
    let sim = Sim::new(config).unwrap();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let backend = Recording {
        inner: SimBackend::new(sim.clone(), Caller::token("root@pam", "fleet"), NODE),
        calls: Arc::clone(&calls),
    };
    let client = pve::Client::new(backend);
    let ops = VmOps::new(client.clone(), NODE)
        .with_snippets(Arc::new(SimSnippetWriter::new(sim.clone())));
    Harness {
        sim,
        ops,
        client,
        calls,
    }
}

/// The harness on [`sim_config`].
pub(crate) fn harness() -> Harness {
    harness_with(sim_config())
}

/// A web VM linked-cloned from the template by name: 2 cores, 2 GiB, disk grown to 20 GiB,
/// one NIC on vmbr0 VLAN 10 with a pool address, guest agent, cloud-init with user data.
pub(crate) fn web_spec(name: &str) -> VmSpec {
    let mut spec = VmSpec::new(name, 2048);
    spec.cores = 2;
    spec.tags = vec!["web".into()];
    spec.description = "Web frontend".into();
    spec.agent = true;
    spec.template = Some(TemplateSpec {
        name: Some("debian-12-cloud".into()),
        vmid: None,
        clone: CloneMode::Linked,
        storage: None,
    });
    spec.disks = vec![DiskSpec {
        slot: "scsi0".into(),
        storage: None,
        size_gib: 20,
        options: DiskOptions::default(),
    }];
    spec.nics = vec![NicSpec {
        model: Default::default(),
        bridge: "vmbr0".into(),
        vlan: Some(10),
        mac: None,
        firewall: true,
        mtu: None,
        ip: Some(NicIp::Pool("lan".into())),
    }];
    spec.cloud_init = Some(CloudInitSpec {
        user: Some("ops".into()),
        ssh_keys: vec!["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk ops@laptop".into()],
        dns_servers: vec![],
        search_domain: Some("fleet.example".into()),
        user_data: Some("#cloud-config\npackages: [nginx]\n".into()),
    });
    spec
}

/// The address the pool `lan` gave NIC 0.
pub(crate) fn pool_ip() -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, 5))
}

/// An ensure of `spec` at `vmid`, generation 1, NIC 0's pool address from [`pool_ip`].
pub(crate) fn ensure_cmd(spec: VmSpec, vmid: u32) -> EnsureVm {
    EnsureVm {
        spec,
        generation: 1,
        vmid,
        ips: vec![NicAddress {
            nic: 0,
            pool: "lan".into(),
            address: pool_ip(),
            prefix_len: 24,
            gateway: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
        }],
        pool_dns: vec!["10.0.0.53".into()],
        ip_wait_secs: 5,
        take_over: None,
    }
}
