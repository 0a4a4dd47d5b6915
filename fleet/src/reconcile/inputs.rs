//! What the reconciler decides from, besides the replicated state: the clock, the policy, the
//! live view of the hosts, the commands in flight with their back-off, and what it remembers
//! of each VM between ticks. Plain data, filled by the leader loop.

use std::collections::BTreeMap;
use std::sync::Arc;

use protocol::NodeId;
use protocol::agent::{ObservedVm, RemoteEndpoint};
use protocol::fleet::UnixMillis;

/// The first retry of a failed command waits this long; each further failure doubles it.
pub const BACKOFF_FIRST_MS: u64 = 2_000;
/// The longest wait between retries.
pub const BACKOFF_MAX_MS: u64 = 60_000;

/// Now, on both clocks the control plane uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// Monotonic milliseconds of the control plane (soft-state timing).
    pub mono_ms: u64,
    /// Wall-clock Unix milliseconds (written into commands and statuses).
    pub unix_ms: UnixMillis,
}

/// The reconciler's knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// A host counts as reporting for this long after its last beat.
    pub lease_ms: u64,
    /// An Ensure is re-sent to a VM that looks in order after this long.
    pub resync_ms: u64,
    /// `EnsureVm::ip_wait_secs`.
    pub ip_wait_secs: u32,
}

/// The live view of the hosts the plan reads.
#[derive(Debug, Clone, Default)]
pub struct LiveView {
    /// When this member started leading (control-plane milliseconds).
    pub leading_since_ms: u64,
    /// Hosts heard from since then.
    pub hosts: BTreeMap<NodeId, LiveHost>,
}

/// One host's beats.
#[derive(Debug, Clone, Default)]
pub struct LiveHost {
    /// When it last beat.
    pub last_beat_ms: u64,
    /// When its last inventory arrived (`None`: none yet for this boot).
    pub inventory_ms: Option<u64>,
    /// The VMs of that inventory by VMID.
    pub vms: Arc<BTreeMap<u32, ObservedVm>>,
}

impl LiveView {
    /// Whether `host` beat within the lease.
    pub fn is_reporting(&self, host: NodeId, policy: &Policy, now: Clock) -> bool {
        self.hosts
            .get(&host)
            .is_some_and(|h| now.mono_ms.saturating_sub(h.last_beat_ms) <= policy.lease_ms)
    }

    /// Whether `host` is known to be silent: this member has led for a whole lease without a
    /// beat within the lease from it (just after an election, silence proves nothing).
    pub fn is_silent(&self, host: NodeId, policy: &Policy, now: Clock) -> bool {
        let led_a_lease = now.mono_ms.saturating_sub(self.leading_since_ms) > policy.lease_ms;
        led_a_lease && !self.is_reporting(host, policy, now)
    }
}

/// A command in flight for a VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InflightCommand {
    /// Its id.
    pub id: String,
    /// What it does.
    pub kind: protocol::agent::OpKind,
    /// The host it went to.
    pub host: NodeId,
    /// The generation it was made for.
    pub generation: u64,
}

/// A failed attempt's back-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The generation that failed (a new generation retries at once).
    pub generation: u64,
    /// Failures in a row.
    pub attempts: u32,
    /// No retry before this instant (control-plane milliseconds).
    pub retry_at_ms: u64,
}

impl Backoff {
    /// The back-off after one more failure of `generation` at `now_ms`.
    pub fn after(previous: Option<Backoff>, generation: u64, now_ms: u64) -> Backoff {
        let attempts = previous
            .filter(|b| b.generation == generation)
            .map_or(1, |b| b.attempts.saturating_add(1));
        let shift = attempts.saturating_sub(1).min(16);
        let wait = BACKOFF_FIRST_MS
            .saturating_mul(1u64 << shift)
            .min(BACKOFF_MAX_MS);
        Backoff {
            generation,
            attempts,
            retry_at_ms: now_ms.saturating_add(wait),
        }
    }

    /// Whether it still holds off `generation` at `now_ms`.
    pub fn holds(&self, generation: u64, now_ms: u64) -> bool {
        self.generation == generation && now_ms < self.retry_at_ms
    }
}

/// What the reconciler remembers about a VM between ticks (soft state, lost with leadership).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VmMemory {
    /// When the last Ensure was sent.
    pub last_ensure_ms: Option<u64>,
    /// When the last result of an Ensure or Delete arrived.
    pub last_result_ms: Option<u64>,
    /// The back-off after failures, if the last attempt failed.
    pub backoff: Option<Backoff>,
    /// The VMID holds a VM the fleet does not own: no Ensure for this generation.
    pub not_owned_generation: Option<u64>,
    /// The migration token its remote migration's target minted (held here only: never
    /// written to the Raft log).
    pub remote_endpoint: Option<RemoteEndpoint>,
}

/// Commands in flight and the reconciler's memory, by VM name.
#[derive(Debug, Clone, Default)]
pub struct Inflight {
    /// The oldest command in flight for each VM.
    pub commands: BTreeMap<String, InflightCommand>,
    /// What the reconciler remembers.
    pub memory: BTreeMap<String, VmMemory>,
}

impl Inflight {
    pub(crate) fn memory(&self, vm: &str) -> VmMemory {
        self.memory.get(vm).cloned().unwrap_or_default()
    }
}
