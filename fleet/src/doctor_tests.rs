use protocol::admin::{Finding, HostCheck, MemberCheck, MemberFacts, Severity};
use protocol::agent::{ClockOffset, HostDiagnosis, MissingPrivilege, PveFacts, PveTrust};
use protocol::fleet::AdminRecord;

use super::*;

const NOW_MS: u64 = 1_800_000_000_000;
const NOW: u64 = NOW_MS / 1000;
const DAY: u64 = 86_400;

fn member(id: u64) -> MemberCheck {
    MemberCheck {
        id,
        addr: format!("10.0.0.{id}:7400"),
        voter: true,
        lag: Some(0),
        facts: Ok(MemberFacts {
            node_id: id,
            version: "0.1.0".into(),
            clock_ms: NOW_MS,
            certificate_not_after: NOW + 20 * DAY,
            ca_not_after: NOW + 3000 * DAY,
        }),
        clock: Some(ClockOffset {
            ahead_ms: 0,
            uncertainty_ms: 1,
        }),
    }
}

fn host(name: &str) -> HostCheck {
    HostCheck {
        id: 10,
        name: name.into(),
        online: true,
        facts: Ok(HostDiagnosis {
            agent_version: "0.1.0".into(),
            pve: Ok(PveFacts {
                version: "9.1.1".into(),
                trust: PveTrust::Fingerprint,
                missing_privileges: Ok(vec![]),
                snippet_storages: vec!["local".into()],
            }),
            clock: Some(ClockOffset {
                ahead_ms: 3,
                uncertainty_ms: 2,
            }),
            certificate_not_after: NOW + 25 * DAY,
            ca_not_after: NOW + 3000 * DAY,
            missing_capabilities: vec![],
        }),
    }
}

fn judge(members: &[MemberCheck], hosts: &[HostCheck], admins: &[AdminRecord]) -> Vec<Finding> {
    findings(&DoctorInput {
        now_ms: NOW_MS,
        leader: 1,
        leader_version: "0.1.0",
        members,
        hosts,
        admins,
        vips_configured: true,
    })
}

fn facts_mut(h: &mut HostCheck) -> &mut HostDiagnosis {
    h.facts.as_mut().unwrap()
}

#[test]
fn a_healthy_fleet_has_no_findings() {
    let members = [member(1), member(2), member(3)];
    assert_eq!(judge(&members, &[host("pve1")], &[]), vec![]);
}

#[test]
fn each_missing_privilege_is_a_problem_naming_the_privilege_and_the_path() {
    let mut h = host("pve1");
    if let Ok(pve) = &mut facts_mut(&mut h).pve {
        pve.missing_privileges = Ok(vec![MissingPrivilege {
            path: "/vms".into(),
            privileges: vec!["VM.Snapshot".into()],
            needed_for: "taking snapshots".into(),
        }]);
    }
    let f = judge(&[member(1)], &[h], &[]);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].severity, Severity::Problem);
    assert_eq!(f[0].check, "privileges");
    assert_eq!(f[0].subject, "host pve1");
    assert!(
        f[0].message.contains("VM.Snapshot on /vms"),
        "{}",
        f[0].message
    );
    assert!(
        f[0].action.contains("pveum acl modify /vms"),
        "{}",
        f[0].action
    );
}

#[test]
fn a_skewed_clock_counts_only_beyond_the_measurements_uncertainty() {
    let skewed = |ahead_ms: i64, uncertainty_ms: u64| {
        let mut h = host("pve1");
        facts_mut(&mut h).clock = Some(ClockOffset {
            ahead_ms,
            uncertainty_ms,
        });
        judge(&[member(1)], &[h], &[])
    };
    let f = skewed(30_000, 20);
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].severity, f[0].check.as_str()),
        (Severity::Problem, "clock")
    );
    assert!(
        f[0].message.contains("30.0 s ahead of the leader"),
        "{}",
        f[0].message
    );
    assert_eq!(skewed(-800, 100)[0].severity, Severity::Warning);
    assert!(skewed(-800, 100)[0].message.contains("behind"));
    // 900 ms measured over a 1 s round trip proves nothing.
    assert_eq!(skewed(900, 500), vec![]);
}

#[test]
fn certificates_are_flagged_by_time_left() {
    let expiring = |left: u64| {
        let mut h = host("pve1");
        facts_mut(&mut h).certificate_not_after = NOW + left;
        judge(&[member(1)], &[h], &[])
    };
    assert_eq!(expiring(10 * DAY), vec![]);
    assert_eq!(expiring(5 * DAY)[0].severity, Severity::Warning);
    assert!(expiring(5 * DAY)[0].message.contains("expires in 5 days"));
    assert_eq!(expiring(DAY)[0].severity, Severity::Problem);
    let mut m = member(2);
    if let Ok(f) = &mut m.facts {
        f.ca_not_after = NOW + 100 * DAY;
    }
    let f = judge(&[member(1), m], &[], &[]);
    assert_eq!(f.len(), 1);
    assert!(f[0].message.contains("the cluster CA expires in 100 days"));
}

#[test]
fn an_admin_certificate_about_to_expire_is_flagged_and_revoked_ones_are_not() {
    let admin = |id: u64, left: u64, revoked: bool| AdminRecord {
        id,
        name: format!("ops{id}"),
        issued_at: NOW_MS - DAY * 1000,
        expires_at: (NOW + left) * 1000,
        renew_until: (NOW + 30 * DAY) * 1000,
        revoked_at: revoked.then_some(NOW_MS),
    };
    let f = judge(
        &[member(1)],
        &[],
        &[
            admin(100, 36 * 3600, false),
            admin(101, 3600, true),
            admin(102, 20 * DAY, false),
        ],
    );
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].subject, "admin 100 (ops100)");
    assert_eq!(f[0].severity, Severity::Problem);
    assert!(
        f[0].message.contains("expires in 36 hours"),
        "{}",
        f[0].message
    );
}

#[test]
fn mixed_versions_a_silent_voter_and_lag_are_reported() {
    let mut m2 = member(2);
    if let Ok(f) = &mut m2.facts {
        f.version = "0.0.9".into();
    }
    let mut m3 = member(3);
    m3.facts = Err("connection refused".into());
    let mut m4 = member(4);
    m4.lag = Some(5_000);
    let mut h = host("pve1");
    facts_mut(&mut h).agent_version = "0.0.9".into();
    let f = judge(&[member(1), m2, m3, m4], &[h], &[]);
    let checks: Vec<(Severity, &str, &str)> = f
        .iter()
        .map(|f| (f.severity, f.subject.as_str(), f.check.as_str()))
        .collect();
    assert_eq!(
        checks,
        [
            (Severity::Problem, "member 3", "quorum"),
            (Severity::Warning, "host pve1", "versions"),
            (Severity::Warning, "member 2", "versions"),
            (Severity::Warning, "member 4", "replication"),
        ]
    );
    // 3 of 4 voters answer: one more down loses the quorum.
    assert!(
        f[0].action.contains("one more member down"),
        "{}",
        f[0].action
    );
}

#[test]
fn pve_trust_snippets_capabilities_and_silence() {
    let mut h = host("pve1");
    if let Ok(pve) = &mut facts_mut(&mut h).pve {
        pve.trust = PveTrust::Insecure;
        pve.snippet_storages.clear();
        pve.version = "8.2.4".into();
    }
    facts_mut(&mut h).missing_capabilities = vec!["CAP_NET_RAW".into()];
    let mut silent = host("pve2");
    silent.online = false;
    silent.facts = Err("no heartbeat for 40 s".into());
    let f = judge(&[member(1)], &[h, silent], &[]);
    let checks: Vec<(Severity, &str, &str)> = f
        .iter()
        .map(|f| (f.severity, f.subject.as_str(), f.check.as_str()))
        .collect();
    assert_eq!(
        checks,
        [
            (Severity::Problem, "host pve1", "capabilities"),
            (Severity::Problem, "host pve1", "tls"),
            (Severity::Problem, "host pve2", "agent"),
            (Severity::Warning, "host pve1", "pve"),
            (Severity::Warning, "host pve1", "snippets"),
        ]
    );
    assert_eq!(counts(&f)[&Severity::Problem], 3);
}
