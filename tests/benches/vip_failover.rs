//! Benchmark (figures, not pass/fail): VIP failover, pvefleet against keepalived 2.2.7, on the
//! same machine in one run. The pvefleet VIP testbed (namespaces, a real fleet
//! with its defaults) and keepalived on the same kind of namespace network (VRRPv2 with its
//! defaults, then VRRPv3 with 0.1 s adverts) are each put through their faults round after
//! round with a random phase; VRRP is dropped between the hosts to count split brains; and
//! pvefleet runs without fault under a CPU hog to count spurious moves. Prints per fault the
//! client's outage (min / median / max), every round, and a summary with pvefleet's targets.
//!
//! Needs root (namespaces, nftables) and keepalived (`make bench` installs it); without root
//! it says why and fails rather than skip. Progress goes to stderr, the figures to stdout.
//! Settings: `PVEFLEET_BENCH_ROUNDS` (10), `PVEFLEET_BENCH_HOG_SECS` (600),
//! `PVEFLEET_BENCH_SEED`.
//!
//! Run: `make bench` (it builds the release binaries first).

use std::process::ExitCode;

use pvefleet_tests::vip_bed::bench::keepalived::{VrrpSettings, version};
use pvefleet_tests::vip_bed::bench::phase::Phase;
use pvefleet_tests::vip_bed::bench::run::{
    BenchError, MAX_DELAY, Settings, require_root, run_keepalived, run_pvefleet,
};
use pvefleet_tests::vip_bed::bench::tables as bench_tables;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vip_failover: {e}");
            println!("vip_failover: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), BenchError> {
    require_root()?;
    let settings = Settings::from_env()?;
    let keepalived = version()?;
    println!(
        "{}",
        bench_tables::header(&settings, &keepalived, MAX_DELAY)
    );
    let mut phase = Phase::new(settings.seed, MAX_DELAY);
    let mut progress = |line: String| eprintln!("vip_failover: {line}");
    let pvefleet = run_pvefleet(&settings, &mut phase, &mut progress)?;
    println!("{}", bench_tables::pvefleet(&pvefleet));
    let mut others = Vec::new();
    for vrrp in VrrpSettings::ALL {
        let run = run_keepalived(vrrp, &settings, &mut phase, &mut progress)?;
        println!("{}", bench_tables::keepalived(&run));
        others.push(run);
    }
    println!("{}", bench_tables::split_brain(&pvefleet, &others));
    println!("{}", bench_tables::hog(&pvefleet.hog));
    println!("{}", bench_tables::summary(&pvefleet, &others));
    Ok(())
}
