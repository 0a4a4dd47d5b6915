#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! Ensure against a simulated PVE node: clone (by name, by VMID, linked and full) or create,
//! configure everything the spec says (cloud-init snippet, pool addresses, managed notes),
//! nothing more on a second run, drift repaired, pending changes and the restart policy,
//! refused shrinks, and VMs the fleet does not own left untouched.

use crate::ops_support;

use std::net::IpAddr;

use node_agent::ops::notes;
use ops_support::{
    NODE, TEMPLATE, ensure_cmd, harness, harness_with, pool_ip, sim_config_without_snippets,
    web_spec,
};
use protocol::agent::FailureKind;
use protocol::spec::{
    Bios, CloneMode, DesiredState, DiskOptions, DiskSpec, NicIp, OsType, RestartPolicy,
    ScsiController, TemplateSpec,
};
use pve::Method;
use pve::calls::{CloneOptions, ConfigChanges, CreateOptions, StorageContent};

#[tokio::test]
async fn linked_clone_by_name_is_configured_as_the_spec_says() {
    let h = harness();
    let obs = h
        .ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    assert_eq!((obs.vmid, obs.generation, obs.running), (101, 1, true));
    assert_eq!(
        obs.ips,
        vec![pool_ip()],
        "guest agent reports the pool address"
    );
    assert!(obs.pending_restart.is_empty(), "{:?}", obs.pending_restart);
    assert_eq!(obs.digest.len(), 40);

    let cfg = h.config(101).await;
    let v = |k: &str| cfg.get_str(k).unwrap_or_default();
    assert_eq!(v("name"), "web-1");
    assert_eq!((v("cores"), v("memory")), ("2".into(), "2048".into()));
    assert_eq!(v("tags"), "pvefleet;web");
    assert_eq!(v("agent"), "1");
    let scsi0 = v("scsi0");
    assert!(
        scsi0.contains("base-9000-disk-0/vm-101-disk") && scsi0.contains("size=20G"),
        "linked clone grown to 20G: {scsi0}"
    );
    let net0 = v("net0");
    assert!(
        net0.starts_with("virtio=BC:24:11:") && net0.contains("bridge=vmbr0"),
        "{net0}"
    );
    assert!(
        net0.contains("tag=10") && net0.contains("firewall=1"),
        "{net0}"
    );
    assert_eq!(v("ipconfig0"), "ip=10.0.0.5/24,gw=10.0.0.1");
    assert_eq!(
        v("nameserver"),
        "10.0.0.53",
        "the pool's DNS without spec DNS"
    );
    assert_eq!(v("searchdomain"), "fleet.example");
    assert_eq!(v("ciuser"), "ops");
    assert!(
        v("sshkeys").contains("ssh-ed25519%20AAAA"),
        "URL-encoded: {}",
        v("sshkeys")
    );
    assert_eq!(v("cicustom"), "user=local:snippets/pvefleet-web-1.yaml");
    let description = v("description");
    assert!(description.starts_with("Web frontend\n\n"), "{description}");
    assert_eq!(
        notes::parse(&description),
        Some(notes::ManagedNotes {
            vm: "web-1".into(),
            generation: 1,
            ha: false,
        })
    );
    let snippets = h
        .client
        .storage_content(NODE, "local", Some(StorageContent::Snippets), None)
        .await
        .unwrap();
    assert!(
        snippets
            .iter()
            .any(|s| s.volid == "local:snippets/pvefleet-web-1.yaml"),
        "{snippets:?}"
    );
    assert_eq!(h.count(Method::Post, "/clone"), 1);
}

#[tokio::test]
async fn full_clone_by_vmid_lands_on_the_requested_storage() {
    let h = harness();
    let mut spec = web_spec("db-1");
    spec.template = Some(TemplateSpec {
        name: None,
        vmid: Some(TEMPLATE),
        clone: CloneMode::Full,
        storage: Some("local".into()),
    });
    h.ops.ensure(&ensure_cmd(spec, 102)).await.unwrap();
    let scsi0 = h.value(102, "scsi0").await.unwrap();
    assert!(
        scsi0.starts_with("local:102/vm-102-disk") && !scsi0.contains("base-"),
        "full copy on local: {scsi0}"
    );
    assert!(scsi0.contains("size=20G"), "{scsi0}");
}

#[tokio::test]
async fn a_vm_without_template_is_created_with_its_disks_uefi_and_cloud_init_drive() {
    let h = harness();
    let mut spec = web_spec("scratch");
    spec.template = None;
    spec.agent = false;
    spec.sockets = 2;
    spec.balloon_mib = Some(1024);
    spec.cpu = Some("host".into());
    spec.machine = Some("q35".into());
    spec.bios = Some(Bios::Ovmf);
    spec.scsihw = Some(ScsiController::VirtioScsiSingle);
    spec.ostype = Some(OsType::L26);
    spec.disks = vec![
        DiskSpec {
            slot: "scsi0".into(),
            storage: Some("local-lvm".into()),
            size_gib: 16,
            options: DiskOptions {
                ssd: true,
                discard: true,
                iothread: true,
                cache: None,
            },
        },
        DiskSpec {
            slot: "virtio1".into(),
            storage: Some("local".into()),
            size_gib: 4,
            options: DiskOptions::default(),
        },
    ];
    spec.nics[0].ip = Some(NicIp::Static {
        address: "192.168.10.20/24".into(),
        gateway: Some("192.168.10.1".into()),
    });
    let obs = h.ops.ensure(&ensure_cmd(spec, 103)).await.unwrap();
    assert!(obs.running);
    let want: IpAddr = "192.168.10.20".parse().unwrap();
    assert_eq!(
        obs.ips,
        vec![want],
        "no guest agent: the configured address"
    );

    let cfg = h.config(103).await;
    let v = |k: &str| cfg.get_str(k).unwrap_or_default();
    assert_eq!((v("sockets"), v("balloon")), ("2".into(), "1024".into()));
    assert_eq!(
        (v("cpu"), v("machine"), v("bios")),
        ("host".into(), "q35".into(), "ovmf".into())
    );
    assert_eq!(
        (v("scsihw"), v("ostype")),
        ("virtio-scsi-single".into(), "l26".into())
    );
    let scsi0 = v("scsi0");
    assert!(scsi0.starts_with("local-lvm:vm-103-disk-"), "{scsi0}");
    for opt in ["discard=on", "iothread=1", "ssd=1", "size=16G"] {
        assert!(scsi0.contains(opt), "{opt} in {scsi0}");
    }
    assert!(v("virtio1").contains("size=4G"), "{}", v("virtio1"));
    assert!(
        v("efidisk0").starts_with("local-lvm:vm-103-disk-"),
        "{}",
        v("efidisk0")
    );
    assert!(v("efidisk0").contains("efitype=4m"), "{}", v("efidisk0"));
    assert_eq!(v("ide2"), "local-lvm:vm-103-cloudinit,media=cdrom");
    assert_eq!(v("ipconfig0"), "ip=192.168.10.20/24,gw=192.168.10.1");
    assert_eq!(h.count(Method::Post, "/qemu"), 1, "one create call");
    assert_eq!(
        h.count(Method::Put, "/config"),
        0,
        "everything went into the create call"
    );
}

#[tokio::test]
async fn ensuring_again_changes_nothing() {
    let h = harness();
    let cmd = ensure_cmd(web_spec("web-1"), 101);
    let first = h.ops.ensure(&cmd).await.unwrap();
    h.reset_calls();
    let second = h.ops.ensure(&cmd).await.unwrap();
    assert_eq!(second, first);
    for method in [Method::Post, Method::Put, Method::Delete] {
        assert_eq!(h.count(method, ""), 0, "{method} calls on a re-run");
    }
}

#[tokio::test]
async fn drift_behind_the_fleets_back_is_repaired() {
    let h = harness();
    let cmd = ensure_cmd(web_spec("web-1"), 101);
    h.ops.ensure(&cmd).await.unwrap();
    assert!(h.sim.set_vm_running(101, false));
    h.client
        .update_vm(
            NODE,
            101,
            &ConfigChanges::new().memory_mib(4096).tags(&["web"]),
        )
        .await
        .unwrap();

    let obs = h.ops.ensure(&cmd).await.unwrap();
    assert!(obs.running, "started again");
    assert_eq!(h.sim.vm_running(101), Some(true));
    assert_eq!(h.value(101, "memory").await.as_deref(), Some("2048"));
    assert_eq!(h.value(101, "tags").await.as_deref(), Some("pvefleet;web"));
}

#[tokio::test]
async fn cold_changes_stay_pending_unless_the_spec_allows_a_restart() {
    let h = harness();
    let mut spec = web_spec("web-1");
    h.ops.ensure(&ensure_cmd(spec.clone(), 101)).await.unwrap();

    spec.cores = 4;
    spec.nics[0].bridge = "vmbr1".into();
    let mut cmd = ensure_cmd(spec.clone(), 101);
    cmd.generation = 2;
    let obs = h.ops.ensure(&cmd).await.unwrap();
    assert_eq!(obs.pending_restart, vec!["cores".to_string()]);
    let now = h.current_config(101).await;
    assert_eq!(now.cores().unwrap(), Some(2), "cores wait for a restart");
    assert!(
        now.get_str("net0").unwrap().contains("bridge=vmbr1"),
        "the NIC change is hot-plugged"
    );

    spec.restart = RestartPolicy::Allowed;
    let mut cmd = ensure_cmd(spec, 101);
    cmd.generation = 3;
    let obs = h.ops.ensure(&cmd).await.unwrap();
    assert!(obs.pending_restart.is_empty(), "{:?}", obs.pending_restart);
    assert!(obs.running);
    assert_eq!(h.current_config(101).await.cores().unwrap(), Some(4));
    assert_eq!(h.count(Method::Post, "/status/shutdown"), 1, "one restart");
}

#[tokio::test]
async fn shrinking_a_disk_is_refused_naming_the_slot() {
    let h = harness();
    let mut spec = web_spec("web-1");
    let obs = h.ops.ensure(&ensure_cmd(spec.clone(), 101)).await.unwrap();
    spec.disks[0].size_gib = 10;
    spec.memory_mib = 4096;
    let err = h.ops.ensure(&ensure_cmd(spec, 101)).await.unwrap_err();
    assert_eq!(err.kind, FailureKind::Permanent);
    assert!(
        err.message.contains("scsi0") && err.message.contains("shrunk"),
        "{}",
        err.message
    );
    assert_eq!(
        h.config(101).await.digest().unwrap(),
        obs.digest,
        "nothing changed"
    );
}

#[tokio::test]
async fn a_vm_the_fleet_does_not_own_is_left_untouched() {
    let h = harness();
    let foreign = ConfigChanges::new().name("web-1").memory_mib(1024);
    let upid = h
        .client
        .create_vm(NODE, 150, &foreign, &CreateOptions::default())
        .await
        .unwrap();
    h.client
        .wait_task(&upid, std::time::Duration::from_secs(10))
        .await
        .unwrap();
    let before = h.config(150).await.digest();
    h.reset_calls();

    let err = h
        .ops
        .ensure(&ensure_cmd(web_spec("web-1"), 150))
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::NotOwned, "{}", err.message);
    assert!(err.message.contains("pvefleet"), "{}", err.message);
    let err = h
        .ops
        .ensure(&ensure_cmd(web_spec("web-2"), 150))
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::NotOwned);
    assert!(err.message.contains("named 'web-1'"), "{}", err.message);

    assert_eq!(h.config(150).await.digest(), before);
    for method in [Method::Post, Method::Put, Method::Delete] {
        assert_eq!(h.count(method, ""), 0, "{method} calls on a foreign VM");
    }
}

#[tokio::test]
async fn a_clone_left_unconfigured_by_a_crash_is_adopted() {
    let h = harness();
    // What the agent's clone leaves before its first configure: the name and the notes block.
    let opts = CloneOptions {
        name: Some("web-1".into()),
        description: Some(notes::render_block("web-1", 1, false)),
        full: Some(false),
        ..CloneOptions::default()
    };
    let upid = h.client.clone_vm(NODE, TEMPLATE, 101, &opts).await.unwrap();
    h.client
        .wait_task(&upid, std::time::Duration::from_secs(10))
        .await
        .unwrap();
    h.reset_calls();

    let obs = h
        .ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    assert!(obs.running);
    assert_eq!(h.count(Method::Post, "/clone"), 0, "no second clone");
    assert_eq!(h.value(101, "tags").await.as_deref(), Some("pvefleet;web"));
    assert_eq!(h.vms_named("web-1").await, vec![101]);
}

#[tokio::test]
async fn a_stopped_spec_shuts_the_vm_down() {
    let h = harness();
    let mut spec = web_spec("web-1");
    h.ops.ensure(&ensure_cmd(spec.clone(), 101)).await.unwrap();
    spec.state = DesiredState::Stopped;
    let obs = h.ops.ensure(&ensure_cmd(spec, 101)).await.unwrap();
    assert!(!obs.running);
    assert!(obs.ips.is_empty());
    assert_eq!(h.sim.vm_running(101), Some(false));
}

#[tokio::test]
async fn user_data_on_a_node_without_snippet_storage_is_refused_with_the_fix() {
    let h = harness_with(sim_config_without_snippets());
    let err = h
        .ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::Permanent);
    assert_eq!(err.step, "user-data");
    assert!(err.message.contains("snippets"), "{}", err.message);
    assert!(h.sim.vm_node(101).is_none(), "nothing was created");
}

#[tokio::test]
async fn a_missing_template_is_a_permanent_failure() {
    let h = harness();
    let mut spec = web_spec("web-1");
    spec.template = Some(TemplateSpec {
        name: Some("ubuntu-24.04".into()),
        vmid: None,
        clone: CloneMode::Linked,
        storage: None,
    });
    let err = h
        .ops
        .ensure(&ensure_cmd(spec.clone(), 101))
        .await
        .unwrap_err();
    assert_eq!(
        (err.kind, err.step.as_str()),
        (FailureKind::Permanent, "template")
    );
    assert!(err.message.contains("ubuntu-24.04"), "{}", err.message);
    spec.template = Some(TemplateSpec {
        name: None,
        vmid: Some(9999),
        clone: CloneMode::Full,
        storage: None,
    });
    let err = h.ops.ensure(&ensure_cmd(spec, 101)).await.unwrap_err();
    assert_eq!(
        (err.kind, err.step.as_str()),
        (FailureKind::Permanent, "template")
    );
    assert!(err.message.contains("9999"), "{}", err.message);
}

#[tokio::test]
async fn a_description_with_control_characters_reaches_pve_as_written_and_stays_converged() {
    // PVE's schema takes any text for `description` (maxLength 8192, no pattern); the spec
    // accepts the same less NUL, so such a VM must converge rather than fail for good.
    let h = harness();
    let mut spec = web_spec("web-1");
    spec.description = "line 1\r\nbold \u{1b}[1mtext\u{1b}[0m\ttab".into();
    protocol::spec::validate_spec(&spec).unwrap();
    let obs = h.ops.ensure(&ensure_cmd(spec.clone(), 101)).await.unwrap();
    assert!(obs.running);
    let description = h.value(101, "description").await.unwrap();
    assert!(
        description.starts_with("line 1\r\nbold \u{1b}[1mtext\u{1b}[0m\ttab\n\n"),
        "{description:?}"
    );
    assert_eq!(notes::parse(&description).map(|n| n.generation), Some(1));

    h.reset_calls();
    h.ops.ensure(&ensure_cmd(spec, 101)).await.unwrap();
    assert_eq!(
        h.count(Method::Put, "/config") + h.count(Method::Post, "/config"),
        0,
        "the description read back equals the one sent: nothing to change"
    );
}

/// PVE's HA resource `sid` with `state`.
fn pve_ha(sid: &str, state: Option<pve_sim::ha::HaState>) -> pve_sim::ha::HaResource {
    pve_sim::ha::HaResource {
        sid: sid.into(),
        state,
        ..pve_sim::ha::HaResource::default()
    }
}

#[tokio::test]
async fn the_client_lists_pves_ha_resources() {
    let h = harness();
    assert!(h.client.ha_resources(None).await.unwrap().is_empty());
    h.sim
        .set_ha_resources(vec![
            pve_ha("vm:101", Some(pve_sim::ha::HaState::Stopped)),
            pve_ha("vm:102", None),
        ])
        .unwrap();
    let list = h
        .client
        .ha_resources(Some(pve::calls::HaResourceType::Vm))
        .await
        .unwrap();
    let got: Vec<_> = list
        .iter()
        .map(|r| {
            (
                r.sid.as_str(),
                r.kind.as_deref(),
                r.vm_id(),
                r.requested_state(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("vm:101", Some("vm"), Some(101), "stopped"),
            ("vm:102", Some("vm"), Some(102), "started")
        ]
    );
    assert!(
        h.client
            .ha_resources(Some(pve::calls::HaResourceType::Ct))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_vm_under_pves_ha_manager_is_refused_and_left_untouched() {
    let h = harness();
    let mut spec = web_spec("web-1");
    spec.state = DesiredState::Stopped;
    h.ops.ensure(&ensure_cmd(spec, 101)).await.unwrap();
    let before = h.config(101).await.digest();
    h.sim
        .set_ha_resources(vec![pve_ha("vm:101", Some(pve_sim::ha::HaState::Started))])
        .unwrap();
    h.reset_calls();

    // A changed spec that wants it running: neither the config nor the power is touched.
    let mut spec = web_spec("web-1");
    spec.cores = 4;
    let err = h.ops.ensure(&ensure_cmd(spec, 101)).await.unwrap_err();
    assert_eq!(err.kind, FailureKind::Permanent, "{}", err.message);
    assert!(
        err.message.ends_with(
            "vm:101 is managed by PVE's HA manager (state started): two HA managers must never \
             drive one guest; remove it there (ha-manager remove vm:101) and apply again, or \
             leave this VM to PVE"
        ),
        "{}",
        err.message
    );
    assert_eq!(
        h.count(Method::Get, "/cluster/ha/resources"),
        1,
        "read once"
    );
    for method in [Method::Post, Method::Put, Method::Delete] {
        assert_eq!(h.count(method, ""), 0, "{method} calls on a PVE HA guest");
    }
    assert_eq!(h.config(101).await.digest(), before);
    assert_eq!(h.sim.vm_running(101), Some(false));

    // A VMID PVE's HA holds is not created either.
    h.sim
        .set_ha_resources(vec![pve_ha("vm:102", None)])
        .unwrap();
    h.reset_calls();
    let err = h
        .ops
        .ensure(&ensure_cmd(web_spec("web-2"), 102))
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("vm:102 is managed by PVE's HA manager (state started)"),
        "{}",
        err.message
    );
    assert_eq!(h.count(Method::Post, ""), 0, "nothing created");
    assert!(h.vms_named("web-2").await.is_empty());
}

#[tokio::test]
async fn a_vm_not_under_pves_ha_manager_is_ensured_as_before() {
    let h = harness();
    h.sim
        .set_ha_resources(vec![pve_ha("vm:555", Some(pve_sim::ha::HaState::Started))])
        .unwrap();
    let obs = h
        .ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    assert!(obs.running);
    assert_eq!(
        h.count(Method::Get, "/cluster/ha/resources"),
        1,
        "read once"
    );
}

/// A backend that refuses `GET /cluster/ha/resources` as PVE does a token without `Sys.Audit`.
#[derive(Debug, Clone)]
struct NoSysAudit(pve_sim::SimBackend);

impl pve::Backend for NoSysAudit {
    fn call<'a>(
        &'a self,
        req: &'a pve::ApiRequest,
    ) -> pve::backend::BoxFuture<'a, Result<pve::ApiReply, pve::PveError>> {
        if req.path == "/cluster/ha/resources" {
            return Box::pin(async {
                Err(pve::PveError::Api {
                    method: "GET",
                    path: "/cluster/ha/resources".into(),
                    status: 403,
                    reason: "Permission check failed (/, Sys.Audit)".into(),
                    message: "Permission check failed (/, Sys.Audit)".into(),
                    errors: Default::default(),
                })
            });
        }
        self.0.call(req)
    }

    fn endpoint(&self) -> String {
        self.0.endpoint()
    }

    fn api_user(&self) -> Option<String> {
        self.0.api_user()
    }

    fn is_root(&self) -> bool {
        self.0.is_root()
    }
}

#[tokio::test]
async fn an_unreadable_ha_resource_list_does_not_block_ensure() {
    let sim = pve_sim::Sim::new(ops_support::sim_config()).unwrap();
    let backend = NoSysAudit(pve_sim::SimBackend::new(
        sim.clone(),
        pve_sim::Caller::token("root@pam", "fleet"),
        NODE,
    ));
    let ops = node_agent::ops::VmOps::new(pve::Client::new(backend), NODE).with_snippets(
        std::sync::Arc::new(ops_support::SimSnippetWriter::new(sim.clone())),
    );
    let obs = ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    assert!(obs.running);
    ops.ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
}
