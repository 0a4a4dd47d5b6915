//! Benchmark (figures; it fails only when a run breaks an invariant): how long a host failure
//! takes, with the fleet's defaults (10 s lease, fenced 11 s after the last acknowledged beat),
//! from the failure to every HA guest of the host running on another host — the figure PVE's
//! HA manager needs about 120 s for (60 s before it fences, its 120 s lock expiry as the proof),
//! and vSphere HA only declares the host failed after 15 s. Target: a median ≤ 15 s.
//!
//! Each round is one `pvefleet-lab sim run` of a scenario of the project's HA library (real
//! coordinator and agent processes, a simulated PVE cluster of four nodes with shared storage,
//! three HA guests), so the figure is what an operator's run of the same file shows:
//! - `power-off` (`host-power-off`): the host holding `web-1` loses power (agent, coordinator
//!   and node);
//! - `partition` (the bench's `partition-plain`): a host without a coordinator loses its links
//!   to the rest of the fleet (nftables in the run's own network namespace) and fences itself;
//!   the majority recovers after the proof;
//! - `part-lead` (`host-partition`): the same for the host of the leading coordinator, so an
//!   election and the new leader's wait (rule 3) come first.
//!
//! Prints one row per round (fenced after, all guests running elsewhere after), the median per
//! kind, and the timeline of the first power-off round. `PVEFLEET_HA_ROUNDS` sets the rounds
//! per kind (5 by default). Run: `make bench` (it builds the release binaries first).
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken run aborts: its figures mean nothing

use std::path::PathBuf;
use std::process::Command;

use lab::Binaries;
use lab::binaries::LAB_CLI;

/// The kinds measured, with their scenario (in tests/scenarios, or the bench's own in
/// tests/benches/scenarios).
const KINDS: [(&str, &str); 3] = [
    ("power-off", "scenarios/host-power-off.toml"),
    ("partition", "benches/scenarios/partition-plain.toml"),
    ("part-lead", "scenarios/host-partition.toml"),
];

/// One round's figures, in ms from the failure.
struct Round {
    kind: &'static str,
    host: String,
    guests: usize,
    fenced_ms: Option<i64>,
    recovered_ms: Option<i64>,
}

fn scenario(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(file)
}

fn median(mut v: Vec<i64>) -> Option<f64> {
    v.sort_unstable();
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2] as f64),
        _ => Some((v[n / 2 - 1] + v[n / 2]) as f64 / 2.0),
    }
}

fn secs(ms: Option<i64>) -> String {
    ms.map_or_else(
        || "-".to_string(),
        |ms| format!("{:.1}", ms as f64 / 1000.0),
    )
}

fn main() {
    let rounds: usize = std::env::var("PVEFLEET_HA_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let cli = Binaries::beside_current_exe()
        .and_then(|b| b.path(LAB_CLI))
        .expect("the pvefleet-lab binary (make bench builds it)");
    let mut results: Vec<Round> = Vec::new();
    let mut timeline: Option<String> = None;
    let mut broken = Vec::new();
    for (kind, file) in KINDS {
        for round in 1..=rounds {
            let out = Command::new(&cli)
                .args(["sim", "run", "--output", "json"])
                .arg(scenario(file))
                .output()
                .expect("pvefleet-lab sim run");
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!(
                    "{kind} round {round}: no JSON outcome ({e}); stderr:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
            if !out.status.success() {
                broken.push(format!(
                    "{kind} round {round}: {}",
                    serde_json::to_string(&doc["violations"]).unwrap_or_default()
                ));
            }
            let figure = &doc["figures"][0];
            results.push(Round {
                kind,
                host: figure["host"].as_str().unwrap_or("?").to_string(),
                guests: figure["vms"].as_array().map_or(0, Vec::len),
                fenced_ms: figure["fenced_after_ms"].as_i64(),
                recovered_ms: figure["recovered_after_ms"].as_i64(),
            });
            if kind == "power-off" && timeline.is_none() {
                let lines: Vec<String> = doc["timeline"]
                    .as_array()
                    .map(|entries| {
                        entries
                            .iter()
                            .filter_map(|e| {
                                let t = e["t_ms"].as_i64()? as f64 / 1000.0;
                                Some(format!("{t:+9.3}s {}", e["text"].as_str()?))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                timeline = Some(lines.join("\n"));
            }
            eprintln!(
                "{kind} round {round}: {}",
                figure["text"].as_str().unwrap_or("no figure")
            );
        }
    }
    println!("\nhost failure -> every HA guest running elsewhere (defaults: lease 10 s)");
    println!(
        "{:<10} {:>5} {:<8} {:>6} {:>10} {:>14}",
        "kind", "round", "host", "guests", "fenced s", "recovered s"
    );
    for (i, r) in results.iter().enumerate() {
        println!(
            "{:<10} {:>5} {:<8} {:>6} {:>10} {:>14}",
            r.kind,
            i % rounds + 1,
            r.host,
            r.guests,
            secs(r.fenced_ms),
            secs(r.recovered_ms)
        );
    }
    for (kind, _) in KINDS {
        let of = |f: fn(&Round) -> Option<i64>| {
            median(
                results
                    .iter()
                    .filter(|r| r.kind == kind)
                    .filter_map(f)
                    .collect(),
            )
        };
        let fenced = of(|r| r.fenced_ms);
        let recovered = of(|r| r.recovered_ms);
        println!(
            "median {kind:<10} fenced {} s, all running elsewhere {} s (target <= 15 s; PVE HA ~120 s)",
            fenced.map_or("-".into(), |m| format!("{:.1}", m / 1000.0)),
            recovered.map_or("-".into(), |m| format!("{:.1}", m / 1000.0)),
        );
    }
    if let Some(t) = timeline {
        println!("\nthe first power-off round:\n{t}");
    }
    assert!(
        broken.is_empty(),
        "runs that broke an invariant or an expectation: {broken:#?}"
    );
}
