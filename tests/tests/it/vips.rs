//! Rule 5 (one VIP owner) on the namespace testbed: a real fleet in network namespaces holds a
//! VIP on its hosts' bridges while a client probes it (ARP and TCP) and every host is sampled,
//! through every fault of issue 12 played on the owner in turn. At no sample may two hosts
//! answer ARP for the VIP or hold it, and after each fault and its restore exactly one host
//! holds it and answers. The outage of each fault is printed, never asserted (the machines
//! are noisy): `cargo test -p pvefleet-tests --test it vips -- --nocapture` shows the table.
//! Runs as root (CI does); it makes its own namespaces and removes them.

use pvefleet_tests::vip_bed::faults::Fault;
use pvefleet_tests::vip_bed::report::table;
use pvefleet_tests::vip_bed::{BedOptions, VipBed};

#[test]
fn a_vip_has_one_holder_through_every_fault_on_its_owner() {
    let mut bed = VipBed::start(BedOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let reports: Vec<_> = Fault::ALL
        .iter()
        .map(|f| {
            let report = bed.exercise(*f);
            println!("{f}:\n  {}", report.changes.join("\n  "));
            report
        })
        .collect();
    let whole = bed
        .record
        .stats(std::time::Duration::ZERO, bed.record.now());
    println!(
        "VIP testbed: {} hosts, {} coordinators; outage = longest time without an answer \
         (ARP every {:?}, TCP every {:?})\n{}",
        bed.options().hosts,
        bed.options().coordinators,
        bed.options().arp_every,
        bed.options().tcp_every,
        table(&reports)
    );
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
        table(&reports)
    );
}
