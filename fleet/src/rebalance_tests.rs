//! The rebalancing plan against hand-built states: a skewed cluster is evened out move by move
//! (each lowering the spread), a balanced one gets no move, a pinned or HA-`ignored` guest never
//! moves, and no move breaks an anti-affinity rule.

use protocol::spec::VmSpec;

use super::{RebalanceConfig, plan};
use crate::test_world::alpha;
use crate::views::host_views;

#[test]
fn a_skewed_cluster_is_evened_out_one_better_move_at_a_time() {
    let mut w = alpha();
    for i in 0..12 {
        w.spec_on(VmSpec::new(format!("vm-{i:02}"), 8192), 1);
    }
    let moves = plan(&w.state, host_views(&w.state), &RebalanceConfig::default());
    assert!(!moves.is_empty());
    let mut last = f64::MAX;
    for m in &moves {
        assert_eq!(m.from, "pve-a", "{m:?}");
        assert!(m.to == "pve-b" || m.to == "pve-c", "{m:?}");
        assert!(
            m.spread_after < m.spread_before && m.spread_before <= last,
            "{m:?}"
        );
        last = m.spread_after;
    }
    assert!(
        last <= RebalanceConfig::default().threshold_pct + 7.0,
        "{moves:?}"
    );
    // Balanced now: the same fleet with the moves made plans nothing more... and a fleet that
    // is balanced from the start plans nothing at all.
    let mut even = alpha();
    for i in 0..3 {
        even.spec_on(VmSpec::new(format!("e-{i}"), 8192), i + 1);
    }
    assert!(
        plan(
            &even.state,
            host_views(&even.state),
            &RebalanceConfig::default()
        )
        .is_empty()
    );
}

#[test]
fn pinned_guests_stay_and_no_move_breaks_anti_affinity() {
    let mut w = alpha();
    for i in 0..6 {
        let mut spec = VmSpec::new(format!("pin-{i}"), 8192);
        spec.placement.hosts = vec!["pve-a".into()];
        w.spec_on(spec, 1);
    }
    assert!(plan(&w.state, host_views(&w.state), &RebalanceConfig::default()).is_empty());
    // Nor a guest PVE HA-style `ignored` (left to the operator).
    let mut ignored = VmSpec::new("ignored", 16384);
    ignored.ha.state = Some(protocol::spec::HaState::Ignored);
    w.spec_on(ignored, 1);
    assert!(plan(&w.state, host_views(&w.state), &RebalanceConfig::default()).is_empty());
    // Two replicas kept apart, one on pve-b: the one on pve-a may only go to pve-c.
    let replica = |name: &str| {
        let mut spec = VmSpec::new(name, 16384);
        spec.tags = vec!["web".into()];
        spec.placement.apart_from = vec!["tag:web".into()];
        spec
    };
    w.spec_on(replica("web-1"), 1);
    w.spec_on(replica("web-2"), 2);
    let moves = plan(&w.state, host_views(&w.state), &RebalanceConfig::default());
    assert!(moves.iter().all(|m| !m.vm.starts_with("pin-")), "{moves:?}");
    for m in moves.iter().filter(|m| m.vm == "web-1") {
        assert_eq!(m.to, "pve-c", "{m:?}");
    }
    assert!(moves.iter().any(|m| m.vm == "web-1"), "{moves:?}");
}

#[test]
fn the_margin_is_a_share_of_the_imbalance_as_pves() {
    use super::gains_enough;
    // 30 -> 28 lowers it by 2 points, 6.7 % of it: not the 10 % margin.
    assert!(!gains_enough(30.0, 28.0, 10.0));
    assert!(gains_enough(30.0, 27.0, 10.0));
    // The same 2 points out of 12 are enough.
    assert!(gains_enough(12.0, 10.0, 10.0));
    assert!(
        !gains_enough(0.0, 0.0, 10.0),
        "nothing to gain on a balanced cluster"
    );
}
