//! A VM with a migration under way gets the move and nothing else: [`Op::Migrate`] to its
//! source host once nothing else is in flight for it and that host reports; no ensure, so no
//! resync races PVE moving the guest. The result closes the migration
//! ([`super::status::on_result`]).

use protocol::agent::{MigrateOp, Op};
use protocol::fleet::{Migration, VmRecord};

use super::{Action, Clock, Inflight, LiveView, Policy};

/// The move of `rec` by `m`, if it is due.
pub(super) fn plan_migration(
    rec: &VmRecord,
    m: &Migration,
    live: &LiveView,
    inflight: &Inflight,
    policy: &Policy,
    now: Clock,
    out: &mut Vec<Action>,
) {
    let name = &rec.spec.name;
    if inflight.commands.contains_key(name) || live.is_silent(m.from_host, policy, now) {
        return;
    }
    let Some(vmid) = rec.assignment.vmid else {
        return;
    };
    out.push(Action::Send {
        host: m.from_host,
        generation: rec.generation,
        op: Op::Migrate(MigrateOp {
            name: name.clone(),
            vmid,
            target: m.to_node.clone(),
        }),
    });
}
