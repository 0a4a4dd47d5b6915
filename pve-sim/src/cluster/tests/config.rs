//! Scenario tests of config reads and updates: digest on every write, the PUT/POST error rows,
//! pending changes on a running VM, disk allocation and unused volumes.

use serde_json::Value;

use super::support::{fast, scaled};
use crate::{Caller, Route};

const N1: (&str, &str) = ("node", "pve1");
const V100: (&str, &str) = ("vmid", "100");

#[tokio::test]
async fn put_updates_a_stopped_vm_and_every_write_changes_the_digest() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    let before = s.config("pve1", "100").await;
    let text0 = s.c.vm_config_text(100).unwrap();
    assert_eq!(
        s.ok(
            Route::VmConfigPut,
            &[
                N1,
                V100,
                ("cores", "4"),
                ("description", "web: front\nline 2")
            ]
        )
        .await,
        Value::Null
    );
    let after = s.config("pve1", "100").await;
    assert_eq!(after["cores"], Value::from(4));
    assert_eq!(after["memory"], Value::from("2048"));
    assert_eq!(after["description"], Value::from("web: front\nline 2"));
    assert_ne!(before["digest"], after["digest"]);
    let text = s.c.vm_config_text(100).unwrap();
    assert!(text.starts_with("#web%3A front\n#line 2\n"), "{text}");
    assert!(text.contains("\ncores: 4\n"));
    assert_ne!(text0, text);
    let digest = |t: &str| hex::encode(<sha1::Sha1 as sha1::Digest>::digest(t.as_bytes()));
    assert_eq!(after["digest"], Value::from(digest(&text)));
    // a lock set and cleared are writes too
    s.ok(Route::VmConfigPut, &[N1, V100, ("lock", "backup")])
        .await;
    let locked = s.config("pve1", "100").await;
    assert_eq!(locked["lock"], "backup");
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("delete", "lock"), ("skiplock", "1")],
    )
    .await;
    let unlocked = s.config("pve1", "100").await;
    assert!(unlocked.get("lock").is_none());
    assert_ne!(locked["digest"], unlocked["digest"]);
    assert_eq!(unlocked["digest"], after["digest"]);
}

#[tokio::test]
async fn config_update_errors_match_pve() {
    let mut s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.create_vm("pve2", "200", "local-lvm").await;
    for route in [Route::VmConfigPut, Route::VmConfigPost] {
        let e = s.err(route, &[N1, V100]).await;
        assert_eq!(
            (e.status, e.message.as_str()),
            (500, "no options specified")
        );
        let e = s.err(route, &[N1, V100, ("delete", "foo")]).await;
        assert_eq!(
            (e.status, e.errors["delete"].as_str()),
            (400, "unknown option 'foo'")
        );
        let e = s.err(route, &[N1, V100, ("revert", "bar")]).await;
        assert_eq!(e.errors["revert"], "unknown option 'bar'");
        let e = s
            .err(route, &[N1, V100, ("cores", "2"), ("delete", "cores")])
            .await;
        assert_eq!(
            e.errors["delete"],
            "you can't use '-cores' and -delete cores' at the same time"
        );
        let e = s
            .err(
                route,
                &[
                    N1,
                    V100,
                    ("cores", "2"),
                    ("digest", "0000000000000000000000000000000000000000"),
                ],
            )
            .await;
        assert_eq!(
            (e.status, e.message.as_str()),
            (500, "checksum mismatch (file change by other user?)")
        );
        let e = s.err(route, &[N1, ("vmid", "200"), ("cores", "2")]).await;
        assert_eq!(
            e.message,
            "Configuration file 'nodes/pve1/qemu-server/200.conf' does not exist"
        );
        let e = s.err(route, &[N1, ("vmid", "555"), ("cores", "2")]).await;
        assert_eq!(
            e.message,
            "Configuration file 'nodes/pve1/qemu-server/555.conf' does not exist"
        );
        let e = s.err(route, &[N1, V100, ("scsi1", "nope:4")]).await;
        assert_eq!(e.message, "storage 'nope' does not exist");
        let e = s
            .err(route, &[N1, V100, ("scsi1", "local:iso/x.iso")])
            .await;
        assert_eq!(
            e.errors["scsi1"],
            "explicit 'media=cdrom' is required for iso images"
        );
    }
    let mut cfg = crate::SimConfig::fast();
    cfg.storages[1].content = vec!["rootdir".into()];
    let t = super::support::with(cfg);
    t.create_vm("pve1", "100", "ceph").await;
    let e = t
        .err(Route::VmConfigPut, &[N1, V100, ("scsi1", "local-lvm:4")])
        .await;
    assert_eq!(
        (e.status, e.errors["storage"].as_str()),
        (400, "storage 'local-lvm' does not support vm images")
    );
    // locks: refused, skiplock root only, a token of root is not root
    s.ok(Route::VmConfigPut, &[N1, V100, ("lock", "migrate")])
        .await;
    let e = s.err(Route::VmConfigPut, &[N1, V100, ("cores", "2")]).await;
    assert_eq!(
        (e.status, e.message.as_str()),
        (500, "VM is locked (migrate)")
    );
    s.caller = Caller::token("root@pam", "fleet");
    let e = s
        .err(
            Route::VmConfigPut,
            &[N1, V100, ("cores", "2"), ("skiplock", "1")],
        )
        .await;
    assert_eq!(
        (e.status, e.errors["skiplock"].as_str()),
        (400, "Only root may use this option.")
    );
    s.caller = Caller::root();
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("cores", "2"), ("skiplock", "1")],
    )
    .await;
    assert_eq!(s.config("pve1", "100").await["cores"], Value::from(2));
}

#[tokio::test]
async fn running_vm_keeps_non_hotpluggable_changes_pending_until_restart() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("agent", "1"), ("tags", "web")],
    )
    .await;
    s.start("pve1", "100").await;
    let mac = s.config("pve1", "100").await["net0"]
        .as_str()
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .to_string();
    let net0 = format!("{mac},bridge=vmbr1");
    s.ok(
        Route::VmConfigPut,
        &[
            N1,
            V100,
            ("cores", "4"),
            ("name", "web1"),
            ("net0", &net0),
            ("memory", "4096"),
            ("delete", "agent,tags"),
        ],
    )
    .await;
    let current = s
        .ok(Route::VmConfigGet, &[N1, V100, ("current", "1")])
        .await;
    assert_eq!(current["name"], "web1");
    assert_eq!(current["net0"], Value::from(net0.as_str()));
    assert!(current.get("cores").is_none());
    assert_eq!(current["memory"], "2048");
    assert_eq!(current["agent"], "1");
    assert!(current.get("tags").is_none(), "tags are deleted at once");
    let pending_applied = s.config("pve1", "100").await;
    assert_eq!(pending_applied["cores"], Value::from(4));
    assert_eq!(pending_applied["memory"], "4096");
    assert!(pending_applied.get("agent").is_none());
    let text = s.c.vm_config_text(100).unwrap();
    assert!(
        text.contains("\n[PENDING]\ncores: 4\ndelete: agent\nmemory: 4096\n"),
        "{text}"
    );
    let rows = s.ok(Route::VmPending, &[N1, V100]).await;
    let row = |k: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == k)
            .cloned()
            .unwrap()
    };
    assert_eq!(row("cores")["pending"], Value::from("4"));
    assert!(row("cores").get("value").is_none());
    assert_eq!(row("memory")["value"], "2048");
    assert_eq!(row("agent")["delete"], Value::from(1));
    // reverting drops a pending change
    s.ok(Route::VmConfigPut, &[N1, V100, ("revert", "memory")])
        .await;
    assert_eq!(s.config("pve1", "100").await["memory"], "2048");
    // stop keeps pending, start applies it
    assert_eq!(s.run(Route::VmStop, &[N1, V100]).await, "OK");
    assert!(s.c.vm_config_text(100).unwrap().contains("[PENDING]"));
    s.start("pve1", "100").await;
    let text = s.c.vm_config_text(100).unwrap();
    assert!(!text.contains("[PENDING]"), "{text}");
    let now = s
        .ok(Route::VmConfigGet, &[N1, V100, ("current", "1")])
        .await;
    assert_eq!(now["cores"], Value::from(4));
    assert!(now.get("agent").is_none());
}

#[tokio::test]
async fn forced_pending_delete_is_reported_as_2() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.ok(Route::VmConfigPut, &[N1, V100, ("ide1", "local-lvm:1")])
        .await;
    s.start("pve1", "100").await;
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("delete", "ide1"), ("force", "1")],
    )
    .await;
    let rows = s.ok(Route::VmPending, &[N1, V100]).await;
    let ide1 = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "ide1")
        .unwrap()
        .clone();
    assert_eq!(ide1["delete"], Value::from(2));
    assert!(s.c.vm_config_text(100).unwrap().contains("delete: !ide1"));
}

#[tokio::test]
async fn post_config_runs_a_task_and_background_delay_waits_for_it() {
    let s = scaled(0.01);
    s.create_vm("pve1", "100", "local-lvm").await;
    let upid = s
        .task(Route::VmConfigPost, &[N1, V100, ("cores", "3")])
        .await;
    assert!(upid.contains(":qmconfig:100:root@pam:"), "{upid}");
    assert_eq!(s.wait(&upid).await, "OK");
    assert!(s.log(&upid).await[0].starts_with("update VM 100: -cores 3"));
    assert_eq!(s.config("pve1", "100").await["cores"], Value::from(3));
    let r = s
        .ok(
            Route::VmConfigPost,
            &[N1, V100, ("cores", "5"), ("background_delay", "5")],
        )
        .await;
    assert_eq!(r, Value::Null);
    assert_eq!(s.config("pve1", "100").await["cores"], Value::from(5));
    s.faults.fail_task(crate::faults::TaskFault {
        vmid: Some(100),
        task_type: "qmconfig".into(),
        message: "hotplug problem".into(),
        remaining: Some(1),
    });
    let e = s
        .err(
            Route::VmConfigPost,
            &[N1, V100, ("cores", "6"), ("background_delay", "5")],
        )
        .await;
    assert_eq!(
        (e.status, e.message.as_str()),
        (500, "failed to update VM 100: hotplug problem")
    );
    assert_eq!(s.config("pve1", "100").await["cores"], Value::from(5));
}

#[tokio::test]
async fn disks_are_allocated_replaced_into_unused_and_freed() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("scsi1", "local-lvm:4,iothread=1")],
    )
    .await;
    let c = s.config("pve1", "100").await;
    assert_eq!(c["scsi1"], "local-lvm:vm-100-disk-1,iothread=1,size=4G");
    s.ok(Route::VmConfigPut, &[N1, V100, ("scsi1", "local-lvm:2")])
        .await;
    let c = s.config("pve1", "100").await;
    assert_eq!(c["scsi1"], "local-lvm:vm-100-disk-2,size=2G");
    assert_eq!(c["unused0"], "local-lvm:vm-100-disk-1");
    let content = s
        .ok(
            Route::StorageContent,
            &[N1, ("storage", "local-lvm"), ("vmid", "100")],
        )
        .await;
    assert_eq!(content.as_array().unwrap().len(), 3);
    s.ok(Route::VmConfigPut, &[N1, V100, ("delete", "unused0")])
        .await;
    let content = s
        .ok(
            Route::StorageContent,
            &[N1, ("storage", "local-lvm"), ("vmid", "100")],
        )
        .await;
    assert_eq!(content.as_array().unwrap().len(), 2);
    s.ok(Route::VmConfigPut, &[N1, V100, ("delete", "scsi1")])
        .await;
    assert_eq!(
        s.config("pve1", "100").await["unused0"],
        "local-lvm:vm-100-disk-2"
    );
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("ide2", "local-lvm:cloudinit")],
    )
    .await;
    assert_eq!(
        s.config("pve1", "100").await["ide2"],
        "local-lvm:vm-100-cloudinit,media=cdrom"
    );
    let e = s
        .err(
            Route::VmConfigPut,
            &[N1, V100, ("ide0", "local-lvm:cloudinit")],
        )
        .await;
    assert_eq!(
        e.message,
        "ide0 - cloud-init drive is already attached at 'ide2'"
    );
    s.ok(Route::VmConfigPut, &[N1, V100, ("cdrom", "none")])
        .await;
    assert_eq!(s.config("pve1", "100").await["ide2"], "none,media=cdrom");
}

#[tokio::test]
async fn networks_get_generated_macs_in_canonical_form() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("net1", "bridge=vmbr1,model=e1000,firewall=1")],
    )
    .await;
    let net1 = s.config("pve1", "100").await["net1"]
        .as_str()
        .unwrap()
        .to_string();
    let (head, rest) = net1.split_once(',').unwrap();
    assert!(
        head.starts_with("e1000=BC:24:11:") && head.len() == "e1000=".len() + 17,
        "{net1}"
    );
    assert_eq!(rest, "bridge=vmbr1,firewall=1");
    let net0 = s.config("pve1", "100").await["net0"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        net0.starts_with("virtio=BC:24:11:") && net0.ends_with(",bridge=vmbr0"),
        "{net0}"
    );
}

#[tokio::test]
async fn config_of_a_snapshot_and_current_conflict() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    assert_eq!(
        s.run(Route::SnapshotCreate, &[N1, V100, ("snapname", "s1")])
            .await,
        "OK"
    );
    s.ok(Route::VmConfigPut, &[N1, V100, ("cores", "8")]).await;
    let snap = s
        .ok(Route::VmConfigGet, &[N1, V100, ("snapshot", "s1")])
        .await;
    assert!(snap.get("cores").is_none());
    assert_eq!(snap["digest"], s.config("pve1", "100").await["digest"]);
    let e = s
        .err(
            Route::VmConfigGet,
            &[N1, V100, ("snapshot", "s1"), ("current", "1")],
        )
        .await;
    assert_eq!(
        e.errors["current"],
        "cannot use 'snapshot' parameter with 'current'"
    );
    let e = s
        .err(Route::VmConfigGet, &[N1, V100, ("snapshot", "nope")])
        .await;
    assert_eq!(e.message, "snapshot 'nope' does not exist");
}

#[tokio::test]
async fn resize_grows_only_and_reports_task_errors() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("ide2", "none,media=cdrom")],
    )
    .await;
    assert_eq!(
        s.run(
            Route::VmResize,
            &[N1, V100, ("disk", "scsi0"), ("size", "+2G")]
        )
        .await,
        "OK"
    );
    assert_eq!(
        s.config("pve1", "100").await["scsi0"],
        "local-lvm:vm-100-disk-0,size=10G"
    );
    let cases = [
        ("scsi0", "4G", "shrinking disks is not supported"),
        ("scsi5", "+1G", "disk 'scsi5' does not exist"),
        ("ide2", "+1G", "you can't resize a cdrom"),
    ];
    for (disk, size, msg) in cases {
        assert_eq!(
            s.run(Route::VmResize, &[N1, V100, ("disk", disk), ("size", size)])
                .await,
            msg
        );
    }
    let digest = s.config("pve1", "100").await["digest"].clone();
    assert_eq!(
        s.run(
            Route::VmResize,
            &[N1, V100, ("disk", "scsi0"), ("size", "10G")]
        )
        .await,
        "OK"
    );
    assert_eq!(
        s.config("pve1", "100").await["digest"],
        digest,
        "same size is a no-op"
    );
    assert_eq!(
        s.run(
            Route::VmResize,
            &[
                N1,
                V100,
                ("disk", "scsi0"),
                ("size", "+1G"),
                ("digest", "abc")
            ]
        )
        .await,
        "checksum mismatch (file change by other user?)"
    );
    assert_eq!(
        s.run(
            Route::VmResize,
            &[N1, V100, ("disk", "scsi0"), ("size", "11811160064")]
        )
        .await,
        "OK"
    );
    assert_eq!(
        s.config("pve1", "100").await["scsi0"],
        "local-lvm:vm-100-disk-0,size=11G"
    );
    let content = s
        .ok(Route::StorageContent, &[N1, ("storage", "local-lvm")])
        .await;
    assert_eq!(content[0]["size"], Value::from(11u64 << 30));
}
