//! What `pvefleet` prints about VMs and the resources they use, as golden text: `vm ls|show`,
//! `pool ls`, `range ls`, `vip ls`, apply and delete reports and direct allocations, as tables
//! (aligned, human units, host names) and as JSON documents, from hand-built protocol values.

use crate::support::fixtures::*;
use cli::output::{Applied, ApplyReport, Deleted, IpAllocated, VmidAllocated};
use protocol::admin::{
    ApplyOutcome, PoolListReply, TokenListReply, VipListReply, VmListReply, VmidRangeListReply,
};
use serde_json::json;

#[test]
fn vm_list_shows_hosts_by_name_and_sizes_and_ages_in_human_units() {
    let list = VmListReply {
        vms: vec![db_1(), web_1()],
        recoveries: Default::default(),
        migrations: Default::default(),
    };
    assert_eq!(
        table(&list),
        "\
NAME    HOST   VMID   STATE      HA        IPS         AGE
db-1    -      -      deleting   -         -           45s
web-1   pve1   100    running    started   10.0.0.10   3d
"
    );
    let json = json_of(&list);
    assert_eq!(json["vms"][1], json_of(&web_1()));
    assert_eq!(json["vms"][0]["spec"]["name"], json!("db-1"));
    assert_eq!(json["vms"][0]["deleting"], json!(true));
    let back: VmListReply = serde_json::from_value(json).unwrap();
    assert_eq!(back, list);
}

#[test]
fn vm_show_details_spec_assignment_and_status() {
    assert_eq!(
        table(&web_1()),
        "\
name:        web-1
phase:       running
host:        pve1
vmid:        100
ips:         10.0.0.10
generation:  3 (status reflects 2)
cpu:         2 cores x 1 socket
memory:      2 GiB
template:    debian-12 (linked clone)
state:       running (restart: never)
ha:          started, restart default, relocate default, recovery default
placement:   any host
vmid range:  default
created:     3d ago (2025-02-26T12:00:00Z)
updated:     2h ago (2025-03-01T10:00:00Z)

DISK    SIZE     STORAGE     OPTIONS
scsi0   20 GiB   local-lvm   ssd,discard

NIC    MODEL    BRIDGE   VLAN   IP         ADDRESS
net0   virtio   vmbr0    20     pool lan   10.0.0.10/24 via 10.0.0.1

CONDITION   STATUS   REASON    SINCE   MESSAGE
Running     true     Started   90m
"
    );
    assert_eq!(
        json_of(&web_1()),
        json!({
            "spec": {
                "name": "web-1", "description": "", "tags": [], "cores": 2, "sockets": 1,
                "memory_mib": 2048, "balloon_mib": null, "cpu": null, "machine": null,
                "bios": null, "scsihw": null, "ostype": null,
                "template": {"name": "debian-12", "vmid": null, "clone": "linked", "storage": null},
                "disks": [{"slot": "scsi0", "storage": "local-lvm", "size_gib": 20,
                           "options": {"ssd": true, "discard": true, "iothread": false, "cache": null}}],
                "nics": [{"model": "virtio", "bridge": "vmbr0", "vlan": 20, "mac": null,
                          "firewall": false, "mtu": null, "ip": {"pool": "lan"}}],
                "cloud_init": null, "agent": false, "onboot": false, "protection": false,
                "state": "running", "restart": "never",
                "placement": {"hosts": [], "exclude_hosts": [], "labels": {},
                              "apart_from": [], "together_with": [], "node_affinity": null},
                "ha": {"state": "started", "max_restart": null, "max_relocate": null,
                       "recovery": null},
                "vmid_range": null,
                "group": null
            },
            "generation": 3,
            "created_at": NOW - 3 * DAY,
            "updated_at": NOW - 2 * HOUR,
            "deleting": false,
            "assignment": {
                "host": 3, "vmid": 100,
                "ips": [{"nic": 0, "pool": "lan", "address": "10.0.0.10", "prefix_len": 24,
                         "gateway": "10.0.0.1"}]
            },
            "status": {
                "phase": "running",
                "conditions": [{"kind": "running", "status": true, "reason": "Started",
                                "message": "", "since": NOW - 90 * MINUTE}],
                "current_host": 3, "ips": ["10.0.0.10"], "message": "",
                "observed_generation": 2, "updated_at": NOW - 5 * MINUTE
            }
        })
    );
}

#[test]
fn vm_show_of_a_new_vm_being_deleted() {
    assert_eq!(
        table(&db_1()),
        "\
name:        db-1
phase:       deleting
host:        -
vmid:        -
ips:         -
generation:  1 (not yet observed by an agent)
cpu:         1 core x 1 socket
memory:      1.5 GiB
template:    - (created from scratch)
state:       running (restart: never)
ha:          -
placement:   any host
vmid range:  default
created:     45s ago (2025-03-01T11:59:15Z)
updated:     45s ago (2025-03-01T11:59:15Z)
"
    );
}

#[test]
fn pool_list_counts_used_addresses_against_the_range() {
    let list = PoolListReply {
        pools: vec![pool(), v6_pool()],
    };
    assert_eq!(
        table(&list),
        "\
NAME   CIDR          RANGE                  GATEWAY    DNS                 USED
lan    10.0.0.0/24   10.0.0.10-10.0.0.200   10.0.0.1   10.0.0.2,10.0.0.3   2/191
v6     fd00::/64     fd00::100-fd00::1ff    -          -                   0/256
"
    );
    assert_eq!(
        json_of(&list)["pools"][0],
        json!({
            "spec": {"name": "lan", "cidr": "10.0.0.0/24", "gateway": "10.0.0.1",
                     "range_start": "10.0.0.10", "range_end": "10.0.0.200",
                     "dns": ["10.0.0.2", "10.0.0.3"]},
            "allocations": {
                "10.0.0.10": {"owner": {"vm": "web-1"}, "nic": 0, "at": NOW - DAY},
                "10.0.0.11": {"owner": {"external": "test-1"}, "nic": null, "at": NOW - HOUR}
            }
        })
    );
}

#[test]
fn range_list() {
    let list = VmidRangeListReply {
        ranges: vec![range()],
    };
    assert_eq!(
        table(&list),
        "\
NAME      START   END   USED
default   100     999   1/900
"
    );
    assert_eq!(
        json_of(&list),
        json!({"ranges": [{
            "spec": {"name": "default", "start": 100, "end": 999},
            "allocations": {"100": {"owner": {"vm": "web-1"}, "at": NOW - DAY}}
        }]})
    );
}

#[test]
fn vip_list_shows_the_holder_by_host_name() {
    let list = VipListReply { vips: vips() };
    assert_eq!(
        table(&list),
        "\
NAME   ADDRESS       INTERFACE   HOSTS       OWNER   EPOCH
api    10.0.0.5/24   vmbr0       any         pve1    4
dns    10.0.0.6/24   vmbr0       pve1,pve2   -       0
"
    );
    assert_eq!(
        json_of(&list)["vips"][1],
        json!({
            "spec": {"name": "dns", "address": "10.0.0.6/24", "interface": "vmbr0",
                     "hosts": ["pve1", "pve2"], "labels": {}, "preempt": false,
                     "preempt_delay_secs": 30, "check": []},
            "generation": 2, "owner": null, "epoch": 0, "standby": null
        })
    );
}

#[test]
fn apply_reports_each_entry_with_its_generation() {
    let report = ApplyReport {
        applied: vec![
            Applied {
                kind: "vm",
                name: "web-1".into(),
                outcome: ApplyOutcome::Created,
                generation: Some(1),
            },
            Applied {
                kind: "pool",
                name: "lan".into(),
                outcome: ApplyOutcome::Unchanged,
                generation: None,
            },
        ],
        deleted: vec![],
    };
    assert_eq!(
        table(&report),
        "vm web-1 created (generation 1)\npool lan unchanged\n"
    );
    assert_eq!(
        json_of(&report),
        json!({"applied": [
            {"kind": "vm", "name": "web-1", "outcome": "created", "generation": 1},
            {"kind": "pool", "name": "lan", "outcome": "unchanged"}
        ]})
    );
    // A scale (or a group past its replicas) adds what it deleted.
    let scaled = ApplyReport {
        applied: vec![],
        deleted: vec![Deleted {
            kind: "vm",
            name: "web-3".into(),
            removed: true,
        }],
    };
    assert_eq!(table(&scaled), "vm web-3 deleted\n");
    assert_eq!(
        json_of(&scaled),
        json!({"applied": [], "deleted": [{"kind": "vm", "name": "web-3", "removed": true}]})
    );
}

#[test]
fn deletes_say_whether_the_object_is_gone_or_going() {
    let going = Deleted {
        kind: "vm",
        name: "web-1".into(),
        removed: false,
    };
    assert_eq!(
        table(&going),
        "vm web-1 marked for deletion: it disappears once destroyed on its host, and its VMID \
         and addresses are released then (watch with `pvefleet vm show web-1`)\n"
    );
    assert_eq!(
        json_of(&going),
        json!({"kind": "vm", "name": "web-1", "removed": false})
    );
    let gone = Deleted {
        kind: "pool",
        name: "lan".into(),
        removed: true,
    };
    assert_eq!(table(&gone), "pool lan deleted\n");
    assert_eq!(
        json_of(&gone),
        json!({"kind": "pool", "name": "lan", "removed": true})
    );
}

#[test]
fn direct_allocations() {
    let vmid = VmidAllocated {
        vm: "web-1".into(),
        vmid: 100,
    };
    assert_eq!(table(&vmid), "vm web-1 has vmid 100\n");
    assert_eq!(json_of(&vmid), json!({"vm": "web-1", "vmid": 100}));
    let address = IpAllocated {
        pool: "lan".into(),
        owner: "test-1".into(),
        address: ip("10.0.0.11"),
        prefix_len: 24,
        gateway: Some(ip("10.0.0.1")),
    };
    assert_eq!(
        table(&address),
        "10.0.0.11/24 via 10.0.0.1 allocated from pool lan to test-1\n"
    );
    assert_eq!(
        json_of(&address),
        json!({"pool": "lan", "owner": "test-1", "address": "10.0.0.11", "prefix_len": 24,
               "gateway": "10.0.0.1"})
    );
}

#[test]
fn empty_lists_say_how_to_add_the_first_entry_and_stay_valid_json() {
    let cases: Vec<(String, serde_json::Value, &str)> = vec![
        (
            table(&VmListReply {
                vms: vec![],
                recoveries: Default::default(),
                migrations: Default::default(),
            }),
            json_of(&VmListReply {
                vms: vec![],
                recoveries: Default::default(),
                migrations: Default::default(),
            }),
            "pvefleet vm apply -f FILE",
        ),
        (
            table(&PoolListReply { pools: vec![] }),
            json_of(&PoolListReply { pools: vec![] }),
            "pvefleet pool apply -f FILE",
        ),
        (
            table(&VmidRangeListReply { ranges: vec![] }),
            json_of(&VmidRangeListReply { ranges: vec![] }),
            "pvefleet range apply -f FILE",
        ),
        (
            table(&VipListReply { vips: vec![] }),
            json_of(&VipListReply { vips: vec![] }),
            "pvefleet vip apply -f FILE",
        ),
        (
            table(&TokenListReply { tokens: vec![] }),
            json_of(&TokenListReply { tokens: vec![] }),
            "pvefleet token create",
        ),
    ];
    for (text, json, hint) in cases {
        assert!(text.contains(hint), "{text}");
        // The list itself (a VM list also carries its recoveries, a map).
        let list = json
            .as_object()
            .unwrap()
            .values()
            .find(|v| v.is_array())
            .unwrap();
        assert_eq!(list, &json!([]));
    }
}
