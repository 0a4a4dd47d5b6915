//! Benchmark (figures, not pass/fail): the web dashboard of a fleet of 1,000 VMs on 50
//! simulated hosts (3 coordinators and 50 agents, real processes), seen in a real headless
//! Chromium. For the dashboard of the leader and of a follower (which asks the leader for the
//! live host usage) it prints:
//!
//! - the overview's and the guest list's time to first render: Navigation Timing's response
//!   end and DOMContentLoaded, and the first contentful paint, medians of 10 loads, with the
//!   page's size;
//! - event-to-screen latency: an operator's label set on a host with `pvefleet host label`,
//!   from the call (and from its reply, the commit) until the overview's tile shows it in the
//!   open page (a MutationObserver stamps the change), 20 times: median, 90th percentile, max.
//!
//! Then the leader's memory (VmRSS, and its peak VmHWM) and CPU with 20 open dashboards: 20
//! sessions' live streams (10 overviews, 5 guest lists of 1,000 rows, 3 VIP pages, 2 event
//! logs) held open by plain HTTPS clients while a host label changes every 500 ms for 30 s,
//! against the same 30 s with no dashboard open.
//!
//! Run: `make bench` (release binaries), or `cargo bench -p pvefleet-tests --bench dashboard`.
#![allow(clippy::expect_used, clippy::unwrap_used)] // a broken run aborts: its figures mean nothing

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bootstrap::cli_config::CliConfig;
use client::AdminClient;
use protocol::admin::{DashboardLoginCreate, HostLabel};
use protocol::spec::FleetSpecFile;
use pvefleet_tests::browser::Browser;
use pvefleet_tests::dashboard_http::DashboardHttp;
use pvefleet_tests::fleet::{
    Fleet, all_running_with_ips, sim_hosts, test_pool, test_range, test_vm,
};
use pvefleet_tests::proc_stats::{cpu_secs, status_kib, unix_ms};
use pvefleet_tests::test_lab::install_crypto;
use serde_json::json;

const HOSTS: usize = 50;
const VMS: usize = 1_000;
/// Page loads per page measured.
const LOADS: usize = 10;
/// Changes timed from the call to the screen.
const CHANGES: usize = 20;
/// Open dashboards in the memory figure.
const DASHBOARDS: usize = 20;
/// How long the dashboards stay open while the fleet changes.
const HOLD: Duration = Duration::from_secs(30);

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn p90(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() * 9 / 10).min(v.len() - 1)]
}

/// `VmRSS` and `VmHWM` of `pid`, in MiB.
fn memory(pid: u32) -> (f64, f64) {
    let mib = |field| status_kib(pid, field) as f64 / 1024.0;
    (mib("VmRSS"), mib("VmHWM"))
}

async fn mint(admin: &AdminClient) -> String {
    admin
        .call(&DashboardLoginCreate {
            read_only: true,
            ttl_secs: Some(3600),
            issuer: None,
        })
        .await
        .expect("mint")
        .token
}

async fn set_label(admin: &AdminClient, value: &str) {
    admin
        .call(&HostLabel {
            host: "sim001".into(),
            set: [("bench".to_string(), value.to_string())].into(),
            unset: Vec::new(),
        })
        .await
        .expect("host label");
}

/// Medians over `LOADS` loads of `path`: response end, DOMContentLoaded, first contentful
/// paint (ms from navigation start), and the document's size (bytes).
async fn first_render(browser: &Browser, base: &str, path: &str, ready: &str) -> [f64; 4] {
    let mut cols: [Vec<f64>; 4] = Default::default();
    for _ in 0..LOADS {
        browser.goto(&format!("{base}{path}")).await;
        browser
            .wait_text(ready, Duration::from_secs(30), "the page", |_| true)
            .await;
        let t = browser
            .eval(
                "const n = performance.getEntriesByType('navigation')[0]; \
                 const f = performance.getEntriesByName('first-contentful-paint')[0]; \
                 return [n.responseEnd, n.domContentLoadedEventEnd, f ? f.startTime : -1, \
                 n.decodedBodySize];",
            )
            .await;
        for (i, col) in cols.iter_mut().enumerate() {
            col.push(t[i].as_f64().unwrap_or(-1.0));
        }
    }
    cols.map(|mut c| median(&mut c))
}

async fn dashboard_figures(admin: &AdminClient, ca_pem: &str, base: &str, node: u64, role: &str) {
    let _ = (ca_pem, node);
    let browser = Browser::start(1280, 900).await;
    browser
        .goto(&format!("{base}/login#token={}", mint(admin).await))
        .await;
    browser
        .wait_text("#summary", Duration::from_secs(30), "logged in", |_| true)
        .await;
    for (path, ready, what) in [
        ("/", "#summary", "overview (50 host tiles)"),
        ("/guests", "#guests", "guest list (1,000 rows)"),
    ] {
        let [response, dcl, fcp, size] = first_render(&browser, base, path, ready).await;
        println!(
            "dashboard {role}: {what}: response end {response:.0} ms, DOMContentLoaded \
             {dcl:.0} ms, first contentful paint {fcp:.0} ms (medians of {LOADS}); \
             {:.0} KiB",
            size / 1024.0
        );
    }

    browser.goto(&format!("{base}/")).await;
    browser
        .wait_text("#conn", Duration::from_secs(10), "live", |t| t == "live")
        .await;
    let (mut from_call, mut from_reply) = (Vec::new(), Vec::new());
    for i in 0..CHANGES {
        let want = format!("bench=v{role}{i}");
        browser
            .client()
            .execute(
                "if (window.__obs) { window.__obs.disconnect(); } \
                 window.__seen = null; const want = arguments[0]; \
                 const check = () => { const el = document.getElementById('host-sim001'); \
                   if (!window.__seen && el && el.textContent.includes(want)) { \
                     window.__seen = Date.now(); } }; \
                 window.__obs = new MutationObserver(check); \
                 window.__obs.observe(document.getElementById('live'), \
                   {childList: true, subtree: true, characterData: true}); \
                 return 0;",
                vec![json!(want)],
            )
            .await
            .expect("observer");
        let t0 = unix_ms();
        set_label(admin, &format!("v{role}{i}")).await;
        let t1 = unix_ms();
        let deadline = Instant::now() + Duration::from_secs(10);
        let seen = loop {
            if let Some(at) = browser.eval("return window.__seen;").await.as_u64() {
                break at;
            }
            assert!(
                Instant::now() < deadline,
                "change {i} never reached the screen"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        from_call.push(seen.saturating_sub(t0) as f64);
        from_reply.push(seen.saturating_sub(t1) as f64);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    println!(
        "dashboard {role}: event to screen (host label on the overview, {CHANGES} changes): \
         from the call median {:.0} ms, p90 {:.0} ms, max {:.0} ms; from the commit's reply \
         median {:.0} ms, p90 {:.0} ms",
        median(&mut from_call),
        p90(&mut from_call),
        from_call.iter().cloned().fold(0.0, f64::max),
        median(&mut from_reply),
        p90(&mut from_reply),
    );
    browser.close().await;
}

/// Flips the label every 500 ms for `HOLD`, sampling the member's memory; (RSS max, RSS end,
/// HWM, CPU s).
async fn hold(admin: &AdminClient, pid: u32, tag: &str) -> (f64, f64, f64, f64) {
    let cpu0 = cpu_secs(pid);
    let start = Instant::now();
    let mut max_rss: f64 = 0.0;
    let mut i = 0;
    while start.elapsed() < HOLD {
        set_label(admin, &format!("{tag}{i}")).await;
        i += 1;
        max_rss = max_rss.max(memory(pid).0);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (rss, hwm) = memory(pid);
    (max_rss, rss, hwm, cpu_secs(pid) - cpu0)
}

async fn open_dashboards(admin: &AdminClient, ca_pem: &str, base: &str, node: u64, pid: u32) {
    let (rss0, _) = memory(pid);
    let quiet = hold(admin, pid, "quiet").await;
    let http = Arc::new(DashboardHttp::new(ca_pem, base, node));
    let received = Arc::new(AtomicU64::new(0));
    let mut streams = Vec::new();
    let pages = ["%2F"; 10]
        .into_iter()
        .chain(["%2Fguests"; 5])
        .chain(["%2Fvips"; 3])
        .chain(["%2Fevents"; 2]);
    for page in pages.take(DASHBOARDS) {
        let cookie = http.login(&mint(admin).await).await;
        let mut resp = http.open(&format!("/live?page={page}"), &cookie).await;
        assert!(
            resp.status().is_success(),
            "stream {page}: {}",
            resp.status()
        );
        let received = Arc::clone(&received);
        streams.push(tokio::spawn(async move {
            while let Ok(Some(chunk)) = resp.chunk().await {
                received.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
        }));
    }
    let open = hold(admin, pid, "open").await;
    for s in &streams {
        s.abort();
    }
    println!(
        "dashboard memory: leader RSS {rss0:.1} MiB before; 30 s of a label change every \
         500 ms with no dashboard open: RSS max {:.1} MiB, CPU {:.2} s; with {DASHBOARDS} \
         open dashboards (10 overviews, 5 guest lists, 3 VIP pages, 2 event logs): RSS max \
         {:.1} MiB (end {:.1} MiB, peak VmHWM {:.1} MiB), CPU {:.2} s, {:.1} MiB streamed",
        quiet.0,
        quiet.3,
        open.0,
        open.1,
        open.2,
        open.3,
        received.load(Ordering::Relaxed) as f64 / (1024.0 * 1024.0)
    );
}

fn main() {
    install_crypto();
    let setup = Instant::now();
    let mut fleet = Fleet::start_with(3, &["--dashboard", "127.0.0.1:0"]);
    fleet.add_hosts(&sim_hosts(HOSTS));
    let names: Vec<String> = (1..=VMS).map(|i| format!("vm-{i:05}")).collect();
    fleet.apply_fleet(&FleetSpecFile {
        pool: vec![test_pool()],
        vmid_range: vec![test_range()],
        vm: names.iter().map(|n| test_vm(n)).collect(),
        ..FleetSpecFile::default()
    });
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        assert!(Instant::now() < deadline, "the fleet did not converge");
        if let Some(listed) = fleet.vms()
            && all_running_with_ips(&listed, &names)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    println!(
        "dashboard: {VMS} VMs running on {HOSTS} hosts after {:.1} s",
        setup.elapsed().as_secs_f64()
    );
    let lab = &fleet.cluster.lab;
    let config = CliConfig::load(&lab.cli_config()).unwrap();
    let ca_pem = std::fs::read_to_string(&config.ca).unwrap();
    let leader = fleet.cluster.leader_index();
    let follower = (leader + 1) % fleet.cluster.members().len();
    let member = |i: usize| {
        let m = fleet.cluster.member(i);
        (
            format!("https://{}", m.dashboard.clone().expect("a dashboard")),
            m.node_id,
        )
    };
    let (leader_base, leader_node) = member(leader);
    let (follower_base, follower_node) = member(follower);
    let pid = fleet
        .cluster
        .lab
        .pid(lab::Part::Member(leader))
        .expect("leader pid");
    fleet.block_on(async {
        let admin = lab_client(&config);
        dashboard_figures(&admin, &ca_pem, &leader_base, leader_node, "leader").await;
        dashboard_figures(&admin, &ca_pem, &follower_base, follower_node, "follower").await;
        open_dashboards(&admin, &ca_pem, &leader_base, leader_node, pid).await;
        admin.close().await;
    });
}

fn lab_client(config: &CliConfig) -> AdminClient {
    AdminClient::from_config(config)
        .expect("admin client")
        .with_timeout(Duration::from_secs(30))
}
