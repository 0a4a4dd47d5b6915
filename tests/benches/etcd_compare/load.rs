//! The one load generator both systems are driven with: `clients` closed-loop clients (one
//! request in flight each, each on its own connection), the same payload sizes, the same
//! duration, the same clock. A system plugs in through [`Store`] and [`Client`].

use std::future::Future;
use std::time::{Duration, Instant};

/// A replicated write or a linearizable read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpKind {
    /// Replicated writes that leave the state as small as it was: a client creates its entry,
    /// deletes it, creates it again, ... (each step is one write, acknowledged after a quorum
    /// made it durable).
    Write,
    /// Linearizable reads of one small entry.
    Read,
}

/// One measured workload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Workload {
    /// What each client does.
    pub(crate) kind: OpKind,
    /// How many clients run at once.
    pub(crate) clients: usize,
}

impl Workload {
    /// The table's label.
    pub(crate) fn label(&self) -> String {
        let what = match self.kind {
            OpKind::Write => "writes",
            OpKind::Read => "linearizable reads",
        };
        let who = if self.clients == 1 {
            "client"
        } else {
            "clients"
        };
        format!("{what}, {} {who}", self.clients)
    }
}

/// The workloads of the comparison, in table order.
pub(crate) const WORKLOADS: [Workload; 4] = [
    Workload {
        kind: OpKind::Write,
        clients: 1,
    },
    Workload {
        kind: OpKind::Write,
        clients: 64,
    },
    Workload {
        kind: OpKind::Read,
        clients: 1,
    },
    Workload {
        kind: OpKind::Read,
        clients: 64,
    },
];

/// The namespace of every entry the bench writes: pvefleet's IP pool, etcd's key prefix.
pub(crate) const PREFIX: &str = "bench";

/// Client `client`'s key (etcd): `bench/0007`, 10 bytes.
pub(crate) fn key(client: usize) -> String {
    format!("{PREFIX}/{client:04}")
}

/// The value client `client` writes at its `seq`th operation: 16 bytes (`0007-00000000042`),
/// pvefleet's allocation owner and etcd's value.
pub(crate) fn value(client: usize, seq: u64) -> String {
    format!("{client:04}-{seq:011}")
}

/// The key every read reads (etcd; pvefleet reads its VMID ranges): 10 bytes, holding a
/// [`value`].
pub(crate) fn read_key() -> String {
    format!("{PREFIX}/read")
}

/// A system under test: makes connected clients.
pub(crate) trait Store {
    /// One client, with its own connection.
    type Client: Client;

    /// The system's column name.
    fn name(&self) -> &str;

    /// A connected client number `index` doing `kind` operations.
    fn client(&self, rt: &tokio::runtime::Runtime, kind: OpKind, index: usize) -> Self::Client;
}

/// One client of a system: [`Client::op`] is called in a loop, one call at a time.
pub(crate) trait Client: Send + 'static {
    /// The `seq`th operation (0 is the warm-up). A failure panics: a run with failed
    /// operations measures nothing worth printing.
    fn op(&mut self, seq: u64) -> impl Future<Output = ()> + Send;

    /// Ends the client after its run (closes its connection gracefully where the system has a
    /// way to).
    fn close(self) -> impl Future<Output = ()> + Send;
}

/// What one run measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// Completed operations per second over the run.
    pub(crate) ops_per_sec: f64,
    /// Median latency of one operation.
    pub(crate) p50: Duration,
}

/// No client makes more operations than this in one run, whatever the duration (a bound on
/// the loop besides its deadline).
const MAX_OPS_PER_CLIENT: u64 = 50_000_000;

/// One run of `workload` against `store` for `duration`: connect, one warm-up operation per
/// client (opens the connections, finds the leader), then every client loops until the
/// deadline. The connections close when the run ends.
pub(crate) fn run<S: Store>(
    rt: &tokio::runtime::Runtime,
    store: &S,
    workload: Workload,
    duration: Duration,
) -> Sample {
    let clients: Vec<S::Client> = (0..workload.clients)
        .map(|i| store.client(rt, workload.kind, i))
        .collect();
    let warmed: Vec<S::Client> = rt.block_on(async {
        let tasks: Vec<_> = clients
            .into_iter()
            .map(|mut c| {
                tokio::spawn(async move {
                    c.op(0).await;
                    c
                })
            })
            .collect();
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            out.push(t.await.expect("a warm-up operation"));
        }
        out
    });
    let started = Instant::now();
    let deadline = started + duration;
    let (mut latencies, done): (Vec<Duration>, Vec<S::Client>) = rt.block_on(async {
        let tasks: Vec<_> = warmed
            .into_iter()
            .map(|mut c| {
                tokio::spawn(async move {
                    let mut lat = Vec::new();
                    let mut seq = 1;
                    while Instant::now() < deadline && seq <= MAX_OPS_PER_CLIENT {
                        let t = Instant::now();
                        c.op(seq).await;
                        lat.push(t.elapsed());
                        seq += 1;
                    }
                    (lat, c)
                })
            })
            .collect();
        let mut all = Vec::new();
        let mut done = Vec::new();
        for t in tasks {
            let (lat, c) = t.await.expect("a client of the run");
            all.extend(lat);
            done.push(c);
        }
        (all, done)
    });
    // Operations in flight at the deadline are finished and counted: the rate is over the
    // time until the last one returned.
    let elapsed = started.elapsed();
    rt.block_on(async {
        for c in done {
            c.close().await;
        }
    });
    latencies.sort_unstable();
    let p50 = latencies
        .get(latencies.len() / 2)
        .copied()
        .unwrap_or(Duration::ZERO);
    Sample {
        ops_per_sec: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50,
    }
}

/// The median rate and the median p50 of several runs (each its own median).
pub(crate) fn median(samples: &[Sample]) -> Sample {
    let mut rates: Vec<f64> = samples.iter().map(|s| s.ops_per_sec).collect();
    rates.sort_by(f64::total_cmp);
    let mut p50s: Vec<Duration> = samples.iter().map(|s| s.p50).collect();
    p50s.sort_unstable();
    Sample {
        ops_per_sec: rates.get(rates.len() / 2).copied().unwrap_or(0.0),
        p50: p50s.get(p50s.len() / 2).copied().unwrap_or(Duration::ZERO),
    }
}
