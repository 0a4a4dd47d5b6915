//! The clients a scenario runs beside its events (`[fleet] clients = N`): each writes and
//! reads registers and allocates addresses through its own admin connection, as an
//! automation would, and records what it asked and what it was answered, on one clock. At the
//! end the history is judged: linearizable ([`crate::linearizability`], rule 8) and every
//! acknowledged allocation present, once (rule 9).
//!
//! ```text
//!  client i ─ every 50–250 ms ─┬─ write: pool apply chaos-kK-wW, dns = [value] (register K of
//!                              │          minute W of the run)
//!                              ├─ read:  pool list, linearizable    (the minute's registers)
//!                              └─ allocate: an address of chaos-alloc, owner cI-N
//!  end: a last linearizable read ─▶ registers checked key by key, allocations counted
//! ```
//!
//! A register is an IP pool whose one DNS server encodes the value: a pool apply replaces the
//! spec whole, a pool list reads it. Each minute of the run has registers of its own: the
//! checker's search grows with one register's operations, and registers are independent
//! objects (a history is linearizable exactly when each register's is). A write or allocation that failed or timed out may or
//! may not have been applied: it has no return in the history (the checker lets it take
//! effect at any time after its call, or never), and an allocation that failed is allowed at
//! the end but never twice. A read that failed says nothing and is left out.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use client::AdminClient;
use protocol::admin::{AllocateIp, PoolApply, PoolList, PoolListReply, ReadMode};
use protocol::fleet::AllocationOwner;
use protocol::spec::IpPoolSpec;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::invariants::{Invariant, Violation};
use crate::linearizability::{
    DEFAULT_BUDGET, Failure, Operation, RegisterOp, Registers, Verdict, check_by_key,
};

/// How many registers the clients share (few: contention is the point).
pub const REGISTERS: u8 = 3;
/// The pool the clients allocate from.
pub const ALLOC_POOL: &str = "chaos-alloc";
/// How long one call may take, the client's retries included, before its outcome is unknown.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the final read may keep trying (the fleet may be recovering from the last fault).
const FINAL_READ_WAIT: Duration = Duration::from_secs(60);

/// How long the clients use one set of registers before the next: the checker's search grows
/// with the operations of one register, so a long campaign is many short registers.
const WINDOW: Duration = Duration::from_secs(60);
/// The most windows (4 h 15 min); later operations stay on the last one.
const WINDOWS: u64 = 255;

/// Whether a fleet event's subject is one of the clients' own pools (`chaos-*`; their events
/// are left out of the timeline: thousands of them would bury the faults).
pub fn own_subject(subject: &str) -> bool {
    subject.starts_with("chaos-")
}

/// A register: its number and the window it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Register {
    k: u8,
    window: u8,
}

impl Register {
    /// Register `k` of the window `began` is in now.
    fn now(k: u8, began: Instant) -> Register {
        let window = (began.elapsed().as_secs() / WINDOW.as_secs()).min(WINDOWS);
        Register {
            k,
            window: u8::try_from(window).unwrap_or(u8::MAX),
        }
    }

    /// Its pool's name.
    fn pool(self) -> String {
        format!("chaos-k{}-w{}", self.k, self.window)
    }

    /// Its pool holding `value` (below 2^24).
    fn spec(self, value: u64) -> IpPoolSpec {
        let net = 200u8.saturating_add(self.k);
        let w = self.window;
        let v = u32::try_from(value & 0x00ff_ffff).unwrap_or(0);
        let [_, a, b, c] = v.to_be_bytes();
        IpPoolSpec {
            name: self.pool(),
            cidr: format!("10.{net}.{w}.0/24"),
            gateway: None,
            range_start: format!("10.{net}.{w}.10"),
            range_end: format!("10.{net}.{w}.250"),
            dns: vec![Ipv4Addr::new(10, a, b, c).to_string()],
        }
    }
}

/// The value a register pool holds.
fn register_value(spec: &IpPoolSpec) -> Option<u64> {
    let ip: Ipv4Addr = spec.dns.first()?.parse().ok()?;
    let [_, a, b, c] = ip.octets();
    Some(u64::from(u32::from_be_bytes([0, a, b, c])))
}

/// The pool allocations come from.
fn alloc_spec() -> IpPoolSpec {
    IpPoolSpec {
        name: ALLOC_POOL.to_string(),
        cidr: "10.250.0.0/16".to_string(),
        gateway: None,
        range_start: "10.250.0.10".to_string(),
        range_end: "10.250.255.250".to_string(),
        dns: Vec::new(),
    }
}

/// What the clients did.
#[derive(Debug, Default)]
pub struct History {
    /// Register operations, times in µs after the load began.
    pub registers: Vec<Operation<RegisterOp, Option<u64>>>,
    /// Allocations: the owner asked for and the address acknowledged (`None`: no answer).
    pub allocations: Vec<(String, Option<IpAddr>)>,
}

/// The running clients.
pub struct Load {
    tasks: Vec<JoinHandle<()>>,
    stop: watch::Sender<bool>,
    history: Arc<Mutex<History>>,
    began: Instant,
}

/// What the judged history showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadVerdict {
    /// Violations of rules 8 and 9.
    pub violations: Vec<Violation>,
    /// The history in figures, for the report.
    pub summary: String,
}

fn record(history: &Mutex<History>, f: impl FnOnce(&mut History)) {
    if let Ok(mut h) = history.lock() {
        f(&mut h);
    }
}

fn micros(began: Instant) -> u64 {
    u64::try_from(began.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// The registers `which` as a pool list shows them (`None`: never written).
fn registers_of(
    reply: &PoolListReply,
    which: impl IntoIterator<Item = Register>,
) -> Vec<(Register, Option<u64>)> {
    which
        .into_iter()
        .map(|r| {
            let name = r.pool();
            let value = reply
                .pools
                .iter()
                .find(|p| p.spec.name == name)
                .and_then(|p| register_value(&p.spec));
            (r, value)
        })
        .collect()
}

/// Every register up to the window `began` is in now.
fn every_register(began: Instant) -> Vec<Register> {
    let last = Register::now(0, began).window;
    (0..=last)
        .flat_map(|window| (0..REGISTERS).map(move |k| Register { k, window }))
        .collect()
}

impl Load {
    /// Makes the allocation pool (through `admin`) and starts `clients` clients, each from
    /// `connect()`, with random choices seeded by `seed`.
    ///
    /// # Errors
    /// Why the pool could not be made.
    pub async fn start(
        clients: u32,
        seed: u64,
        admin: &AdminClient,
        mut connect: impl FnMut() -> Option<AdminClient>,
    ) -> Result<Load, String> {
        admin
            .call(&PoolApply { spec: alloc_spec() })
            .await
            .map_err(|e| format!("the clients' pool {ALLOC_POOL}: {e}"))?;
        let (stop, stopped) = watch::channel(false);
        let history = Arc::new(Mutex::new(History::default()));
        let began = Instant::now();
        let mut tasks = Vec::new();
        for i in 0..clients {
            let Some(client) = connect() else {
                return Err(format!("client {i}: no admin client"));
            };
            let client = client.with_timeout(CALL_TIMEOUT);
            let rng = StdRng::seed_from_u64(seed ^ (u64::from(i) << 40));
            tasks.push(tokio::spawn(run_client(
                i,
                client,
                rng,
                Arc::clone(&history),
                began,
                stopped.clone(),
            )));
        }
        Ok(Load {
            tasks,
            stop,
            history,
            began,
        })
    }

    /// Stops the clients, reads the registers and allocations once more through `admin`
    /// (retrying while the fleet recovers) and judges the history; `t_ms` dates the
    /// violations.
    pub async fn finish(self, admin: &AdminClient, t_ms: i64) -> LoadVerdict {
        let _ = self.stop.send(true);
        for task in self.tasks {
            // A client in a call returns within CALL_TIMEOUT.
            let _ = tokio::time::timeout(CALL_TIMEOUT * 2, task).await;
        }
        let call = micros(self.began);
        let deadline = Instant::now() + FINAL_READ_WAIT;
        let last = loop {
            match admin
                .call(&PoolList {
                    read: ReadMode::Linearizable,
                })
                .await
            {
                Ok(reply) => break Some(reply),
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(_) => break None,
            }
        };
        let ret = micros(self.began);
        let mut history = match self.history.lock() {
            Ok(mut h) => std::mem::take(&mut *h),
            Err(_) => History::default(),
        };
        let mut violations = Vec::new();
        let violation = |invariant, detail: String| Violation {
            invariant,
            t_ms,
            detail,
        };
        let Some(last) = last else {
            violations.push(violation(
                Invariant::AcknowledgedWrites,
                format!(
                    "the fleet did not answer a linearizable read within {} s of the end",
                    FINAL_READ_WAIT.as_secs()
                ),
            ));
            return LoadVerdict {
                violations,
                summary: "no final read".to_string(),
            };
        };
        for (r, value) in registers_of(&last, every_register(self.began)) {
            history.registers.push(Operation {
                call,
                ret: Some(ret),
                input: RegisterOp::Read(r.pool()),
                output: Some(value),
            });
        }
        let verdict = check_by_key(
            &Registers,
            &history.registers,
            |op: &RegisterOp| op.key().to_string(),
            DEFAULT_BUDGET,
        );
        match verdict {
            Verdict::Linearizable => {}
            Verdict::Violation(failure) => violations.push(violation(
                Invariant::Linearizable,
                failure_text(&history.registers, &failure),
            )),
            Verdict::Unknown => violations.push(violation(
                Invariant::Linearizable,
                format!("the check did not finish within {DEFAULT_BUDGET} steps"),
            )),
        }
        let pool = last.pools.iter().find(|p| p.spec.name == ALLOC_POOL);
        let mut by_owner: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
        for (address, a) in pool.map(|p| &p.allocations).into_iter().flatten() {
            if let AllocationOwner::External(owner) = &a.owner {
                by_owner.entry(owner.clone()).or_default().push(*address);
            }
        }
        let mut acked = 0;
        let mut unknown = 0;
        for (owner, address) in &history.allocations {
            let found = by_owner.get(owner).map_or(&[][..], Vec::as_slice);
            if found.len() > 1 {
                violations.push(violation(
                    Invariant::AcknowledgedWrites,
                    format!(
                        "allocation {owner} was applied {} times: {found:?}",
                        found.len()
                    ),
                ));
            }
            match address {
                Some(a) => {
                    acked += 1;
                    if !found.contains(a) {
                        violations.push(violation(
                            Invariant::AcknowledgedWrites,
                            format!(
                                "allocation {owner} was acknowledged with {a} but the pool has \
                                 {found:?}"
                            ),
                        ));
                    }
                }
                None => unknown += 1,
            }
        }
        let writes = history
            .registers
            .iter()
            .filter(|o| matches!(o.input, RegisterOp::Write(..)))
            .count();
        let unreturned = history.registers.iter().filter(|o| o.ret.is_none()).count();
        LoadVerdict {
            violations,
            summary: format!(
                "{} register operations ({writes} writes, {unreturned} without an answer), {} \
                 allocations ({acked} acknowledged, {unknown} without an answer)",
                history.registers.len(),
                history.allocations.len()
            ),
        }
    }
}

async fn run_client(
    i: u32,
    client: AdminClient,
    mut rng: StdRng,
    history: Arc<Mutex<History>>,
    began: Instant,
    mut stop: watch::Receiver<bool>,
) {
    let mut seq: u64 = 0;
    loop {
        let pause = Duration::from_millis(rng.random_range(50..250));
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            () = tokio::time::sleep(pause) => {}
        }
        seq += 1;
        let roll: u8 = rng.random_range(0..100);
        let call = micros(began);
        if roll < 45 {
            let r = Register::now(rng.random_range(0..REGISTERS), began);
            // Unique per client and step, below 2^24.
            let value = u64::from(i + 1) * 1_000_000 + seq % 1_000_000;
            let ok = client
                .call(&PoolApply {
                    spec: r.spec(value),
                })
                .await
                .is_ok();
            let ret = ok.then(|| micros(began));
            record(&history, |h| {
                h.registers.push(Operation {
                    call,
                    ret,
                    input: RegisterOp::Write(r.pool(), value),
                    output: ok.then_some(None),
                });
            });
        } else if roll < 90 {
            let window: Vec<Register> = (0..REGISTERS).map(|k| Register::now(k, began)).collect();
            let Ok(reply) = client
                .call(&PoolList {
                    read: ReadMode::Linearizable,
                })
                .await
            else {
                continue;
            };
            let ret = micros(began);
            record(&history, |h| {
                for (r, value) in registers_of(&reply, window) {
                    h.registers.push(Operation {
                        call,
                        ret: Some(ret),
                        input: RegisterOp::Read(r.pool()),
                        output: Some(value),
                    });
                }
            });
        } else {
            let owner = format!("c{i}-{seq}");
            let reply = client
                .call(&AllocateIp {
                    pool: ALLOC_POOL.to_string(),
                    owner: owner.clone(),
                })
                .await;
            record(&history, |h| {
                h.allocations.push((owner, reply.ok().map(|r| r.address)));
            });
        }
    }
    client.close().await;
}

/// One register operation in words: `Write("k", 3) -> None [1.200s, 1.250s]`.
fn op_text(op: &Operation<RegisterOp, Option<u64>>) -> String {
    format!(
        "{:?} -> {:?} [{:.3}s, {}]",
        op.input,
        op.output,
        op.call as f64 / 1e6,
        op.ret.map_or("no return".to_string(), |r| format!(
            "{:.3}s",
            r as f64 / 1e6
        ))
    )
}

/// Where a register's history stops being linearizable, in words: how far an order goes, the
/// operation none can place next, the operations around it not yet placed, and the last ones
/// placed.
fn failure_text(ops: &[Operation<RegisterOp, Option<u64>>], f: &Failure) -> String {
    let Some(blocked) = ops.get(f.blocked) else {
        return "no order explains the history".to_string();
    };
    let placed: std::collections::BTreeSet<usize> = f.linearized.iter().copied().collect();
    let end = blocked.ret.unwrap_or(u64::MAX);
    let around: Vec<String> = f
        .ops
        .iter()
        .filter(|i| **i != f.blocked && !placed.contains(i))
        .filter_map(|i| ops.get(*i))
        .filter(|o| o.call <= end && o.ret.is_none_or(|r| r >= blocked.call))
        .take(8)
        .map(op_text)
        .collect();
    let last: Vec<String> = f
        .linearized
        .iter()
        .rev()
        .take(3)
        .rev()
        .filter_map(|i| ops.get(*i))
        .map(op_text)
        .collect();
    format!(
        "{} of the register's {} operations take effect in an order (the last: {}); then {} \
         must have taken effect by its return and no order allows it (unplaced around it: {})",
        f.linearized.len(),
        f.ops.len(),
        if last.is_empty() {
            "none".to_string()
        } else {
            last.join("; ")
        },
        op_text(blocked),
        if around.is_empty() {
            "none".to_string()
        } else {
            around.join("; ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_clients_pools_are_their_own() {
        assert!(own_subject("chaos-k0-w3") && own_subject(ALLOC_POOL));
        assert!(!own_subject("web") && !own_subject("pool-chaos"));
    }

    #[test]
    fn a_register_value_survives_its_pool_spec() {
        for v in [0, 1, 255, 256, 1_000_001, 16_000_000] {
            for window in [0, 7, 255] {
                let spec = Register { k: 2, window }.spec(v);
                assert_eq!(register_value(&spec), Some(v));
                assert!(protocol::spec::validate_ip_pool(&spec).is_ok(), "{spec:?}");
                assert!(own_subject(&spec.name));
            }
        }
        assert!(protocol::spec::validate_ip_pool(&alloc_spec()).is_ok());
    }
}
