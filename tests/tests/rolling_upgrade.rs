//! A rolling upgrade, as an operator does it with `apt` host by host: a fleet of 3 members and
//! 2 agents runs the pinned earlier release (`tests/upgrade-pin`, the first with versioned
//! encodings), writes run all along, and each member, then each agent, is stopped and started
//! again on this build's binaries. Nothing acknowledged may be lost, nothing may be refused,
//! every VM runs at the end, and once the last member is upgraded the cluster version rises
//! to this build's.
//!
//! `make upgrade-test` builds the pinned release and runs this binary with
//! `PVEFLEET_UPGRADE_FROM` set to its binaries; run alone it fails saying so. It is not part
//! of `make verify` (it builds a second copy of the workspace). Progress is printed with
//! times (`--no-capture`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use client::AdminClient;
use lab::{Binaries, HostOptions, Lab, Part, PveAccess};
use protocol::Role;
use protocol::admin::{
    AdminList, AdminRevoke, ClusterStatus, ClusterStatusReply, ReadMode, VmApply, VmList,
    VmidRangeApply,
};
use protocol::fleet::VmPhase;
use protocol::spec::{VmSpec, VmidRangeSpec};
use protocol::version::{CURRENT, VersionRange};
use pvefleet_tests::test_lab::{install_crypto, test_lab_options, test_runtime};
use tokio::sync::Mutex;

/// Where `make upgrade-test` puts the pinned release's binaries.
const FROM: &str = "PVEFLEET_UPGRADE_FROM";
const WAIT: Duration = Duration::from_secs(120);
/// One write every this long while the upgrade runs.
const WRITE_EVERY: Duration = Duration::from_millis(400);
/// Attempts per write before it counts as refused (a member restarting makes a few fail).
const ATTEMPTS: usize = 20;

/// A host of the pinned release: its PVE a `pve-sim` process, its configuration without the
/// keys that release does not know.
fn pinned_host(name: &str) -> HostOptions {
    let mut opts = HostOptions::new(name, PveAccess::Https);
    opts.pre_platform_release = true;
    opts
}

struct Log(Instant);

impl Log {
    fn say(&self, what: impl AsRef<str>) {
        eprintln!(
            "[{:6.1} s] {}",
            self.0.elapsed().as_secs_f64(),
            what.as_ref()
        );
    }
}

fn describe(s: &ClusterStatusReply) -> String {
    let members: Vec<String> = s
        .members
        .iter()
        .map(|m| {
            let build = m.versions.map_or("?".to_string(), |v| v.to_string());
            let lead = if m.is_leader { "*" } else { "" };
            format!("{}{lead}:{build}", m.id)
        })
        .collect();
    format!(
        "cluster version {}, members {}",
        s.cluster_version,
        members.join(" ")
    )
}

/// What the writer saw.
#[derive(Default)]
struct Writes {
    acked: BTreeSet<String>,
    refused: Vec<String>,
    retried: usize,
}

async fn writer(client: Arc<AdminClient>, stop: Arc<AtomicBool>, writes: Arc<Mutex<Writes>>) {
    let mut i = 0u32;
    while !stop.load(Ordering::Relaxed) && i < 2_000 {
        i += 1;
        let name = format!("up-{i:04}");
        let mut spec = VmSpec::new(&name, 128);
        spec.vmid_range = Some("up".into());
        let req = VmApply { spec };
        let mut outcome = Err(String::new());
        for _ in 0..ATTEMPTS {
            match client.call(&req).await {
                Ok(_) => {
                    outcome = Ok(());
                    break;
                }
                Err(e @ client::ClientError::Unavailable { .. }) => {
                    writes.lock().await.retried += 1;
                    outcome = Err(e.to_string());
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => {
                    outcome = Err(e.to_string());
                    break;
                }
            }
        }
        let mut w = writes.lock().await;
        match outcome {
            Ok(()) => {
                w.acked.insert(name);
            }
            Err(e) => w.refused.push(format!("{name}: {e}")),
        }
        drop(w);
        tokio::time::sleep(WRITE_EVERY).await;
    }
}

#[test]
fn a_fleet_upgraded_part_by_part_while_writes_run_loses_and_refuses_nothing() {
    let old = std::env::var(FROM).unwrap_or_else(|_| {
        panic!("{FROM} is not set: run `make upgrade-test`, which builds the pinned release")
    });
    install_crypto();
    let log = Log(Instant::now());
    let rt = test_runtime();
    let tmp = tempfile::tempdir().unwrap();
    let new = Binaries::beside_current_exe().unwrap();
    let mut options = test_lab_options(tmp.path(), "upgrade");
    options.binaries = Binaries::in_dir(std::path::Path::new(&old));
    let mut lab = Lab::new(options).unwrap();
    log.say(format!(
        "old release from {old}, new build from {}",
        new.dir.display()
    ));

    rt.block_on(async {
        lab.found().await.unwrap();
        lab.join_member().await.unwrap();
        lab.join_member().await.unwrap();
        lab.wait_voters(WAIT).await.unwrap();
        let token = lab.token(Role::Agent, 2).await.unwrap();
        for name in ["pve-u1", "pve-u2"] {
            lab.add_agent(&pinned_host(name), &token).await.unwrap();
        }
        lab.wait_hosts_online(WAIT).await.unwrap();
    });
    // The client's endpoint binds a socket on the runtime.
    let client = Arc::new(rt.block_on(async { lab.client() }).unwrap());
    let range = VmidRangeApply {
        spec: VmidRangeSpec {
            name: "up".into(),
            start: 5000,
            end: 7999,
        },
    };
    rt.block_on(client.call(&range)).unwrap();
    let status = rt.block_on(client.call(&ClusterStatus {})).unwrap();
    log.say(format!("old fleet up: {}", describe(&status)));

    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(Mutex::new(Writes::default()));
    let writing = rt.spawn(writer(
        Arc::clone(&client),
        Arc::clone(&stop),
        Arc::clone(&writes),
    ));
    rt.block_on(async { tokio::time::sleep(Duration::from_secs(3)).await });

    lab.set_binaries(new).unwrap();
    for i in 0..lab.members().len() {
        rt.block_on(async {
            let stopped = lab.terminate(Part::Member(i)).await;
            log.say(format!(
                "member {i} stopped ({stopped:?}); starting the new build"
            ));
            lab.start_member(i).await.unwrap();
            lab.wait_voters(WAIT).await.unwrap();
            let s = client.call(&ClusterStatus {}).await.unwrap();
            log.say(format!("member {i} upgraded: {}", describe(&s)));
            if i + 1 < 3 {
                // A command of the new version is refused while an old member remains (by an
                // old leader: it has no such method; by a new one: the cluster is at v1).
                let early = client.call(&AdminRevoke { id: 99 }).await;
                log.say(format!("  admin revoke before the last member: {early:?}"));
                assert!(early.is_err(), "a v2 command was accepted at v1");
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        });
    }
    for (i, name) in ["pve-u1", "pve-u2"].into_iter().enumerate() {
        rt.block_on(async {
            lab.terminate(Part::Agent(i)).await;
            // As the package's conffile would after an upgrade: the new release's keys.
            let mut opts = pinned_host(name);
            opts.pre_platform_release = false;
            lab.rewrite_agent_config(i, &opts).unwrap();
            lab.start_agent(i).await.unwrap();
            lab.wait_hosts_online(WAIT).await.unwrap();
            log.say(format!("agent {i} upgraded and online"));
        });
    }
    rt.block_on(async { tokio::time::sleep(Duration::from_secs(3)).await });
    stop.store(true, Ordering::Relaxed);
    rt.block_on(writing).unwrap();

    // The cluster version follows the last member's upgrade.
    let this_build = VersionRange::this_build();
    let deadline = Instant::now() + WAIT;
    let status = loop {
        let s = rt.block_on(client.call(&ClusterStatus {})).unwrap();
        if s.cluster_version == CURRENT && s.members.iter().all(|m| m.versions == Some(this_build))
        {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "cluster version never rose: {}",
            describe(&s)
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    log.say(format!("after the upgrade: {}", describe(&status)));
    // The new version's commands work once every member reads it.
    rt.block_on(client.call(&AdminRevoke { id: 99 })).unwrap();
    let admins = rt
        .block_on(client.call(&AdminList {
            read: ReadMode::Linearizable,
        }))
        .unwrap()
        .admins;
    assert!(
        admins.iter().any(|a| a.id == 99 && a.is_revoked()),
        "{admins:?}"
    );
    log.say(format!(
        "  admin revoke at v2: done; {} admin record(s)",
        admins.len()
    ));
    // Nothing of v2 was written while the cluster was at v1: the early attempts left no trace.
    assert_eq!(admins.len(), 1, "{admins:?}");

    // Nothing acknowledged is lost; every VM runs.
    let writes = rt.block_on(writes.lock());
    let deadline = Instant::now() + WAIT;
    let (stored, running) = loop {
        let vms = rt
            .block_on(client.call(&VmList {
                read: ReadMode::Linearizable,
            }))
            .unwrap()
            .vms;
        let stored: BTreeSet<String> = vms.iter().map(|v| v.spec.name.clone()).collect();
        let running = vms
            .iter()
            .filter(|v| v.status.phase == VmPhase::Running)
            .count();
        if running == vms.len() || Instant::now() > deadline {
            break (stored, running);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    log.say(format!(
        "writes: {} acknowledged, {} retried attempts, {} refused; {} VMs stored, {} running",
        writes.acked.len(),
        writes.retried,
        writes.refused.len(),
        stored.len(),
        running
    ));
    let lost: Vec<_> = writes.acked.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    assert!(
        writes.refused.is_empty(),
        "writes refused: {:?}",
        writes.refused
    );
    assert!(
        writes.acked.len() >= 10,
        "too few writes ran during the upgrade"
    );
    assert_eq!(running, stored.len(), "not every VM runs after the upgrade");

    rt.block_on(client.close());
    let teardown = rt.block_on(lab.stop());
    log.say(format!("teardown: {teardown:?}"));
}
