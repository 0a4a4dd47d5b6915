//! `host ls`: every PVE host with its state and capacity, what the VMs assigned to it commit,
//! and the leader's live view (load, last heartbeat); with `--stale`, the replicated part only.

use protocol::admin::{HostListReply, HostStatusReply};
use protocol::agent::HostResources;

use super::human::{mib, or_dash, span};
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
    fn table(&self, _ctx: &Context) -> String {
        if self.hosts.is_empty() {
            return NO_HOSTS.to_string();
        }
        let mut t = Table::new(&[
            "NAME",
            "ID",
            "STATE",
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
            let labels: Vec<String> = h.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
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
