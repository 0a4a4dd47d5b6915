//! The catalog of every typed call: one example request per (method, path) built by the real
//! builder with every optional parameter it supports set, the schema path template, and the
//! fields the response type reads. The workspace conformance test checks each entry against
//! the official schema, so a builder that sends an undeclared parameter, a value of the wrong
//! type, or a response type that reads an undeclared field fails there.

use std::net::{IpAddr, Ipv4Addr};

use serde::de::DeserializeOwned;

use crate::calls::*;
use crate::error::PveError;
use crate::fields::struct_fields;
use crate::props::{
    AgentConfig, AgentType, BootOrder, Discard, Disk, DiskBus, DiskCache, DiskSlot, IpConfig,
    MacAddr, NetDevice, SizeChange,
};
use crate::request::{ApiRequest, Method, segment};
use crate::tasks::{TaskLogLine, TaskStatus};
use crate::types::*;
use crate::upid::Upid;

/// What a call's `data` is decoded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseShape {
    /// An object; the fields read.
    Object(&'static [&'static str]),
    /// An array of objects; the fields read from each.
    ArrayOf(&'static [&'static str]),
    /// An object kept as an open map (VM config) or not read.
    Map,
    /// A UPID string.
    Upid,
    /// A UPID string or `null`.
    OptionalUpid,
    /// `null`.
    Null,
    /// A scalar (number or string).
    Scalar,
}

/// One catalog entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The request as the builder makes it.
    pub request: ApiRequest,
    /// The schema path (`/nodes/{node}/qemu/{vmid}/config`).
    pub template: &'static str,
    /// How the answer is read.
    pub response: ResponseShape,
}

fn object<T: DeserializeOwned>() -> ResponseShape {
    ResponseShape::Object(struct_fields::<T>().unwrap_or(&[]))
}

fn array_of<T: DeserializeOwned>() -> ResponseShape {
    ResponseShape::ArrayOf(struct_fields::<T>().unwrap_or(&[]))
}

const NODE: &str = "pve1";
const VMID: u32 = 100;
const DIGEST: &str = "0123456789abcdef0123456789abcdef01234567";

/// Every typed config setter used once (`update` adds the update-only controls).
fn example_config(update: bool) -> ConfigChanges {
    let mac = MacAddr([0xBC, 0x24, 0x11, 0xAA, 0xBB, 0xCC]);
    let net = NetDevice {
        macaddr: Some(mac),
        firewall: Some(true),
        link_down: Some(false),
        mtu: Some(1500),
        queues: Some(2),
        rate: Some(100.0),
        tag: Some(10),
        trunks: Some("20;30-40".into()),
        ..NetDevice::virtio("vmbr0")
    };
    let disk = Disk {
        cache: Some(DiskCache::Writeback),
        discard: Some(Discard::On),
        iothread: Some(true),
        ssd: Some(true),
        backup: Some(true),
        replicate: Some(false),
        ..Disk::new_volume("local-lvm", 32)
    };
    let ip = IpConfig::static_v4(
        Ipv4Addr::new(10, 0, 0, 5),
        24,
        Some(Ipv4Addr::new(10, 0, 0, 1)),
    );
    let agent = AgentConfig {
        enabled: true,
        freeze_fs: Some(true),
        fstrim_cloned_disks: Some(true),
        kind: Some(AgentType::Virtio),
        extra: Vec::new(),
    };
    let boot = BootOrder {
        order: vec!["scsi0".into(), "net0".into()],
        legacy: None,
    };
    let c = ConfigChanges::new()
        .name("web1")
        .cores(2)
        .sockets(1)
        .memory_mib(2048)
        .balloon_mib(1024)
        .cpu("x86-64-v2-AES")
        .machine("q35")
        .bios(Bios::Ovmf)
        .scsihw(ScsiHw::VirtioScsiSingle)
        .ostype(OsType::L26)
        .net(0, &net)
        .disk(DiskBus::Scsi, 0, &disk)
        .disk(
            DiskBus::Virtio,
            1,
            &Disk::import("local-lvm", "local:import/debian-12.qcow2"),
        )
        .disk(DiskBus::Sata, 1, &Disk::volume("local-lvm:vm-100-disk-3"))
        .disk(
            DiskBus::Ide,
            2,
            &Disk::cdrom(Some("local:iso/debian-12.iso")),
        )
        .ipconfig(0, &ip)
        .agent(&agent)
        .boot(&boot)
        .onboot(true)
        .protection(false)
        .tags(&["fleet", "web"])
        .description("managed by pvefleet")
        .ciuser("admin")
        .cipassword("example-password")
        .sshkeys("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample admin@fleet")
        .nameserver(&[IpAddr::V4(Ipv4Addr::new(10, 0, 0, 53))])
        .searchdomain(&["fleet.example"])
        .cicustom("user=local:snippets/user.yaml")
        .hotplug(&[
            HotplugFeature::Network,
            HotplugFeature::Disk,
            HotplugFeature::Usb,
        ])
        .raw("numa", "0");
    if update {
        c.delete(&["net1", "scsi1"])
            .revert(&["ide3"])
            .digest(DIGEST)
            .force(true)
            .skiplock(false)
    } else {
        c
    }
}

fn entry(request: ApiRequest, template: &'static str, response: ResponseShape) -> CatalogEntry {
    CatalogEntry {
        request,
        template,
        response,
    }
}

/// The example UPID of the task entries.
fn example_upid() -> Upid {
    Upid::new(
        NODE,
        0x1234,
        0x00AB_CDEF,
        0x6500_0000,
        "qmstart",
        "100",
        "root@pam",
    )
}

fn task_path(upid: &Upid, tail: &str) -> String {
    format!(
        "/nodes/{}/tasks/{}{}",
        upid.node,
        segment(&upid.to_string()),
        tail
    )
}

/// The catalog, or the first builder error (which would be a bug in the examples).
pub fn try_catalog() -> Result<Vec<CatalogEntry>, PveError> {
    use ResponseShape::{Map, Null, OptionalUpid, Scalar, Upid as UpidShape};
    let upid = example_upid();
    let snap = "before-upgrade";
    let mut out = vec![
        entry(version_request()?, "/version", object::<Version>()),
        entry(permissions_request("/vms")?, "/access/permissions", Map),
        entry(
            access_ticket_request_with(
                "root@pam",
                "example-password",
                &TicketOptions {
                    realm: Some("pam".into()),
                    otp: Some("123456".into()),
                    tfa_challenge: Some("PVE:root@pam:4EEC61E2::sig".into()),
                    new_format: Some(true),
                },
            )?,
            "/access/ticket",
            object::<TicketInfo>(),
        ),
        entry(
            cluster_resources_request(Some(ResourceType::Vm))?,
            "/cluster/resources",
            array_of::<ClusterResource>(),
        ),
        entry(
            cluster_status_request()?,
            "/cluster/status",
            array_of::<ClusterStatusEntry>(),
        ),
        entry(next_id_request(Some(VMID))?, "/cluster/nextid", Scalar),
        entry(
            cluster_tasks_request()?,
            "/cluster/tasks",
            array_of::<ClusterTaskEntry>(),
        ),
        entry(
            ha_resources_request(Some(HaResourceType::Vm))?,
            "/cluster/ha/resources",
            array_of::<HaResource>(),
        ),
        entry(nodes_request()?, "/nodes", array_of::<NodeEntry>()),
        entry(
            node_status_request(NODE)?,
            "/nodes/{node}/status",
            object::<NodeStatus>(),
        ),
        entry(
            vm_list_request(NODE, Some(true))?,
            "/nodes/{node}/qemu",
            array_of::<VmListEntry>(),
        ),
        entry(
            create_vm_request(
                NODE,
                VMID,
                &example_config(false),
                &CreateOptions {
                    pool: Some("fleet".into()),
                    storage: Some("local-lvm".into()),
                    start: Some(false),
                    ha_managed: Some(false),
                },
            )?,
            "/nodes/{node}/qemu",
            UpidShape,
        ),
        entry(
            destroy_vm_request(
                NODE,
                VMID,
                &DestroyOptions {
                    purge: Some(true),
                    destroy_unreferenced_disks: Some(true),
                    skiplock: Some(false),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}",
            UpidShape,
        ),
        entry(
            vm_config_request(NODE, VMID, &ConfigView::Current)?,
            "/nodes/{node}/qemu/{vmid}/config",
            Map,
        ),
        entry(
            vm_config_request(NODE, VMID, &ConfigView::Snapshot(snap.into()))?,
            "/nodes/{node}/qemu/{vmid}/config",
            Map,
        ),
        entry(
            update_vm_async_request(NODE, VMID, &example_config(true), Some(5))?,
            "/nodes/{node}/qemu/{vmid}/config",
            OptionalUpid,
        ),
        entry(
            update_vm_request(NODE, VMID, &example_config(true))?,
            "/nodes/{node}/qemu/{vmid}/config",
            Null,
        ),
        entry(
            vm_pending_request(NODE, VMID)?,
            "/nodes/{node}/qemu/{vmid}/pending",
            array_of::<PendingEntry>(),
        ),
        entry(
            vm_status_request(NODE, VMID)?,
            "/nodes/{node}/qemu/{vmid}/status/current",
            object::<VmStatus>(),
        ),
        entry(
            vm_start_request(
                NODE,
                VMID,
                &StartOptions {
                    timeout: Some(60),
                    skiplock: Some(false),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/status/start",
            UpidShape,
        ),
        entry(
            vm_stop_request(
                NODE,
                VMID,
                &StopOptions {
                    timeout: Some(30),
                    overrule_shutdown: Some(true),
                    keep_active: Some(false),
                    skiplock: Some(false),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/status/stop",
            UpidShape,
        ),
        entry(
            vm_shutdown_request(
                NODE,
                VMID,
                &ShutdownOptions {
                    timeout: Some(60),
                    force_stop: Some(true),
                    keep_active: Some(false),
                    skiplock: Some(false),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/status/shutdown",
            UpidShape,
        ),
        entry(
            vm_reboot_request(NODE, VMID, &RebootOptions { timeout: Some(60) })?,
            "/nodes/{node}/qemu/{vmid}/status/reboot",
            UpidShape,
        ),
        entry(
            vm_reset_request(
                NODE,
                VMID,
                &ResetOptions {
                    skiplock: Some(false),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/status/reset",
            UpidShape,
        ),
        entry(
            vm_suspend_request(
                NODE,
                VMID,
                &SuspendOptions {
                    todisk: Some(true),
                    statestorage: Some("local-lvm".into()),
                    skiplock: Some(false),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/status/suspend",
            UpidShape,
        ),
        entry(
            vm_resume_request(
                NODE,
                VMID,
                &ResumeOptions {
                    skiplock: Some(false),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/status/resume",
            UpidShape,
        ),
        entry(
            clone_vm_request(
                NODE,
                VMID,
                101,
                &CloneOptions {
                    name: Some("web2".into()),
                    description: Some("full copy".into()),
                    full: Some(true),
                    storage: Some("local-lvm".into()),
                    format: Some(CloneFormat::Raw),
                    snapname: Some(snap.into()),
                    target: Some("pve2".into()),
                    pool: Some("fleet".into()),
                    bwlimit: Some(102_400),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/clone",
            UpidShape,
        ),
        entry(
            clone_vm_request(
                NODE,
                VMID,
                102,
                &CloneOptions {
                    name: Some("web3".into()),
                    description: Some("linked copy".into()),
                    full: Some(false),
                    snapname: Some(snap.into()),
                    target: Some("pve2".into()),
                    pool: Some("fleet".into()),
                    bwlimit: Some(0),
                    ..CloneOptions::default()
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/clone",
            UpidShape,
        ),
        entry(
            resize_disk_request(
                NODE,
                VMID,
                DiskSlot::Drive(DiskBus::Scsi, 0),
                SizeChange::Grow(1 << 30),
                &ResizeOptions {
                    digest: Some(DIGEST.into()),
                    skiplock: Some(false),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/resize",
            UpidShape,
        ),
        entry(
            template_request(NODE, VMID, Some(DiskSlot::Drive(DiskBus::Scsi, 0)))?,
            "/nodes/{node}/qemu/{vmid}/template",
            UpidShape,
        ),
        entry(
            migrate_precondition_request(NODE, VMID, Some("pve2"))?,
            "/nodes/{node}/qemu/{vmid}/migrate",
            object::<MigratePrecondition>(),
        ),
        entry(
            migrate_vm_request(
                NODE,
                VMID,
                "pve2",
                &MigrateOptions {
                    online: Some(true),
                    with_local_disks: Some(true),
                    targetstorage: Some("local-lvm:ceph".into()),
                    bwlimit: Some(102_400),
                    migration_type: Some(MigrationType::Secure),
                    migration_network: Some("10.10.0.0/24".into()),
                    force: Some(false),
                    with_conntrack_state: Some(true),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/migrate",
            UpidShape,
        ),
        entry(
            remote_migrate_request(
                NODE,
                VMID,
                &RemoteMigrateOptions {
                    target_endpoint: "host=192.0.2.9,port=8006,fingerprint=AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99,apitoken=PVEAPIToken=pvefleet-migrate@pve!vm100=00000000-0000-0000-0000-000000000000".into(),
                    target_storage: "local-lvm:local-lvm".into(),
                    target_bridge: "vmbr0".into(),
                    target_vmid: Some(VMID),
                    online: Some(true),
                    delete: Some(true),
                    bwlimit: Some(102_400),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/remote_migrate",
            UpidShape,
        ),
        entry(
            certificates_info_request(NODE)?,
            "/nodes/{node}/certificates/info",
            array_of::<CertificateInfo>(),
        ),
        entry(
            create_user_request("pvefleet-migrate@pve", "pvefleet remote migrations")?,
            "/access/users",
            Null,
        ),
        entry(
            create_role_request("FleetMigrate", &["VM.Allocate", "Sys.Incoming"])?,
            "/access/roles",
            Null,
        ),
        entry(
            update_role_request("FleetMigrate", &["VM.Allocate", "Sys.Incoming"])?,
            "/access/roles/{roleid}",
            Null,
        ),
        entry(
            put_acl_request(
                "/vms/100",
                "FleetMigrate",
                AclSubject::Token("pvefleet-migrate@pve!vm100"),
                false,
            )?,
            "/access/acl",
            Null,
        ),
        entry(
            create_token_request("pvefleet-migrate@pve", "vm100", "move of VM 100", 1_900_000_000, true)?,
            "/access/users/{userid}/token/{tokenid}",
            object::<TokenCreated>(),
        ),
        entry(
            delete_token_request("pvefleet-migrate@pve", "vm100")?,
            "/access/users/{userid}/token/{tokenid}",
            Null,
        ),
        entry(
            snapshots_request(NODE, VMID)?,
            "/nodes/{node}/qemu/{vmid}/snapshot",
            array_of::<SnapshotEntry>(),
        ),
        entry(
            create_snapshot_request(
                NODE,
                VMID,
                snap,
                &SnapshotOptions {
                    vmstate: Some(true),
                    description: Some("before the upgrade".into()),
                },
            )?,
            "/nodes/{node}/qemu/{vmid}/snapshot",
            UpidShape,
        ),
        entry(
            delete_snapshot_request(NODE, VMID, snap, Some(true))?,
            "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}",
            UpidShape,
        ),
        entry(
            snapshot_config_request(NODE, VMID, snap)?,
            "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config",
            Map,
        ),
        entry(
            rollback_snapshot_request(NODE, VMID, snap, Some(true))?,
            "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback",
            UpidShape,
        ),
        entry(
            agent_network_interfaces_request(NODE, VMID)?,
            "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
            object::<AgentInterfaces>(),
        ),
        entry(
            agent_ping_request(NODE, VMID)?,
            "/nodes/{node}/qemu/{vmid}/agent/ping",
            Map,
        ),
        entry(
            node_tasks_request(
                NODE,
                &TaskListFilter {
                    start: Some(0),
                    limit: Some(50),
                    since: Some(1_700_000_000),
                    until: Some(1_800_000_000),
                    source: Some(TaskSource::All),
                    statusfilter: vec![TaskStatusFilter::Ok, TaskStatusFilter::Error],
                    errors: Some(false),
                    typefilter: Some("qmcreate".into()),
                    userfilter: Some("root@pam".into()),
                    vmid: Some(VMID),
                },
            )?,
            "/nodes/{node}/tasks",
            array_of::<NodeTaskEntry>(),
        ),
        // The three task calls of `crate::tasks`, built the way it builds them.
        entry(
            ApiRequest::new(Method::Delete, task_path(&upid, "")),
            "/nodes/{node}/tasks/{upid}",
            Null,
        ),
        entry(
            ApiRequest::new(Method::Get, task_path(&upid, "/status")),
            "/nodes/{node}/tasks/{upid}/status",
            object::<TaskStatus>(),
        ),
        entry(
            ApiRequest::new(Method::Get, task_path(&upid, "/log"))
                .param("start", "0")
                .param("limit", "50"),
            "/nodes/{node}/tasks/{upid}/log",
            array_of::<TaskLogLine>(),
        ),
        entry(
            storage_list_request(
                NODE,
                &StorageFilter {
                    content: vec![StorageContent::Images, StorageContent::Iso],
                    enabled: Some(true),
                    format: Some(true),
                    storage: Some("local-lvm".into()),
                    target: Some("pve2".into()),
                },
            )?,
            "/nodes/{node}/storage",
            array_of::<StorageEntry>(),
        ),
        entry(
            storage_status_request(NODE, "local-lvm")?,
            "/nodes/{node}/storage/{storage}/status",
            object::<StorageStatus>(),
        ),
        entry(
            storage_content_request(NODE, "local-lvm", Some(StorageContent::Images), Some(VMID))?,
            "/nodes/{node}/storage/{storage}/content",
            array_of::<StorageVolume>(),
        ),
        entry(
            network_request(NODE, Some(NetworkType::AnyBridge))?,
            "/nodes/{node}/network",
            array_of::<NetworkInterface>(),
        ),
    ];
    out.sort_by(|a, b| {
        (a.template, a.request.method.as_str()).cmp(&(b.template, b.request.method.as_str()))
    });
    Ok(out)
}

/// The catalog (empty only if an example were invalid, which its tests rule out).
pub fn catalog() -> Vec<CatalogEntry> {
    try_catalog().unwrap_or_default()
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
