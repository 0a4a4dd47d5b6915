//! `host ls`: every PVE host with its state and capacity, what the VMs assigned to it commit,
//! and the leader's live view (load, last heartbeat); with `--stale`, the replicated part only.

use protocol::admin::{
    HostChanged, HostListReply, HostMaintenanceReply, HostStatusEntry, HostStatusReply,
};
use protocol::agent::HostResources;
use protocol::fleet::{Host, HostState};
use serde::Serialize;

use super::human::{age, mib, or_dash, relative, span};
use super::table::Table;
use super::{Context, Render};

const NO_HOSTS: &str = "no hosts: create an agent join token with `pvefleet token create --role \
                        agent`, then run `pvefleet-agent join --token-file - ADDR` on the PVE \
                        host (paste the token)\n";

/// The 1-minute load average (`1.50`).
fn load(resources: Option<&HostResources>) -> String {
    resources.map_or_else(
        || "-".to_string(),
        |r| format!("{:.2}", f64::from(r.load_milli[0]) / 1000.0),
    )
}

impl Render for HostStatusReply {
    fn table(&self, ctx: &Context) -> String {
        if self.hosts.is_empty() {
            return NO_HOSTS.to_string();
        }
        let mut t = Table::new(&[
            "NAME",
            "ID",
            "STATE",
            "SINCE",
            "CPUS",
            "MEMORY",
            "VMS",
            "VCPUS-COMMITTED",
            "MEM-COMMITTED",
            "LOAD",
            "LAST-SEEN",
        ]);
        for e in &self.hosts {
            let h = &e.host;
            t.row(vec![
                h.name.clone(),
                h.id.to_string(),
                h.state.to_string(),
                age(ctx.now, h.state_since),
                h.capacity.cpus.to_string(),
                mib(h.capacity.memory_mib),
                e.vm_count.to_string(),
                e.vcpus.to_string(),
                mib(e.memory_mib),
                load(e.resources.as_ref()),
                e.last_seen_ms
                    .map_or_else(|| "-".to_string(), |ms| format!("{} ago", span(ms))),
            ]);
        }
        t.render()
    }
}

impl Render for HostListReply {
    fn table(&self, _ctx: &Context) -> String {
        if self.hosts.is_empty() {
            return NO_HOSTS.to_string();
        }
        let mut t = Table::new(&["NAME", "ID", "STATE", "CPUS", "MEMORY", "LABELS"]);
        for h in &self.hosts {
            let labels = label_list(h);
            t.row(vec![
                h.name.clone(),
                h.id.to_string(),
                h.state.to_string(),
                h.capacity.cpus.to_string(),
                mib(h.capacity.memory_mib),
                or_dash((!labels.is_empty()).then(|| labels.join(","))),
            ]);
        }
        let mut out = t.render();
        out.push_str(
            "(read without the leader: usage, load and heartbeats are known to the leader only; \
             drop --stale to see them)\n",
        );
        out
    }
}

/// A host's labels as `key=value`, the operators' (which win over the agent's) marked `*`.
fn label_list(h: &Host) -> Vec<String> {
    h.effective_labels()
        .iter()
        .map(|(k, v)| {
            let mark = if h.operator_labels.contains_key(k) {
                "*"
            } else {
                ""
            };
            format!("{k}={v}{mark}")
        })
        .collect()
}

impl Render for HostChanged {
    fn table(&self, _ctx: &Context) -> String {
        let h = &self.host;
        if h.state == HostState::Removed {
            return format!(
                "host {} ({}) removed: its id and certificate are refused from now on; stop and                  purge the agent on it (apt purge pvefleet)\n",
                h.name, h.id
            );
        }
        let labels = label_list(h);
        format!(
            "host {} labels: {}\n",
            h.name,
            if labels.is_empty() {
                "none".to_string()
            } else {
                format!("{} (* set by operators)", labels.join(","))
            }
        )
    }
}

/// `host show NAME`: one host with its state's reason and the leader's live view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct HostShown(pub HostStatusEntry);

impl Render for HostShown {
    fn table(&self, ctx: &Context) -> String {
        let e = &self.0;
        let h = &e.host;
        let labels = label_list(h);
        let rows = [
            ("name", h.name.clone()),
            ("id", h.id.to_string()),
            (
                "state",
                format!("{} since {}", h.state, relative(ctx.now, h.state_since)),
            ),
            (
                "reason",
                or_dash((!h.state_reason.is_empty()).then(|| h.state_reason.clone())),
            ),
            (
                "last seen",
                e.last_seen_ms.map_or_else(
                    || "- (not since this leader was elected)".to_string(),
                    |ms| format!("{} ago", span(ms)),
                ),
            ),
            (
                "capacity",
                format!("{} CPUs, {}", h.capacity.cpus, mib(h.capacity.memory_mib)),
            ),
            (
                "committed",
                format!(
                    "{} VMs, {} vCPUs, {}",
                    e.vm_count,
                    e.vcpus,
                    mib(e.memory_mib)
                ),
            ),
            ("load", load(e.resources.as_ref())),
            (
                "labels",
                or_dash((!labels.is_empty()).then(|| labels.join(","))),
            ),
            (
                "pve",
                or_dash(h.facts.as_ref().map(|f| f.pve_version.clone())),
            ),
            ("registered", relative(ctx.now, h.registered_at)),
        ];
        let mut out = String::new();
        for (key, value) in rows {
            out.push_str(&format!("{key:<11} {value}\n"));
        }
        out
    }
}

impl Render for HostMaintenanceReply {
    fn table(&self, _ctx: &Context) -> String {
        let mut out = format!("host {}: {}\n", self.host, self.state);
        if !self.left.is_empty() {
            let mut t = Table::new(&["VM", "STILL HERE BECAUSE"]);
            for g in &self.left {
                t.row(vec![g.vm.clone(), g.why.clone()]);
            }
            out.push_str(&t.render());
        } else if self.state == protocol::fleet::HostState::Maintenance {
            out.push_str("no guest left on it\n");
        }
        if !self.away.is_empty() {
            out.push_str(&format!(
                "drained off it, to come back once it is online: {}\n",
                self.away.join(", ")
            ));
        }
        out
    }
}
