//! Recovery figures, a pure function of the played events and the samples: for each
//! `power-off`, `partition` or clean `shutdown` of a host H, the time from the event until H is `fenced` in the
//! fleet, and until every HA `started` VM the fleet had on H (in the last sample before the
//! event) is observed running in PVE on another host. For a `reset` (H comes back at once),
//! the time until every such VM runs again, on H or elsewhere.

use serde::Serialize;

use protocol::fleet::HostState;
use protocol::spec::HaState;

use super::played::PlayedEvent;
use super::sample::Sample;

/// One figure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Figure {
    /// The event measured (`event[i]`).
    pub event: usize,
    /// Its action.
    pub action: String,
    /// The host it took.
    pub host: String,
    /// The HA `started` VMs that were on it.
    pub vms: Vec<String>,
    /// Event to `fenced`, in ms.
    pub fenced_after_ms: Option<i64>,
    /// Event to every one of `vms` running elsewhere, in ms.
    pub recovered_after_ms: Option<i64>,
    /// The figure in words.
    pub text: String,
}

fn secs(ms: i64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// The figures of every host-losing event played without error.
pub fn recovery_figures(played: &[PlayedEvent], samples: &[Sample]) -> Vec<Figure> {
    played
        .iter()
        .filter(|e| {
            e.error.is_none()
                && matches!(
                    e.action.as_str(),
                    "power-off" | "partition" | "reset" | "shutdown"
                )
        })
        .filter_map(|e| Some(figure(e, e.host.as_deref()?, samples)))
        .collect()
}

fn figure(e: &PlayedEvent, host: &str, samples: &[Sample]) -> Figure {
    let before = samples
        .iter()
        .filter(|s| s.t_ms <= e.t_ms)
        .filter_map(|s| s.fleet.as_ref())
        .next_back();
    let vms: Vec<String> = before
        .map(|f| {
            f.vms
                .iter()
                .filter(|(_, v)| v.ha == Some(HaState::Started) && v.host.as_deref() == Some(host))
                .map(|(n, _)| n.clone())
                .collect()
        })
        .unwrap_or_default();
    let after = || samples.iter().filter(|s| s.t_ms >= e.t_ms);
    let fenced_after_ms = after()
        .find(|s| {
            s.fleet
                .as_ref()
                .and_then(|f| f.hosts.get(host))
                .is_some_and(|h| h.state == HostState::Fenced)
        })
        .map(|s| s.t_ms - e.t_ms);
    let reset = e.action == "reset";
    let elsewhere = |s: &Sample| {
        vms.iter().all(|vm| {
            let nodes = s.pve.running_nodes(vm);
            !nodes.is_empty() && (reset || nodes.iter().all(|n| *n != host))
        })
    };
    // A reset's guests count once they were seen down and then up again.
    let down_at = if reset {
        after().find(|s| !elsewhere(s)).map(|s| s.t_ms)
    } else {
        Some(e.t_ms)
    };
    let recovered_after_ms = if e.action == "shutdown" {
        // Moved off before it went down (a drain), or down and then running again anywhere
        // (recovered elsewhere, or frozen and back on it after its boot).
        let mut was_down = false;
        after()
            .find(|s| {
                let running = vms.iter().all(|vm| !s.pve.running_nodes(vm).is_empty());
                was_down |= !running;
                running && (was_down || elsewhere(s))
            })
            .filter(|_| !vms.is_empty())
            .map(|s| s.t_ms - e.t_ms)
    } else {
        match down_at {
            Some(down) if !vms.is_empty() => samples
                .iter()
                .filter(|s| s.t_ms >= down)
                .find(|s| elsewhere(s))
                .map(|s| s.t_ms - e.t_ms),
            _ => None,
        }
    };
    let (what, back) = match e.action.as_str() {
        "power-off" => ("powered off", "running elsewhere"),
        "reset" => ("reset", "running again"),
        "shutdown" => ("shut down", "running again (moved, recovered or back)"),
        _ => ("partitioned", "running elsewhere"),
    };
    let fenced = fenced_after_ms.map_or("never fenced".to_string(), |ms| {
        format!("fenced after {}", secs(ms))
    });
    let recovered = match (vms.len(), recovered_after_ms) {
        (0, _) => "no HA started guest on it".to_string(),
        (n, Some(ms)) => format!(
            "{} {back}: {}",
            if n == 1 {
                "its HA guest".to_string()
            } else {
                format!("all {n} HA guests")
            },
            secs(ms)
        ),
        (n, None) => format!("its {n} HA guest(s) not all {back} by the end"),
    };
    Figure {
        event: e.index,
        action: e.action.clone(),
        host: host.to_string(),
        vms,
        fenced_after_ms,
        recovered_after_ms,
        text: format!("{host} {what} -> {fenced}; {recovered}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::sample::fixtures::*;
    use super::*;
    use protocol::fleet::HostState::{Fenced, Online, Unreachable};

    fn power_off(t_ms: i64) -> PlayedEvent {
        PlayedEvent {
            index: 0,
            t_ms,
            action: "power-off".into(),
            host: Some("pve-b".into()),
            vm: None,
            text: "power-off pve-b".into(),
            error: None,
            refused: None,
        }
    }

    #[test]
    fn recovery_time_runs_from_the_event_to_every_guest_running_elsewhere() {
        let on_b = [
            ("web-1", vm("pve-b")),
            ("web-2", vm("pve-b")),
            ("db-1", vm("pve-c")),
        ];
        let samples = vec![
            sample(
                4_900,
                vec![guest("web-1", 100, "pve-b", true)],
                &[("pve-b", Online)],
                &on_b,
            ),
            sample(9_000, vec![], &[("pve-b", Unreachable)], &on_b),
            sample(16_000, vec![], &[("pve-b", Fenced)], &on_b),
            sample(
                17_000,
                vec![guest("web-1", 100, "pve-c", true)],
                &[("pve-b", Fenced)],
                &on_b,
            ),
            sample(
                19_800,
                vec![
                    guest("web-1", 100, "pve-c", true),
                    guest("web-2", 101, "pve-a", true),
                ],
                &[("pve-b", Fenced)],
                &on_b,
            ),
        ];
        let f = recovery_figures(&[power_off(5_000)], &samples);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].vms, ["web-1", "web-2"]);
        assert_eq!(f[0].fenced_after_ms, Some(11_000));
        assert_eq!(f[0].recovered_after_ms, Some(14_800));
        assert_eq!(
            f[0].text,
            "pve-b powered off -> fenced after 11.0 s; all 2 HA guests running elsewhere: 14.8 s"
        );
    }

    #[test]
    fn a_host_without_ha_guests_has_only_its_fence_figure() {
        let samples = vec![sample(0, vec![], &[("pve-b", Online)], &[])];
        let f = recovery_figures(&[power_off(0)], &samples);
        assert_eq!(
            f[0].text,
            "pve-b powered off -> never fenced; no HA started guest on it"
        );
    }

    #[test]
    fn a_reset_counts_until_its_guests_were_down_and_run_again() {
        let on_b = [("web-1", vm("pve-b"))];
        let up = || vec![guest("web-1", 100, "pve-b", true)];
        let hosts = [("pve-b", Online)];
        let samples = vec![
            sample(5_000, up(), &hosts, &on_b),
            sample(5_200, up(), &hosts, &on_b),
            sample(5_800, vec![], &hosts, &on_b),
            sample(35_600, up(), &hosts, &on_b),
        ];
        let mut reset = power_off(5_000);
        reset.action = "reset".into();
        let f = recovery_figures(&[reset], &samples);
        assert_eq!(f[0].recovered_after_ms, Some(30_600));
        assert_eq!(
            f[0].text,
            "pve-b reset -> never fenced; its HA guest running again: 30.6 s"
        );
    }
}
