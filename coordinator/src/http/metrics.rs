//! The member's Prometheus metrics (prometheus-client, OpenMetrics text): the Raft view, sampled
//! from openraft's metrics at every scrape, and the admin calls by method and outcome, counted
//! as they are answered.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use raft::{MemberNode, NodeId};
use transport::RemoteError;

/// Labels of the admin call counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    method: String,
    outcome: String,
}

/// Labels of the per-VIP gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VipLabels {
    vip: String,
}

/// One VIP as this member sees it at a scrape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VipSample {
    /// The VIP's name.
    pub(crate) vip: String,
    /// Whom this member vouches for now, `(holder, epoch)`.
    pub(crate) vouching: Option<(NodeId, u64)>,
    /// This member vouches for one host while another says it holds the VIP (a split of
    /// promises: docs/design/vips.md, "Splits").
    pub(crate) split: bool,
}

/// What a scrape samples the VIP gauges from (set once the member's context exists).
type VipSource = Box<dyn Fn() -> Vec<VipSample> + Send + Sync>;

/// The raft part of the metrics, as sampled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RaftSample {
    pub(crate) term: u64,
    pub(crate) is_leader: bool,
    pub(crate) current_leader: Option<NodeId>,
    pub(crate) commit_index: Option<u64>,
    pub(crate) applied_index: Option<u64>,
    pub(crate) voters: usize,
    pub(crate) learners: usize,
    pub(crate) snapshot_index: Option<u64>,
    pub(crate) purged_index: Option<u64>,
}

impl RaftSample {
    /// What openraft's metrics (and the committed index, read separately) say.
    pub(crate) fn from_metrics(
        m: &openraft::RaftMetrics<NodeId, MemberNode>,
        committed: Option<u64>,
    ) -> RaftSample {
        let membership = m.membership_config.membership();
        RaftSample {
            term: m.current_term,
            is_leader: m.current_leader == Some(m.id),
            current_leader: m.current_leader,
            commit_index: committed,
            applied_index: m.last_applied.map(|l| l.index),
            voters: membership.voter_ids().count(),
            learners: membership.learner_ids().count(),
            snapshot_index: m.snapshot.map(|l| l.index),
            purged_index: m.purged.map(|l| l.index),
        }
    }
}

/// Every metric of one member.
pub(crate) struct Metrics {
    registry: Registry,
    term: Gauge,
    is_leader: Gauge,
    current_leader: Gauge,
    commit_index: Gauge,
    applied_index: Gauge,
    voters: Gauge,
    learners: Gauge,
    snapshot_index: Gauge,
    purged_index: Gauge,
    admin_calls: Family<CallLabels, Counter>,
    vip_promise_holder: Family<VipLabels, Gauge>,
    vip_promise_epoch: Family<VipLabels, Gauge>,
    vip_split: Family<VipLabels, Gauge>,
    vip_source: std::sync::OnceLock<VipSource>,
}

fn gauge(registry: &mut Registry, name: &str, help: &str) -> Gauge {
    let g = Gauge::default();
    registry.register(name, help, g.clone());
    g
}

fn as_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("pvefleet");
        let term = gauge(&mut registry, "raft_term", "The current Raft term");
        let is_leader = gauge(
            &mut registry,
            "raft_is_leader",
            "1 if this member is the Raft leader, else 0",
        );
        let current_leader = gauge(
            &mut registry,
            "raft_current_leader",
            "Node id of the current leader (0 when none is known)",
        );
        let commit_index = gauge(
            &mut registry,
            "raft_commit_index",
            "Index of the last committed log entry this member knows",
        );
        let applied_index = gauge(
            &mut registry,
            "raft_applied_index",
            "Index of the last log entry applied to this member's state machine",
        );
        let voters = gauge(
            &mut registry,
            "raft_members",
            "Voting members of the Raft group",
        );
        let learners = gauge(
            &mut registry,
            "raft_learners",
            "Non-voting members (catching up) of the Raft group",
        );
        let snapshot_index = gauge(
            &mut registry,
            "raft_snapshot_index",
            "Last log index covered by this member's current snapshot (0 = none)",
        );
        let purged_index = gauge(
            &mut registry,
            "raft_purged_index",
            "Last log index purged from this member's log (0 = nothing compacted)",
        );
        let admin_calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "admin_calls",
            "Admin calls answered by this member, by method and outcome",
            admin_calls.clone(),
        );
        let vip_promise_holder = Family::<VipLabels, Gauge>::default();
        registry.register(
            "vip_promise_holder",
            "Host id this member vouches for now, per VIP (0 = nobody)",
            vip_promise_holder.clone(),
        );
        let vip_promise_epoch = Family::<VipLabels, Gauge>::default();
        registry.register(
            "vip_promise_epoch",
            "Ownership epoch of the promise this member gives now, per VIP (0 = none)",
            vip_promise_epoch.clone(),
        );
        let vip_split = Family::<VipLabels, Gauge>::default();
        registry.register(
            "vip_split",
            "1 while this member vouches for one host and another says it holds the VIP",
            vip_split.clone(),
        );
        Metrics {
            registry,
            term,
            is_leader,
            current_leader,
            commit_index,
            applied_index,
            voters,
            learners,
            snapshot_index,
            purged_index,
            admin_calls,
            vip_promise_holder,
            vip_promise_epoch,
            vip_split,
            vip_source: std::sync::OnceLock::new(),
        }
    }

    /// Where the VIP gauges are sampled from at each scrape (the first source set stays).
    pub(crate) fn set_vip_source(&self, source: VipSource) {
        let _ = self.vip_source.set(source);
    }

    /// Sets the VIP gauges from the source, if one is set: a VIP that is gone is dropped.
    pub(crate) fn observe_vips(&self) {
        let Some(source) = self.vip_source.get() else {
            return;
        };
        self.vip_promise_holder.clear();
        self.vip_promise_epoch.clear();
        self.vip_split.clear();
        for s in source() {
            let labels = VipLabels { vip: s.vip };
            let (holder, epoch) = s.vouching.unwrap_or((0, 0));
            self.vip_promise_holder
                .get_or_create(&labels)
                .set(as_i64(holder));
            self.vip_promise_epoch
                .get_or_create(&labels)
                .set(as_i64(epoch));
            self.vip_split
                .get_or_create(&labels)
                .set(i64::from(s.split));
        }
    }

    /// Counts one answered admin call (`ok` or the refusal's code).
    pub(crate) fn admin_call<T>(&self, method: &str, outcome: &Result<T, RemoteError>) {
        let outcome = match outcome {
            Ok(_) => "ok",
            Err(e) => e.code.as_str(),
        };
        self.admin_calls
            .get_or_create(&CallLabels {
                method: method.to_string(),
                outcome: outcome.to_string(),
            })
            .inc();
    }

    /// Sets the Raft gauges.
    pub(crate) fn observe(&self, s: &RaftSample) {
        self.term.set(as_i64(s.term));
        self.is_leader.set(i64::from(s.is_leader));
        self.current_leader
            .set(as_i64(s.current_leader.unwrap_or(0)));
        self.commit_index.set(as_i64(s.commit_index.unwrap_or(0)));
        self.applied_index.set(as_i64(s.applied_index.unwrap_or(0)));
        self.voters.set(as_i64(s.voters as u64));
        self.learners.set(as_i64(s.learners as u64));
        self.snapshot_index
            .set(as_i64(s.snapshot_index.unwrap_or(0)));
        self.purged_index.set(as_i64(s.purged_index.unwrap_or(0)));
    }

    /// The OpenMetrics text of every metric.
    pub(crate) fn render(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_metrics_name_the_raft_view_and_admin_calls() {
        let m = Metrics::new();
        m.observe(&RaftSample {
            term: 3,
            is_leader: true,
            current_leader: Some(2),
            commit_index: Some(17),
            applied_index: Some(16),
            voters: 3,
            learners: 1,
            snapshot_index: Some(12),
            purged_index: Some(10),
        });
        m.admin_call::<()>("admin.vm_apply", &Ok(()));
        m.admin_call::<()>("admin.vm_apply", &Err(RemoteError::conflict("taken")));
        let text = m.render().unwrap();
        for line in [
            "pvefleet_raft_term 3",
            "pvefleet_raft_is_leader 1",
            "pvefleet_raft_current_leader 2",
            "pvefleet_raft_commit_index 17",
            "pvefleet_raft_applied_index 16",
            "pvefleet_raft_members 3",
            "pvefleet_raft_learners 1",
            "pvefleet_raft_snapshot_index 12",
            "pvefleet_raft_purged_index 10",
            r#"pvefleet_admin_calls_total{method="admin.vm_apply",outcome="ok"} 1"#,
            r#"pvefleet_admin_calls_total{method="admin.vm_apply",outcome="conflict"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
