//! Benchmark (figures, not pass/fail): what clients without a certificate can make a
//! coordinator hold. One `pvefleet-coordinator` process on loopback is attacked through its
//! Join service, as docs/design/join-surface.md tells, and its resident memory (`VmRSS` of
//! `/proc/<pid>/status`, sampled every 50 ms, with the peak `VmHWM`) is printed before, during
//! and after each attack, with how many joiner connections stayed open and how many admin calls
//! of a member were answered meanwhile:
//!
//! 1. 2,000 connections without a certificate from 16 loopback addresses, held 5 s;
//! 2. 16 streams on one connection, each announcing 64 MiB − 1 and pushing its body (the
//!    original attack: before the Join limits it took the server from 21 MB to 1.05 GB);
//! 3. 256 connections with every stream the server lets joiners open (2), each a 16 KiB frame
//!    held one byte short.
//!
//! Run: `make bench` (it builds the release binaries first).
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken run aborts: its figures mean nothing

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bootstrap::NodeDir;
use bootstrap::cli_config::CliConfig;
use client::AdminClient;
use lab::Part;
use protocol::admin::ClusterStatus;
use pvefleet_tests::coord_cluster::Cluster;
use transport::{Connection, Endpoint, TransportConfig};

const CONNECTIONS: usize = 2_000;
const SOURCES: u8 = 16;
const HOLD: Duration = Duration::from_secs(5);
const HUGE: u32 = 64 * 1024 * 1024 - 1;
const JOIN_FRAME: u32 = 16 * 1024;

/// `VmRSS` or `VmHWM` of `pid`, in MiB.
fn status_mib(pid: u32, field: &str) -> f64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    kib as f64 / 1024.0
}

/// Samples the server's RSS and counts a member's answered calls while an attack runs.
struct Watch {
    stop: Arc<AtomicBool>,
    peak_kib: Arc<AtomicU64>,
    served: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Watch {
    fn start(pid: u32, admin: Arc<AdminClient>) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let peak_kib = Arc::new(AtomicU64::new(0));
        let served = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let sampler = {
            let (stop, peak) = (Arc::clone(&stop), Arc::clone(&peak_kib));
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let kib = (status_mib(pid, "VmRSS") * 1024.0) as u64;
                    peak.fetch_max(kib, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        };
        let member = {
            let (stop, served, failed) =
                (Arc::clone(&stop), Arc::clone(&served), Arc::clone(&failed));
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    match admin.call(&ClusterStatus {}).await {
                        Ok(_) => served.fetch_add(1, Ordering::Relaxed),
                        Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                    };
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        Watch {
            stop,
            peak_kib,
            served,
            failed,
            tasks: vec![sampler, member],
        }
    }

    /// (peak RSS MiB, member calls answered, member calls failed).
    async fn finish(self) -> (f64, u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        (
            self.peak_kib.load(Ordering::Relaxed) as f64 / 1024.0,
            self.served.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

/// One joiner endpoint per loopback source address `127.0.<net>.1..=SOURCES` (a fresh `net`
/// per attack: each source has its own budget on the server).
fn joiners(pin: [u8; 32], net: u8) -> Vec<Endpoint> {
    (1..=SOURCES)
        .map(|i| {
            let bind = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, net, i)), 0);
            Endpoint::join_client_on(bind, pin, TransportConfig::default()).unwrap()
        })
        .collect()
}

/// Dials `n` join connections, spread over the joiners, 64 at a time (each dial bounded).
async fn dial_many(joiners: &[Endpoint], target: SocketAddr, n: usize) -> Vec<Connection> {
    let mut open = Vec::new();
    let mut dials = tokio::task::JoinSet::new();
    for i in 0..n {
        let joiner = joiners[i % joiners.len()].clone();
        dials.spawn(async move {
            tokio::time::timeout(Duration::from_secs(10), joiner.connect_join(target))
                .await
                .ok()
                .and_then(Result::ok)
        });
        if dials.len() >= 64
            && let Some(done) = dials.join_next().await
            && let Some(conn) = done.unwrap()
        {
            open.push(conn);
        }
    }
    while let Some(done) = dials.join_next().await {
        if let Some(conn) = done.unwrap() {
            open.push(conn);
        }
    }
    open
}

fn still_open(conns: &[Connection]) -> usize {
    conns.iter().filter(|c| c.closed_reason().is_none()).count()
}

/// Streams held open by an attack (quinn's stream handles, kept alive until dropped).
type Held = Vec<Box<dyn std::any::Any + Send>>;

/// Opens up to `streams` streams on `conn` (each open bounded by `within`), each announcing
/// `announced` bytes, then pushes `send` bytes of body on each until done or stopped; returns
/// the streams, never finished, and the body bytes the server took before stopping them.
async fn hold_streams(
    conn: &Connection,
    streams: usize,
    announced: u32,
    send: usize,
    within: Duration,
) -> (Held, u64) {
    let deadline = tokio::time::Instant::now() + within;
    let mut pushes = tokio::task::JoinSet::new();
    for _ in 0..streams {
        let opened = tokio::time::timeout_at(deadline, conn.quic().open_bi()).await;
        let Ok(Ok((mut tx, rx))) = opened else { break };
        pushes.spawn(async move {
            let chunk = vec![0x5Au8; 64 * 1024];
            let mut sent = 0u64;
            if tx.write_all(&announced.to_be_bytes()).await.is_ok() {
                let mut left = send;
                while left > 0 {
                    let n = left.min(chunk.len());
                    let write = tokio::time::timeout_at(deadline, tx.write_all(&chunk[..n])).await;
                    if !matches!(write, Ok(Ok(()))) {
                        break;
                    }
                    sent += n as u64;
                    left -= n;
                }
            }
            (Box::new((tx, rx)) as Box<dyn std::any::Any + Send>, sent)
        });
    }
    let mut held = Vec::new();
    let mut accepted = 0;
    while let Some(done) = pushes.join_next().await {
        let (stream, sent) = done.unwrap();
        held.push(stream);
        accepted += sent;
    }
    (held, accepted)
}

struct Row {
    attack: &'static str,
    before: f64,
    peak: f64,
    after: f64,
    open: String,
    served: u64,
    failed: u64,
}

/// Lets the server settle after an attack, then reads its RSS.
async fn settled(pid: u32) -> f64 {
    tokio::time::sleep(Duration::from_secs(3)).await;
    status_mib(pid, "VmRSS")
}

fn close_all(conns: &[Connection]) {
    for c in conns {
        c.quic().close(0u32.into(), b"bench done");
    }
}

fn main() {
    let mut cluster = Cluster::found(&[]);
    let pid = cluster
        .lab
        .pid(Part::Member(0))
        .expect("the coordinator runs");
    let target = cluster.member(0).listen;
    let ca_pem = std::fs::read_to_string(NodeDir::new(&cluster.member(0).dir).ca_cert()).unwrap();
    let pin = transport::ca_fingerprint(&ca_pem).unwrap();
    let cfg = CliConfig::load(&cluster.cli_config).unwrap();
    let idle = status_mib(pid, "VmRSS");
    let mut rows = Vec::new();

    cluster.block_on(async {
        let admin = AdminClient::new(&cfg.load_material().unwrap(), cfg.coordinators.clone())
            .unwrap()
            .with_timeout(Duration::from_secs(10));
        let admin = Arc::new(admin);
        // 1. Many connections without a certificate, held.
        let sources = joiners(pin, 1);
        let before = status_mib(pid, "VmRSS");
        let watch = Watch::start(pid, Arc::clone(&admin));
        let started = Instant::now();
        let conns = dial_many(&sources, target, CONNECTIONS).await;
        let dialed = conns.len();
        tokio::time::sleep(HOLD).await;
        let open = still_open(&conns);
        let (peak, served, failed) = watch.finish().await;
        close_all(&conns);
        drop(conns);
        rows.push(Row {
            attack: "2,000 connections, 16 sources, held 5 s",
            before,
            peak,
            after: settled(pid).await,
            open: format!(
                "{open} of {dialed} after {:.0} s",
                started.elapsed().as_secs_f64()
            ),
            served,
            failed,
        });

        // 2. The original attack: 16 streams announcing 64 MiB − 1, bodies pushed.
        let sources = joiners(pin, 2);
        let before = status_mib(pid, "VmRSS");
        let watch = Watch::start(pid, Arc::clone(&admin));
        let conn = sources[0].connect_join(target).await.unwrap();
        let within = Duration::from_secs(10);
        let (held, accepted) = hold_streams(&conn, 16, HUGE, HUGE as usize, within).await;
        tokio::time::sleep(HOLD).await;
        let (peak, served, failed) = watch.finish().await;
        let streams = held.len();
        drop(held);
        close_all(std::slice::from_ref(&conn));
        rows.push(Row {
            attack: "16 streams x 64 MiB-1 announced, bodies pushed",
            before,
            peak,
            after: settled(pid).await,
            open: format!(
                "{streams} streams opened, {:.1} KiB of bodies taken",
                accepted as f64 / 1024.0
            ),
            served,
            failed,
        });

        // 3. Every stream joiners may open, each a 16 KiB frame held one byte short.
        let sources = joiners(pin, 3);
        let before = status_mib(pid, "VmRSS");
        let watch = Watch::start(pid, Arc::clone(&admin));
        let conns = dial_many(&sources, target, 256).await;
        let mut attacks = tokio::task::JoinSet::new();
        for conn in conns.iter().filter(|c| c.closed_reason().is_none()) {
            let conn = conn.clone();
            attacks.spawn(async move {
                let within = Duration::from_secs(5);
                hold_streams(&conn, 2, JOIN_FRAME, JOIN_FRAME as usize - 1, within).await
            });
        }
        let mut held = Vec::new();
        let mut taken = 0;
        while let Some(done) = attacks.join_next().await {
            let (h, t) = done.unwrap();
            held.extend(h);
            taken += t;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let open = still_open(&conns);
        let (peak, served, failed) = watch.finish().await;
        let streams = held.len();
        drop(held);
        close_all(&conns);
        drop(conns);
        rows.push(Row {
            attack: "256 connections x 2 streams, 16 KiB-1 held",
            before,
            peak,
            after: settled(pid).await,
            open: format!(
                "{open} conns, {streams} streams, {:.0} KiB taken",
                taken as f64 / 1024.0
            ),
            served,
            failed,
        });
    });

    let hwm = status_mib(pid, "VmHWM");
    println!(
        "join_surface: one pvefleet-coordinator process on loopback attacked through its Join \
         service (no certificate); resident memory of the coordinator, idle {idle:.1} MiB"
    );
    println!(
        "  {:<48} {:>9} {:>9} {:>9}  {:<42} {:>13}",
        "attack", "before", "peak", "after", "joiners", "member calls"
    );
    for r in &rows {
        println!(
            "  {:<48} {:>5.1} MiB {:>5.1} MiB {:>5.1} MiB  {:<42} {:>5} ok {:>2} err",
            r.attack, r.before, r.peak, r.after, r.open, r.served, r.failed
        );
    }
    println!("  peak resident memory over the whole run (VmHWM): {hwm:.1} MiB");
}
