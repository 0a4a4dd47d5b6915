//! The Debian packages as an operator meets them, on both Debian releases PVE is
//! built on: built and linted, installed with `dpkg -i` into a booted minimal Debian
//! (debootstrap + systemd-nspawn), the coordinator initialised and started, the lab package
//! installed beside it (its programs run without PVE, no unit) and purged again, its simulator
//! kept running as the host's PVE (`pve-sim serve` on 127.0.0.1:8006, as pveproxy on a host),
//! the agent joined on the `lab` platform, talking HTTPS to it until its host is `online`,
//! both units active and ready with their
//! watchdogs petted, then upgraded to a higher version (daemons restarted, cluster intact),
//! removed (state and configuration kept) and purged (both gone). The container is always
//! cleaned up, and the test proves nothing of it is left.
//!
//! Without a container: the product package `pvefleet` holds exactly the product's programs
//! and none of them carries a trace of the PVE simulator or the lab launcher, while the lab
//! package `pvefleet-lab` holds the lab's binary and the simulator, pinned to the product of
//! the same version. The agent's share of that check is a test of its own
//! (`the_packaged_agent_carries_no_simulator`).
//!
//! Runs as root (CI does); `make package-test` runs it alone. Each phase's duration and the
//! total are printed (`--no-capture` shows them as they happen).
#![allow(clippy::expect_used)] // a test fails by panicking

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use protocol::admin::{ClusterStatusReply, HostStatusReply};
use protocol::fleet::HostState;
use pvefleet_tests::nspawn::dpkg::{control_field, installed_version, parse_depends, unsatisfied};
use pvefleet_tests::nspawn::{Container, DebianRoot, Phases, Tool, UnitState, preflight};
use pvefleet_tests::units::contents::{package_files, programs, simulator_traces, unpack};
use pvefleet_tests::units::{BuiltDebs, build_deb, lintian};

/// The releases PVE 8 and PVE 9 are built on.
const SUITES: [&str; 2] = ["bookworm", "trixie"];
/// Appended to the workspace version for the package the upgrade installs
/// (`0.1.0+upgrade1`, which dpkg orders after the first package's `0.1.0-1`).
const UPGRADE_SUFFIX: &str = "+upgrade1";
/// Where `pvefleet-coordinator init` writes the operator CLI's configuration.
const CLI_CONFIG: &str = "/var/lib/pvefleet/coordinator/pvefleet.toml";
/// The coordinator's QUIC address inside the container (its network is private).
const LISTEN: &str = "127.0.0.1:7401";
const AGENT_UNIT: &str = "pvefleet-agent";
const COORDINATOR_UNIT: &str = "pvefleet-coordinator";
const HOST_NAME: &str = "pve-test";
/// Where the host's stand-in PVE lives in the container: a copy of the lab package's
/// simulator (it outlives the package, as PVE is no package of ours), its configuration, and
/// the state directory with its certificate and API token.
const STANDIN_DIR: &str = "/opt/pve-standin";
const STANDIN_STATE: &str = "/var/lib/pve-standin";
/// The operator's agent configuration: the lab platform, the PVE API of the stand-in over
/// HTTPS with its token and certificate, as on a host with pveproxy.
const AGENT_TOML: &str = "\
data_dir = \"/var/lib/pvefleet/agent\"
host_name = \"pve-test\"
platform = \"lab\"
[pve]
backend = \"https\"
url = \"https://127.0.0.1:8006\"
token_file = \"/var/lib/pve-standin/token\"
ca_file = \"/var/lib/pve-standin/pve-ssl.pem\"
";
/// What the package installs that `remove` must take away.
const PROGRAMS: [&str; 3] = [
    "/usr/bin/pvefleet",
    "/usr/bin/pvefleet-coordinator",
    "/usr/bin/pvefleet-agent",
];
/// The product's programs by name, sorted: all the product package installs in /usr/bin.
const PRODUCT_BINS: [&str; 3] = ["pvefleet", "pvefleet-agent", "pvefleet-coordinator"];
/// The lab package's programs by name, sorted.
const LAB_BINS: [&str; 3] = ["pve-sim", "pvefleet-lab", "pvesh-sim"];
const UNIT_FILES: [&str; 6] = [
    "/lib/systemd/system/pvefleet-agent.service",
    "/lib/systemd/system/pvefleet-agent-guard.service",
    "/lib/systemd/system/pvefleet-coordinator.service",
    "/usr/lib/systemd/system/pvefleet-agent.service",
    "/usr/lib/systemd/system/pvefleet-agent-guard.service",
    "/usr/lib/systemd/system/pvefleet-coordinator.service",
];

/// The packages of the run, built once for both suites: the product at two versions, and the
/// lab package of the first.
struct Debs {
    first: PathBuf,
    first_lab: PathBuf,
    first_version: String,
    upgrade: PathBuf,
    upgrade_version: String,
}

#[test]
fn the_package_installs_runs_upgrades_removes_and_purges_on_bookworm_and_trixie() {
    if let Err(e) = preflight(&Tool::ALL) {
        panic!("{e}");
    }
    let started = Instant::now();
    let mut build = Phases::new("package");
    let debs = build_debs(&mut build);
    let mut tables = vec![build.table()];
    let mut failures = Vec::new();
    for suite in SUITES {
        match std::panic::catch_unwind(AssertUnwindSafe(|| suite_lifecycle(suite, &debs))) {
            Ok(table) => tables.push(table),
            Err(panic) => failures.push(format!("{suite}: {}", panic_text(&panic))),
        }
    }
    eprintln!(
        "packaging test phases:\n{}total: {:.1} s",
        tables.concat(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "failed on {} of {} suites:\n{}",
        failures.len(),
        SUITES.len(),
        failures.join("\n")
    );
}

/// The harness's promise the lifecycle test relies on: a step that fails inside a booted
/// container still powers it off, ends every process in it and removes its copy.
#[test]
fn a_failing_step_still_powers_off_and_removes_the_container() {
    if let Err(e) = preflight(&[
        Tool::Debootstrap,
        Tool::SystemdNspawn,
        Tool::Nsenter,
        Tool::Setpriv,
    ]) {
        panic!("{e}");
    }
    let root = DebianRoot::cached(SUITES[0]);
    let name = format!("pvf-fail-{}", std::process::id());
    let mut footprint = None;
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let container = Container::boot(root.fresh_copy(), &name);
        footprint = Some(container.footprint());
        // The check below is not vacuous: while it runs, the container shows.
        let running = container.footprint().leftovers();
        assert!(
            running.iter().any(|l| l.contains("(systemd)"))
                && running.iter().any(|l| l.starts_with("run directory")),
            "a running container must show in its footprint: {running:#?}"
        );
        // A long-running service and a stray background process, as a failed step leaves them.
        container.run_ok(&["systemd-run", "--unit=busy", "sleep", "infinity"]);
        container.sh_ok("setsid sleep infinity </dev/null >/dev/null 2>&1 &");
        container.run_ok(&["false"]);
    }));
    let panic = outcome.expect_err("`false` inside must fail the step");
    assert!(
        panic_text(&panic).contains("`false` failed"),
        "{}",
        panic_text(&panic)
    );
    let footprint = footprint.expect("the container booted");
    let left = footprint.leftovers();
    assert!(
        left.is_empty(),
        "left behind after a failed step: {left:#?}"
    );
}

/// The shipped product holds no simulator: `make deb` builds two packages, the product
/// `pvefleet` with exactly the product's programs (no `pve-sim`, `pvesh-sim` or `pvefleet-lab`
/// anywhere in it) and the lab `pvefleet-lab` with the lab's binary and the simulator, no unit
/// and no configuration, pinned to the product of its version. The packaged `pvefleet` and
/// `pvefleet-coordinator` carry no trace of the simulator or the lab launcher (the agent:
/// `the_packaged_agent_carries_no_simulator`), and the lab's programs do: the traces are
/// detectable in the stripped programs cargo-deb packages.
#[test]
fn the_product_package_holds_no_simulator_and_the_lab_package_holds_it() {
    if let Err(e) = preflight(&[Tool::CargoDeb, Tool::DpkgDeb]) {
        panic!("{e}");
    }
    let version = format!("{}-1", env!("CARGO_PKG_VERSION"));
    let debs = build_deb(&version);

    let product = package_files(&debs.product);
    assert_eq!(
        programs(&product),
        PRODUCT_BINS,
        "{}: /usr/bin must hold the product's programs and nothing else",
        debs.product.display()
    );
    let stray: Vec<&String> = product
        .iter()
        .filter(|f| {
            ["pve-sim", "pvesh-sim", "pvefleet-lab"]
                .iter()
                .any(|n| f.contains(n))
        })
        .collect();
    assert!(
        stray.is_empty(),
        "the product package ships the lab's files: {stray:#?}"
    );

    let lab = package_files(&debs.lab);
    assert_eq!(programs(&lab), LAB_BINS, "{}", debs.lab.display());
    for expected in [
        "/usr/share/man/man1/pvefleet-lab.1.gz",
        "/usr/share/man/man1/pve-sim.1.gz",
        "/usr/share/bash-completion/completions/pvefleet-lab",
        "/usr/share/zsh/vendor-completions/_pvefleet-lab",
        "/usr/share/doc/pvefleet-lab/copyright",
    ] {
        assert!(
            lab.iter().any(|f| f == expected),
            "{expected} missing from the lab package: {lab:#?}"
        );
    }
    let service: Vec<&String> = lab
        .iter()
        .filter(|f| f.contains("systemd") || f.starts_with("/etc/"))
        .collect();
    assert!(
        service.is_empty(),
        "the lab package installs units or configuration: {service:#?}"
    );
    let depends = control_field(&debs.lab, "Depends");
    assert!(
        depends.contains(&format!("pvefleet (= {version})")),
        "the lab package must depend on the product of its own version: {depends}"
    );

    let product_dir = unpack(&debs.product);
    for program in ["pvefleet", "pvefleet-coordinator"] {
        let traces = traces_in(product_dir.path(), program);
        assert!(
            traces.is_empty(),
            "the packaged {program} links the simulator or the lab (found {traces:?}): the \
             product's crates must not depend on `lab` or `pve-sim`"
        );
    }
    let lab_dir = unpack(&debs.lab);
    for (program, expected) in [("pvefleet-lab", "lab/src/"), ("pve-sim", "pve-sim/src/")] {
        let traces = traces_in(lab_dir.path(), program);
        assert!(
            traces.contains(&expected),
            "the check is blind: the packaged {program} shows no {expected:?} (found \
             {traces:?}), so the product's programs would pass whatever they link"
        );
    }
}

/// The packaged agent carries no trace of the simulator either. Its own test: it fails while
/// the agent still links `pve-sim` (its `backend = "sim"`), which the agent's change away from
/// an in-process simulator removes.
#[test]
fn the_packaged_agent_carries_no_simulator() {
    if let Err(e) = preflight(&[Tool::CargoDeb, Tool::DpkgDeb]) {
        panic!("{e}");
    }
    let debs = build_deb(&format!("{}-1", env!("CARGO_PKG_VERSION")));
    let dir = unpack(&debs.product);
    let traces = traces_in(dir.path(), "pvefleet-agent");
    assert!(
        traces.is_empty(),
        "the packaged pvefleet-agent links the simulator (found {traces:?}): the shipped agent \
         must not depend on `pve-sim`"
    );
}

/// The simulator's traces in the program `name` of a package unpacked in `root`.
fn traces_in(root: &Path, name: &str) -> Vec<&'static str> {
    let path = root.join("usr/bin").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    simulator_traces(&bytes)
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic without a message".into())
}

/// `make deb` twice (the workspace version, then with [`UPGRADE_SUFFIX`]) and lintian on the
/// first's two packages: no error-level tag; warnings are printed for the note.
fn build_debs(p: &mut Phases) -> Debs {
    let first_version = format!("{}-1", env!("CARGO_PKG_VERSION"));
    let BuiltDebs {
        product: first,
        lab: first_lab,
    } = p.run("make deb", || build_deb(&first_version));
    for deb in [&first, &first_lab] {
        let report = p.run("lintian", || lintian(deb));
        eprintln!("lintian {}:\n{}", deb.display(), report.output);
        assert!(
            report.success && report.errors().is_empty(),
            "lintian found errors in {}: {:#?}",
            deb.display(),
            report.errors()
        );
    }
    p.run("no fault points", || no_fault_points(&first));
    let upgrade_version = format!("{}{UPGRADE_SUFFIX}", env!("CARGO_PKG_VERSION"));
    let upgrade = p
        .run("make deb (upgrade version)", || build_deb(&upgrade_version))
        .product;
    let newer = std::process::Command::new("dpkg")
        .args(["--compare-versions", &upgrade_version, "gt", &first_version])
        .status()
        .expect("dpkg runs");
    assert!(
        newer.success(),
        "{upgrade_version} is not newer than {first_version}"
    );
    Debs {
        first,
        first_lab,
        first_version,
        upgrade,
        upgrade_version,
    }
}

/// The packaged coordinator was built without the `fault-points` feature: its hidden
/// `--abort-after-commit` is nowhere in the binary (the tests' workspace build has it).
fn no_fault_points(deb: &Path) {
    let dir = unpack(deb);
    let bin = dir.path().join("usr/bin/pvefleet-coordinator");
    let bytes = std::fs::read(&bin).expect("the packaged coordinator");
    for needle in ["abort-after-commit", "fault point: aborting"] {
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "{} carries the fault point {needle:?}: the package must be built without the \
             fault-points feature",
            bin.display()
        );
    }
}

/// One suite, phase by phase; returns the phase table.
fn suite_lifecycle(suite: &str, debs: &Debs) -> String {
    let mut p = Phases::new(suite);
    let root = p.run("debootstrap or cache", || DebianRoot::cached(suite));
    let copy = p.run("copy the root", || root.fresh_copy());
    let name = format!("pvf-{suite}-{}", std::process::id());
    let container = p.run("boot", || Container::boot(copy, &name));
    let footprint = container.footprint();
    p.run("dpkg -i", || install(&container, debs));
    p.run("lab package", || lab_package(&container, debs));
    p.run("units before join", || units_before_join(&container));
    let cluster_id = p.run("coordinator init + start", || start_coordinator(&container));
    let host_id = p.run("agent join + online", || join_agent(&container));
    p.run("permissions + watchdog", || {
        permissions_and_watchdog(&container)
    });
    p.run("upgrade", || {
        upgrade(&container, debs, &cluster_id, host_id)
    });
    p.run("dpkg -r", || remove(&container));
    p.run("dpkg -P", || purge(&container));
    p.run("poweroff + cleanup", || drop(container));
    let left = footprint.leftovers();
    assert!(left.is_empty(), "the container left behind: {left:#?}");
    p.table()
}

fn install(c: &Container, debs: &Debs) {
    let depends = control_field(&debs.first, "Depends");
    eprintln!("[{}] Depends: {depends}", c.name());
    let missing = unsatisfied(c, &parse_depends(&depends));
    assert!(
        missing.is_empty(),
        "Depends: {depends} cannot be met by a {} minbase + systemd root (no network to \
         fetch more): {missing:#?}",
        c.name()
    );
    dpkg_install(c, &debs.first);
    assert_eq!(
        installed_version(c, "pvefleet").as_deref(),
        Some(debs.first_version.as_str())
    );
}

/// The lab package beside the product just installed: its dependencies (the product of the
/// very same version) met, its programs run without PVE (a chaos campaign's schedule, the
/// simulator's configuration), no unit installed; then purged, leaving the product as it was
/// (the upgrade below replaces the product alone, which the lab's pinned dependency refuses).
fn lab_package(c: &Container, debs: &Debs) {
    let depends = control_field(&debs.first_lab, "Depends");
    eprintln!("[{}] pvefleet-lab Depends: {depends}", c.name());
    assert!(
        depends.contains(&format!("pvefleet (= {})", debs.first_version)),
        "the lab package must depend on the product of its own version: {depends}"
    );
    let missing = unsatisfied(c, &parse_depends(&depends));
    assert!(
        missing.is_empty(),
        "Depends: {depends} of pvefleet-lab is not met beside pvefleet: {missing:#?}"
    );
    dpkg_install(c, &debs.first_lab);
    assert_eq!(
        installed_version(c, "pvefleet-lab").as_deref(),
        Some(debs.first_version.as_str())
    );
    let version = c.run_ok(&["pvefleet-lab", "--version"]);
    assert!(version.starts_with("pvefleet-lab "), "{version}");
    let plan = c.run_ok(&[
        "pvefleet-lab",
        "sim",
        "chaos",
        "--seed",
        "1",
        "--duration",
        "1m",
        "--dry-run",
    ]);
    assert!(plan.contains("name = \"chaos-1\""), "{plan}");
    let config = c.run_ok(&["pve-sim", "print-config"]);
    assert!(
        config.contains("cluster_name"),
        "pve-sim print-config: {config}"
    );
    c.run_ok(&["test", "-f", "/usr/share/man/man1/pvefleet-lab.1.gz"]);
    let units = c.sh_ok("dpkg -L pvefleet-lab | grep -e systemd -e '^/etc' || true");
    assert!(
        units.is_empty(),
        "the lab package installs units or configuration: {units}"
    );
    start_pve_standin(c);
    c.run_ok(&["dpkg", "-P", "pvefleet-lab"]);
    assert_eq!(installed_version(c, "pvefleet-lab"), None);
    for program in LAB_BINS {
        c.run_ok(&["test", "!", "-e", &format!("/usr/bin/{program}")]);
    }
    for program in PROGRAMS {
        c.run_ok(&["test", "-x", program]);
    }
}

/// The host's PVE for the agent: the lab package's `pve-sim` copied out of it (the package is
/// purged next, and the product's upgrade must not touch it) and run as a transient unit on
/// 127.0.0.1:8006 serving one node named like the host, with instant tasks; waits for its
/// token file.
fn start_pve_standin(c: &Container) {
    let binary = format!("{STANDIN_DIR}/pve-sim");
    c.run_ok(&["install", "-D", "-m", "0755", "/usr/bin/pve-sim", &binary]);
    let config = lab::pve_node::node_config(HOST_NAME, 4, 0.0, 0.0);
    let text = toml::to_string(&config).expect("the simulator's configuration serialises");
    let config_path = format!("{STANDIN_DIR}/pve.toml");
    c.write_file(&config_path, text.as_bytes(), "0644");
    c.run_ok(&[
        "systemd-run",
        "--unit=pve-standin",
        "--",
        &binary,
        "serve",
        "--listen",
        "127.0.0.1:8006",
        "--state-dir",
        STANDIN_STATE,
        "--config",
        &config_path,
    ]);
    let token = format!("{STANDIN_STATE}/token");
    let deadline = Instant::now() + Duration::from_secs(60);
    while c
        .sh_ok(&format!("test -s {token} && echo yes || true"))
        .trim()
        != "yes"
    {
        assert!(
            Instant::now() < deadline,
            "the PVE stand-in wrote no token within 60 s:\n{}",
            c.journal("pve-standin", 40)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn dpkg_install(c: &Container, deb: &Path) {
    let file = deb
        .file_name()
        .and_then(|f| f.to_str())
        .expect("a .deb name");
    let inside = format!("/root/{file}");
    c.copy_in(deb, &inside);
    let out = c.exec_timeout(&["dpkg", "-i", &inside], None, Duration::from_secs(300));
    pvefleet_tests::nspawn::container::expect_success(&out, &["dpkg", "-i", &inside]);
}

fn units_before_join(c: &Container) {
    assert_eq!(is_enabled(c, AGENT_UNIT), "enabled");
    assert_eq!(is_enabled(c, COORDINATOR_UNIT), "disabled");
    // As at boot: the agent is started, and waits on its condition instead of failing.
    c.run_ok(&["systemctl", "start", AGENT_UNIT]);
    let agent = c.unit(AGENT_UNIT);
    assert!(
        agent.skipped_by_condition() && agent.restarts() == 0 && agent.get("Result") == "success",
        "{AGENT_UNIT} before join must be inactive with its condition failed: {}",
        agent.summary()
    );
    let coordinator = c.unit(COORDINATOR_UNIT);
    assert_eq!(
        coordinator.active_state(),
        "inactive",
        "{}",
        coordinator.summary()
    );
    assert_eq!(
        c.run_ok(&["stat", "-c", "%F %a %U:%G", "/var/lib/pvefleet"])
            .trim(),
        "directory 700 root:root"
    );
    c.run_ok(&[
        "test",
        "-f",
        "/etc/pvefleet/agent.toml",
        "-a",
        "-f",
        "/etc/pvefleet/coordinator.toml",
    ]);
}

fn is_enabled(c: &Container, unit: &str) -> String {
    let out = c.exec(&["systemctl", "is-enabled", unit]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `pvefleet --output json ARGS` as root with the admin certificate `init` wrote.
fn cli(c: &Container, args: &[&str]) -> serde_json::Value {
    let config = format!("PVEFLEET_CONFIG={CLI_CONFIG}");
    let mut cmd = vec!["env", &config, "pvefleet", "--output", "json"];
    cmd.extend(args);
    let out = c.run_ok(&cmd);
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("pvefleet {args:?}: not JSON ({e}): {out}"))
}

fn cluster_status(c: &Container) -> ClusterStatusReply {
    serde_json::from_value(cli(c, &["cluster", "status"])).expect("a cluster status")
}

/// `init` with the packaged defaults, then the unit; returns the cluster id.
fn start_coordinator(c: &Container) -> String {
    let init = c.run_ok(&["pvefleet-coordinator", "init", "--listen", LISTEN]);
    eprintln!("[{}] init said:\n{init}", c.name());
    c.run_ok(&["systemctl", "enable", "--now", COORDINATOR_UNIT]);
    let unit = wait_running(c, COORDINATOR_UNIT);
    eprintln!("[{}] {COORDINATOR_UNIT}: {}", c.name(), unit.summary());
    assert_eq!(is_enabled(c, COORDINATOR_UNIT), "enabled");
    let status = cluster_status(c);
    assert!(status.leader.is_some(), "no leader: {status:?}");
    status.cluster_id
}

/// Active with `READY=1` sent: with `Type=notify`, systemd reports `active (running)` only
/// after the daemon's readiness notification.
fn wait_running(c: &Container, unit: &str) -> UnitState {
    let state = c.wait_unit(unit, "active (running)", Duration::from_secs(90), |u| {
        u.is_running() || u.active_state() == "failed"
    });
    assert!(
        state.is_running(),
        "{unit} failed: {}\n{}",
        state.summary(),
        c.journal(unit, 60)
    );
    assert_eq!(state.get("Type"), "notify", "{unit}");
    assert_eq!(state.get("NotifyAccess"), "main", "{unit}");
    state
}

/// Token, configuration, join, start; returns the host's id once it is online.
fn join_agent(c: &Container) -> u64 {
    let token = cli(c, &["token", "create", "--role", "agent"]);
    let token = token["token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token in {token}"))
        .to_string();
    c.write_file("/etc/pvefleet/agent.toml", AGENT_TOML.as_bytes(), "0644");
    // The documented way: a 0600 file (or standard input), never the command line.
    c.write_file("/root/join.token", token.as_bytes(), "0600");
    let joined = c.run_ok(&[
        "pvefleet-agent",
        "join",
        "--token-file",
        "/root/join.token",
        LISTEN,
    ]);
    c.run_ok(&["rm", "/root/join.token"]);
    eprintln!("[{}] join said:\n{joined}", c.name());
    c.run_ok(&["systemctl", "restart", AGENT_UNIT]);
    let agent = wait_running(c, AGENT_UNIT);
    eprintln!("[{}] {AGENT_UNIT}: {}", c.name(), agent.summary());
    let id = wait_host_online(c);
    for unit in [AGENT_UNIT, COORDINATOR_UNIT] {
        let state = c.unit(unit);
        assert!(
            state.is_running() && state.restarts() == 0,
            "{unit}: {}",
            state.summary()
        );
    }
    id
}

fn wait_host_online(c: &Container) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let hosts: HostStatusReply =
            serde_json::from_value(cli(c, &["host", "ls"])).expect("a host list");
        if let Some(entry) = hosts.hosts.iter().find(|h| h.host.name == HOST_NAME)
            && entry.host.state == HostState::Online
        {
            return entry.host.id;
        }
        assert!(
            Instant::now() < deadline,
            "host {HOST_NAME} not online within 120 s: {hosts:?}\n{}",
            c.journal(AGENT_UNIT, 60)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn permissions_and_watchdog(c: &Container) {
    let keys = c.run_ok(&["find", "/var/lib/pvefleet", "-name", "*.key"]);
    for key in [
        "/var/lib/pvefleet/agent/node.key",
        "/var/lib/pvefleet/coordinator/node.key",
        "/var/lib/pvefleet/coordinator/ca.key",
    ] {
        assert!(keys.lines().any(|l| l == key), "{key} not among {keys}");
    }
    let loose = c.run_ok(&[
        "find",
        "/var/lib/pvefleet",
        "-name",
        "*.key",
        "!",
        "-perm",
        "0600",
    ]);
    assert!(loose.is_empty(), "keys not 0600: {loose}");
    let dirs = c.run_ok(&[
        "stat",
        "-c",
        "%n %a",
        "/var/lib/pvefleet/agent",
        "/var/lib/pvefleet/coordinator",
    ]);
    assert_eq!(
        dirs,
        "/var/lib/pvefleet/agent 700\n/var/lib/pvefleet/coordinator 700\n"
    );
    // Configured, and petted: systemd stamps every WATCHDOG=1 it receives.
    let first: Vec<(String, u64)> = [AGENT_UNIT, COORDINATOR_UNIT]
        .iter()
        .map(|u| {
            let state = c.unit(u);
            assert_eq!(state.get("WatchdogUSec"), "30s", "{u}");
            (u.to_string(), watchdog_stamp(&state))
        })
        .collect();
    for (unit, before) in first {
        c.wait_unit(
            &unit,
            "petting its watchdog",
            Duration::from_secs(60),
            |u| watchdog_stamp(u) > before,
        );
    }
}

fn watchdog_stamp(unit: &UnitState) -> u64 {
    unit.get("WatchdogTimestampMonotonic").parse().unwrap_or(0)
}

fn upgrade(c: &Container, debs: &Debs, cluster_id: &str, host_id: u64) {
    let before: Vec<UnitState> = [AGENT_UNIT, COORDINATOR_UNIT]
        .iter()
        .map(|u| c.unit(u))
        .collect();
    let identities = identity_digests(c);
    dpkg_install(c, &debs.upgrade);
    assert_eq!(
        installed_version(c, "pvefleet").as_deref(),
        Some(debs.upgrade_version.as_str())
    );
    for (unit, old) in [AGENT_UNIT, COORDINATOR_UNIT].iter().zip(&before) {
        let old_invocation = old.get("InvocationID").to_string();
        let new = c.wait_unit(
            unit,
            "restarted on the new package",
            Duration::from_secs(90),
            |u| u.is_running() && u.get("InvocationID") != old_invocation,
        );
        assert_ne!(new.main_pid(), old.main_pid(), "{unit} kept its process");
        assert_eq!(new.restarts(), 0, "{unit}: {}", new.summary());
    }
    assert_eq!(
        c.run_ok(&["cat", "/etc/pvefleet/agent.toml"]),
        AGENT_TOML,
        "the upgrade changed the operator's agent.toml"
    );
    assert_eq!(
        identity_digests(c),
        identities,
        "the upgrade changed keys or certificates"
    );
    // The same admin certificate (PVEFLEET_CONFIG unchanged) still reaches the same cluster.
    let status = cluster_status(c);
    assert_eq!(status.cluster_id, cluster_id, "the cluster changed");
    assert_eq!(wait_host_online(c), host_id, "the host changed");
}

/// SHA-256 of every key and certificate under /var/lib/pvefleet, sorted by path.
fn identity_digests(c: &Container) -> String {
    let digests = c.sh_ok(
        "find /var/lib/pvefleet -type f \\( -name '*.pem' -o -name '*.key' \\) | sort | \
         xargs sha256sum",
    );
    assert!(
        digests.contains("/var/lib/pvefleet/coordinator/admin.pem"),
        "no admin certificate among {digests}"
    );
    digests
}

fn remove(c: &Container) {
    c.run_ok(&["dpkg", "-r", "pvefleet"]);
    assert_eq!(
        c.run_ok(&["dpkg-query", "-W", "-f=${db:Status-Abbrev}", "pvefleet"])
            .trim(),
        "rc",
        "after remove only the configuration files stay"
    );
    for path in PROGRAMS.iter().chain(&UNIT_FILES) {
        c.run_ok(&["test", "!", "-e", path]);
    }
    let running = c.sh_ok("cat /proc/[0-9]*/comm 2>/dev/null | grep '^pvefleet' || true");
    assert!(running.is_empty(), "still running after remove: {running}");
    for kept in [
        "/var/lib/pvefleet/agent/node.pem",
        "/var/lib/pvefleet/coordinator/node.pem",
        "/var/lib/pvefleet/coordinator/node.key",
        "/etc/pvefleet/coordinator.toml",
    ] {
        c.run_ok(&["test", "-e", kept]);
    }
    assert_eq!(
        c.run_ok(&["cat", "/etc/pvefleet/agent.toml"]),
        AGENT_TOML,
        "remove must keep the operator's agent.toml"
    );
}

fn purge(c: &Container) {
    c.run_ok(&["dpkg", "-P", "pvefleet"]);
    for gone in ["/var/lib/pvefleet", "/etc/pvefleet"] {
        c.run_ok(&["test", "!", "-e", gone]);
    }
    assert_eq!(installed_version(c, "pvefleet"), None);
    let links = c.run_ok(&["find", "/etc/systemd", "-name", "pvefleet*"]);
    assert!(links.is_empty(), "unit links left after purge: {links}");
}
