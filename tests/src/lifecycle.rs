//! The full VM lifecycle every client backend must carry: clone from a template → configure
//! (CPU, memory, NIC, disk resize, cloud-init with a user-data snippet) → start → guest IPs →
//! snapshot and rollback → migrate → stop → destroy. Each step checks what PVE would show.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use pve::calls::{
    CloneOptions, ConfigChanges, ConfigView, DestroyOptions, MigrateOptions, ResizeOptions,
    SnapshotOptions, StartOptions, StopOptions,
};
use pve::props::{AgentConfig, IpConfig, NetDevice, SizeChange};
use pve::{Client, PveError};
use pve_sim::Sim;

/// A failed expectation of a scenario, with what was seen.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A client call failed.
    #[error("{step}: {source}")]
    Call {
        /// The step.
        step: &'static str,
        /// The error.
        #[source]
        source: Box<PveError>,
    },
    /// The state seen was not the state expected.
    #[error("{step}: {detail}")]
    Check {
        /// The step.
        step: &'static str,
        /// What was expected and seen.
        detail: String,
    },
}

trait Step<T> {
    fn at(self, step: &'static str) -> Result<T, ScenarioError>;
}

impl<T> Step<T> for Result<T, PveError> {
    fn at(self, step: &'static str) -> Result<T, ScenarioError> {
        self.map_err(|source| ScenarioError::Call {
            step,
            source: Box::new(source),
        })
    }
}

fn check(
    ok: bool,
    step: &'static str,
    detail: impl FnOnce() -> String,
) -> Result<(), ScenarioError> {
    if ok {
        Ok(())
    } else {
        Err(ScenarioError::Check {
            step,
            detail: detail(),
        })
    }
}

/// Time per phase of one lifecycle run.
#[derive(Debug, Clone, Default)]
pub struct LifecycleReport {
    /// The VMID used.
    pub vmid: u32,
    /// Clone → configured → running with guest IPs.
    pub clone_to_ready: Duration,
    /// The whole lifecycle.
    pub total: Duration,
}

/// Where the scenario runs: the template and the two nodes.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Node holding the template and the new VM.
    pub node: String,
    /// Migration target.
    pub target: String,
    /// Template VMID (on shared storage, so the linked clone can migrate).
    pub template: u32,
    /// Static address the guest gets through cloud-init.
    pub ip: Ipv4Addr,
    /// Whether the backend may send secrets (`pvesh` refuses them on argv).
    pub with_password: bool,
    /// How long to wait for one task.
    pub task_timeout: Duration,
}

impl Plan {
    /// The default cluster's template 9000 on pve1, migrating to pve2.
    pub fn default_cluster(ip: Ipv4Addr) -> Self {
        Self {
            node: "pve1".into(),
            target: "pve2".into(),
            template: 9000,
            ip,
            with_password: true,
            task_timeout: Duration::from_secs(60),
        }
    }
}

/// Clone → configure → start → IPs; returns the new VMID. Used alone by the benchmark.
pub async fn clone_to_ready(
    client: &Client,
    sim: &Sim,
    plan: &Plan,
    name: &str,
) -> Result<u32, ScenarioError> {
    let node = plan.node.as_str();
    let t = plan.task_timeout;
    let vmid = client.next_id(None).await.at("nextid")?;
    let upid = client
        .clone_vm(
            node,
            plan.template,
            vmid,
            &CloneOptions {
                name: Some(name.into()),
                ..Default::default()
            },
        )
        .await
        .at("clone")?;
    check(
        upid.node == node && upid.kind == "qmclone" && upid.vmid() == Some(plan.template),
        "clone",
        || {
            format!(
                "UPID {upid} should be a qmclone of {} on {node}",
                plan.template
            )
        },
    )?;
    client.wait_task(&upid, t).await.at("clone task")?;

    let snippet = format!("{name}-user.yaml");
    let volid = sim
        .write_snippet(
            node,
            "local",
            &snippet,
            "#cloud-config\npackages: [nginx]\n",
        )
        .map_err(|e| ScenarioError::Check {
            step: "snippet",
            detail: e.to_string(),
        })?;
    let net: NetDevice = "virtio,bridge=vmbr0,tag=10,firewall=1".parse().at("net0")?;
    let ipcfg: IpConfig = format!("ip={}/24,gw=10.20.0.1", plan.ip)
        .parse()
        .at("ipconfig0")?;
    let agent: AgentConfig = "enabled=1".parse().at("agent")?;
    let mut changes = ConfigChanges::new()
        .cores(2)
        .sockets(1)
        .memory_mib(2048)
        .net(0, &net)
        .ipconfig(0, &ipcfg)
        .agent(&agent)
        .ciuser("ops")
        .sshkeys("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk ops@example\n")
        .nameserver(&[IpAddr::V4(Ipv4Addr::new(10, 20, 0, 53))])
        .searchdomain(&["fleet.example"])
        .cicustom(&format!("user={volid}"))
        .tags(&["pvefleet", "web"])
        .onboot(true)
        .description("managed by pvefleet tests");
    if plan.with_password {
        changes = changes.cipassword("correct horse battery staple");
    }
    client
        .update_vm(node, vmid, &changes)
        .await
        .at("configure")?;
    let upid = client
        .resize_disk(
            node,
            vmid,
            "scsi0".parse().at("disk slot")?,
            SizeChange::Grow(4 << 30),
            &ResizeOptions::default(),
        )
        .await
        .at("resize")?;
    client.wait_task(&upid, t).await.at("resize task")?;

    let cfg = client
        .vm_config(node, vmid, &ConfigView::Current)
        .await
        .at("read config")?;
    let (cores, memory) = (cfg.cores().at("cores")?, cfg.memory_mib().at("memory")?);
    check(
        cores == Some(2) && memory == Some(2048),
        "read config",
        || format!("{cfg:?}"),
    )?;
    check(
        cfg.digest().is_some_and(|d| d.len() == 40),
        "read config",
        || "digest missing".into(),
    )?;
    let scsi0 = cfg.get_str("scsi0").unwrap_or_default().to_string();
    check(scsi0.contains("size=12G"), "resize", || {
        format!("scsi0 = {scsi0}, expected 8G+4G")
    })?;
    check(
        cfg.get_str("sshkeys").is_some_and(|k| k.contains("%20")),
        "sshkeys",
        || {
            format!(
                "sshkeys must be stored URL-encoded: {:?}",
                cfg.get_str("sshkeys")
            )
        },
    )?;

    let upid = client
        .vm_start(node, vmid, &StartOptions::default())
        .await
        .at("start")?;
    client.wait_task(&upid, t).await.at("start task")?;
    let ips = client.wait_guest_ips(node, vmid, t).await.at("guest ips")?;
    check(ips.contains(&IpAddr::V4(plan.ip)), "guest ips", || {
        format!("{ips:?} lacks {}", plan.ip)
    })?;
    Ok(vmid)
}

/// Poll until the VM's status is `want` (bounded by `timeout`).
pub async fn wait_status(
    client: &Client,
    node: &str,
    vmid: u32,
    want: &str,
    timeout: Duration,
) -> Result<(), ScenarioError> {
    let deadline = Instant::now() + timeout;
    loop {
        let status = client.vm_status(node, vmid).await.at("wait status")?;
        if status.status == want {
            return Ok(());
        }
        check(Instant::now() < deadline, "wait status", || {
            format!("VM {vmid} still {} after {timeout:?}", status.status)
        })?;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The whole lifecycle on `client`.
pub async fn full_lifecycle(
    client: &Client,
    sim: &Sim,
    plan: &Plan,
    name: &str,
) -> Result<LifecycleReport, ScenarioError> {
    let started = Instant::now();
    let node = plan.node.as_str();
    let t = plan.task_timeout;
    let vmid = clone_to_ready(client, sim, plan, name).await?;
    let clone_to_ready = started.elapsed();

    let status = client.vm_status(node, vmid).await.at("status")?;
    check(status.status == "running", "status", || {
        format!("{status:?}")
    })?;

    // Snapshot, change, roll back.
    let upid = client
        .create_snapshot(
            node,
            vmid,
            "before-change",
            &SnapshotOptions {
                description: Some("lifecycle".into()),
                ..Default::default()
            },
        )
        .await
        .at("snapshot")?;
    client.wait_task(&upid, t).await.at("snapshot task")?;
    // `name` is applied live and kept in snapshots (a VM's `description` is not: in a
    // snapshot section that key is the snapshot's own description).
    client
        .update_vm(node, vmid, &ConfigChanges::new().name("renamed"))
        .await
        .at("change")?;
    let upid = client
        .rollback_snapshot(node, vmid, "before-change", Some(true))
        .await
        .at("rollback")?;
    client.wait_task(&upid, t).await.at("rollback task")?;
    let cfg = client
        .vm_config(node, vmid, &ConfigView::Current)
        .await
        .at("config after rollback")?;
    check(
        cfg.get_str("name").as_deref() == Some(name),
        "rollback",
        || {
            format!(
                "name after rollback: {:?}, expected {name}",
                cfg.get_str("name")
            )
        },
    )?;
    let snaps = client.snapshots(node, vmid).await.at("snapshots")?;
    check(
        snaps.iter().any(|s| s.name == "before-change"),
        "snapshots",
        || format!("{snaps:?}"),
    )?;

    // Rollback with `start` forks a separate start task (as PVE's handler calls vm_start):
    // the VM is running again only once that task is done.
    wait_status(client, node, vmid, "running", t).await?;

    // Online migration (linked clone on shared storage).
    let running = client
        .vm_status(node, vmid)
        .await
        .at("status before migrate")?;
    let online = running.status == "running";
    let upid = client
        .migrate_vm(
            node,
            vmid,
            &plan.target,
            &MigrateOptions {
                online: Some(online),
                ..Default::default()
            },
        )
        .await
        .at("migrate")?;
    check(
        upid.node == node && upid.kind == "qmigrate",
        "migrate",
        || format!("UPID {upid}"),
    )?;
    client.wait_task(&upid, t).await.at("migrate task")?;
    let moved = client
        .vm_status(&plan.target, vmid)
        .await
        .at("status on target")?;
    check(moved.status == running.status, "migrate", || {
        format!("{moved:?} after migrating a {} VM", running.status)
    })?;
    let gone = client.vm_status(node, vmid).await;
    check(
        gone.as_ref().err().is_some_and(PveError::is_missing_config),
        "migrate",
        || format!("source node still answers for the VM: {gone:?}"),
    )?;

    // Stop and destroy on the new node.
    let target = plan.target.as_str();
    let upid = client
        .vm_stop(target, vmid, &StopOptions::default())
        .await
        .at("stop")?;
    client.wait_task(&upid, t).await.at("stop task")?;
    let upid = client
        .destroy_vm(
            target,
            vmid,
            &DestroyOptions {
                purge: Some(true),
                destroy_unreferenced_disks: Some(true),
                ..Default::default()
            },
        )
        .await
        .at("destroy")?;
    client.wait_task(&upid, t).await.at("destroy task")?;
    let after = client.vm_status(target, vmid).await;
    check(
        after
            .as_ref()
            .err()
            .is_some_and(PveError::is_missing_config),
        "destroy",
        || format!("{after:?}"),
    )?;
    check(sim.vm_node(vmid).is_none(), "destroy", || {
        "simulator still has the VM".into()
    })?;
    Ok(LifecycleReport {
        vmid,
        clone_to_ready,
        total: started.elapsed(),
    })
}
