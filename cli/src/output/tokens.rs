//! Tables for join tokens (`token create`, `token ls`) and the event log (`events`).

use protocol::admin::{EventsReply, TokenCreateReply, TokenListReply};
use protocol::fleet::{EventLevel, TokenView, UnixMillis};

use super::human::{age, relative};
use super::table::{Table, fields};
use super::{Context, Render};
use protocol::time::timestamp;

/// Whether a token can still be used at `now`, in one word (the order of the state machine's
/// own checks: revoked, expired, used up).
pub fn token_state(token: &TokenView, now: UnixMillis) -> &'static str {
    if token.revoked {
        "revoked"
    } else if now >= token.expires_at {
        "expired"
    } else if token.uses_left == Some(0) {
        "used up"
    } else {
        "active"
    }
}

fn uses(uses_left: Option<u32>) -> String {
    uses_left.map_or_else(|| "unlimited".to_string(), |n| n.to_string())
}

impl Render for TokenCreateReply {
    fn table(&self, ctx: &Context) -> String {
        let r = &self.record;
        let mut out = fields(&[
            ("token", self.token.clone()),
            ("id", r.id.clone()),
            ("role", r.role.to_string()),
            (
                "expires",
                format!(
                    "{} ({})",
                    timestamp(r.expires_at),
                    relative(ctx.now, r.expires_at)
                ),
            ),
            ("uses", uses(r.uses_left)),
        ]);
        out.push_str(
            "\nThe token is shown only now (the cluster keeps its hash): hand it to the joining \
             node.\nRevoke it with `pvefleet token revoke ",
        );
        out.push_str(&r.id);
        out.push_str("`.\n");
        out
    }
}

impl Render for TokenListReply {
    fn table(&self, ctx: &Context) -> String {
        if self.tokens.is_empty() {
            return "no join tokens: create one with `pvefleet token create --role agent`\n"
                .to_string();
        }
        let mut t = Table::new(&["ID", "ROLE", "AGE", "EXPIRES", "USES LEFT", "STATE"]);
        for token in &self.tokens {
            t.row(vec![
                token.id.clone(),
                token.role.to_string(),
                age(ctx.now, token.created_at),
                relative(ctx.now, token.expires_at),
                uses(token.uses_left),
                token_state(token, ctx.now).to_string(),
            ]);
        }
        t.render()
    }
}

/// A page of the event log with the position it was asked from, so the table can say which
/// of the requested events were already dropped. Its JSON is the reply's.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EventsPage {
    /// The `--since` asked for.
    #[serde(skip)]
    pub since: u64,
    /// The reply.
    #[serde(flatten)]
    pub reply: EventsReply,
}

impl Render for EventsPage {
    fn table(&self, ctx: &Context) -> String {
        let mut out = String::new();
        let reply = &self.reply;
        if reply.first_seq > self.since.saturating_add(1) {
            out.push_str(&format!(
                "(events {}-{} are no longer kept: the event log keeps only the newest)\n",
                self.since + 1,
                reply.first_seq - 1
            ));
        }
        if reply.events.is_empty() {
            out.push_str(&format!(
                "no events after {} (follow with `pvefleet events --since {}`)\n",
                self.since, reply.last_seq
            ));
            return out;
        }
        let mut t = Table::new(&["SEQ", "AGE", "LEVEL", "KIND", "SUBJECT", "MESSAGE"]);
        for e in &reply.events {
            let level = match e.level {
                EventLevel::Info => "info",
                EventLevel::Warning => "warning",
            };
            t.row(vec![
                e.seq.to_string(),
                age(ctx.now, e.at),
                level.to_string(),
                e.kind.to_string(),
                e.subject.clone(),
                e.message.clone(),
            ]);
        }
        out.push_str(&t.render());
        out
    }
}
