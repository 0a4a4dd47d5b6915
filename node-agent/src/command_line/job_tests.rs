#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::os::unix::fs::PermissionsExt;

use clap::Parser;

use super::*;
use crate::command_line::args::Args;

fn prepare(argv: &[&str]) -> Result<Job, CommandError> {
    let argv = std::iter::once("pvefleet-agent").chain(argv.iter().copied());
    Job::prepare(Args::try_parse_from(argv).unwrap().command)
}

/// A configuration file in `dir` whose data directory is `data_dir`.
fn config_file(dir: &Path, data_dir: &Path) -> PathBuf {
    let path = dir.join("agent.toml");
    let text = format!(
        "data_dir = \"{}\"\nhost_name = \"hosta\"\nlog = \"debug\"\n[pve]\nbackend = \"https\"\ntoken_file = \"/t\"\ninsecure = true\n",
        data_dir.display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn run_reads_its_file_and_a_missing_one_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = config_file(dir.path(), &dir.path().join("data"));
    let job = prepare(&["run", "--config", file.to_str().unwrap()]).unwrap();
    assert_eq!(job.log(), "debug");
    match job {
        Job::Run { path, config } => {
            assert_eq!(path, file);
            assert_eq!(config.data_dir, dir.path().join("data"));
        }
        _ => panic!("not run"),
    }
    let missing = dir.path().join("nope.toml");
    let e = prepare(&["run", "--config", missing.to_str().unwrap()])
        .err()
        .expect("a missing file");
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("nope.toml"), "{e}");
}

#[test]
fn the_guard_takes_its_data_directory_from_the_flag_else_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = config_file(dir.path(), &dir.path().join("from-file"));
    let config = file.to_str().unwrap();
    let Job::FenceGuard(opts) = prepare(&["fence-guard", "--config", config]).unwrap() else {
        panic!("not the guard");
    };
    assert_eq!(opts.data_dir, dir.path().join("from-file"));
    assert_eq!(opts.config_path.as_deref(), Some(file.as_path()));
    let flag = dir.path().join("from-flag");
    let argv = [
        "fence-guard",
        "--config",
        config,
        "--data-dir",
        flag.to_str().unwrap(),
    ];
    let Job::FenceGuard(opts) = prepare(&argv).unwrap() else {
        panic!("not the guard");
    };
    assert_eq!(opts.data_dir, flag);
}

#[test]
fn join_reads_its_token_file_and_refuses_a_missing_one_or_a_token_in_argv() {
    let dir = tempfile::tempdir().unwrap();
    let file = config_file(dir.path(), &dir.path().join("data"));
    let token = dir.path().join("token");
    std::fs::write(&token, "pvefleet-join-token-for-test\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let argv = [
        "join",
        "127.0.0.1:7400",
        "--token-file",
        token.to_str().unwrap(),
        "--config",
        file.to_str().unwrap(),
    ];
    let Job::Join {
        token: read,
        addr,
        config,
        ..
    } = prepare(&argv).unwrap()
    else {
        panic!("not join");
    };
    assert_eq!(addr, "127.0.0.1:7400");
    assert!(!read.is_empty());
    assert_eq!(config.unwrap().data_dir, dir.path().join("data"));
    let missing = dir.path().join("absent");
    let e = prepare(&[
        "join",
        "127.0.0.1:7400",
        "--token-file",
        missing.to_str().unwrap(),
    ])
    .err()
    .expect("no token file");
    assert_eq!(e.exit_code(), 2);
    // The old form `join TOKEN ADDR`: refused without echoing the token.
    let e = prepare(&["join", "secret-token-text", "127.0.0.1:7400"])
        .err()
        .expect("a token in argv");
    assert_eq!(e.exit_code(), 2);
    assert!(!e.to_string().contains("secret-token-text"), "{e}");
}
