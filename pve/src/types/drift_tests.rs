//! Decoding the answers real PVE servers send, including the type drift of NOTES §1.

use serde::de::DeserializeOwned;
use serde_json::json;

use super::*;
use crate::fields::struct_fields;

fn decode<T: DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).unwrap()
}

#[test]
fn vm_list_tolerates_string_numbers_and_flag_spellings() {
    for (vmid, template, expect_template) in [
        (json!(506), json!(1), true),
        (json!("506"), json!("1"), true),
        (json!("506"), json!(""), false),
        (json!(506), json!(true), true),
    ] {
        let e: VmListEntry = decode(json!({
            "vmid": vmid, "name": "web", "status": "running", "template": template,
            "maxmem": "2147483648", "cpus": "2", "cpu": 0.03, "uptime": "12", "unknown": {"x": 1}
        }));
        assert_eq!(e.vmid, 506);
        assert_eq!(e.template, expect_template);
        assert_eq!(e.maxmem, Some(2_147_483_648));
        assert_eq!(e.cpus, Some(2.0));
        assert!(e.is_running());
    }
}

#[test]
fn vm_status_reads_nested_ha_and_agent_flags() {
    let s: VmStatus = decode(json!({
        "vmid": "100", "status": "running", "qmpstatus": "paused", "agent": "1",
        "ha": {"managed": 0}, "lock": "backup", "pid": "4242", "name": 12
    }));
    assert_eq!((s.vmid, s.agent, s.ha.managed), (100, true, false));
    assert_eq!(s.name.as_deref(), Some("12"));
    assert!(s.is_running() && !s.is_executing());
    let stopped: VmStatus = decode(json!({"vmid": 100, "status": "stopped", "template": ""}));
    assert!(!stopped.template && !stopped.is_executing());
}

#[test]
fn config_accessors_handle_memory_as_string_and_property_strings() {
    let c: VmConfig = decode(json!({
        "memory": "2048", "cores": 2, "sockets": "1", "name": "web1",
        "net0": "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1",
        "scsi0": "local-lvm:vm-100-disk-0,iothread=1,size=32G",
        "ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1", "agent": "1,fstrim_cloned_disks=1",
        "boot": "order=scsi0;net0", "tags": "prod;web", "template": 1, "lock": "clone",
        "digest": "0123456789abcdef0123456789abcdef01234567", "onboot": "1"
    }));
    assert_eq!(c.memory_mib().unwrap(), Some(2048));
    assert_eq!(c.cores().unwrap(), Some(2));
    assert_eq!(c.sockets().unwrap(), Some(1));
    assert_eq!(
        c.digest().as_deref(),
        Some("0123456789abcdef0123456789abcdef01234567")
    );
    assert_eq!(c.net(0).unwrap().unwrap().bridge.as_deref(), Some("vmbr0"));
    assert!(c.net(1).is_none());
    assert_eq!(c.nets().len(), 1);
    let disk = c.disk(crate::props::DiskBus::Scsi, 0).unwrap().unwrap();
    assert_eq!(disk.size, Some(32 << 30));
    assert_eq!(c.disks().len(), 1);
    assert!(c.ipconfig(0).unwrap().is_ok());
    assert!(c.agent().unwrap().unwrap().enabled);
    assert_eq!(c.boot().unwrap().unwrap().order, vec!["scsi0", "net0"]);
    assert_eq!(c.tags().unwrap(), vec!["prod", "web"]);
    assert!(c.is_template() && c.onboot() && !c.protection());
    assert_eq!(c.lock().as_deref(), Some("clone"));
    assert_eq!(c.get_str("cores").as_deref(), Some("2"));

    let keyed: VmConfig = decode(json!({"memory": "current=4096", "cores": "x"}));
    assert_eq!(keyed.memory_mib().unwrap(), Some(4096));
    assert!(keyed.cores().is_err());
    let numeric: VmConfig = decode(json!({"memory": 1024}));
    assert_eq!(numeric.memory_mib().unwrap(), Some(1024));
    assert_eq!(VmConfig::default().memory_mib().unwrap(), None);
}

#[test]
fn bad_property_string_in_config_names_the_config_key() {
    let c: VmConfig = decode(json!({"net3": "virtio,tag=9999"}));
    match c.net(3).unwrap() {
        Err(crate::PveError::Invalid { field, .. }) => assert_eq!(field, "net3.tag"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn pending_values_may_be_numbers() {
    let p: Vec<PendingEntry> = decode(json!([
        {"key": "cores", "value": 2, "pending": "4"},
        {"key": "net1", "delete": "1"},
        {"key": "name", "value": "a"}
    ]));
    assert_eq!(p[0].value.as_deref(), Some("2"));
    assert!(p[0].has_pending_change() && p[1].has_pending_change() && !p[2].has_pending_change());
}

#[test]
fn snapshot_list_ends_with_current() {
    let s: Vec<SnapshotEntry> = decode(json!([
        {"name": "before", "description": "", "snaptime": "1700000000", "vmstate": 0, "snapstate": "prepare"},
        {"name": "current", "description": "You are here!", "digest": "ab", "running": "1", "parent": "before"}
    ]));
    assert!(s[0].is_incomplete() && !s[0].vmstate);
    assert_eq!(s[0].snaptime, Some(1_700_000_000));
    assert!(s[1].is_current() && s[1].running == Some(true));
}

#[test]
fn agent_usable_ips_skip_loopback_and_link_local() {
    let a: AgentInterfaces = decode(json!({"result": [
        {"name": "lo", "hardware-address": "00:00:00:00:00:00", "ip-addresses": [
            {"ip-address-type": "ipv4", "ip-address": "127.0.0.1", "prefix": 8},
            {"ip-address-type": "ipv6", "ip-address": "::1", "prefix": 128}]},
        {"name": "eth0", "hardware-address": "bc:24:11:aa:bb:cc", "ip-addresses": [
            {"ip-address-type": "ipv6", "ip-address": "fe80::be24:11ff:feaa:bbcc%eth0", "prefix": 64},
            {"ip-address-type": "ipv4", "ip-address": "169.254.3.4", "prefix": "16"},
            {"ip-address-type": "ipv4", "ip-address": "10.0.0.5", "prefix": "24"},
            {"ip-address-type": "ipv6", "ip-address": "2001:db8::5", "prefix": 64}],
         "statistics": {"rx-bytes": 1}},
        {"name": "eth1"}
    ]}));
    let ips: Vec<String> = a.usable_ips().iter().map(|u| u.addr.to_string()).collect();
    assert_eq!(ips, ["10.0.0.5", "2001:db8::5"]);
    assert_eq!(a.usable_ips()[0].prefix, Some(24));
    assert_eq!(a.first_ipv4(), Some(std::net::Ipv4Addr::new(10, 0, 0, 5)));
}

#[test]
fn storage_content_size_may_be_a_string() {
    let v: Vec<StorageVolume> = decode(json!([
        {"volid": "local-lvm:vm-100-disk-0", "format": "raw", "size": "34359738368", "vmid": "100"},
        {"volid": "local:iso/x.iso", "format": "iso", "size": 1024, "protected": ""}
    ]));
    assert_eq!(v[0].size, 32 << 30);
    assert_eq!(v[0].vmid, Some(100));
    assert_eq!(v[1].protected, None);
    let s: StorageEntry = decode(
        json!({"storage": "local", "type": "dir", "content": "iso,vztmpl,backup",
        "active": 1, "shared": "0", "total": "100", "used_fraction": "0.5"}),
    );
    assert!(s.holds("iso") && !s.holds("images"));
    assert_eq!(
        (s.active, s.shared, s.used_fraction),
        (Some(true), Some(false), Some(0.5))
    );
}

#[test]
fn node_status_and_cluster_answers_decode() {
    let n: NodeStatus = decode(json!({
        "cpu": "0.05", "loadavg": ["0.10", "0.05", 0.01],
        "memory": {"total": "16000", "used": 8000, "free": 8000},
        "rootfs": {"total": 1, "used": 1, "free": 0, "avail": 0},
        "cpuinfo": {"model": "X", "cpus": "8", "cores": 4, "sockets": 1},
        "pveversion": "pve-manager/9.1.3/abc"
    }));
    assert_eq!(n.loadavg, vec![0.10, 0.05, 0.01]);
    assert_eq!(n.memory.total, 16000);
    assert_eq!(n.cpuinfo.cpus, 8);
    let nodes: Vec<NodeEntry> = decode(
        json!([{"node": "pve1", "status": "online", "id": "node/pve1",
        "type": "node", "maxcpu": "8", "ssl_fingerprint": "AA:BB"}]),
    );
    assert!(nodes[0].is_online());
    assert_eq!(nodes[0].maxcpu, Some(8));
    let cs: Vec<ClusterStatusEntry> = decode(json!([
        {"id": "cluster", "name": "c1", "type": "cluster", "quorate": "1", "nodes": "3", "version": 7},
        {"id": "node/pve1", "name": "pve1", "type": "node", "online": 1, "local": true, "nodeid": "1"}
    ]));
    assert_eq!((cs[0].quorate, cs[0].nodes), (Some(true), Some(3)));
    assert_eq!(
        (cs[1].online, cs[1].local, cs[1].nodeid),
        (Some(true), Some(true), Some(1))
    );
    let r: Vec<ClusterResource> = decode(json!([
        {"id": "qemu/100", "type": "qemu", "vmid": "100", "node": "pve1", "template": "", "maxcpu": 2},
        {"id": "storage/pve1/local", "type": "storage", "shared": 0, "disk": "5"}
    ]));
    assert!(r[0].is_qemu() && !r[0].template && r[0].vmid == Some(100));
    assert_eq!(r[1].disk, Some(5));
    let v: Version = decode(json!({"version": "9.1.3", "release": "9.1", "repoid": "abcdef12"}));
    assert_eq!(v.major(), Some(9));
    assert!(v.supports_pve9_params());
    let old: Version = decode(json!({"version": "8.4.1", "release": "8.4", "repoid": "abcdef12"}));
    assert!(!old.supports_pve9_params());
}

#[test]
fn task_lists_classify_outcomes() {
    let t: Vec<NodeTaskEntry> = decode(json!([
        {"upid": "UPID:pve1:00001234:00ABCDEF:65000000:qmclone:100:root@pam:", "node": "pve1",
         "pid": "4660", "pstart": 11259375, "starttime": "1694498816", "type": "qmclone", "id": 100,
         "user": "root@pam", "status": "RUNNING"},
        {"upid": "UPID:pve1:00001235:00ABCDEF:65000001:qmstart:101:root@pam:", "node": "pve1",
         "pid": 4661, "pstart": 1, "starttime": 1, "endtime": "2", "type": "qmstart", "id": "101",
         "user": "root@pam", "status": "WARNINGS: 2"},
        {"upid": "UPID:pve1:00001236:00ABCDEF:65000002:qmstart:102:root@pam:", "node": "pve1",
         "starttime": 1, "endtime": 2, "type": "qmstart", "id": "102", "user": "root@pam",
         "status": "VM is locked (backup)"}
    ]));
    assert!(t[0].is_running() && t[0].outcome().is_none());
    assert_eq!(t[0].id, "100");
    assert_eq!(t[0].parsed_upid().unwrap().vmid(), Some(100));
    assert_eq!(t[1].outcome(), Some(Ok(2)));
    assert_eq!(
        t[2].outcome(),
        Some(Err("VM is locked (backup)".to_string()))
    );
    let c: Vec<ClusterTaskEntry> = decode(
        json!([{"upid": "UPID:pve2:00000001:00000001:65000000:qmigrate:100:root@pam:",
        "status": "OK", "endtime": "5"}]),
    );
    assert_eq!(c[0].outcome(), Some(Ok(0)));
    assert_eq!(c[0].parsed_upid().unwrap().node, "pve2");
}

#[test]
fn migrate_precondition_and_ticket_decode() {
    let m: MigratePrecondition = decode(json!({
        "running": 0, "allowed_nodes": ["pve2"], "has-dbus-vmstate": "",
        "not_allowed_nodes": {"pve3": {"unavailable_storages": ["local-lvm"]}},
        "local_disks": [{"volid": "local-lvm:vm-100-disk-0", "size": "100", "cdrom": 0, "is_unused": "0"}],
        "local_resources": [], "mapped-resources": [], "mapped-resource-info": {}
    }));
    assert!(m.allows("pve2") && !m.allows("pve3") && !m.running);
    assert_eq!(
        m.not_allowed_nodes["pve3"].unavailable_storages,
        vec!["local-lvm"]
    );
    assert_eq!(m.local_disks[0].size, 100);
    let t: TicketInfo = decode(
        json!({"username": "root@pam", "ticket": "PVE:root@pam:4EEC61E2::sig",
        "CSRFPreventionToken": "4EEC61E2:mac", "NeedTFA": 1}),
    );
    assert!(t.need_tfa);
    assert!(!format!("{t:?}").contains("sig"));
}

#[test]
fn every_response_type_lists_its_fields() {
    let lists: Vec<(&str, Option<&'static [&'static str]>)> = vec![
        ("Version", struct_fields::<Version>()),
        ("TicketInfo", struct_fields::<TicketInfo>()),
        ("ClusterResource", struct_fields::<ClusterResource>()),
        ("ClusterStatusEntry", struct_fields::<ClusterStatusEntry>()),
        ("NodeEntry", struct_fields::<NodeEntry>()),
        ("NodeStatus", struct_fields::<NodeStatus>()),
        ("NodeMemory", struct_fields::<NodeMemory>()),
        ("NodeRootfs", struct_fields::<NodeRootfs>()),
        ("NodeCpuInfo", struct_fields::<NodeCpuInfo>()),
        ("VmListEntry", struct_fields::<VmListEntry>()),
        ("VmStatus", struct_fields::<VmStatus>()),
        ("VmHaStatus", struct_fields::<VmHaStatus>()),
        ("PendingEntry", struct_fields::<PendingEntry>()),
        ("SnapshotEntry", struct_fields::<SnapshotEntry>()),
        (
            "MigratePrecondition",
            struct_fields::<MigratePrecondition>(),
        ),
        ("LocalDisk", struct_fields::<LocalDisk>()),
        ("NotAllowedNode", struct_fields::<NotAllowedNode>()),
        ("BlockingHaResource", struct_fields::<BlockingHaResource>()),
        ("AgentInterfaces", struct_fields::<AgentInterfaces>()),
        ("AgentInterface", struct_fields::<AgentInterface>()),
        ("AgentIpAddress", struct_fields::<AgentIpAddress>()),
        ("StorageEntry", struct_fields::<StorageEntry>()),
        ("StorageStatus", struct_fields::<StorageStatus>()),
        ("StorageVolume", struct_fields::<StorageVolume>()),
        ("NetworkInterface", struct_fields::<NetworkInterface>()),
        ("NodeTaskEntry", struct_fields::<NodeTaskEntry>()),
        ("ClusterTaskEntry", struct_fields::<ClusterTaskEntry>()),
    ];
    for (name, fields) in lists {
        let fields = fields.unwrap_or_else(|| panic!("{name} does not deserialize as a struct"));
        assert!(!fields.is_empty(), "{name}");
    }
    // The open map is deliberately not a struct.
    assert!(struct_fields::<VmConfig>().is_none());
}
