//! Rule 5 (one VIP owner) on the namespace testbed: a real fleet in network namespaces holds a
//! VIP on its hosts' bridges while a client probes it (ARP and TCP) and every host is sampled,
//! through every fault of the VIP testbed played on the owner in turn. At no sample may two hosts
//! answer ARP for the VIP or hold it, and after each fault and its restore exactly one host
//! holds it and answers. The outage of each fault is printed, never asserted (the machines
//! are noisy): `cargo test -p pvefleet-tests --test it vips -- --nocapture` shows the table.
//! Runs as root (CI does); it makes its own namespaces and removes them.

use pvefleet_tests::vip_bed::faults::{Fault, FaultReport};
use pvefleet_tests::vip_bed::report::table;
use pvefleet_tests::vip_bed::{BedOptions, VipBed};

/// Plays `faults` in turn, printing what each changed.
fn play(bed: &mut VipBed, faults: &[Fault]) -> Vec<FaultReport> {
    faults
        .iter()
        .map(|f| {
            let report = bed.exercise(*f);
            println!("{f}:\n  {}", report.changes.join("\n  "));
            report
        })
        .collect()
}

/// Never two holders or answerers over the whole run, and every fault played out.
fn assert_one_holder_and_played(bed: &VipBed, reports: &[FaultReport]) {
    let whole = bed
        .record
        .stats(std::time::Duration::ZERO, bed.record.now());
    assert!(
        whole.max_answerers <= 1 && whole.max_holders <= 1,
        "two hosts answered for the VIP or held it: {:?}",
        whole.first_violation
    );
    let failed: Vec<&str> = reports
        .iter()
        .filter(|r| !r.passed())
        .map(|r| r.fault.name())
        .collect();
    assert!(
        failed.is_empty(),
        "faults that did not play out: {failed:?}\n{}",
        table(reports)
    );
}

#[test]
fn a_vip_has_one_holder_through_every_fault_on_its_owner() {
    let mut bed = VipBed::start(BedOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let reports = play(&mut bed, &Fault::ALL);
    println!(
        "VIP testbed: {} hosts, {} coordinators; outage = longest time without an answer \
         (ARP every {:?}, TCP every {:?})\n{}",
        bed.options().hosts,
        bed.options().coordinators,
        bed.options().arp_every,
        bed.options().tcp_every,
        table(&reports)
    );
    assert_one_holder_and_played(&bed, &reports);
}

/// The hardest case of owner host death: the dead host also ran the Raft leader, so no new
/// owner can be committed until an election. The standby the leader recorded takes the VIP
/// over on the members' promises alone (docs/design/vips.md, "Standby"), and the next leader
/// records it. Checked by behaviour (the event's reason, one holder throughout), not timing.
#[test]
fn a_dead_owner_that_ran_the_leader_is_replaced_by_its_standby() {
    let mut bed = VipBed::start(BedOptions {
        subnet: 62,
        ..BedOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let vip = bed.options().vip.clone();
    // Put the VIP on the leader's host, with a standby recorded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the VIP never settled on the leader's host"
        );
        let leader = bed.leader().unwrap_or_else(|e| panic!("{e}"));
        let status = bed.vip_status().unwrap_or_else(|e| panic!("{e}"));
        let on_leader = status.owner_name.as_deref() == Some(bed.name(leader));
        if on_leader && status.held && status.vip.standby.is_some() {
            break;
        }
        if !on_leader {
            let host = bed.name(leader).to_string();
            let _ = bed.cli(&["vip", "move", &vip, &host]);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let report = bed.exercise(Fault::HostDeath);
    println!("{}", table(std::slice::from_ref(&report)));
    println!("  {}", report.changes.join("\n  "));
    assert!(report.passed(), "{}", table(std::slice::from_ref(&report)));
    let events = bed.cli(&["events"]).unwrap_or_else(|e| panic!("{e}"));
    let took_over = events["events"].as_array().is_some_and(|all| {
        all.iter().any(|e| {
            e["subject"] == vip.as_str()
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("its standby took over"))
        })
    });
    assert!(took_over, "no standby take-over among the events: {events}");
    let whole = bed
        .record
        .stats(std::time::Duration::ZERO, bed.record.now());
    assert!(
        whole.max_answerers <= 1 && whole.max_holders <= 1,
        "two hosts answered for the VIP or held it: {:?}",
        whole.first_violation
    );
}

/// Issue: a member restart, then the loss of a second member, left the VIP without any
/// holder (2.1 s to over 20 s, in 4 of 30 rounds). The restarted member heard the standby
/// before the owner and vouched for it on its own ignorance; the owner kept holding on the
/// other two members, so nothing showed, until one of those two died and owner and standby
/// held one promise each. Here the owner's link to the restarted member is held back for
/// longer than the member's reconnect bound, so that member may well vouch for the standby
/// (the split the fix must end), and the second member is killed at once or a little later,
/// the leader in one round and the other member in the next (docs/design/vips.md, "Splits").
/// Checked throughout: never two holders; after each loss, one host holds and answers.
#[test]
fn a_member_restart_then_another_members_loss_leaves_one_holder() {
    let mut bed = VipBed::start(BedOptions {
        subnet: 63,
        ..BedOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    // The owner on the host that runs no member before every round: the member faults leave
    // it alone (a round may end with the standby, on a member's host, holding it).
    let last = bed.options().hosts - 1;
    let rounds = [
        Fault::MemberRestartThenLoss {
            kill_leader: false,
            late_link_ms: 6_000,
            then_ms: 200,
        },
        Fault::MemberRestartThenLoss {
            kill_leader: true,
            late_link_ms: 6_000,
            then_ms: 1_500,
        },
    ];
    let mut reports = Vec::new();
    for round in rounds {
        bed.settle_on(last).unwrap_or_else(|e| panic!("{e}"));
        reports.extend(play(&mut bed, &[round]));
    }
    println!("{}", table(&reports));
    assert_one_holder_and_played(&bed, &reports);
}
