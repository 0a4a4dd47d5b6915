//! Tables for operator identities (`admin ls`, `admin add`): when each admin's certificate
//! expires, how far renewals may push it, whether it is revoked; and, once added, where its
//! credentials were written. The key itself is never part of any output.

use std::path::PathBuf;

use protocol::admin::AdminListReply;
use protocol::fleet::{AdminRecord, UnixMillis};
use protocol::time::timestamp;
use serde::Serialize;

use super::human::relative;
use super::printable::one_line;
use super::table::{Table, fields};
use super::{Context, Render};

/// Whether an admin's certificates are accepted at `now`, in words: `active`, `expired`, or
/// `revoked <when>` (a revocation outlasts any expiry, so it is named first).
pub fn admin_state(admin: &AdminRecord, now: UnixMillis) -> String {
    match admin.revoked_at {
        Some(at) => format!("revoked {}", relative(now, at)),
        None if admin.expires_at < now => "expired".to_string(),
        None => "active".to_string(),
    }
}

impl Render for AdminListReply {
    fn table(&self, ctx: &Context) -> String {
        if self.admins.is_empty() {
            return "no admins: add one with `pvefleet admin add NAME`\n".to_string();
        }
        let mut t = Table::new(&[
            "ID",
            "NAME",
            "ISSUED",
            "EXPIRES",
            "RENEWABLE-UNTIL",
            "STATE",
        ]);
        for admin in &self.admins {
            t.row(vec![
                admin.id.to_string(),
                admin.name.clone(),
                relative(ctx.now, admin.issued_at),
                relative(ctx.now, admin.expires_at),
                relative(ctx.now, admin.renew_until),
                admin_state(admin, ctx.now),
            ]);
        }
        t.render()
    }
}

/// What `admin add` did: the identity the cluster recorded and the files written for it.
/// Paths are absolute, so a script can pick them up wherever it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdminAdded {
    /// The record as the cluster stored it.
    pub record: AdminRecord,
    /// The directory to hand over.
    pub dir: PathBuf,
    /// The private key (mode 0600).
    pub key: PathBuf,
    /// The certificate.
    pub cert: PathBuf,
    /// The cluster CA.
    pub ca: PathBuf,
    /// The CLI configuration naming the three files above and the coordinators.
    pub config: PathBuf,
}

impl Render for AdminAdded {
    fn table(&self, ctx: &Context) -> String {
        let r = &self.record;
        let when = |at: UnixMillis| format!("{} ({})", timestamp(at), relative(ctx.now, at));
        let shown = |p: &PathBuf| p.display().to_string();
        let dir = shown(&self.dir);
        let mut out = format!(
            "Added admin {} and wrote its credentials to {}.\n\n",
            r.id,
            one_line(&dir)
        );
        out.push_str(&fields(&[
            ("id", r.id.to_string()),
            ("name", r.name.clone()),
            ("expires", when(r.expires_at)),
            ("renewable until", when(r.renew_until)),
            ("key", format!("{} (mode 0600)", shown(&self.key))),
            ("certificate", shown(&self.cert)),
            ("ca", shown(&self.ca)),
            ("configuration", shown(&self.config)),
        ]));
        // Every value below was typed by an operator or sent by a member: one line each, so
        // none can forge a line of these instructions.
        out.push_str(&format!(
            "\nThe key was made on this machine and never left it (only a certificate signing \
             request was sent).\n\
             Hand {} to {} privately: it holds that key.\n\
             They run `pvefleet --config {}` (or set PVEFLEET_CONFIG to it).\n\
             The certificate renews itself while valid, at most until {}; after that, add a new \
             admin.\n\
             Revoke it with `pvefleet admin revoke {}`.\n",
            one_line(&dir),
            one_line(&r.name),
            one_line(&shown(&self.config)),
            timestamp(r.renew_until),
            r.id
        ));
        out
    }
}
