//! `pvefleet vm apply --wait` as a real process against a stand-in member whose VMs move on at
//! each poll: the progress lines on stderr (one per change), success once every VM runs with
//! its addresses, and exit code 3 naming the VMs after the wait timeout or a lasting failure.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::support::fixtures::{ip, web_1};
use crate::support::{FakeMember, Pki, bounded};
use clap::Parser;
use cli::Cli;
use protocol::admin::{ApplyOutcome, VmApply, VmApplyReply, VmList, VmListReply};
use protocol::fleet::{VmPhase, VmRecord};
use transport::{Router, Service};

/// `web-N` at generation 1 in `phase`, observed at `observed`, with a pool NIC.
fn vm(n: u32, phase: VmPhase, observed: u64, with_ip: bool) -> VmRecord {
    let mut vm = web_1();
    vm.spec.name = format!("web-{n}");
    vm.generation = 1;
    vm.status.phase = phase;
    vm.status.observed_generation = observed;
    vm.status.conditions.clear();
    vm.status.ips = if with_ip {
        vec![ip(&format!("10.0.0.{}", 10 + n))]
    } else {
        Vec::new()
    };
    vm
}

/// A member that creates every applied VM at generation 1 and answers the `n`-th `VmList`
/// (from 0) with `list(n)`.
fn member(pki: &Pki, list: fn(usize) -> Vec<VmRecord>) -> FakeMember {
    let polls = Arc::new(Mutex::new(0usize));
    let mut router = Router::new();
    router.handle(Service::Admin, |_caller, _req: VmApply| async move {
        Ok(VmApplyReply {
            outcome: ApplyOutcome::Created,
            generation: 1,
        })
    });
    router.handle(Service::Admin, move |_caller, _req: VmList| {
        let mut n = polls.lock().unwrap();
        let vms = list(*n);
        *n += 1;
        async move {
            Ok(VmListReply {
                vms,
                recoveries: Default::default(),
                migrations: Default::default(),
            })
        }
    });
    FakeMember::start(pki, 1, router)
}

struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Applies `web-1` .. `web-<count>` with `pvefleet vm apply -f FILE --wait EXTRA...`.
async fn apply_and_wait(pki: &Pki, config: &Path, count: u32, extra: &[&str]) -> Finished {
    let file = pki.dir().join("vms.toml");
    let specs: String = (1..=count)
        .map(|n| format!("[[vm]]\nname = \"web-{n}\"\nmemory_mib = 1024\n\n"))
        .collect();
    std::fs::write(&file, specs).unwrap();
    let out = bounded(
        tokio::process::Command::new(env!("CARGO_BIN_EXE_pvefleet"))
            .arg("--config")
            .arg(config)
            .args(["vm", "apply", "--wait", "-f"])
            .arg(&file)
            .args(extra)
            .env_remove("RUST_LOG")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    Finished {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

#[tokio::test]
async fn the_wait_shows_each_change_of_progress_and_ends_once_every_vm_is_ready() {
    let pki = Pki::new();
    let member = member(&pki, |poll| match poll {
        0 => vec![
            vm(1, VmPhase::Provisioning, 0, false),
            vm(2, VmPhase::Pending, 0, false),
        ],
        // The same again: nothing new is printed.
        1 => vec![
            vm(1, VmPhase::Provisioning, 0, false),
            vm(2, VmPhase::Pending, 0, false),
        ],
        2 => vec![
            vm(1, VmPhase::Running, 1, true),
            vm(2, VmPhase::Running, 1, false),
        ],
        _ => vec![
            vm(1, VmPhase::Running, 1, true),
            vm(2, VmPhase::Running, 1, true),
        ],
    });
    let config = pki.write_config(&[&member]);

    let done = apply_and_wait(&pki, &config, 2, &[]).await;
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert_eq!(
        done.stdout,
        "vm web-1 created (generation 1)\nvm web-2 created (generation 1)\n"
    );
    assert_eq!(
        done.stderr,
        "0/2 running, 1 pending, 1 provisioning\n\
         1/2 running, 1 waiting for IPs\n\
         2/2 running\n"
    );
}

#[tokio::test]
async fn a_wait_that_times_out_exits_3_naming_each_vm_not_ready() {
    let pki = Pki::new();
    let member = member(&pki, |_| {
        vec![
            vm(1, VmPhase::Running, 1, true),
            vm(2, VmPhase::Provisioning, 0, false),
        ]
    });
    let config = pki.write_config(&[&member]);

    let done = apply_and_wait(&pki, &config, 2, &["--wait-timeout", "2s"]).await;
    assert_eq!(done.code, Some(3), "{}", done.stderr);
    assert_eq!(
        done.stderr,
        "1/2 running, 1 provisioning\n\
         error: timed out after 2s: 1 of 2 VMs are not ready:\n  \
         web-2: provisioning\n\
         the fleet keeps working on them: watch with `pvefleet vm ls` and `pvefleet events \
         --follow`, or wait longer with --wait-timeout\n"
    );
}

#[tokio::test]
async fn a_vm_failed_for_longer_than_fail_after_ends_the_wait_with_its_message() {
    let pki = Pki::new();
    let member = member(&pki, |_| {
        let mut failed = vm(1, VmPhase::Failed, 0, false);
        failed.status.message =
            "ensure failed at step clone (permanent): template debian-12 not found".into();
        vec![failed]
    });
    let config = pki.write_config(&[&member]);

    let done = apply_and_wait(&pki, &config, 1, &["--fail-after", "1s"]).await;
    assert_eq!(done.code, Some(3), "{}", done.stderr);
    let mut lines = done.stderr.lines();
    assert_eq!(
        lines.next(),
        Some(
            "0/1 running, 1 failed: web-1: ensure failed at step clone (permanent): template \
             debian-12 not found"
        )
    );
    let error = lines.collect::<Vec<_>>().join("\n");
    assert!(
        error.starts_with("error: web-1 stayed failed for 1s;"),
        "{error}"
    );
    assert!(
        error.contains("`pvefleet vm show web-1`")
            && error.ends_with("web-1: failed: ensure failed at step clone (permanent): template debian-12 not found"),
        "{error}"
    );
}

#[test]
fn wait_options_need_wait() {
    for option in ["--wait-timeout", "--fail-after"] {
        let refused =
            Cli::try_parse_from(["pvefleet", "vm", "apply", "-f", "x.toml", option, "5m"])
                .unwrap_err();
        assert_eq!(refused.exit_code(), 2, "{option}");
        assert!(refused.to_string().contains("--wait"), "{refused}");
    }
    let cli = Cli::try_parse_from(["pvefleet", "vm", "apply", "-f", "x.toml", "--wait"]).unwrap();
    let cli::args::Command::Vm(cli::args::VmCommand::Apply(args)) = cli.command else {
        panic!("vm apply");
    };
    assert_eq!(args.wait_timeout, std::time::Duration::from_secs(600));
    assert_eq!(args.fail_after, std::time::Duration::from_secs(60));
}
