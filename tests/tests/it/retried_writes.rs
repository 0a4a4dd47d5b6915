//! A retried write never applies twice. Three coordinators as real processes; the one that
//! commits the first `admin.allocate_ip` aborts before it replies (the hidden fault point
//! `--abort-after-commit`), exactly where a leader SIGKILLed between commit and reply leaves its
//! client. The CLI retries on the next leader with the same request id and gets the FIRST
//! address: the owner holds exactly one. (Without request ids it held two: the test was run
//! against a client that sends none.) Writers racing leader SIGKILLs are checked for the same
//! in `coordinator_cluster.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use pvefleet_tests::coord_cluster::Cluster;

fn voters(v: &serde_json::Value) -> usize {
    v["members"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "voter").count())
}

/// Every external allocation of pool `lan`: owner -> addresses.
fn owners(cluster: &Cluster) -> BTreeMap<String, Vec<IpAddr>> {
    let pools = cluster.cli_json(&["pool", "ls"]);
    let mut out: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
    for pool in pools["pools"].as_array().unwrap() {
        let Some(allocations) = pool["allocations"].as_object() else {
            continue;
        };
        for (ip, a) in allocations {
            if let Some(owner) = a["owner"]["external"].as_str() {
                out.entry(owner.to_string())
                    .or_default()
                    .push(ip.parse().unwrap());
            }
        }
    }
    out
}

/// Three voters as processes, armed so that the member that commits the first
/// `admin.allocate_ip` aborts before it replies (the fault point writes `marker` first), and
/// an address pool `lan`. Returns the cluster and the marker's path.
fn armed_cluster(dir: &std::path::Path) -> (Cluster, std::path::PathBuf) {
    let marker = dir.join("died-after-commit");
    let arm = format!("admin.allocate_ip={}", marker.display());
    let mut cluster = Cluster::found(&["--abort-after-commit", &arm]);
    for _ in 0..2 {
        let token = cluster.coordinator_token();
        let via = cluster.member(0).listen;
        cluster.join(&token, via);
    }
    cluster.wait_status("three voters", Duration::from_secs(90), |v| voters(v) == 3);
    let pool = dir.join("pool.toml");
    std::fs::write(
        &pool,
        "[[pool]]\nname = \"lan\"\ncidr = \"10.60.0.0/16\"\nrange_start = \"10.60.0.10\"\nrange_end = \"10.60.0.250\"\n",
    )
    .unwrap();
    let out = cluster.cli(&["pool", "apply", "-f", pool.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (cluster, marker)
}

#[test]
fn a_write_whose_leader_died_between_commit_and_reply_is_applied_once() {
    let root = tempfile::tempdir().unwrap();
    let (mut cluster, marker) = armed_cluster(root.path());
    let leader = cluster.leader_index();

    let started = Instant::now();
    let got = cluster.cli_json(&["alloc", "ip", "lan", "first-owner"]);
    // The leader died after committing, before replying: the retry answered.
    assert!(marker.exists(), "the fault point did not fire");
    assert!(
        !cluster.is_running(leader),
        "the leader that committed is gone"
    );
    let address: IpAddr = got["address"].as_str().unwrap().parse().unwrap();
    let held = owners(&cluster);
    assert_eq!(
        held.get("first-owner"),
        Some(&vec![address]),
        "one address, the one answered: {held:?}"
    );
    assert_eq!(held.len(), 1, "{held:?}");
    eprintln!("answered after the leader died in {:?}", started.elapsed());
}

/// The same fault through a follower: a client that knows only the followers sends the write
/// to one, which forwards it to the leader; the leader commits and dies before replying. The
/// follower forwards the same request again to the next leader once one is elected (it carries
/// the request id, so that is safe), which answers the first reply: one address, the one
/// answered, whether the follower's second forward or the client's retry brought it.
#[test]
fn a_write_forwarded_by_a_follower_whose_leader_died_after_commit_is_applied_once() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = tempfile::tempdir().unwrap();
    let (mut cluster, marker) = armed_cluster(root.path());
    let leader = cluster.leader_index();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let followers_only = {
        let _inside = rt.enter();
        let cfg = bootstrap::cli_config::CliConfig::load(&cluster.cli_config).unwrap();
        let dead = cluster.member(leader).node_id;
        let members = cfg
            .coordinators
            .iter()
            .filter(|m| m.id != dead)
            .cloned()
            .collect();
        client::AdminClient::new(&cfg.load_material().unwrap(), members)
            .unwrap()
            .with_timeout(Duration::from_secs(30))
    };
    let got = rt
        .block_on(followers_only.call(&protocol::admin::AllocateIp {
            pool: "lan".into(),
            owner: "via-follower".into(),
        }))
        .unwrap_or_else(|e| panic!("the write failed: {e}"));
    assert!(marker.exists(), "the fault point did not fire");
    assert!(
        !cluster.is_running(leader),
        "the leader that committed is gone"
    );
    let held = owners(&cluster);
    assert_eq!(
        held.get("via-follower"),
        Some(&vec![got.address]),
        "one address, the one answered: {held:?}"
    );
    assert_eq!(held.len(), 1, "{held:?}");
}
