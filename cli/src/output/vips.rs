//! The VIPs as the leader sees them live: `vip ls` (one line per VIP: owner, since when,
//! whether it is held, how many hosts could take over) and `vip show` (each VIP as a block
//! with every host's standing), and the report of `vip move`.

use protocol::NodeId;
use protocol::admin::{VipStatusEntry, VipStatusReply};
use serde::Serialize;

use super::human::{age, or_dash};
use super::table::Table;
use super::{Context, Render};

/// `vip ls`: the status reply, one line per VIP (its JSON is the reply itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct VipTable(pub VipStatusReply);

fn owner(e: &VipStatusEntry) -> String {
    match (&e.owner_name, e.vip.owner) {
        (Some(name), _) if e.simulated => format!("{name} (simulated)"),
        (Some(name), _) => name.clone(),
        (None, Some(id)) => format!("host {id}"),
        (None, None) => "-".into(),
    }
}

fn held(e: &VipStatusEntry) -> &'static str {
    match (e.vip.owner, e.held) {
        (None, _) => "-",
        (Some(_), true) => "yes",
        (Some(_), false) => "no",
    }
}

impl Render for VipTable {
    fn table(&self, ctx: &Context) -> String {
        if self.0.vips.is_empty() {
            return "no VIPs: define one with `pvefleet vip apply -f FILE`\n".to_string();
        }
        let mut t = Table::new(&[
            "NAME",
            "ADDRESS",
            "INTERFACE",
            "OWNER",
            "EPOCH",
            "SINCE",
            "HELD",
            "ELIGIBLE",
        ]);
        for e in &self.0.vips {
            let s = &e.vip.spec;
            let eligible = e.hosts.iter().filter(|h| h.eligible).count();
            t.row(vec![
                s.name.clone(),
                s.address.clone(),
                s.interface.clone(),
                owner(e),
                e.vip.epoch.to_string(),
                or_dash(e.since.map(|at| age(ctx.now, at))),
                held(e).into(),
                format!("{eligible}/{}", e.hosts.len()),
            ]);
        }
        t.render()
    }
}

impl Render for VipStatusReply {
    fn table(&self, ctx: &Context) -> String {
        if self.vips.is_empty() {
            return "no VIPs: define one with `pvefleet vip apply -f FILE`\n".to_string();
        }
        let mut out = String::new();
        for (i, e) in self.vips.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let s = &e.vip.spec;
            out.push_str(&format!("name:       {}\n", s.name));
            out.push_str(&format!("address:    {} on {}\n", s.address, s.interface));
            out.push_str(&format!(
                "hosts:      {}\n",
                if s.hosts.is_empty() {
                    "any (lowest id preferred)".to_string()
                } else {
                    format!("{} (preferred first)", s.hosts.join(", "))
                }
            ));
            out.push_str(&format!("owner:      {}\n", owner(e)));
            out.push_str(&format!("epoch:      {}\n", e.vip.epoch));
            out.push_str(&format!(
                "since:      {}\n",
                or_dash(e.since.map(|at| format!("{} ago", age(ctx.now, at))))
            ));
            out.push_str(&format!("held:       {}\n", held(e)));
            let mut t = Table::new(&["HOST", "PRIORITY", "ELIGIBLE", "RENEWED", "WHY NOT"]);
            for h in &e.hosts {
                t.row(vec![
                    if h.simulated {
                        format!("{} (simulated)", h.host)
                    } else {
                        h.host.clone()
                    },
                    h.priority.to_string(),
                    if h.eligible { "yes" } else { "no" }.into(),
                    or_dash(h.renewed_ms_ago.map(|ms| format!("{ms} ms ago"))),
                    or_dash(h.why_not.clone()),
                ]);
            }
            if e.hosts.is_empty() {
                out.push_str("no host may hold it: its host list names no registered host\n");
            } else {
                out.push_str(&t.render());
            }
        }
        out
    }
}

/// `vip move`: the new owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VipMoved {
    /// The VIP.
    pub name: String,
    /// The new owner.
    pub owner: NodeId,
    /// The new epoch.
    pub epoch: u64,
}

impl Render for VipMoved {
    fn table(&self, ctx: &Context) -> String {
        format!(
            "vip {} handed to {} (epoch {}): it holds it once the previous owner lets go\n",
            self.name,
            ctx.host(Some(self.owner)),
            self.epoch
        )
    }
}
