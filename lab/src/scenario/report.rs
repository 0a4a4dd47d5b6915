//! The run's output for people — a header, the timeline lines as they happen
//! ([`super::TimelineEntry::line`]), a verdict block — and for scripts, one JSON document of
//! the whole [`Outcome`]. Pure: text out, the caller writes it.

use std::fmt::Write as _;

use protocol::spec::DesiredState;

use super::duration;
use super::model::Scenario;
use super::outcome::{End, Outcome};

/// The header: the scenario, its hosts and VMs, its events, and how links are cut.
pub fn header(scenario: &Scenario, isolation: &str) -> String {
    let mut out = format!("scenario {}", scenario.name);
    if !scenario.description.is_empty() {
        let _ = write!(out, ": {}", scenario.description);
    }
    out.push('\n');
    let hosts: Vec<String> = scenario
        .hosts
        .iter()
        .map(|h| {
            let mut parts = vec![match &h.pve_cluster {
                Some(c) => format!("PVE cluster {c}"),
                None => "standalone".to_string(),
            }];
            if scenario.coordinators.contains(&h.name) {
                parts.push("coordinator".to_string());
            }
            format!("{} ({})", h.name, parts.join(", "))
        })
        .collect();
    let _ = writeln!(out, "  hosts:  {}", hosts.join(", "));
    let vms: Vec<String> = scenario
        .fleet
        .vm
        .iter()
        .map(|v| {
            let mut parts = Vec::new();
            if v.state == DesiredState::Stopped {
                parts.push("stopped".to_string());
            }
            if let Some(ha) = v.ha.state {
                let defaults = scenario.fleet.settings.clone().unwrap_or_default().ha;
                parts.push(format!(
                    "HA {ha}, recovery {}",
                    v.ha.policy(&defaults).recovery
                ));
            }
            if parts.is_empty() {
                v.name.clone()
            } else {
                format!("{} ({})", v.name, parts.join(", "))
            }
        })
        .collect();
    let _ = writeln!(out, "  vms:    {}", vms.join(", "));
    let _ = writeln!(
        out,
        "  events: {}, expectations: {}, timeout {}, hold {}",
        scenario.events.len(),
        scenario.expects.len(),
        duration::seconds(i64::try_from(scenario.timeout.as_millis()).unwrap_or(i64::MAX)),
        duration::seconds(i64::try_from(scenario.hold.as_millis()).unwrap_or(i64::MAX)),
    );
    let _ = writeln!(out, "  links:  {isolation}");
    out
}

/// The verdict block.
pub fn verdict(outcome: &Outcome) -> String {
    let mut out = String::new();
    let ended = match outcome.end {
        End::ExpectationsMet => "the end expectations held after the last event",
        End::Timeout => "timeout",
        End::Interrupted => "interrupted",
    };
    let _ = writeln!(
        out,
        "\nverdict: {} (ended at {}: {ended}; fleet up in {:.1} s; {} samples, {} without a fleet answer)",
        if outcome.passed() { "PASSED" } else { "FAILED" },
        duration::seconds(outcome.end_ms),
        outcome.startup_ms as f64 / 1000.0,
        outcome.samples,
        outcome.fleet_silent_samples,
    );
    let _ = writeln!(out, "invariants:");
    for v in &outcome.invariants {
        match &v.first {
            None => {
                let _ = writeln!(out, "  ok        {}", v.title);
            }
            Some(first) => {
                let _ = writeln!(
                    out,
                    "  VIOLATED  {} at {} ({} samples): {}",
                    v.title,
                    duration::seconds(first.t_ms),
                    v.violations,
                    first.detail
                );
            }
        }
        if let Some(note) = &v.note {
            let _ = writeln!(out, "            note: {note}");
        }
    }
    if !outcome.expectations.is_empty() {
        let _ = writeln!(out, "expectations:");
    }
    for e in &outcome.expectations {
        let when = e
            .at_ms
            .map_or(String::new(), |t| format!(" at {}", duration::seconds(t)));
        let _ = writeln!(
            out,
            "  {}  expect[{}]{when} {}: {}",
            if e.met { "met  " } else { "UNMET" },
            e.index,
            e.text,
            e.seen
        );
    }
    let failed: Vec<_> = outcome
        .events
        .iter()
        .filter(|e| e.error.is_some())
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "events not played:");
        for e in failed {
            let _ = writeln!(
                out,
                "  event[{}] {} at {}: {}",
                e.index,
                e.text,
                duration::seconds(e.t_ms),
                e.error.as_deref().unwrap_or_default()
            );
        }
    }
    if !outcome.figures.is_empty() {
        let _ = writeln!(out, "figures:");
        for f in &outcome.figures {
            let _ = writeln!(out, "  {}", f.text);
        }
    }
    if !outcome.notes.is_empty() {
        let _ = writeln!(out, "notes:");
        for n in &outcome.notes {
            let _ = writeln!(out, "  {n}");
        }
    }
    out
}

/// The whole outcome as one JSON document.
///
/// # Errors
/// What serde_json reports (nothing in practice: every field serializes).
pub fn json(outcome: &Outcome) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(outcome)
}

#[cfg(test)]
mod tests {
    use super::super::expect::ExpectResult;
    use super::super::invariants::{Invariant, Violation};
    use super::super::played::PlayedEvent;
    use super::*;

    fn outcome() -> Outcome {
        let violations = vec![Violation {
            invariant: Invariant::OneRunner,
            t_ms: 12_345,
            detail: "web-1 runs on pve-a and pve-c".into(),
        }];
        Outcome {
            scenario: "s".into(),
            description: String::new(),
            isolation: "none".into(),
            hosts: vec!["pve-a".into()],
            vms: vec!["web-1".into()],
            startup_ms: 8_000,
            end_ms: 90_000,
            end: End::Timeout,
            samples: 450,
            fleet_silent_samples: 3,
            events: vec![PlayedEvent {
                index: 0,
                t_ms: 5_000,
                action: "power-off".into(),
                host: Some("pve-b".into()),
                vm: None,
                text: "power-off pve-b".into(),
                error: None,
                refused: None,
            }],
            timeline: Vec::new(),
            invariants: Outcome::verdicts(
                &violations,
                &[(Invariant::OneVipOwner, "no VIP in the scenario".into())],
            ),
            violations,
            expectations: vec![ExpectResult {
                index: 0,
                at_ms: None,
                text: "vm web-1 phase running".into(),
                met: false,
                seen: "phase unknown".into(),
            }],
            figures: Vec::new(),
            kept: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_verdict_names_the_first_violation_with_its_time_and_the_unmet_expectation() {
        let o = outcome();
        assert!(!o.passed());
        let text = verdict(&o);
        assert!(
            text.contains("verdict: FAILED (ended at 90.000s: timeout"),
            "{text}"
        );
        assert!(
            text.contains("VIOLATED  one runner per VM at 12.345s (1 samples): web-1 runs on"),
            "{text}"
        );
        assert!(
            text.contains("ok        no recovery without fencing"),
            "{text}"
        );
        assert!(text.contains("note: no VIP in the scenario"), "{text}");
        assert!(
            text.contains("UNMET  expect[0] vm web-1 phase running: phase unknown"),
            "{text}"
        );
    }

    #[test]
    fn the_json_document_carries_violations_expectations_and_events() {
        let doc: serde_json::Value = serde_json::from_str(&json(&outcome()).unwrap()).unwrap();
        assert_eq!(doc["scenario"], "s");
        assert_eq!(doc["end"], "timeout");
        assert_eq!(doc["violations"][0]["invariant"], "one_runner");
        assert_eq!(doc["violations"][0]["t_ms"], 12_345);
        assert_eq!(doc["expectations"][0]["met"], false);
        assert_eq!(doc["events"][0]["host"], "pve-b");
    }
}
