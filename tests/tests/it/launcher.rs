//! The launcher itself, with the real binaries: a member and an agent whose PVE host is a
//! `pve-sim serve` process come up; SIGSTOP freezes a part and SIGCONT thaws it; a killed agent
//! starts again against the same host; the ordered teardown stops everything it started and
//! leaves no process behind.

use std::time::Duration;

use lab::{HostOptions, Lab, Part, PveAccess};
use protocol::Role;
use pvefleet_tests::test_lab::{install_crypto, test_lab_options, test_runtime};

const WAIT: Duration = Duration::from_secs(120);

/// The state letter of process `pid` (`R`, `S`, `T` stopped, ...), `None` once it is gone.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ...": the state follows the last ')'.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

#[test]
fn parts_are_frozen_thawed_restarted_and_all_stopped_in_order() {
    install_crypto();
    let rt = test_runtime();
    let tmp = tempfile::tempdir().unwrap();
    let mut lab = Lab::new(test_lab_options(tmp.path(), "labtest")).unwrap();
    rt.block_on(async {
        lab.found().await.unwrap();
        let token = lab.token(Role::Agent, 1).await.unwrap();
        let opts = HostOptions::new("pve-l1", PveAccess::Https);
        assert_eq!(lab.add_agent(&opts, &token).await.unwrap(), 0);
        lab.wait_hosts_online(WAIT).await.unwrap();
    });
    let member = lab.pid(Part::Member(0)).unwrap();
    let agent = lab.pid(Part::Agent(0)).unwrap();
    let host = lab
        .agent(0)
        .unwrap()
        .pve
        .as_ref()
        .unwrap()
        .server
        .pid()
        .unwrap();

    rt.block_on(lab.pause(Part::Member(0))).unwrap();
    assert_eq!(proc_state(member), Some('T'));
    rt.block_on(lab.resume(Part::Member(0))).unwrap();
    assert_ne!(proc_state(member), Some('T'));

    rt.block_on(lab.kill(Part::Agent(0)));
    assert!(!lab.runs(Part::Agent(0)));
    assert_eq!(proc_state(agent), None, "a killed agent is reaped");
    assert!(
        rt.block_on(lab.pause(Part::Agent(0))).is_err(),
        "a part that does not run"
    );
    rt.block_on(lab.start_agent(0)).unwrap();
    assert!(lab.runs(Part::Agent(0)));
    assert!(
        proc_state(host).is_some(),
        "the PVE host outlives its agent"
    );
    let agent = lab.pid(Part::Agent(0)).unwrap();
    assert!(
        rt.block_on(lab.start_agent(0)).is_err(),
        "a running agent is not started twice"
    );

    // Frozen parts are stopped too: the teardown thaws before SIGTERM.
    rt.block_on(lab.pause(Part::Agent(0))).unwrap();
    let teardown = rt.block_on(lab.stop());
    assert_eq!((teardown.clean, teardown.killed), (3, 0), "{teardown:?}");
    for pid in [member, agent, host] {
        assert_eq!(proc_state(pid), None, "process {pid} is left behind");
    }
    assert!(!lab.runs(Part::Member(0)) && !lab.runs(Part::Agent(0)));
}
