#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! The binaries as processes: `pvefleet-coordinator` reading its configuration file (flags
//! win, a missing named file is an error, errors name the field), and the man page and
//! completion scripts `pvefleet-coordinator` generates with `--generate`.

use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use lab::process::{Process, Stderr};
use tokio::process::Command as TokioCommand;
use tokio::runtime::Runtime;

const COORDINATOR: &str = env!("CARGO_BIN_EXE_pvefleet-coordinator");

fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn generated(bin: &str, kind: &str) -> String {
    let out = run(bin, &["--generate", kind]);
    assert!(
        out.status.success(),
        "{bin} --generate {kind}: {}",
        stderr(&out)
    );
    stdout(&out)
}

fn free_udp_port() -> u16 {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.local_addr().unwrap().port()
}

fn free_tcp_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn each_man_page_documents_every_subcommand_on_one_page() {
    let man = generated(COORDINATOR, "man");
    assert!(man.contains(".TH pvefleet-coordinator 1"), "{man}");
    for sub in ["init", "join", "run", "admin\\-cert"] {
        let heading = format!(".SS \"pvefleet\\-coordinator {sub}\"");
        assert!(man.contains(&heading), "{heading} missing:\n{man}");
    }
    for word in [
        "\\-\\-lease\\-secs",
        "/etc/pvefleet/coordinator.toml",
        "WATCHDOG_USEC",
        "PVEFLEET_JOIN_TOKEN",
        "\\-\\-token\\-file",
    ] {
        assert!(man.contains(word), "{word} missing:\n{man}");
    }
    // Hidden flags stay hidden; no page is referred to that is not shipped.
    assert!(!man.contains("\\-\\-generate"), "{man}");
    assert!(!man.contains("LEGACY"), "{man}");
    assert!(!man.contains("\\-help(1)"), "{man}");
    assert_eq!(man.matches(".ds Aq").count(), 2, "one preamble");
}

#[test]
fn completions_are_generated_for_bash_and_zsh() {
    let (path, function) = ("pvefleet-coordinator", "_pvefleet__coordinator");
    let bash = generated(COORDINATOR, "complete-bash");
    assert!(bash.contains(&format!("{function}() {{")), "{bash}");
    assert!(
        bash.contains(&format!("complete -F {function} ")) && bash.contains(path),
        "{bash}"
    );
    let zsh = generated(COORDINATOR, "complete-zsh");
    assert!(zsh.starts_with(&format!("#compdef {path}\n")), "{zsh}");
    let help = stdout(&run(COORDINATOR, &["--help"]));
    assert!(!help.contains("--generate"), "{help}");
    let out = run(COORDINATOR, &["--generate", "html"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn configuration_errors_exit_2_and_name_the_file_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope.toml");
    let out = run(
        COORDINATOR,
        &["init", "--config", missing.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("nope.toml"), "{}", stderr(&out));

    let bad = write(&tmp.path().join("bad.toml"), "lease_sec = 5\n");
    let out = run(COORDINATOR, &["run", "--config", &bad]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("lease_sec"), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.toml"), "{}", stderr(&out));

    let dir = tmp.path().join("m1");
    let no_listen = write(
        &tmp.path().join("c.toml"),
        &format!("data_dir = \"{}\"\n", dir.display()),
    );
    let out = run(COORDINATOR, &["init", "--config", &no_listen]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--listen"), "{}", stderr(&out));
    assert!(stderr(&out).contains("c.toml"), "{}", stderr(&out));
    assert!(!dir.exists());
}

/// `pvefleet-coordinator run ARGS` through the launcher, on `rt`, until its ready line: the
/// process (killed when dropped) and the ready line's `http`.
fn run_member(rt: &Runtime, log: &Path, args: &[&str]) -> (Process, String) {
    let mut cmd = TokioCommand::new(COORDINATOR);
    cmd.arg("run")
        .args(args)
        .env("RUST_LOG", "warn")
        .env_remove("NOTIFY_SOCKET");
    let (process, line) = rt
        .block_on(Process::start(
            "member",
            cmd,
            log,
            Stderr::Inherit,
            Duration::from_secs(60),
        ))
        .unwrap();
    let ready: serde_json::Value = serde_json::from_str(&line).unwrap();
    (process, ready["http"].as_str().unwrap().to_string())
}

#[test]
fn flags_win_over_the_configuration_file() {
    let tmp = tempfile::tempdir().unwrap();
    let from_file: PathBuf = tmp.path().join("from-file");
    let from_flag: PathBuf = tmp.path().join("from-flag");
    let http = format!("127.0.0.1:{}", free_tcp_port());
    let config = write(
        &tmp.path().join("coordinator.toml"),
        &format!(
            "data_dir = \"{}\"\nlisten = \"127.0.0.1:{}\"\nhttp = \"{http}\"\nlease_secs = 5\n",
            from_file.display(),
            free_udp_port()
        ),
    );
    let out = run(
        COORDINATOR,
        &[
            "init",
            "--config",
            &config,
            "--data-dir",
            from_flag.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(from_flag.join("node.pem").is_file());
    assert!(!from_file.exists());

    // The file's http address, unless --http says otherwise.
    let dir = from_flag.to_str().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let log = tmp.path().join("member.log");
    let (member, ready_http) = run_member(&rt, &log, &["--config", &config, "--data-dir", dir]);
    assert_eq!(ready_http, http);
    // Killed and reaped before the next run opens the same data directory.
    rt.block_on(member.kill());
    let args = [
        "--config",
        &config,
        "--data-dir",
        dir,
        "--http",
        "127.0.0.1:0",
    ];
    let (member, ready_http) = run_member(&rt, &log, &args);
    assert_ne!(ready_http, http);
    rt.block_on(member.kill());
}
