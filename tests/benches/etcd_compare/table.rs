//! The comparison's table: one line per workload, each system's median rate and median p50,
//! and pvefleet's rate over each etcd's.

use crate::load::{Sample, Workload};

/// One workload's medians: pvefleet, etcd, etcd with client mutual TLS.
pub(crate) struct Row {
    pub(crate) workload: Workload,
    pub(crate) fleet: Sample,
    pub(crate) etcd: Sample,
    pub(crate) etcd_mtls: Sample,
}

fn cell(s: &Sample) -> String {
    format!(
        "{:>8.0} ({:>6.2} ms)",
        s.ops_per_sec,
        s.p50.as_secs_f64() * 1000.0
    )
}

fn ratio(a: &Sample, b: &Sample) -> String {
    if b.ops_per_sec > 0.0 {
        format!("{:.2}", a.ops_per_sec / b.ops_per_sec)
    } else {
        "-".to_string()
    }
}

/// The table as lines (header first).
pub(crate) fn render(rows: &[Row]) -> Vec<String> {
    let mut out = vec![
        format!(
            "{:<30} | {:<21} | {:<21} | {:<21} | {:>13} | {:>18}",
            "workload",
            "pvefleet ops/s (p50)",
            "etcd ops/s (p50)",
            "etcd mTLS ops/s (p50)",
            "pvefleet/etcd",
            "pvefleet/etcd-mTLS"
        ),
        format!(
            "{:-<30}-+-{:-<21}-+-{:-<21}-+-{:-<21}-+-{:->13}-+-{:->18}",
            "", "", "", "", "", ""
        ),
    ];
    for r in rows {
        out.push(format!(
            "{:<30} | {:<21} | {:<21} | {:<21} | {:>13} | {:>18}",
            r.workload.label(),
            cell(&r.fleet),
            cell(&r.etcd),
            cell(&r.etcd_mtls),
            ratio(&r.fleet, &r.etcd),
            ratio(&r.fleet, &r.etcd_mtls)
        ));
    }
    out
}
