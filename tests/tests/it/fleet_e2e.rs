//! The whole product end to end, every part a real process on loopback: coordinators, node
//! agents, PVE hosts (`pve-sim serve`), the `pvefleet` CLI. Applied VMs reach Running with the
//! addresses the fleet allocated; an agent SIGKILLed mid-operation and restarted makes no
//! duplicate VM and loses no operation; a leader SIGKILLed during reconciliation only delays
//! convergence; a VM stopped or reconfigured behind the fleet's back is repaired; a deleted
//! spec leaves nothing on the host; the same lifecycle works over the HTTPS and `pvesh`
//! backends; and `pvefleet-lab demo` brings the example fleet up and stops every process.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lab::binaries::LAB_CLI;
use protocol::fleet::VmRecord;
use pve::calls::ConfigChanges;
use pve::calls::vm_config::ConfigView;
use pve::calls::vm_power::StopOptions;
use pvefleet_tests::fleet::{
    Fleet, HostOptions, HostVm, PveAccess, PveClient, all_running_with_ips, count_by_name,
    running_with_ips, test_vm,
};
use pvefleet_tests::test_lab::workspace_binary;

fn names(prefix: &str, n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("{prefix}-{i:02}")).collect()
}

fn apply_named(fleet: &Fleet, names: &[String]) {
    let specs: Vec<_> = names.iter().map(|n| test_vm(n)).collect();
    fleet.apply_vms(&specs);
}

/// Every VM reports, among its addresses, the one the fleet allocated to it (written to the
/// guest as cloud-init `ipconfig0`); no VMID and no address is used twice.
fn check_addresses(vms: &[VmRecord]) {
    let mut vmids = BTreeSet::new();
    let mut allocated = BTreeSet::new();
    for vm in vms {
        let vmid = vm.assignment.vmid.unwrap();
        assert!(vmids.insert(vmid), "VMID {vmid} twice");
        assert_eq!(
            vm.assignment.ips.len(),
            1,
            "{}: one pool address",
            vm.spec.name
        );
        let ip: IpAddr = vm.assignment.ips[0].address;
        assert!(allocated.insert(ip), "address {ip} twice");
        assert!(
            vm.status.ips.contains(&ip),
            "{}: the guest reports {:?}, not its address {ip}",
            vm.spec.name,
            vm.status.ips
        );
    }
}

/// Each VM of `names` exists exactly once over all hosts, running, and nothing else does.
fn check_one_vm_per_name(on_hosts: &[HostVm], names: &[String]) {
    let counts = count_by_name(on_hosts);
    let extra: Vec<_> = counts
        .keys()
        .filter(|n| !names.contains(n))
        .cloned()
        .collect();
    assert!(
        extra.is_empty(),
        "VMs the fleet did not ask for: {extra:?} in {on_hosts:?}"
    );
    for name in names {
        assert_eq!(
            counts.get(name),
            Some(&1),
            "{name} must exist exactly once on the hosts: {on_hosts:?}"
        );
    }
    for vm in on_hosts {
        assert_eq!(vm.status, "running", "{vm:?}");
    }
}

#[test]
fn fifty_vms_over_five_simulated_hosts_all_run_with_their_addresses() {
    let mut fleet = Fleet::start(3);
    for i in 1..=5 {
        fleet.add_host(HostOptions::new(format!("sim{i}"), PveAccess::Https));
    }
    fleet.apply_resources();
    let names = names("vm", 50);
    apply_named(&fleet, &names);
    let vms = fleet.wait_vms("50 VMs running with IPs", Duration::from_secs(300), |v| {
        all_running_with_ips(v, &names)
    });
    check_addresses(&vms);
    let hosts: BTreeSet<_> = vms.iter().map(|v| v.assignment.host.unwrap()).collect();
    assert_eq!(
        hosts.len(),
        5,
        "the scheduler spreads 50 VMs over all 5 hosts"
    );
    let agents: BTreeSet<_> = fleet.agents().iter().map(|a| a.node_id).collect();
    assert!(hosts.is_subset(&agents));
    for vm in &vms {
        assert_eq!(
            vm.status.current_host, vm.assignment.host,
            "{}: observed on its assigned host",
            vm.spec.name
        );
    }
}

#[test]
fn an_agent_killed_mid_operation_and_restarted_leaves_no_duplicate_and_loses_no_operation() {
    let mut fleet = Fleet::start(3);
    // Slow enough tasks that the kill lands while clones and starts are under way.
    for name in ["pve-h1", "pve-h2"] {
        let mut host = HostOptions::new(name, PveAccess::Https).time_scale(0.3);
        host.agent_ip_delay_secs = 8.0;
        fleet.add_host(host);
    }
    fleet.apply_resources();
    let names = names("crash", 12);
    apply_named(&fleet, &names);

    let victim = "pve-h1";
    let victim_id = fleet.agent(victim).node_id;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let on_victim = fleet
            .host_vms()
            .into_iter()
            .filter(|v| v.host == victim)
            .count();
        let vms = fleet.vms().unwrap_or_default();
        let victim_unfinished = vms
            .iter()
            .any(|v| v.assignment.host == Some(victim_id) && !running_with_ips(v));
        if on_victim > 0 && victim_unfinished {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never caught {victim} mid-operation (it holds {on_victim} VMs)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    fleet.kill9_agent(victim);
    fleet.start_agent(victim);

    let vms = fleet.wait_vms(
        "every VM running after the agent restart",
        Duration::from_secs(300),
        |v| all_running_with_ips(v, &names),
    );
    check_addresses(&vms);
    check_one_vm_per_name(&fleet.host_vms(), &names);
}

#[test]
fn killing_the_leader_during_reconciliation_only_delays_convergence() {
    let mut fleet = Fleet::start(3);
    for name in ["pve-l1", "pve-l2"] {
        let mut host = HostOptions::new(name, PveAccess::Https).time_scale(0.3);
        host.agent_ip_delay_secs = 8.0;
        fleet.add_host(host);
    }
    fleet.apply_resources();
    let names = names("lead", 12);
    apply_named(&fleet, &names);
    let leader = fleet.cluster.leader_index();
    // Under way: the leader has placed VMs and sent their commands, and not all run with
    // their addresses yet (guests take 8 s x 0.3 to report them).
    fleet.wait_vms("reconciliation under way", Duration::from_secs(120), |v| {
        v.iter().any(|v| v.assignment.host.is_some()) && !all_running_with_ips(v, &names)
    });
    let old_id = fleet.cluster.member(leader).node_id;
    fleet.cluster.kill9(leader);
    fleet
        .cluster
        .wait_status("a new leader", Duration::from_secs(60), |v| {
            v["leader"].as_u64().is_some_and(|l| l != old_id)
        });

    let vms = fleet.wait_vms(
        "every VM running under the new leader",
        Duration::from_secs(300),
        |v| all_running_with_ips(v, &names),
    );
    check_addresses(&vms);
    check_one_vm_per_name(&fleet.host_vms(), &names);
}

/// A fleet with one host whose PVE the test can reach (`access`: HTTPS or `pvesh`) and `n`
/// running VMs.
fn one_host_fleet(
    access: PveAccess,
    host: &str,
    prefix: &str,
    n: usize,
) -> (Fleet, Vec<String>, Vec<VmRecord>) {
    let mut fleet = Fleet::start(3);
    fleet.add_host(HostOptions::new(host, access));
    fleet.apply_resources();
    let names = names(prefix, n);
    apply_named(&fleet, &names);
    let vms = fleet.wait_vms("the VMs running", Duration::from_secs(180), |v| {
        all_running_with_ips(v, &names)
    });
    (fleet, names, vms)
}

fn vmid_of(vms: &[VmRecord], name: &str) -> u32 {
    vms.iter()
        .find(|v| v.spec.name == name)
        .and_then(|v| v.assignment.vmid)
        .unwrap()
}

fn wait_host(fleet: &Fleet, what: &str, cond: impl Fn(&[HostVm]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let on_hosts = fleet.host_vms();
        if cond(&on_hosts) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not reached; the host holds {on_hosts:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_vm_stopped_behind_the_fleets_back_is_started_again() {
    let (fleet, names, vms) = one_host_fleet(PveAccess::Https, "pve-d1", "drift", 2);
    let node = fleet.pve("pve-d1");
    let vmid = vmid_of(&vms, &names[0]);
    let client = node.client();
    fleet.block_on(async {
        let upid = client
            .vm_stop(&node.name, vmid, &StopOptions::default())
            .await
            .unwrap();
        client
            .wait_task(&upid, Duration::from_secs(60))
            .await
            .unwrap();
    });
    wait_host(&fleet, "the stopped VM running again", |on| {
        on.iter()
            .any(|v| v.vmid == vmid && v.name == names[0] && v.status == "running")
    });
    fleet.wait_vms("the fleet sees it running", Duration::from_secs(60), |v| {
        all_running_with_ips(v, &names)
    });
    check_one_vm_per_name(&fleet.host_vms(), &names);
}

#[test]
fn a_vm_reconfigured_behind_the_fleets_back_is_configured_back() {
    let (fleet, names, vms) = one_host_fleet(PveAccess::Https, "pve-r1", "reconf", 1);
    let node = fleet.pve("pve-r1");
    let vmid = vmid_of(&vms, &names[0]);
    let client = node.client();
    let memory = || {
        fleet.block_on(async {
            client
                .vm_config(&node.name, vmid, &ConfigView::WithPending)
                .await
                .unwrap()
                .memory_mib()
                .unwrap()
        })
    };
    assert_eq!(memory(), Some(512));
    fleet.block_on(async {
        client
            .update_vm(&node.name, vmid, &ConfigChanges::new().memory_mib(2048))
            .await
            .unwrap();
    });
    assert_eq!(memory(), Some(2048));
    let deadline = Instant::now() + Duration::from_secs(180);
    while memory() != Some(512) {
        assert!(
            Instant::now() < deadline,
            "memory changed behind the fleet's back was not set back to the spec's 512 MiB"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_deleted_spec_leaves_no_vm_on_the_host() {
    let (fleet, names, _) = one_host_fleet(PveAccess::Https, "pve-e1", "del", 2);
    fleet.delete_vm(&names[0]);
    fleet.wait_vms(
        "the deleted VM's record gone",
        Duration::from_secs(120),
        |v| v.iter().all(|v| v.spec.name != names[0]),
    );
    wait_host(&fleet, "the deleted VM gone from the host", |on| {
        on.iter().all(|v| v.name != names[0])
    });
    check_one_vm_per_name(&fleet.host_vms(), &names[1..]);
}

/// Apply, running with addresses, delete: nothing left on the host.
fn lifecycle(access: PveAccess, host: &str) {
    let (fleet, names, vms) = one_host_fleet(access, host, "life", 2);
    check_addresses(&vms);
    check_one_vm_per_name(&fleet.host_vms(), &names);
    for name in &names {
        fleet.delete_vm(name);
    }
    fleet.wait_vms("every record gone", Duration::from_secs(120), |v| {
        v.is_empty()
    });
    wait_host(&fleet, "every VM gone from the host", <[HostVm]>::is_empty);
}

#[test]
fn the_lifecycle_over_the_https_backend() {
    lifecycle(PveAccess::Https, "pve-https");
}

#[test]
fn the_lifecycle_over_the_pvesh_backend() {
    lifecycle(PveAccess::Pvesh, "pve-pvesh");
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(needle) {
                found.push(text);
            }
        }
    }
    found
}

#[test]
fn the_demo_brings_the_example_fleet_up_and_stops_every_process() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let mut child = Command::new(workspace_binary(LAB_CLI))
        .args(["demo", "--exit-when-ready", "--task-speed", "100", "--dir"])
        .arg(&dir)
        .env_remove("PVEFLEET_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            // SIGTERM first: the demo then stops its own children, which SIGKILL would orphan.
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let grace = Instant::now() + Duration::from_secs(20);
            while Instant::now() < grace && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(200));
            }
            let _ = child.kill();
            panic!("pvefleet-lab demo did not finish within 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        status.success(),
        "demo failed ({status}):\n{stdout}\n{stderr}"
    );
    for expected in [
        "web-1",
        "db-2",
        "worker-spare",
        "monitor-1",
        "pve-a",
        "pve-e",
        "export PVEFLEET_CONFIG=",
        // The example's VIP, held (simulated) by one of the hosts.
        "(simulated)",
        "pvefleet vip move web",
        // The dashboard of coordinator 1, with a one-time login link and a host to stop.
        "/login#token=",
        "kill -STOP ",
    ] {
        assert!(
            stdout.contains(expected),
            "{expected} missing from:\n{stdout}"
        );
    }
    assert!(stderr.contains("13/13 VMs ready"), "{stderr}");
    for log in [
        "coordinator-1.log",
        "coordinator-3.log",
        "agent-pve-a.log",
        "agent-pve-e.log",
    ] {
        assert!(dir.join("logs").join(log).is_file(), "{log} missing");
    }
    let left = processes_mentioning(dir.to_str().unwrap());
    assert!(left.is_empty(), "processes left running: {left:?}");
}
