//! The dispatcher: one outbox of commands per host, filled by the reconciler and by callers of
//! `Control::run_command`, emptied by the results the host's agent returns on its beats.
//!
//! ```text
//!  enqueue(host, op) ─▶ id <vm>/<kind>/g<gen>/t<term>/<n> ─▶ outbox[host]
//!  beat(host, boot, running) ─▶ due commands (marked delivered to that boot at that time)
//!  result(host, id) ─▶ removed from outbox[host] ─▶ its origin (reconciler or a waiting caller)
//! ```
//!
//! Delivery is at least once; the agent's journal makes execution at most once (safety rule 4 of
//! docs/design/architecture.md). A command is delivered again when the agent restarted (another boot id) or when
//! it has had it for [`REDELIVER_AFTER_MS`] without a result and does not list it as running.

use std::collections::{BTreeMap, BTreeSet};

use protocol::NodeId;
use protocol::agent::{AgentCommand, Op};

/// A delivered command without a result, not running on the agent, is delivered again after
/// this long (the agent may have lost the ack that carried it).
pub(crate) const REDELIVER_AFTER_MS: u64 = 5_000;

/// Who waits for a command's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The reconciler: the result feeds its next decisions.
    Reconciler,
    /// A caller of `run_command` (an admin request).
    Caller,
}

/// When and to which agent process a command was last handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delivery {
    /// Control-plane milliseconds.
    pub(crate) at_ms: u64,
    /// The agent process it was handed to.
    pub(crate) boot_id: u64,
}

/// A command waiting for its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The command.
    pub(crate) cmd: AgentCommand,
    /// The spec generation it was made for.
    pub(crate) generation: u64,
    /// Who waits for it.
    pub(crate) origin: Origin,
    /// Its last delivery, if any.
    pub(crate) delivered: Option<Delivery>,
}

/// Whether a command should be handed to the agent `boot_id` now.
pub(crate) fn is_due(
    delivered: Option<Delivery>,
    boot_id: u64,
    running: bool,
    now_ms: u64,
) -> bool {
    match delivered {
        None => true,
        Some(d) if d.boot_id != boot_id => true,
        Some(d) => !running && now_ms.saturating_sub(d.at_ms) >= REDELIVER_AFTER_MS,
    }
}

/// A command id: `<vm>/<kind>/g<generation>/t<term>/<n>`. The term and the leader-local
/// counter make it unique across leaders; it is never reused for other content.
pub(crate) fn command_id(vm: &str, kind: &str, generation: u64, term: u64, n: u64) -> String {
    format!("{vm}/{kind}/g{generation}/t{term}/{n}")
}

/// Every host's outbox.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    hosts: BTreeMap<NodeId, Vec<Pending>>,
    next: u64,
}

impl Outbox {
    /// Queues `op` for `host`; its new id.
    pub(crate) fn enqueue(
        &mut self,
        host: NodeId,
        op: Op,
        generation: u64,
        term: u64,
        origin: Origin,
    ) -> String {
        self.next += 1;
        let id = command_id(
            op.vm_name(),
            op.kind().as_str(),
            generation,
            term,
            self.next,
        );
        self.hosts.entry(host).or_default().push(Pending {
            cmd: AgentCommand { id: id.clone(), op },
            generation,
            origin,
            delivered: None,
        });
        id
    }

    /// The commands due for the agent `boot_id` of `host`, marked delivered at `now_ms`.
    pub(crate) fn deliver(
        &mut self,
        host: NodeId,
        boot_id: u64,
        running: &BTreeSet<&str>,
        now_ms: u64,
    ) -> Vec<AgentCommand> {
        let Some(pending) = self.hosts.get_mut(&host) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in pending.iter_mut() {
            let is_running = running.contains(p.cmd.id.as_str());
            if is_due(p.delivered, boot_id, is_running, now_ms) {
                p.delivered = Some(Delivery {
                    at_ms: now_ms,
                    boot_id,
                });
                out.push(p.cmd.clone());
            }
        }
        out
    }

    /// Takes the command `id` of `host` out of the outbox (its result arrived). A host can only
    /// complete its own commands.
    pub(crate) fn complete(&mut self, host: NodeId, id: &str) -> Option<Pending> {
        let pending = self.hosts.get_mut(&host)?;
        let i = pending.iter().position(|p| p.cmd.id == id)?;
        let done = pending.remove(i);
        if pending.is_empty() {
            self.hosts.remove(&host);
        }
        Some(done)
    }

    /// Takes `id` out if it was never delivered (its caller gave up: it must not run later).
    /// `false` if it was delivered (it may run; its result will be dropped) or is gone.
    pub(crate) fn withdraw(&mut self, host: NodeId, id: &str) -> bool {
        let undelivered = self
            .hosts
            .get(&host)
            .and_then(|p| p.iter().find(|p| p.cmd.id == id))
            .is_some_and(|p| p.delivered.is_none());
        if undelivered {
            self.complete(host, id);
        }
        undelivered
    }

    /// Forgets the commands of hosts `keep` rejects (removed hosts).
    pub(crate) fn retain_hosts(&mut self, keep: impl Fn(NodeId) -> bool) {
        self.hosts.retain(|&h, _| keep(h));
    }

    /// Every pending command with its host.
    pub(crate) fn pending(&self) -> impl Iterator<Item = (NodeId, &Pending)> {
        self.hosts
            .iter()
            .flat_map(|(&h, p)| p.iter().map(move |p| (h, p)))
    }

    /// Forgets everything (leadership lost or changed).
    pub(crate) fn clear(&mut self) {
        self.hosts.clear();
    }
}

#[cfg(test)]
mod tests {
    use protocol::agent::{DeleteVm, PowerAction, PowerOp};

    use super::*;

    fn delete(name: &str) -> Op {
        Op::Delete(DeleteVm {
            name: name.into(),
            vmid: 100,
        })
    }

    fn none() -> BTreeSet<&'static str> {
        BTreeSet::new()
    }

    #[test]
    fn delivery_rules() {
        let d = |at_ms, boot_id| Some(Delivery { at_ms, boot_id });
        // (delivered, boot, running, now) -> due
        let table = [
            (None, 1, false, 0, true),
            (None, 1, true, 0, true),
            (d(1_000, 1), 1, false, 1_000, false),
            (d(1_000, 1), 1, false, 5_999, false),
            (d(1_000, 1), 1, false, 6_000, true),
            (d(1_000, 1), 1, true, 60_000, false),
            (d(1_000, 1), 2, true, 1_000, true),
            (d(1_000, 1), 2, false, 1_001, true),
        ];
        for (delivered, boot, running, now, due) in table {
            assert_eq!(
                is_due(delivered, boot, running, now),
                due,
                "{delivered:?} boot {boot} running {running} now {now}"
            );
        }
    }

    #[test]
    fn ids_name_the_vm_kind_generation_term_and_a_counter_and_never_repeat() {
        let mut outbox = Outbox::default();
        let a = outbox.enqueue(7, delete("web"), 3, 2, Origin::Reconciler);
        let b = outbox.enqueue(7, delete("web"), 3, 2, Origin::Reconciler);
        assert_eq!(a, "web/delete/g3/t2/1");
        assert_eq!(b, "web/delete/g3/t2/2");
        assert_eq!(command_id("db", "ensure", 1, 9, 4), "db/ensure/g1/t9/4");
    }

    #[test]
    fn a_command_is_delivered_once_per_boot_until_overdue_and_not_while_running() {
        let mut outbox = Outbox::default();
        let id = outbox.enqueue(7, delete("web"), 1, 1, Origin::Reconciler);
        assert_eq!(outbox.deliver(7, 1, &none(), 0).len(), 1);
        assert!(outbox.deliver(7, 1, &none(), 1_000).is_empty());
        // Another host never sees it.
        assert!(outbox.deliver(8, 1, &none(), 1_000).is_empty());
        // A restarted agent gets it at once.
        assert_eq!(outbox.deliver(7, 2, &none(), 1_500).len(), 1);
        // Running on the agent: never re-sent, however long it takes.
        let running: BTreeSet<&str> = [id.as_str()].into();
        assert!(outbox.deliver(7, 2, &running, 60_000).is_empty());
        // Overdue and not running: re-sent.
        let again = outbox.deliver(7, 2, &none(), 60_000);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].id, id);
    }

    #[test]
    fn only_the_commands_host_completes_it() {
        let mut outbox = Outbox::default();
        let id = outbox.enqueue(7, delete("web"), 1, 1, Origin::Caller);
        assert!(outbox.complete(8, &id).is_none());
        let done = outbox.complete(7, &id).unwrap();
        assert_eq!(done.origin, Origin::Caller);
        assert!(outbox.complete(7, &id).is_none());
        assert_eq!(outbox.pending().count(), 0);
    }

    #[test]
    fn a_withdrawn_command_is_gone_only_if_never_delivered() {
        let mut outbox = Outbox::default();
        let power = Op::Power(PowerOp {
            name: "web".into(),
            vmid: 100,
            action: PowerAction::Start,
        });
        let quiet = outbox.enqueue(7, power.clone(), 1, 1, Origin::Caller);
        assert!(outbox.withdraw(7, &quiet));
        assert!(outbox.deliver(7, 1, &none(), 0).is_empty());
        let handed = outbox.enqueue(7, power, 1, 1, Origin::Caller);
        outbox.deliver(7, 1, &none(), 0);
        assert!(!outbox.withdraw(7, &handed));
        assert_eq!(outbox.pending().count(), 1);
        outbox.retain_hosts(|h| h != 7);
        assert_eq!(outbox.pending().count(), 0);
    }
}
