//! `vm explain`: the scheduler's verdict on every host for one VM, best first, with the four
//! TOPSIS criteria (fleet utilization if the VM went there) and the closeness, or the hard
//! filter that excluded the host and why.

use protocol::admin::{PlacementVerdict, VmExplainReply, VmMigratePlanReply};

use super::table::Table;
use super::{Context, Render};

/// A utilization (0-1, above 1 when overcommitted) as a percentage with one decimal.
fn percent(value: f64) -> String {
    format!("{:.1}%", value * 100.0)
}

fn row(v: &PlacementVerdict, best: bool) -> Vec<String> {
    match (&v.scores, &v.filter) {
        (Some(s), _) => vec![
            v.host_name.clone(),
            if best { "best" } else { "eligible" }.to_string(),
            "-".to_string(),
            percent(s.avg_cpu),
            percent(s.max_cpu),
            percent(s.avg_mem),
            percent(s.max_mem),
            format!("{:.4}", s.closeness),
        ],
        (None, filter) => {
            let filter = filter.as_deref().unwrap_or("?");
            let why = if v.detail.is_empty() {
                filter.to_string()
            } else {
                format!("{filter}: {}", v.detail)
            };
            let mut cells = vec![v.host_name.clone(), "excluded".to_string(), why];
            cells.resize(8, "-".to_string());
            cells
        }
    }
}

impl Render for VmExplainReply {
    fn table(&self, _ctx: &Context) -> String {
        let vm = &self.vm;
        let mut out = match &self.placed_on {
            Some(host) => format!(
                "vm {vm} is placed on {host}; each host as the scheduler would judge it now \
                 (the VM's own share taken off {host}):\n"
            ),
            None => {
                format!("vm {vm} is not placed yet; each host as the scheduler judges it now:\n")
            }
        };
        if self.verdicts.is_empty() {
            out.push_str(
                "no hosts are registered: join one with `pvefleet token create --role agent`, \
                 then `pvefleet-agent join --token-file - ADDR` on the PVE host (paste the \
                 token)\n",
            );
            return out;
        }
        out.push('\n');
        out.push_str(&verdict_table(&self.verdicts));
        if self.verdicts.iter().all(|v| v.scores.is_none()) {
            out.push_str(&format!(
                "\nno host can take vm {vm}: fix what the filters name (capacity, labels, \
                 storages, bridges, templates, host state) or change its placement\n"
            ));
        }
        out
    }
}

/// The verdicts as `vm explain` prints them: one row per host, the first (best) marked.
fn verdict_table(verdicts: &[PlacementVerdict]) -> String {
    let mut t = Table::new(&[
        "HOST",
        "VERDICT",
        "FILTER/DETAIL",
        "RMS-CPU",
        "MAX-CPU",
        "RMS-MEM",
        "MAX-MEM",
        "CLOSENESS",
    ]);
    for (i, v) in verdicts.iter().enumerate() {
        t.row(row(v, i == 0));
    }
    t.render()
}

impl Render for VmMigratePlanReply {
    fn table(&self, _ctx: &Context) -> String {
        let vm = &self.vm;
        let mut out = match &self.to {
            Some(to) => {
                let with = if self.with.is_empty() {
                    String::new()
                } else {
                    format!(", with its affinity group: {}", self.with.join(", "))
                };
                format!(
                    "vm {vm} would move to {to} ({}){with}; nothing was moved (drop --dry-run \
                     to move it)\n",
                    self.why
                )
            }
            None => format!("vm {vm} cannot move now: {}\n", self.why),
        };
        if !self.verdicts.is_empty() {
            out.push_str("\nthe other nodes of its PVE cluster as the move judges them:\n");
            out.push_str(&verdict_table(&self.verdicts));
        }
        out
    }
}
