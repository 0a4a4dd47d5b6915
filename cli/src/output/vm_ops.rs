//! What the operations on running VMs print: `vm start|stop|restart` (what the fleet does now),
//! `vm snapshot create|ls|rollback|delete` (what was done, then the VM's snapshots) and
//! `vm migrate` (the move recorded).

use protocol::admin::{RebalancePlanReply, VmMigrateReply, VmPowerReply, VmSnapshotReply};
use serde::Serialize;

use super::human::age;
use super::table::Table;
use super::{Context, Render};

impl Render for VmPowerReply {
    fn table(&self, _ctx: &Context) -> String {
        format!("{}\n", self.message)
    }
}

impl Render for VmSnapshotReply {
    fn table(&self, ctx: &Context) -> String {
        if self.snapshots.is_empty() {
            return format!(
                "vm {} has no snapshots: take one with `pvefleet vm snapshot create {} NAME`\n",
                self.vm, self.vm
            );
        }
        let mut t = Table::new(&["NAME", "PARENT", "TAKEN", "RAM", "DESCRIPTION"]);
        for s in &self.snapshots {
            t.row(vec![
                s.name.clone(),
                s.parent.clone().unwrap_or_else(|| "-".into()),
                s.taken_at.map_or_else(
                    || "-".to_string(),
                    |secs| format!("{} ago", age(ctx.now, secs.saturating_mul(1000))),
                ),
                if s.vmstate { "yes" } else { "no" }.to_string(),
                // One line per snapshot: the first line of a longer text.
                s.description.lines().next().unwrap_or_default().to_string(),
            ]);
        }
        t.render()
    }
}

/// A snapshot change, with the VM's snapshots after it. Its JSON is the reply's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotChanged {
    /// What was done, for people (`snapshot pre-upgrade of vm web-1 created`).
    #[serde(skip)]
    pub done: String,
    /// The reply.
    #[serde(flatten)]
    pub reply: VmSnapshotReply,
}

impl Render for SnapshotChanged {
    fn table(&self, ctx: &Context) -> String {
        format!("{}\n\n{}", self.done, self.reply.table(ctx))
    }
}

impl Render for VmMigrateReply {
    fn table(&self, _ctx: &Context) -> String {
        if self.chosen.is_empty() {
            format!("migrating from {} to {}\n", self.from, self.to)
        } else {
            format!(
                "migrating from {} to {} ({})\n",
                self.from, self.to, self.chosen
            )
        }
    }
}

impl Render for RebalancePlanReply {
    fn table(&self, _ctx: &Context) -> String {
        let r = &self.settings;
        let automatic = if r.enabled {
            format!(
                "automatic rebalancing is on: the leader makes these moves one at a time once a \
                 cluster stayed over {}% for {} s\n",
                r.threshold_pct, r.hold_s
            )
        } else {
            "automatic rebalancing is off ([settings.rebalance] enabled = true turns it on)\n"
                .to_string()
        };
        if self.moves.is_empty() {
            return format!(
                "balanced: every PVE cluster is within {}% or no move lowers its spread by {}% of it\n{automatic}",
                r.threshold_pct, r.min_gain_pct
            );
        }
        let mut t = Table::new(&["VM", "FROM", "TO", "SPREAD BEFORE", "SPREAD AFTER"]);
        for m in &self.moves {
            t.row(vec![
                m.vm.clone(),
                m.from.clone(),
                m.to.clone(),
                format!("{:.1}%", m.spread_before),
                format!("{:.1}%", m.spread_after),
            ]);
        }
        let mut out = t.render();
        out.push_str("a plan only: move a guest with `pvefleet vm migrate NAME --to HOST`\n");
        out.push_str(&automatic);
        out
    }
}
