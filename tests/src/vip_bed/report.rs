//! The testbed's table: per fault, the owner it hit and who took over, the outage (the longest
//! time without an answer, over TCP and over ARP; for information, never a verdict), the most
//! hosts seen answering one ARP request and holding the VIP in one sample, the samples in which
//! a host that could not act still had a stale address, and what went wrong.

use std::fmt::Write as _;
use std::time::Duration;

use super::faults::FaultReport;

fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

/// The table of `reports`, then each report's problems.
pub fn table(reports: &[FaultReport]) -> String {
    let header = [
        "FAULT",
        "OWNER",
        "TAKEN BY",
        "AFTER",
        "TCP OUTAGE",
        "ARP OUTAGE",
        "ANSWERERS",
        "HOLDERS",
        "STALE",
        "PROBES ARP/TCP/HOLD",
        "RESULT",
    ];
    let dash = || "-".to_string();
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let s = &r.stats;
            vec![
                r.fault.name().to_string(),
                r.owner.clone().unwrap_or_else(dash),
                r.taken_by.clone().unwrap_or_else(dash),
                r.after.clone().unwrap_or_else(dash),
                ms(s.tcp_gap),
                ms(s.arp_gap),
                s.max_answerers.to_string(),
                s.max_holders.to_string(),
                s.stale_rounds.to_string(),
                format!("{}/{}/{}", s.probes.0, s.probes.1, s.probes.2),
                if r.passed() { "ok" } else { "FAILED" }.to_string(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].len())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let line = |out: &mut String, cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", padded.join("  ").trim_end());
    };
    line(
        &mut out,
        &header.iter().map(|h| (*h).to_string()).collect::<Vec<_>>(),
    );
    for row in &rows {
        line(&mut out, row);
    }
    for r in reports {
        if let Some(v) = &r.stats.first_violation {
            let _ = writeln!(out, "{}: INVARIANT BROKEN: {v}", r.fault);
        }
        for p in &r.problems {
            let _ = writeln!(out, "{}: {p}", r.fault);
        }
    }
    out
}
