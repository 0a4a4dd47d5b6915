#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! The real `pvefleet-agent fence-guard` as a process on the lab platform, beside a real
//! `pve-sim serve` process (so the reset is: SIGKILL the agent, then the simulated node's reset
//! through the simulator's control API). The "agent" is a `sleep 30` this test spawned, named
//! in a fence record it wrote: the guard must leave it alone before the lease end, kill it
//! only once the lease ended, reset the node, disarm the record, say it reset the host, and
//! exit once the agent is gone. Every process is killed on drop, and every wait is bounded.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use lab::process::Stderr;
use lab::pve_node::{PveNode, node_config};
use node_agent::fence::clock::now_mono_ns;
use node_agent::fence::record::{current_boot_id, record_path};
use node_agent::fence::{FenceRecord, RECORD_FILE};

const AGENT: &str = env!("CARGO_BIN_EXE_pvefleet-agent");
const BOUND: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(5);

/// A child killed and reaped when dropped (a failed assertion leaves nothing running).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Reaped {
    /// Its exit, waited for at most `bound`; `None` if it still runs then.
    fn exit_within(&mut self, bound: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + bound;
        while Instant::now() < until {
            if let Some(status) = self.0.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(POLL);
        }
        None
    }
}

/// The host's PVE: a `pve-sim serve` process, stopped when the runtime and node drop.
struct Pve {
    node: PveNode,
    _rt: tokio::runtime::Runtime,
}

impl Pve {
    fn start(dir: &Path) -> Pve {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let bins = lab::Binaries::beside_current_exe().unwrap();
        let config = node_config("pve-fence", 4, 0.0, 0.0);
        let node = rt
            .block_on(PveNode::start(
                &bins,
                "pve-fence",
                &config,
                &dir.join("pve.toml"),
                &dir.join("pve"),
                &dir.join("pve.log"),
                Stderr::Inherit,
            ))
            .unwrap();
        Pve { node, _rt: rt }
    }
}

/// The agent's configuration: the lab platform, its PVE at `url` (`None`: a port nobody
/// listens on, for a guard that must never reset).
fn write_config(dir: &Path, pve: Option<&Pve>) -> PathBuf {
    let path = dir.join("agent.toml");
    let backend = match pve {
        Some(pve) => {
            let access = pve.node.access();
            format!(
                "url = \"{}\"\ntoken_file = \"{}\"\nca_file = \"{}\"\n",
                access.url,
                access.token_file.display(),
                access.cert.display()
            )
        }
        None => "url = \"https://127.0.0.1:9\"\ntoken_file = \"/nonexistent\"\ninsecure = true\n"
            .to_string(),
    };
    let text = format!(
        "data_dir = \"{}\"\nhost_name = \"pve-fence\"\nlog = \"info\"\nplatform = \"lab\"\n\
         [pve]\nbackend = \"https\"\n{backend}[fence]\nreset = \"simulated\"\nguard = \"child\"\n",
        dir.display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn guard(dir: &Path, config: &Path, log: &Path) -> Reaped {
    let log = std::fs::File::create(log).unwrap();
    Reaped(
        Command::new(AGENT)
            .arg("fence-guard")
            .arg("--data-dir")
            .arg(dir)
            .arg("--config")
            .arg(config)
            .arg("--exit-with-agent")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    )
}

fn sleeper() -> Reaped {
    Reaped(
        Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

#[test]
fn the_guard_kills_the_agent_only_after_the_lease_end_then_disarms_and_exits() {
    let tmp = tempfile::tempdir().unwrap();
    let pve = Pve::start(tmp.path());
    let config = write_config(tmp.path(), Some(&pve));
    let mut agent = sleeper();
    let lease_end = now_mono_ns() + 1_500_000_000;
    let armed = FenceRecord {
        boot_id: current_boot_id().unwrap(),
        lease_end_mono_ns: lease_end,
        armed: true,
        agent_pid: agent.0.id(),
    };
    let path = record_path(tmp.path());
    armed.write(&path).unwrap();
    let log = tmp.path().join("guard.log");
    let mut guard = guard(tmp.path(), &config, &log);

    // The agent dies by the guard's hand, and not before its lease ended.
    let status = agent.exit_within(BOUND).expect("the guard kills the agent");
    let died_at = now_mono_ns();
    assert!(
        died_at >= lease_end,
        "killed {} ms before the lease end",
        (lease_end - died_at) / 1_000_000
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "SIGKILL: {status:?}");

    // Reaped, and nothing armed: the guard exits by itself.
    let exit = guard.exit_within(BOUND).expect("the guard exits");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(exit.success(), "{exit:?}\n{text}");
    assert!(text.contains("reset the host"), "{text}");
    assert!(text.contains("simulated"), "{text}");
    // The simulated node took the reset (a refused or unreachable one is logged and retried).
    assert!(!text.contains("the reset failed"), "{text}");
    let after = FenceRecord::read(&path).unwrap().unwrap();
    assert_eq!(
        after,
        FenceRecord {
            armed: false,
            ..armed
        },
        "disarmed, so it never resets twice"
    );
}

#[test]
fn a_disarmed_or_other_boot_record_never_kills_and_the_guard_leaves_with_its_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(tmp.path(), None);
    let mut agent = sleeper();
    let path = record_path(tmp.path());
    // Both long past their lease end: only `armed` of this boot may make the guard act.
    let other_boot = FenceRecord {
        boot_id: "00000000-0000-0000-0000-000000000000".into(),
        lease_end_mono_ns: 1,
        armed: true,
        agent_pid: agent.0.id(),
    };
    other_boot.write(&path).unwrap();
    let log = tmp.path().join("guard.log");
    let mut guard = guard(tmp.path(), &config, &log);
    // Bounded wait for the guard's first checks (it logs when it runs), then several more.
    let until = Instant::now() + BOUND;
    while !std::fs::read_to_string(&log)
        .unwrap()
        .contains("fence guard running")
    {
        assert!(Instant::now() < until, "the guard never started");
        std::thread::sleep(POLL);
    }
    FenceRecord {
        boot_id: current_boot_id().unwrap(),
        armed: false,
        ..other_boot
    }
    .write(&path)
    .unwrap();
    assert_eq!(
        agent.exit_within(Duration::from_millis(500)),
        None,
        "the guard killed an agent whose record is not armed"
    );
    assert!(
        guard.0.try_wait().unwrap().is_none(),
        "it guards while the agent runs"
    );
    // The agent stops (here by the test's hand): the guard follows.
    drop(agent);
    let exit = guard
        .exit_within(BOUND)
        .expect("the guard exits with its agent");
    assert!(exit.success(), "{exit:?}");
    assert!(
        !std::fs::read_to_string(&log)
            .unwrap()
            .contains("reset the host")
    );
    assert!(tmp.path().join(RECORD_FILE).exists());
}
