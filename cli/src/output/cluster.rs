//! Tables for the cluster itself: `cluster status` (Raft view and replication progress) and
//! `member ls`.

use protocol::admin::{ClusterStatusReply, MemberListReply};

use super::human::or_dash;
use super::table::{Table, fields};
use super::{Context, Render};

impl Render for ClusterStatusReply {
    fn table(&self, _ctx: &Context) -> String {
        let leader = match self.leader {
            Some(id) => match self.members.iter().find(|m| m.id == id) {
                Some(m) => format!("{id} ({})", m.addr),
                None => id.to_string(),
            },
            None => "none known (an election may be in progress; retry shortly)".to_string(),
        };
        let mut out = fields(&[
            ("cluster", self.cluster_id.clone()),
            ("leader", leader),
            ("term", self.term.to_string()),
            ("commit index", self.commit_index.to_string()),
            ("applied index", self.applied_index.to_string()),
            ("cluster version", self.cluster_version.to_string()),
            ("answered by", format!("member {}", self.node_id)),
        ]);
        out.push('\n');
        let mut t = Table::new(&[
            "ID",
            "ADDRESS",
            "ROLE",
            "LEADER",
            "MATCHED",
            "LAG",
            "ENCODINGS",
        ]);
        for m in &self.members {
            t.row(vec![
                m.id.to_string(),
                m.addr.clone(),
                m.role.to_string(),
                if m.is_leader { "yes" } else { "" }.to_string(),
                or_dash(m.matched_index),
                or_dash(m.lag),
                or_dash(m.versions),
            ]);
        }
        out.push_str(&t.render());
        if self.leader != Some(self.node_id) && self.members.iter().all(|m| m.lag.is_none()) {
            out.push_str("(replication progress is known on the leader only)\n");
        }
        out
    }
}

impl Render for MemberListReply {
    fn table(&self, _ctx: &Context) -> String {
        if self.members.is_empty() {
            return "no members recorded yet\n".to_string();
        }
        let mut t = Table::new(&["ID", "ADDRESS", "ROLE"]);
        for m in &self.members {
            t.row(vec![m.id.to_string(), m.addr.clone(), m.role.to_string()]);
        }
        t.render()
    }
}
