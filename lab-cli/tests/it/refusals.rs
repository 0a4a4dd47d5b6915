//! What `pvefleet-lab` refuses before it starts anything, with the operator CLI's exit codes
//! (2 usage, 3 an invalid fleet file), and the one command that runs nothing: a chaos
//! campaign's `--dry-run`, which prints its schedule.

use std::process::{Command, Output};

const LAB: &str = env!("CARGO_BIN_EXE_pvefleet-lab");

fn lab(args: &[&str]) -> Output {
    Command::new(LAB)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn demo_arguments_clap_cannot_check_exit_2_before_anything_starts() {
    let out = lab(&["demo", "--coordinators", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--coordinators 2 is not allowed: expected 1, 3 or 5"),
        "{}",
        stderr(&out)
    );
    let out = lab(&["demo", "--hosts", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--hosts 2 or more"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_missing_fleet_file_exits_2_and_an_invalid_one_exits_3() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing.toml");
    let out = lab(&["demo", "-f", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));

    let invalid = tmp.path().join("invalid.toml");
    std::fs::write(&invalid, "[[vm]]\nname = \"Web_1\"\nmemory_mib = 512\n").unwrap();
    let out = lab(&["demo", "-f", invalid.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was applied"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unreadable_scenario_file_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("nope.toml");
    let out = lab(&["sim", "run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
}

#[test]
fn a_chaos_dry_run_prints_the_schedule_and_how_to_replay_it() {
    let out = lab(&[
        "sim",
        "chaos",
        "--seed",
        "7",
        "--duration",
        "1m",
        "--dry-run",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("name = \"chaos-7\""), "{text}");
    assert!(
        text.contains("`pvefleet-lab sim chaos --seed 7 --duration 60s`"),
        "{text}"
    );
    assert!(text.contains("# faults by kind"), "{text}");
}
