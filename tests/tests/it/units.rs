//! The package's systemd units, statically: `systemd-analyze verify` accepts them as installed
//! (daemon at the path ExecStart names, no warning at all), `systemd-analyze security` scores
//! their sandboxes below fixed thresholds, the pvesh drop-in really lifts the agent's sandbox,
//! and the package metadata (coordinator/Cargo.toml) ships what the units name: the daemons,
//! their man pages and configuration files, with the agent enabled and the coordinator not.
//!
//! Thresholds (systemd's scale: 0 sealed .. 10 no sandbox; "OK" is below 5): the agent below
//! 2.5 (it keeps CAP_NET_ADMIN/CAP_NET_RAW, netlink and host-wide /proc for its inventory), the
//! coordinator below 2.0 and below the agent (no capability, no netlink, /proc of its own
//! only). On this project's bookworm hosts they score 1.9 and 1.6.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use pvefleet_tests::units::{
    AGENT_UNIT, COORDINATOR_UNIT, GUARD_UNIT, PVESH_DROPIN, security, security_with_dropin,
    systemd_file, unit_values, verify, workspace_root,
};

const AGENT_MAX_EXPOSURE: f64 = 2.5;
const COORDINATOR_MAX_EXPOSURE: f64 = 2.0;

fn unit_text(unit: &str) -> String {
    std::fs::read_to_string(systemd_file(unit)).unwrap()
}

#[test]
fn both_units_pass_systemd_analyze_verify_with_their_daemons_installed() {
    for unit in [AGENT_UNIT, COORDINATOR_UNIT, GUARD_UNIT] {
        let report = verify(unit, None);
        assert!(
            report.is_clean(),
            "systemd-analyze verify {unit} (success: {}):\n{}",
            report.success,
            report.output
        );
    }
}

#[test]
fn exposure_scores_stay_below_their_thresholds() {
    let agent = security(AGENT_UNIT);
    let coordinator = security(COORDINATOR_UNIT);
    println!("{}{}", agent.table, coordinator.table);
    println!(
        "exposure: {AGENT_UNIT} {:.1} {} (threshold {AGENT_MAX_EXPOSURE}), \
         {COORDINATOR_UNIT} {:.1} {} (threshold {COORDINATOR_MAX_EXPOSURE})",
        agent.exposure, agent.verdict, coordinator.exposure, coordinator.verdict
    );
    assert!(
        agent.exposure < AGENT_MAX_EXPOSURE,
        "{AGENT_UNIT}: {}",
        agent.exposure
    );
    assert!(
        coordinator.exposure < COORDINATOR_MAX_EXPOSURE,
        "{COORDINATOR_UNIT}: {}",
        coordinator.exposure
    );
    assert!(
        coordinator.exposure < agent.exposure,
        "the coordinator needs less than the agent, so it must be exposed less"
    );
    // What each was granted, as systemd reads it (not as the file spells it).
    let granted = |r: &pvefleet_tests::units::SecurityReport, check: &str| {
        r.check(check)
            .unwrap_or_else(|| panic!("no {check} in:\n{}", r.table))
            .starts_with('✗')
    };
    // The agent holds VIPs: netlink and nftables (CAP_NET_ADMIN), gratuitous ARP and
    // unsolicited NA on a packet socket (CAP_NET_RAW, AF_PACKET). The coordinator needs none.
    for check in [
        "CapabilityBoundingSet=~CAP_NET_ADMIN",
        "RestrictAddressFamilies=~AF_PACKET",
    ] {
        assert!(granted(&agent, check), "{AGENT_UNIT}: {check}");
        assert!(!granted(&coordinator, check), "{COORDINATOR_UNIT}: {check}");
    }
    for check in [
        "CapabilityBoundingSet=~CAP_SYS_ADMIN",
        "CapabilityBoundingSet=~CAP_(DAC_*|FOWNER|IPC_OWNER)",
        "ProtectSystem=",
        "PrivateDevices=",
        "SystemCallFilter=~@privileged",
    ] {
        assert!(!granted(&agent, check), "{AGENT_UNIT}: {check}");
        assert!(!granted(&coordinator, check), "{COORDINATOR_UNIT}: {check}");
    }
}

/// The fence guard resets the host (reboot(2), CAP_SYS_BOOT) and needs nothing else: no
/// network, no other capability, below the agent's threshold.
#[test]
fn the_guard_unit_may_reboot_and_nothing_more() {
    let guard = security(GUARD_UNIT);
    println!("{}", guard.table);
    assert!(
        guard.exposure < AGENT_MAX_EXPOSURE,
        "{GUARD_UNIT}: {}",
        guard.exposure
    );
    let granted = |check: &str| {
        guard
            .check(check)
            .unwrap_or_else(|| panic!("no {check} in:\n{}", guard.table))
            .starts_with('✗')
    };
    assert!(granted("CapabilityBoundingSet=~CAP_SYS_BOOT"));
    for check in [
        "CapabilityBoundingSet=~CAP_SYS_ADMIN",
        "CapabilityBoundingSet=~CAP_NET_ADMIN",
        "CapabilityBoundingSet=~CAP_KILL",
        "RestrictAddressFamilies=~AF_(INET|INET6)",
        "RestrictAddressFamilies=~AF_NETLINK",
        "ProtectSystem=",
        "PrivateDevices=",
        "SystemCallFilter=~@mount",
    ] {
        assert!(!granted(check), "{GUARD_UNIT}: {check}");
    }
    let text = unit_text(GUARD_UNIT);
    let values = |key: &str| unit_values(&text, key);
    assert_eq!(values("ExecStart"), ["/usr/bin/pvefleet-agent fence-guard"]);
    assert_eq!(values("Restart"), ["always"]);
    assert_eq!(values("RestartSec"), ["1"]);
    assert_eq!(values("CapabilityBoundingSet"), ["CAP_SYS_BOOT"]);
    assert_eq!(values("ReadWritePaths"), ["/var/lib/pvefleet/agent"]);
    // Starting the agent starts its guard; nothing binds the guard's life to the agent's.
    let agent = unit_text(AGENT_UNIT);
    assert!(unit_values(&agent, "Wants").contains(&"pvefleet-agent-guard.service"));
    for key in ["BindsTo", "PartOf", "Requisite"] {
        assert!(values(key).is_empty(), "{GUARD_UNIT}: {key}=");
    }
}

#[test]
fn the_pvesh_dropin_verifies_and_lifts_the_agents_sandbox() {
    let report = verify(AGENT_UNIT, Some(PVESH_DROPIN));
    assert!(
        report.is_clean(),
        "systemd-analyze verify {AGENT_UNIT} + {PVESH_DROPIN}:\n{}",
        report.output
    );
    let lifted = security_with_dropin(AGENT_UNIT, PVESH_DROPIN);
    println!("{}", lifted.table);
    // PVE's code (LVM, ZFS, QEMU started by `qm start`) runs under it: nothing may be left.
    assert!(
        lifted.exposure >= 9.0,
        "still sandboxed: {}",
        lifted.exposure
    );
    for check in [
        "CapabilityBoundingSet=~CAP_SYS_ADMIN",
        "ProtectSystem=",
        "PrivateDevices=",
        "SystemCallFilter=~@mount",
        "NoNewPrivileges=",
        "MemoryDenyWriteExecute=",
    ] {
        let line = lifted.check(check).unwrap_or_else(|| panic!("no {check}"));
        assert!(line.starts_with('✗'), "still restricted: {line}");
    }
}

#[test]
fn the_units_carry_the_fixed_service_contract() {
    for (unit, daemon, dir) in [
        (AGENT_UNIT, "pvefleet-agent", "agent"),
        (COORDINATOR_UNIT, "pvefleet-coordinator", "coordinator"),
    ] {
        let text = unit_text(unit);
        let one = |key: &str| -> String {
            let values = unit_values(&text, key);
            assert_eq!(values.len(), 1, "{unit}: {key}= {values:?}");
            values[0].to_string()
        };
        assert_eq!(one("Type"), "notify", "{unit}");
        assert_eq!(one("NotifyAccess"), "main", "{unit}");
        assert_eq!(one("WatchdogSec"), "30", "{unit}");
        assert_eq!(one("Restart"), "on-failure", "{unit}");
        assert_eq!(one("RestartSec"), "5", "{unit}");
        assert_eq!(
            one("ExecStart"),
            format!("/usr/bin/{daemon} run --config /etc/pvefleet/{dir}.toml"),
            "{unit}"
        );
        assert_eq!(
            one("ConditionPathExists"),
            format!("/var/lib/pvefleet/{dir}/node.pem"),
            "{unit}: a node not joined yet must wait, not crash-loop"
        );
        assert_eq!(one("Documentation"), format!("man:{daemon}(1)"), "{unit}");
        assert_eq!(
            unit_values(&text, "ReadWritePaths")[0],
            format!("/var/lib/pvefleet/{dir}"),
            "{unit}: its data directory is writable"
        );
        assert_eq!(one("ProtectSystem"), "strict", "{unit}");
    }
    let agent = unit_text(AGENT_UNIT);
    assert_eq!(
        unit_values(&agent, "CapabilityBoundingSet"),
        ["CAP_NET_ADMIN CAP_NET_RAW"]
    );
    assert_eq!(
        unit_values(&agent, "RestrictAddressFamilies"),
        ["AF_UNIX AF_INET AF_INET6 AF_NETLINK AF_PACKET"]
    );
    let coordinator = unit_text(COORDINATOR_UNIT);
    assert_eq!(unit_values(&coordinator, "CapabilityBoundingSet"), [""]);
    assert_eq!(
        unit_values(&coordinator, "RestrictAddressFamilies"),
        ["AF_UNIX AF_INET AF_INET6"]
    );
}

/// `[package.metadata.deb]` of coordinator/Cargo.toml.
fn deb_metadata() -> toml::Table {
    let text = std::fs::read_to_string(workspace_root().join("coordinator/Cargo.toml")).unwrap();
    let manifest: toml::Table = toml::from_str(&text).unwrap();
    manifest["package"]["metadata"]["deb"]
        .as_table()
        .expect("[package.metadata.deb]")
        .clone()
}

#[test]
fn the_package_metadata_ships_what_the_units_name() {
    let deb = deb_metadata();
    assert_eq!(deb["name"].as_str(), Some("pvefleet"));
    let assets: Vec<(String, String)> = deb["assets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let a = a.as_array().expect("assets as [source, dest, mode]");
            (
                a[0].as_str().unwrap().to_string(),
                a[1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let ships = |source: &str, dest: &str| assets.iter().any(|(s, d)| s == source && d == dest);
    let conf_files: Vec<&str> = deb["conf-files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let units = deb["systemd-units"].as_array().unwrap();
    for (unit, daemon, dir, enabled) in [
        (AGENT_UNIT, "pvefleet-agent", "agent", true),
        (GUARD_UNIT, "pvefleet-agent", "agent", true),
        (
            COORDINATOR_UNIT,
            "pvefleet-coordinator",
            "coordinator",
            false,
        ),
    ] {
        assert!(
            ships(&format!("target/release/{daemon}"), "usr/bin/"),
            "{unit} starts /usr/bin/{daemon}, which the package must ship"
        );
        assert!(
            ships(
                &format!("../target/packaging/man/{daemon}.1.gz"),
                "usr/share/man/man1/"
            ),
            "{unit}'s Documentation=man:{daemon}(1) must be shipped"
        );
        let config = format!("/etc/pvefleet/{dir}.toml");
        assert!(
            ships(&format!("../packaging/etc/{dir}.toml"), "etc/pvefleet/"),
            "{config}"
        );
        assert!(
            conf_files.contains(&config.as_str()),
            "{config} is a conffile"
        );
        let entry = units
            .iter()
            .find(|u| u["unit-name"].as_str() == unit.strip_suffix(".service"))
            .unwrap_or_else(|| panic!("no systemd-units entry for {unit}"));
        assert_eq!(entry["unit-scripts"].as_str(), Some("../packaging/systemd"));
        assert_eq!(entry["enable"].as_bool(), Some(enabled), "{unit} enable");
        assert_eq!(entry["start"].as_bool(), Some(enabled), "{unit} start");
        assert_eq!(
            entry["restart-after-upgrade"].as_bool(),
            Some(true),
            "{unit}: an upgrade restarts it if it runs"
        );
    }
    assert!(ships(
        &format!("../packaging/systemd/{PVESH_DROPIN}"),
        "usr/share/doc/pvefleet/examples/"
    ));
}

/// A lab's agent runs with the environment the packaged unit gives it, so the agent's figures
/// (`--bench agent_idle`) are a host's.
#[test]
fn the_lab_runs_the_agent_with_the_units_environment() {
    let (key, value) = lab::lab::AGENT_MALLOC_ARENAS;
    assert_eq!(
        unit_values(&unit_text(AGENT_UNIT), "Environment"),
        [format!("{key}={value}")]
    );
}
