//! `settings show|apply`, and the HA defaults and affinity rules in `vm show`: the `[settings]` table is sent whole
//! (a key left out is its default), a file without it is refused before anything is sent, and
//! a VM's HA limits it leaves out are shown as the fleet's defaults in force.

use std::sync::{Arc, Mutex};

use crate::support::{FakeMember, Pki, pvefleet};
use cli::exit::ExitStatus;
use protocol::admin::{SettingsGet, SettingsPut, SettingsReply, VmGet};
use protocol::fleet::{Rebalancing, Settings, VmRecord};
use protocol::spec::{HaDefaults, HaSpec, RecoveryMode, VmSpec};
use transport::{Router, Service};

fn tuned() -> Settings {
    Settings {
        cpu_overcommit_percent: 200,
        ha: HaDefaults {
            max_restart: 0,
            max_relocate: 2,
            recovery: RecoveryMode::Recreate,
            ..HaDefaults::default()
        },
        rebalance: Rebalancing {
            enabled: true,
            hold_s: 120,
            ..Rebalancing::default()
        },
        ..Settings::default()
    }
}

#[tokio::test]
async fn settings_apply_sends_the_whole_table_and_show_prints_the_ha_defaults() {
    let pki = Pki::new();
    let sent: Arc<Mutex<Vec<Settings>>> = Arc::default();
    let seen = sent.clone();
    let mut router = Router::new();
    router.handle(Service::Admin, move |_caller, req: SettingsPut| {
        seen.lock().unwrap().push(req.settings.clone());
        async move {
            Ok(SettingsReply {
                settings: req.settings,
            })
        }
    });
    router.handle(Service::Admin, |_caller, _req: SettingsGet| async move {
        Ok(SettingsReply { settings: tuned() })
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);
    let file = pki.dir().join("fleet.toml");
    std::fs::write(
        &file,
        "[settings]\ncpu_overcommit_percent = 200\n[settings.ha]\nmax_restart = 0\n\
         max_relocate = 2\nrecovery = \"recreate\"\n[settings.rebalance]\nenabled = true\n\
         hold_s = 120\n[[vm]]\nname = \"web\"\nmemory_mib = 512\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();

    let (result, out) = pvefleet(&config, &["settings", "apply", "-f", path]).await;
    result.unwrap();
    assert_eq!(*sent.lock().unwrap(), [tuned()]);
    assert!(out.contains("ha.recovery:          recreate\n"), "{out}");
    assert!(out.contains("cpu overcommit:       200%\n"), "{out}");
    assert!(out.contains("rebalance:            on\n"), "{out}");
    assert!(out.contains("ha.shutdown_policy:   conditional\n"), "{out}");
    assert!(out.contains("rebalance hold:       120 s\n"), "{out}");

    let (result, out) = pvefleet(&config, &["-o", "json", "settings", "show"]).await;
    result.unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        doc["settings"]["ha"],
        serde_json::json!({
            "max_restart": 0,
            "max_relocate": 2,
            "recovery": "recreate",
            "shutdown_policy": "conditional"
        })
    );

    // No [settings]: refused before anything is sent.
    let vms_only = pki.dir().join("vms.toml");
    std::fs::write(&vms_only, "[[vm]]\nname = \"web\"\nmemory_mib = 512\n").unwrap();
    let (result, _) = pvefleet(
        &config,
        &["settings", "apply", "-f", vms_only.to_str().unwrap()],
    )
    .await;
    let e = result.unwrap_err();
    assert_eq!(e.status(), ExitStatus::Refused);
    assert!(e.to_string().contains("no [settings] table"), "{e}");
    // A bad default names the field.
    let bad = pki.dir().join("bad.toml");
    std::fs::write(&bad, "[settings.ha]\nmax_restart = 11\n").unwrap();
    let (result, _) = pvefleet(&config, &["settings", "apply", "-f", bad.to_str().unwrap()]).await;
    let e = result.unwrap_err().to_string();
    assert!(e.contains("settings.ha.max_restart"), "{e}");
    assert_eq!(sent.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn vm_show_tells_the_ha_values_the_vm_leaves_to_the_fleet() {
    let pki = Pki::new();
    let mut router = Router::new();
    router.handle(Service::Admin, |_caller, _req: VmGet| async move {
        let mut spec = VmSpec::new("db", 1024);
        spec.ha = HaSpec {
            max_relocate: Some(3),
            ..HaSpec::started()
        };
        spec.placement.together_with = vec!["app".into()];
        spec.placement.apart_from = vec!["tag:db".into()];
        Ok(VmRecord {
            spec,
            generation: 1,
            created_at: 0,
            updated_at: 0,
            deleting: false,
            assignment: Default::default(),
            status: Default::default(),
        })
    });
    router.handle(Service::Admin, |_caller, _req: SettingsGet| async move {
        Ok(SettingsReply { settings: tuned() })
    });
    let member = FakeMember::start(&pki, 1, router);
    let config = pki.write_config(&[&member]);
    let (result, out) = pvefleet(&config, &["vm", "show", "db"]).await;
    result.unwrap();
    assert!(
        out.contains(
            "started, restart 0 (fleet default), relocate 3, recovery recreate (fleet default)"
        ),
        "{out}"
    );
    assert!(
        out.contains("placement:   together with app; apart from tag:db\n"),
        "{out}"
    );
}

#[test]
fn maintenance_status_and_the_rebalance_plan_read_as_tables() {
    use crate::support::fixtures::table;
    use protocol::admin::{GuestLeft, HostMaintenanceReply, RebalanceMove, RebalancePlanReply};
    use protocol::fleet::HostState;
    let reply = HostMaintenanceReply {
        host: "pve-a".into(),
        state: HostState::Maintenance,
        left: vec![GuestLeft {
            vm: "db-1".into(),
            why: "moving to pve-b".into(),
        }],
        away: vec!["web-1".into()],
    };
    assert_eq!(
        table(&reply),
        "host pve-a: maintenance\nVM     STILL HERE BECAUSE\ndb-1   moving to pve-b\n\
         drained off it, to come back once it is online: web-1\n"
    );
    let plan = RebalancePlanReply {
        moves: vec![RebalanceMove {
            vm: "web-1".into(),
            from: "pve-a".into(),
            to: "pve-c".into(),
            spread_before: 21.25,
            spread_after: 12.5,
        }],
        settings: Rebalancing::default(),
    };
    let text = table(&plan);
    assert!(text.contains("web-1   pve-a   pve-c   21.2%"), "{text}");
    assert!(
        text.ends_with(
            "a plan only: move a guest with `pvefleet vm migrate NAME --to HOST`\n\
             automatic rebalancing is off ([settings.rebalance] enabled = true turns it on)\n"
        ),
        "{text}"
    );
    let on = Rebalancing {
        enabled: true,
        ..Rebalancing::default()
    };
    assert_eq!(
        table(&RebalancePlanReply {
            moves: vec![],
            settings: on
        }),
        "balanced: every PVE cluster is within 10% or no move lowers its spread by 10% of it\n\
         automatic rebalancing is on: the leader makes these moves one at a time once a cluster \
         stayed over 10% for 300 s\n"
    );
}

#[test]
fn a_migration_dry_run_reads_as_the_target_then_the_judged_nodes() {
    use crate::support::fixtures::table;
    use protocol::admin::{PlacementVerdict, VmMigratePlanReply};
    let plan = VmMigratePlanReply {
        vm: "db".into(),
        to: Some("pve-c".into()),
        why: "best of 1 eligible host".into(),
        with: vec!["cache".into()],
        verdicts: vec![PlacementVerdict {
            host_id: 4,
            host_name: "pve-b".into(),
            filter: Some("memory".into()),
            detail: "needs 64 GiB".into(),
            scores: None,
        }],
    };
    let text = table(&plan);
    assert!(
        text.starts_with(
            "vm db would move to pve-c (best of 1 eligible host), with its affinity group: \
             cache; nothing was moved (drop --dry-run to move it)\n"
        ),
        "{text}"
    );
    assert!(text.contains("pve-b") && text.contains("memory"), "{text}");
    let stuck = VmMigratePlanReply {
        to: None,
        why: "VM db is on pve-a already".into(),
        with: vec![],
        verdicts: vec![],
        ..plan
    };
    assert_eq!(
        table(&stuck),
        "vm db cannot move now: VM db is on pve-a already\n"
    );
}
