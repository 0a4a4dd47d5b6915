//! What the leader knows about each host from its agent's beats, and nothing replicated: when
//! it last beat, which process (boot id) beats, and the last inventory of that process. Lost on
//! a leader change on purpose: the new leader asks every agent for its inventory again.

use std::collections::BTreeMap;
use std::sync::Arc;

use protocol::NodeId;
use protocol::agent::{Inventory, ObservedVm};
use protocol::timing::MAX_BEAT_WAIT_MS;

/// One host as its agent's beats describe it.
#[derive(Debug, Clone)]
pub(crate) struct HostLive {
    /// The agent process that beats (a new one restarts the delivery of commands).
    pub(crate) boot_id: u64,
    /// The sequence number of its last beat.
    pub(crate) last_seq: u64,
    /// When the last beat arrived (control-plane milliseconds).
    pub(crate) last_beat_ms: u64,
    /// The last inventory of this boot, if one arrived.
    pub(crate) inventory: Option<Arc<Inventory>>,
    /// When that inventory arrived.
    pub(crate) inventory_ms: u64,
    /// The inventory's VMs by VMID (shared with the reconciler's views).
    pub(crate) observed: Arc<BTreeMap<u32, ObservedVm>>,
    /// Results received from this host since this member leads.
    pub(crate) results_received: u64,
    /// When this member last acknowledged one of its beats, i.e. granted it a lease
    /// (control-plane milliseconds; `None`: not since it leads).
    pub(crate) last_ack_ms: Option<u64>,
    /// Beats of this host being answered now (arrived, no answer sent yet).
    pub(crate) answering: u32,
    /// When the oldest of them arrived.
    pub(crate) answering_since_ms: Option<u64>,
}

impl HostLive {
    /// When the host was last heard, as the liveness decisions count it: its last beat's
    /// arrival, or, while a beat of it is being answered (an agent beats one at a time, so it
    /// waits), now, up to [`MAX_BEAT_WAIT_MS`] after that beat came.
    pub(crate) fn heard_ms(&self, now_ms: u64) -> u64 {
        match self.answering_since_ms {
            Some(since) => self
                .last_beat_ms
                .max(now_ms.min(since.saturating_add(MAX_BEAT_WAIT_MS))),
            None => self.last_beat_ms,
        }
    }
}

/// What recording one beat changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BeatRecord {
    /// First beat of this boot id (a new agent process, or first beat to this leader).
    pub(crate) new_boot: bool,
    /// The beat carried an inventory that differs from the one held.
    pub(crate) inventory_changed: bool,
    /// No inventory is held for this boot: the agent must send one.
    pub(crate) need_inventory: bool,
}

/// The hosts heard from since this member leads.
#[derive(Debug, Default)]
pub(crate) struct Live {
    hosts: BTreeMap<NodeId, HostLive>,
}

impl Live {
    /// Records a beat of `host` at `now_ms`; its inventory, if any, replaces the held one.
    pub(crate) fn record_beat(
        &mut self,
        host: NodeId,
        boot_id: u64,
        seq: u64,
        inventory: Option<&Inventory>,
        now_ms: u64,
    ) -> BeatRecord {
        let fresh = !self.hosts.contains_key(&host);
        let entry = self.hosts.entry(host).or_insert_with(|| HostLive {
            boot_id,
            last_seq: seq,
            last_beat_ms: now_ms,
            inventory: None,
            inventory_ms: 0,
            observed: Arc::default(),
            results_received: 0,
            last_ack_ms: None,
            answering: 0,
            answering_since_ms: None,
        });
        let new_boot = fresh || entry.boot_id != boot_id;
        if entry.boot_id != boot_id {
            // Another process: what the old one reported says nothing about the new one.
            entry.boot_id = boot_id;
            entry.inventory = None;
            entry.observed = Arc::default();
        }
        entry.last_seq = seq;
        entry.last_beat_ms = now_ms;
        entry.answering = entry.answering.saturating_add(1);
        entry.answering_since_ms.get_or_insert(now_ms);
        let mut inventory_changed = false;
        if let Some(inv) = inventory {
            inventory_changed = entry.inventory.as_deref() != Some(inv);
            if inventory_changed {
                entry.observed = Arc::new(inv.vms.iter().map(|v| (v.vmid, v.clone())).collect());
                entry.inventory = Some(Arc::new(inv.clone()));
            }
            entry.inventory_ms = now_ms;
        }
        BeatRecord {
            new_boot,
            inventory_changed,
            need_inventory: entry.inventory.is_none(),
        }
    }

    /// Records that a beat of `host` was acknowledged at `now_ms` (after the quorum check): the
    /// lease it grants ends, in real time, at most `lease × (1 + drift)` later.
    pub(crate) fn note_ack(&mut self, host: NodeId, now_ms: u64) {
        if let Some(h) = self.hosts.get_mut(&host) {
            h.last_ack_ms = Some(h.last_ack_ms.map_or(now_ms, |a| a.max(now_ms)));
        }
    }

    /// Records that a beat of `host` (recorded with [`Live::record_beat`]) was answered at
    /// `now_ms`, acknowledged or not. Once none is left to answer, the host counts as heard
    /// until then (up to [`MAX_BEAT_WAIT_MS`] after the oldest came): it was waiting for us.
    pub(crate) fn note_answered(&mut self, host: NodeId, now_ms: u64) {
        if let Some(h) = self.hosts.get_mut(&host) {
            h.answering = h.answering.saturating_sub(1);
            if h.answering == 0 {
                h.last_beat_ms = h.heard_ms(now_ms);
                h.answering_since_ms = None;
            }
        }
    }

    /// Counts results received from `host`.
    pub(crate) fn note_results(&mut self, host: NodeId, count: usize) {
        if let Some(h) = self.hosts.get_mut(&host) {
            h.results_received += count as u64;
        }
    }

    /// The host's live entry.
    pub(crate) fn host(&self, host: NodeId) -> Option<&HostLive> {
        self.hosts.get(&host)
    }

    /// Every host heard from.
    pub(crate) fn hosts(&self) -> &BTreeMap<NodeId, HostLive> {
        &self.hosts
    }

    /// Forgets everything (leadership lost or changed).
    pub(crate) fn clear(&mut self) {
        self.hosts.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inventory(vmids: &[u32]) -> Inventory {
        Inventory {
            vms: vmids
                .iter()
                .map(|&vmid| ObservedVm {
                    vmid,
                    name: format!("vm{vmid}"),
                    ..ObservedVm::default()
                })
                .collect(),
            ..Inventory::default()
        }
    }

    #[test]
    fn an_inventory_is_needed_until_one_arrives_for_the_beating_boot() {
        let mut live = Live::default();
        let first = live.record_beat(7, 1, 1, None, 10);
        assert!(first.new_boot && first.need_inventory && !first.inventory_changed);
        let with = live.record_beat(7, 1, 2, Some(&inventory(&[100])), 20);
        assert!(!with.new_boot && !with.need_inventory && with.inventory_changed);
        let same = live.record_beat(7, 1, 3, Some(&inventory(&[100])), 30);
        assert!(!same.inventory_changed && !same.need_inventory);
        let h = live.host(7).unwrap();
        assert_eq!((h.last_beat_ms, h.inventory_ms, h.last_seq), (30, 30, 3));
        assert!(h.observed.contains_key(&100));
    }

    #[test]
    fn a_host_whose_beat_is_being_answered_is_heard_until_the_answer_within_the_agents_wait() {
        let mut live = Live::default();
        live.record_beat(7, 1, 1, None, 1_000);
        let h = live.host(7).unwrap();
        // A slow answer (the leader's disk): the agent waits, it is not silent.
        assert_eq!(h.heard_ms(3_500), 3_500);
        // Past the agent's own deadline it has given up: heard when it beat, plus that wait.
        assert_eq!(h.heard_ms(9_000), 1_000 + MAX_BEAT_WAIT_MS);
        live.note_answered(7, 3_500);
        let h = live.host(7).unwrap();
        assert_eq!((h.last_beat_ms, h.answering), (3_500, 0));
        // Answered: silence counts from the answer, not on.
        assert_eq!(h.heard_ms(6_000), 3_500);
        // Two in flight: heard until the last is answered.
        live.record_beat(7, 1, 2, None, 4_000);
        live.record_beat(7, 1, 3, None, 4_500);
        live.note_answered(7, 5_000);
        assert_eq!(live.host(7).unwrap().heard_ms(5_800), 5_800);
        live.note_answered(7, 6_000);
        assert_eq!(live.host(7).unwrap().heard_ms(8_000), 6_000);
    }

    #[test]
    fn a_new_boot_id_drops_the_old_processes_inventory() {
        let mut live = Live::default();
        live.record_beat(7, 1, 1, Some(&inventory(&[100])), 10);
        let restarted = live.record_beat(7, 2, 1, None, 20);
        assert!(restarted.new_boot && restarted.need_inventory);
        assert!(live.host(7).unwrap().observed.is_empty());
        live.clear();
        assert!(live.host(7).is_none());
    }
}
