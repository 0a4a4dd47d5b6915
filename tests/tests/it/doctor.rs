//! `pvefleet doctor` end to end, with the real binaries and simulated PVE: a healthy fleet
//! passes (exit 0, no finding), then the three things an operator must hear about are made
//! real and each is found with the right subject, check and words, and the exit is 6:
//! - an agent whose PVE API token lacks `VM.Snapshot` (its simulator withholds it: a snapshot
//!   through that agent is refused by PVE's permission check, and the doctor names the
//!   privilege and `/vms`);
//! - an agent whose wall clock is 30 s ahead (libfaketime in its process, monotonic clocks
//!   untouched, so leases and fencing run as they do);
//! - an admin certificate issued for 36 hours (`admin add --ttl 36h`).

use std::time::Duration;

use protocol::admin::{DoctorReport, Finding, Severity};
use pvefleet_tests::fleet::{Fleet, HostOptions, PveAccess, PveClient};

/// libfaketime (Debian's `libfaketime`, installed by `make test`).
const FAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

fn doctor(fleet: &Fleet) -> (Option<i32>, DoctorReport) {
    let out = fleet.cluster.cli(&["doctor"]);
    let report: DoctorReport = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor printed no report ({e}), status {}:\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), report)
}

fn find<'a>(report: &'a DoctorReport, subject: &str, check: &str) -> &'a Finding {
    report
        .findings
        .iter()
        .find(|f| f.subject.starts_with(subject) && f.check == check)
        .unwrap_or_else(|| panic!("no {check} finding for {subject}: {:#?}", report.findings))
}

#[test]
fn doctor_finds_a_missing_privilege_a_skewed_clock_and_an_expiring_certificate() {
    assert!(
        std::path::Path::new(FAKETIME).exists(),
        "{FAKETIME} is missing: apt-get install libfaketime (make test installs it)"
    );
    let mut fleet = Fleet::start(3);
    fleet.add_hosts(&[HostOptions::new("pve1", PveAccess::Https)]);

    // Healthy: nothing to say, exit 0, every member and host checked.
    let (code, report) = doctor(&fleet);
    assert_eq!(report.findings, vec![], "{report:#?}");
    assert_eq!(code, Some(0));
    assert_eq!(report.members.len(), 3);
    assert!(
        report.members.iter().all(|m| m.facts.is_ok()),
        "{report:#?}"
    );
    let pve1 = report.hosts.iter().find(|h| h.name == "pve1").unwrap();
    let facts = pve1.facts.as_ref().expect("pve1 answered");
    let pve = facts.pve.as_ref().expect("pve1 read PVE");
    assert_eq!(pve.missing_privileges, Ok(vec![]));
    assert!(pve.version.starts_with("9."), "{}", pve.version);
    assert!(facts.clock.is_some(), "the agent measured its clock");

    // Now the three faults, all real.
    fleet.add_hosts(&[
        HostOptions::new("pve2", PveAccess::Https).withholding(&["VM.Snapshot"]),
        HostOptions::new("pve3", PveAccess::Https)
            .with_agent_env("LD_PRELOAD", FAKETIME)
            .with_agent_env("FAKETIME", "+30s")
            .with_agent_env("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
    ]);
    let admin_dir = tempfile::tempdir().unwrap();
    let out_dir = admin_dir.path().join("ops");
    let added = fleet.cluster.cli(&[
        "admin",
        "add",
        "ops",
        "--ttl",
        "36h",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(added.status.success(), "{added:?}");
    // The agent's clock offset is measured on its acknowledged beats: give it a few.
    std::thread::sleep(Duration::from_secs(2));

    let (code, report) = doctor(&fleet);
    assert_eq!(code, Some(6), "a problem exits 6: {report:#?}");

    let privilege = find(&report, "host pve2", "privileges");
    assert_eq!(privilege.severity, Severity::Problem);
    assert!(
        privilege.message.contains("lacks VM.Snapshot on /vms"),
        "{}",
        privilege.message
    );
    assert!(
        privilege.action.contains("pveum acl modify /vms"),
        "{}",
        privilege.action
    );

    let clock = find(&report, "host pve3", "clock");
    assert_eq!(clock.severity, Severity::Problem);
    assert!(
        clock.message.contains("ahead of the leader"),
        "{}",
        clock.message
    );
    let pve3 = report.hosts.iter().find(|h| h.name == "pve3").unwrap();
    let ahead = pve3.facts.as_ref().unwrap().clock.unwrap().ahead_ms;
    assert!(
        (25_000..35_000).contains(&ahead),
        "pve3 is {ahead} ms ahead"
    );

    let expiring = find(&report, "admin", "certificates");
    assert!(expiring.subject.ends_with("(ops)"), "{}", expiring.subject);
    assert!(
        expiring.message.contains("expires in"),
        "{}",
        expiring.message
    );

    // Nothing else: the healthy host and the members have no finding.
    let others: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| {
            let expected = (f.subject == "host pve2" && f.check == "privileges")
                || (f.subject == "host pve3" && f.check == "clock")
                || (f.subject.starts_with("admin") && f.check == "certificates");
            !expected
        })
        .collect();
    assert_eq!(others, Vec::<&Finding>::new());

    // The withheld privilege is PVE's refusal too, not only the doctor's reading: a
    // snapshot through pve2's token fails the permission check.
    let client = fleet.pve("pve2").client();
    let refused =
        fleet.block_on(client.create_snapshot("pve2", 9000, "before", &Default::default()));
    let text = format!("{refused:?}");
    assert!(
        text.contains("Permission check failed (/vms/9000, VM.Snapshot)"),
        "{text}"
    );
}
